package dev.streamproc.oracle;

import io.apicurio.registry.resolver.ParsedSchema;
import io.apicurio.registry.resolver.data.Record;
import io.apicurio.registry.resolver.strategy.ArtifactReference;
import io.apicurio.registry.resolver.strategy.ArtifactReferenceResolverStrategy;
import io.apicurio.registry.serde.data.SerdeRecord;
import org.apache.avro.Schema;

/**
 * Confluent's {@code RecordNameStrategy} for Apicurio's serdes: the subject is the value's record full name, in the
 * default group (where Apicurio's Confluent API keeps subjects); a schema that is not a record is refused with
 * Confluent's message ({@code AvroSchema#name()} is null for it). Apicurio's own {@code QualifiedRecordIdStrategy}
 * names the same subject but also takes an enum.
 */
public class RecordNameStrategy implements ArtifactReferenceResolverStrategy<Schema, Object> {
    @Override
    public ArtifactReference artifactReference(final Record<Object> data, final ParsedSchema<Schema> parsedSchema) {
        return ArtifactReference.builder().groupId(null)
            .artifactId(subject(data, recordName(data, parsedSchema, confluentName()))).build();
    }

    /** Confluent's class this strategy stands for, named in its refusal. */
    protected String confluentName() {
        return "io.confluent.kafka.serializers.subject.RecordNameStrategy";
    }

    /** The subject for a record named {@code recordName}. */
    protected String subject(final Record<Object> data, final String recordName) {
        return recordName;
    }

    static String recordName(final Record<Object> data, final ParsedSchema<Schema> parsedSchema,
                             final String confluentName) {
        final Schema schema = parsedSchema == null ? null : parsedSchema.getParsedSchema();
        if (schema != null && schema.getType() == Schema.Type.RECORD) {
            return schema.getFullName();
        }
        final boolean isKey = ((SerdeRecord<Object>) data).metadata().isKey();
        throw new IllegalStateException("In configuration " + (isKey ? "key" : "value") + ".subject.name.strategy = "
            + confluentName + ", the message " + (isKey ? "key" : "value") + " must only be a record schema");
    }
}
