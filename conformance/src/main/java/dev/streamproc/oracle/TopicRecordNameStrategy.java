package dev.streamproc.oracle;

import io.apicurio.registry.resolver.data.Record;
import io.apicurio.registry.serde.data.SerdeRecord;

/**
 * Confluent's {@code TopicRecordNameStrategy} for Apicurio's serdes: the subject {@code <topic>-<record full name>},
 * in the default group, where Apicurio's Confluent API keeps subjects (a schema that is not a record is refused, as
 * by {@link RecordNameStrategy}). Apicurio's own {@code TopicRecordIdStrategy} differs: it names
 * {@code <topic>-<simple name>} in a group named after the namespace, which no Confluent client sees as that subject.
 */
public final class TopicRecordNameStrategy extends RecordNameStrategy {
    @Override
    protected String confluentName() {
        return "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy";
    }

    @Override
    protected String subject(final Record<Object> data, final String recordName) {
        return ((SerdeRecord<Object>) data).metadata().getTopic() + "-" + recordName;
    }
}
