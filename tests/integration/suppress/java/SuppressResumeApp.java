package dev.streamproc.oracle;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The suppress hand-off proof's app (DSL): per key, counts in 10 s windows (1 s grace, store {@code window-counts}),
 * {@code suppress(untilWindowCloses(unbounded())).withName("final")} (buffer {@code final-store}, changelog
 * {@code <application.id>-final-store-changelog}), each final count to {@code <output>} keyed {@code key@start}. The
 * Python twin is {@code tests/integration/suppress/test_suppress_handoff.py}'s {@code suppress_resume}.
 *
 * <p>Usage: {@code SuppressResumeApp <bootstrap> <application.id> <state.dir> <input> <input end offset> <output>
 * alos|eos} (one partition). Runs until the group's committed input offset reaches the end offset, then closes
 * (its commit flushes the buffer to its changelog) and leaves the group, with {@link StateResumeApp}'s events.
 */
public final class SuppressResumeApp {
    private SuppressResumeApp() {
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final String input = args[3];
        final long inputEnd = Long.parseLong(args[4]);
        final String output = args[5];
        final boolean eos = "eos".equals(args[6]);

        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(1)))
            .count(Materialized.as("window-counts"))
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final"))
            .toStream()
            .selectKey((w, v) -> w.key() + "@" + w.window().start())
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        final Properties props = StateResumeApp.streamsProps(bootstrap, applicationId, args[2], eos);
        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = StateResumeApp.start(builder.build(), props, restored);
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        final long deadline = System.currentTimeMillis() + 120_000L;
        try (Admin admin = Admin.create(adminProps)) {
            while (true) {
                if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING
                    || streams.state() == KafkaStreams.State.PENDING_ERROR) {
                    StateResumeApp.emit(Map.of("event", "error", "message", "Kafka Streams state " + streams.state()));
                    System.exit(3);
                }
                final Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
                final OffsetAndMetadata offset = committed.get(new TopicPartition(input, 0));
                if (streams.state() == KafkaStreams.State.RUNNING && offset != null && offset.offset() >= inputEnd) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    StateResumeApp.emit(Map.of("event", "error", "message",
                        "timed out waiting for the committed offset of " + input + ": " + committed));
                    System.exit(4);
                }
                Thread.sleep(100);
            }
        }
        StateResumeApp.closeAndEmitResult(streams, restored, new HashMap<String, Object>());
    }
}
