import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

/**
 * A Kafka Streams app in a KIP-1071 streams group ({@code group.protocol=streams}): counts per key of the input.
 * Prints {@code running} once RUNNING and runs until stdin closes. Usage: {@code StreamsGroupApp <bootstrap>
 * <application.id> <state.dir> <input topic>}.
 */
public final class StreamsGroupApp {
    private StreamsGroupApp() {
    }

    public static void main(final String[] args) throws Exception {
        final Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3]).groupByKey().count();
        final KafkaStreams streams = new KafkaStreams(builder.build(), props);
        final CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        streams.start();
        running.await();
        System.out.println("running");
        System.out.flush();
        while (System.in.read() != -1) {
            // until the test closes stdin
        }
        streams.close();
        System.out.println("closed");
    }
}
