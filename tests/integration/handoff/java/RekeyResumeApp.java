package dev.streamproc.oracle;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * The hand-off proof's re-key → repartition → aggregate app (DSL): the value becomes the key, the records go through
 * the repartition topic {@code <application.id>-rekeyed-repartition} (as many partitions as the input) and are
 * counted per new key in the timestamped store {@code counts}; each count goes to {@code <output>}. The Python twin
 * is {@code tests/integration/handoff/topologies.py}'s {@code rekey_resume_*}.
 *
 * <p>Usage: {@code RekeyResumeApp <bootstrap> <application.id> <state.dir> <input> <input end offset> <output>
 * <partitions> alos|eos}. Runs until the input's committed offsets sum to the end offset and every
 * repartition partition's committed offset its log end, then prints the store and leaves the group, with the
 * restore events of {@link StateResumeApp}.
 */
public final class RekeyResumeApp {
    private RekeyResumeApp() {
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final String input = args[3];
        final long inputEnd = Long.parseLong(args[4]);
        final String output = args[5];
        final int partitions = Integer.parseInt(args[6]);
        final boolean eos = "eos".equals(args[7]);

        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .repartition(Repartitioned.<String, String>as("rekeyed")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        final Properties props = StateResumeApp.streamsProps(bootstrap, applicationId, args[2], eos);
        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = StateResumeApp.start(builder.build(), props, restored);
        awaitConsumed(streams, bootstrap, applicationId, input, partitions, inputEnd);
        awaitConsumed(streams, bootstrap, applicationId, applicationId + "-rekeyed-repartition", partitions, -1);

        final Map<String, Object> contents = new TreeMap<>();
        final ReadOnlyKeyValueStore<String, ValueAndTimestamp<Long>> view = streams.store(
            StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.timestampedKeyValueStore()));
        try (KeyValueIterator<String, ValueAndTimestamp<Long>> all = view.all()) {
            while (all.hasNext()) {
                final KeyValue<String, ValueAndTimestamp<Long>> entry = all.next();
                contents.put(entry.key, new long[] {entry.value.value(), entry.value.timestamp()});
            }
        }
        StateResumeApp.closeAndEmitResult(streams, restored, contents);
    }

    /**
     * Waits until the app is RUNNING and the group's committed offsets of {@code topic} sum to {@code total} (the
     * input), or (total -1: the repartition topic, whose records are all written once the input is committed) reach
     * each partition's log end; emits an error and exits 4 after 120 s.
     */
    static void awaitConsumed(final KafkaStreams streams, final String bootstrap, final String applicationId,
                                      final String topic, final int partitions, final long total) throws Exception {
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            StateResumeApp.awaitTopicCommitted(streams, admin, applicationId, topic, partitions, total, 120_000L);
        }
    }
}
