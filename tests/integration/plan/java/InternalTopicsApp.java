package dev.streamproc.oracle;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The first-run proof's app: what Kafka Streams 4.2 itself creates as internal topics for a DSL topology with a
 * repartition topic and a key-value, a window and a session store ({@code counts}, {@code window-counts} retained
 * {@link #WINDOW_RETENTION_MS}, {@code session-counts} retained {@link #SESSION_RETENTION_MS}).
 *
 * <p>Usage: {@code InternalTopicsApp describe <input>} prints the topology's {@code describe()} text;
 * {@code InternalTopicsApp run <bootstrap> <application.id> <state.dir> <input>} starts the app until it is RUNNING
 * (its internal topics are then created) and closes it.
 */
public final class InternalTopicsApp {
    static final long WINDOW_RETENTION_MS = 7_200_000L;
    static final long SESSION_RETENTION_MS = 5_400_000L;

    private InternalTopicsApp() {
    }

    static Topology topology(final String input) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> rekeyed = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .repartition(Repartitioned.<String, String>as("rekeyed")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        rekeyed.groupByKey().count(Materialized.as("counts"));
        rekeyed.groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .count(Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("window-counts")
                .withRetention(Duration.ofMillis(WINDOW_RETENTION_MS)));
        rekeyed.groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(10)))
            .count(Materialized.<String, Long, org.apache.kafka.streams.state.SessionStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("session-counts")
                .withRetention(Duration.ofMillis(SESSION_RETENTION_MS)));
        return builder.build();
    }

    public static void main(final String[] args) throws Exception {
        if ("describe".equals(args[0])) {
            System.out.print(topology(args[1]).describe());
            return;
        }
        final Properties props = StateResumeApp.streamsProps(args[1], args[2], args[3], false);
        final KafkaStreams streams = StateResumeApp.start(topology(args[4]), props, new AtomicLong());
        final long deadline = System.currentTimeMillis() + 120_000L;
        while (streams.state() != KafkaStreams.State.RUNNING) {
            if (System.currentTimeMillis() > deadline || streams.state() == KafkaStreams.State.ERROR) {
                StateResumeApp.emit(Map.of("event", "error", "message", "state " + streams.state()));
                System.exit(3);
            }
            Thread.sleep(100);
        }
        StateResumeApp.closeAndEmitResult(streams, new AtomicLong(), Map.of());
    }
}
