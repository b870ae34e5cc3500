package dev.streamproc.oracle;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * {@link StateResumeApp} with a plain (non-timestamped) persistent key-value store: the Processor API's
 * {@code Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), String, Long)} (one RocksDB with only
 * the {@code default} column family; value = the count, no timestamp prefix), logged, no caching.
 *
 * <p>Usage: {@code StateResumeAppPlainKv <bootstrap> <application.id> <state.dir> <input topic> <input end offset>
 * [alos|eos]}. Same protocol as {@link StateResumeApp} (JSON lines on stdout: restore events, then
 * {@code {"event":"result","restored":N,"store":{key:count}}}), run by {@link StateResumeApp}'s protocol methods
 * ({@code streamsProps}, {@code start}, {@code awaitInputCommitted}, {@code closeAndEmitResult}); only the topology
 * and the store read differ.
 */
public final class StateResumeAppPlainKv {
    private StateResumeAppPlainKv() {
    }

    /** Counts records per key in the plain key-value store {@code counts}. */
    static final class PlainCounter implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("counts");
        }

        @Override
        public void process(final Record<String, String> record) {
            final Long old = store.get(record.key());
            store.put(record.key(), old == null ? 1L : old + 1L);
        }
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final String stateDir = args[2];
        final String input = args[3];
        final long inputEnd = Long.parseLong(args[4]);
        final boolean eos = args.length > 5 && "eos".equals(args[5]);

        final Topology topology = new Topology();
        topology.addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(), input);
        topology.addProcessor("count", PlainCounter::new, "source");
        topology.addStateStore(
            Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), Serdes.String(), Serdes.Long()),
            "count");

        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = StateResumeApp.start(topology,
            StateResumeApp.streamsProps(bootstrap, applicationId, stateDir, eos), restored);
        StateResumeApp.awaitInputCommitted(streams, bootstrap, applicationId, input, inputEnd);

        final Map<String, Object> contents = new TreeMap<>();
        final ReadOnlyKeyValueStore<String, Long> view = streams.store(
            StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.keyValueStore()));
        try (KeyValueIterator<String, Long> all = view.all()) {
            while (all.hasNext()) {
                final KeyValue<String, Long> entry = all.next();
                contents.put(entry.key, entry.value);
            }
        }
        StateResumeApp.closeAndEmitResult(streams, restored, contents);
    }
}
