import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A Kafka Streams app in a KIP-1071 streams group ({@code group.protocol=streams}): counts per key of the input in
 * the store {@code counts} (the changelog the tests' Python count topology has: the group's topology is its).
 * Prints {@code running} once RUNNING and it has processed a record of each of the input's partitions (so that its
 * close commits an offset for every partition, whatever the machine's speed), and runs until stdin closes. Usage:
 * {@code StreamsGroupApp <bootstrap> <application.id> <state.dir> <input topic> <input partitions>}.
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
        final int partitions = Integer.parseInt(args[4]);
        final Set<Integer> seen = ConcurrentHashMap.newKeySet();
        final CountDownLatch everyPartitionSeen = new CountDownLatch(1);
        builder.stream(args[3]).processValues(() -> new FixedKeyProcessor<Object, Object, Object>() {
            private FixedKeyProcessorContext<Object, Object> context;

            @Override
            public void init(final FixedKeyProcessorContext<Object, Object> context) {
                this.context = context;
            }

            @Override
            public void process(final FixedKeyRecord<Object, Object> record) {
                context.recordMetadata().ifPresent(m -> {
                    seen.add(m.partition());
                    if (seen.size() >= partitions) {
                        everyPartitionSeen.countDown();
                    }
                });
                context.forward(record);
            }
        }).groupByKey().count(Materialized.<Object, Long, KeyValueStore<Bytes, byte[]>>as("counts"));
        final KafkaStreams streams = new KafkaStreams(builder.build(), props);
        final CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        streams.start();
        running.await();
        everyPartitionSeen.await();
        System.out.println("running");
        System.out.flush();
        while (System.in.read() != -1) {
            // until the test closes stdin
        }
        streams.close();
        System.out.println("closed");
    }
}
