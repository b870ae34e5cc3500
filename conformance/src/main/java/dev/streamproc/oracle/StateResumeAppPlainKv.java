package dev.streamproc.oracle;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.StateRestoreListener;
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
 * {@code {"event":"result","restored":N,"store":{key:count}}}). A separate class because {@code StateResumeApp} is
 * shared with the committed 4.2 proof and stays untouched.
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

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            eos ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put("consumer.auto.offset.reset", "earliest");

        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(final TopicPartition tp, final String store, final long start, final long end) {
                StateResumeApp.emit(Map.of("event", "restore_start", "changelog", tp.toString(), "store", store,
                    "start", start, "end", end));
            }

            @Override
            public void onBatchRestored(final TopicPartition tp, final String store, final long batchEnd,
                                        final long numRestored) {
                restored.addAndGet(numRestored);
                StateResumeApp.emit(Map.of("event", "restore_batch", "changelog", tp.toString(), "store", store,
                    "batch_end", batchEnd, "restored", numRestored));
            }

            @Override
            public void onRestoreEnd(final TopicPartition tp, final String store, final long total) {
                StateResumeApp.emit(Map.of("event", "restore_end", "changelog", tp.toString(), "store", store,
                    "total", total));
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            StateResumeApp.emit(Map.of("event", "error", "message", String.valueOf(exception)));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        streams.start();

        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        final TopicPartition inputPartition = new TopicPartition(input, 0);
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
                final OffsetAndMetadata offset = committed.get(inputPartition);
                if (streams.state() == KafkaStreams.State.RUNNING && offset != null && offset.offset() >= inputEnd) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    StateResumeApp.emit(Map.of("event", "error", "message", "timed out waiting for committed offset "
                        + inputEnd + " (now " + offset + ", state " + streams.state() + ")"));
                    streams.close(Duration.ofSeconds(30));
                    System.exit(4);
                }
                Thread.sleep(100);
            }
        }

        final Map<String, Object> contents = new TreeMap<>();
        final ReadOnlyKeyValueStore<String, Long> view = streams.store(
            StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.keyValueStore()));
        try (KeyValueIterator<String, Long> all = view.all()) {
            while (all.hasNext()) {
                final KeyValue<String, Long> entry = all.next();
                contents.put(entry.key, entry.value);
            }
        }
        // Leave the group so that the tool may commit offsets right away (the group must be empty).
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(60)));
        StateResumeApp.emit(Map.of("event", "result", "restored", restored.get(), "store", contents,
            "state", streams.state().toString()));
    }
}
