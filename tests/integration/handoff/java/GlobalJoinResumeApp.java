package dev.streamproc.oracle;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * The hand-off proof's stream–global-table join (DSL): each order (key: order id, value: product id) is joined with
 * the global table {@code products-store} read from {@code <products>} by its value, and {@code order|product} goes
 * to {@code <output>}. The Python twin is {@code tests/integration/handoff/topologies.py}'s {@code global_join}.
 *
 * <p>Usage: {@code GlobalJoinResumeApp <bootstrap> <application.id> <state.dir> <orders> <orders end offset>
 * <products> <output> <partitions>} (at_least_once). Runs until the orders' committed offsets sum to the end offset,
 * then prints the global store ({@code value, timestamp} per key) and leaves the group, with the restore events of
 * {@link StateResumeApp} (the global store's too).
 */
public final class GlobalJoinResumeApp {
    private GlobalJoinResumeApp() {
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final String orders = args[3];
        final long ordersEnd = Long.parseLong(args[4]);
        final String products = args[5];
        final String output = args[6];
        final int partitions = Integer.parseInt(args[7]);

        final StreamsBuilder builder = new StreamsBuilder();
        final GlobalKTable<String, String> table = builder.globalTable(products,
            Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("products-store"));
        builder.stream(orders, Consumed.with(Serdes.String(), Serdes.String()))
            .join(table, (key, value) -> value, (order, product) -> order + "|" + product)
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        final Properties props = StateResumeApp.streamsProps(bootstrap, applicationId, args[2], false);
        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = StateResumeApp.start(builder.build(), props, restored);
        RekeyResumeApp.awaitConsumed(streams, bootstrap, applicationId, orders, partitions, ordersEnd);

        final Map<String, Object> contents = new TreeMap<>();
        final ReadOnlyKeyValueStore<String, ValueAndTimestamp<String>> view = streams.store(
            StoreQueryParameters.fromNameAndType("products-store", QueryableStoreTypes.timestampedKeyValueStore()));
        try (KeyValueIterator<String, ValueAndTimestamp<String>> all = view.all()) {
            while (all.hasNext()) {
                final KeyValue<String, ValueAndTimestamp<String>> entry = all.next();
                contents.put(entry.key, new Object[] {entry.value.value(), entry.value.timestamp()});
            }
        }
        StateResumeApp.closeAndEmitResult(streams, restored, contents);
    }
}
