package dev.streamproc.oracle;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
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
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A real Kafka Streams 4.2 application for the state hand-off test: source {@code <input>} (String keys), a processor
 * counting records per key in the persistent timestamped key-value store {@code counts} (logged, no caching; value =
 * count, timestamp = the last record's timestamp), at-least-once.
 *
 * <p>With a sixth argument {@code window} the processor counts per key and one-minute window (window start = timestamp
 * rounded down) in the persistent timestamped window store {@code wcounts} (retention 10 minutes, so segments of 5
 * minutes), and the result's keys are {@code <key>@<window start>}.
 *
 * <p>A seventh argument {@code eos} runs it with {@code exactly_once_v2}.
 *
 * <p>Usage: {@code StateResumeApp <bootstrap> <application.id> <state.dir> <input topic> <input end offset>
 * [kv|window] [alos|eos]}. It
 * starts, waits until the group's committed offset of {@code <input>-0} reaches the end offset, prints the store
 * contents (interactive query), closes cleanly (which writes the task checkpoint) and exits. stdout is JSON lines:
 * {@code restore_start}/{@code restore_batch}/{@code restore_end} from a {@link StateRestoreListener}, then
 * {@code {"event":"result","restored":N,"store":{key:[count,timestamp]}}}.
 *
 * <p>Four environment variables change the run protocol of every app that shares it: {@value #SESSION_TIMEOUT_ENV}
 * sets the main consumer's {@code session.timeout.ms}, {@value #CLOSE_ENV}={@code REMAIN_IN_GROUP} closes the app
 * with the plain {@link KafkaStreams#close(Duration)}, whose members stay in the group until their session times out
 * (the default, {@code LEAVE_GROUP}, leaves it at once), and {@value #GROUP_PROTOCOL_ENV} sets
 * {@code group.protocol} ({@code streams}: a KIP-1071 streams group; default {@code classic}), and
 * {@value #PROCESSING_GUARANTEE_ENV} the {@code processing.guarantee} of an app that would otherwise run at least once.
 */
public final class StateResumeApp {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final long WINDOW_MS = 60_000L;
    static final long WINDOW_RETENTION_MS = 600_000L;
    /** The main consumer's {@code session.timeout.ms} (default: Kafka's, 45 s). */
    static final String SESSION_TIMEOUT_ENV = "STREAMPROC_ORACLE_SESSION_TIMEOUT_MS";
    /** The app's {@code group.protocol} (default: Kafka Streams', {@code classic}). */
    static final String GROUP_PROTOCOL_ENV = "STREAMPROC_ORACLE_GROUP_PROTOCOL";
    /** The {@code processing.guarantee} of an app the caller runs at least once ({@code exactly_once_v2}). */
    static final String PROCESSING_GUARANTEE_ENV = "STREAMPROC_ORACLE_PROCESSING_GUARANTEE";
    /** {@code LEAVE_GROUP} (default) or {@code REMAIN_IN_GROUP}: how the app closes ({@code GroupMembershipOperation}). */
    static final String CLOSE_ENV = "STREAMPROC_ORACLE_GROUP_MEMBERSHIP_ON_CLOSE";

    private StateResumeApp() {
    }

    static void emit(final Map<String, Object> event) {
        try {
            System.out.println(JSON.writeValueAsString(event));
            System.out.flush();
        } catch (final Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Counts per key and one-minute window in the timestamped window store {@code wcounts}. */
    static final class WindowCounter implements Processor<String, String, Void, Void> {
        private TimestampedWindowStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("wcounts");
        }

        @Override
        public void process(final Record<String, String> record) {
            final long windowStart = record.timestamp() - record.timestamp() % WINDOW_MS;
            final ValueAndTimestamp<Long> old = store.fetch(record.key(), windowStart);
            final long count = old == null ? 1L : old.value() + 1L;
            store.put(record.key(), ValueAndTimestamp.make(count, record.timestamp()), windowStart);
        }
    }

    static final class Counter implements Processor<String, String, Void, Void> {
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("counts");
        }

        @Override
        public void process(final Record<String, String> record) {
            final ValueAndTimestamp<Long> old = store.get(record.key());
            final long count = old == null ? 1L : old.value() + 1L;
            store.put(record.key(), ValueAndTimestamp.make(count, record.timestamp()));
        }
    }

    public static void main(final String[] args) throws Exception {
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final String stateDir = args[2];
        final String input = args[3];
        final long inputEnd = Long.parseLong(args[4]);
        final boolean windowed = args.length > 5 && "window".equals(args[5]);
        final boolean eos = args.length > 6 && "eos".equals(args[6]);

        final Topology topology = new Topology();
        topology.addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(), input);
        if (windowed) {
            topology.addProcessor("count", WindowCounter::new, "source");
            topology.addStateStore(
                Stores.timestampedWindowStoreBuilder(
                    Stores.persistentTimestampedWindowStore("wcounts", Duration.ofMillis(WINDOW_RETENTION_MS),
                        Duration.ofMillis(WINDOW_MS), false),
                    Serdes.String(), Serdes.Long()),
                "count");
        } else {
            topology.addProcessor("count", Counter::new, "source");
            topology.addStateStore(
                Stores.timestampedKeyValueStoreBuilder(
                    Stores.persistentTimestampedKeyValueStore("counts"), Serdes.String(), Serdes.Long()),
                "count");
        }

        final AtomicLong restored = new AtomicLong();
        final KafkaStreams streams = start(topology, streamsProps(bootstrap, applicationId, stateDir, eos), restored);
        awaitInputCommitted(streams, bootstrap, applicationId, input, inputEnd);

        final Map<String, Object> contents = new TreeMap<>();
        if (windowed) {
            final ReadOnlyWindowStore<String, ValueAndTimestamp<Long>> view = streams.store(
                StoreQueryParameters.fromNameAndType("wcounts", QueryableStoreTypes.timestampedWindowStore()));
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> all = view.all()) {
                while (all.hasNext()) {
                    final KeyValue<Windowed<String>, ValueAndTimestamp<Long>> entry = all.next();
                    contents.put(entry.key.key() + "@" + entry.key.window().start(),
                        new long[] {entry.value.value(), entry.value.timestamp()});
                }
            }
        } else {
            final ReadOnlyKeyValueStore<String, ValueAndTimestamp<Long>> view = streams.store(
                StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.timestampedKeyValueStore()));
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> all = view.all()) {
                while (all.hasNext()) {
                    final KeyValue<String, ValueAndTimestamp<Long>> entry = all.next();
                    contents.put(entry.key, new long[] {entry.value.value(), entry.value.timestamp()});
                }
            }
        }
        closeAndEmitResult(streams, restored, contents);
    }

    // ---------------------------------------------------------------------------------------------------------
    // The run protocol both resume apps share ({@link StateResumeAppPlainKv} calls these too).

    /** At-least-once or {@code exactly_once_v2}, one thread, commits every 100 ms, no caching, from the earliest. */
    static Properties streamsProps(final String bootstrap, final String applicationId, final String stateDir,
                                   final boolean eos) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            eos ? StreamsConfig.EXACTLY_ONCE_V2 : guarantee());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put("consumer.auto.offset.reset", "earliest");
        final String sessionTimeout = System.getenv(SESSION_TIMEOUT_ENV);
        if (sessionTimeout != null && !sessionTimeout.isEmpty()) {
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
                Integer.parseInt(sessionTimeout));
        }
        final String groupProtocol = System.getenv(GROUP_PROTOCOL_ENV);
        if (groupProtocol != null && !groupProtocol.isEmpty()) {
            props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        }
        return props;
    }

    private static String guarantee() {
        final String guarantee = System.getenv(PROCESSING_GUARANTEE_ENV);
        return guarantee == null || guarantee.isEmpty() ? StreamsConfig.AT_LEAST_ONCE : guarantee;
    }

    /** Starts the app: restore events on stdout (counted into {@code restored}), SHUTDOWN_CLIENT on a fatal error. */
    static KafkaStreams start(final Topology topology, final Properties props, final AtomicLong restored) {
        final KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(final TopicPartition tp, final String store, final long start, final long end) {
                emit(Map.of("event", "restore_start", "changelog", tp.toString(), "store", store,
                    "start", start, "end", end));
            }

            @Override
            public void onBatchRestored(final TopicPartition tp, final String store, final long batchEnd,
                                        final long numRestored) {
                restored.addAndGet(numRestored);
                emit(Map.of("event", "restore_batch", "changelog", tp.toString(), "store", store,
                    "batch_end", batchEnd, "restored", numRestored));
            }

            @Override
            public void onRestoreEnd(final TopicPartition tp, final String store, final long total) {
                emit(Map.of("event", "restore_end", "changelog", tp.toString(), "store", store, "total", total));
            }
        });
        streams.setUncaughtExceptionHandler(exception -> {
            emit(Map.of("event", "error", "message", String.valueOf(exception)));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        streams.start();
        return streams;
    }

    /**
     * Returns once the app is RUNNING and the group's committed offset of {@code <input>-0} reached
     * {@code inputEnd}; emits an error and exits 3 when the app failed, 4 after 120 s.
     */
    static void awaitInputCommitted(final KafkaStreams streams, final String bootstrap, final String applicationId,
                                    final String input, final long inputEnd) throws Exception {
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            awaitCommitted(streams, admin, applicationId, Map.of(new TopicPartition(input, 0), inputEnd));
        }
    }

    /**
     * Returns once the app is RUNNING and the group has committed at least {@code ends} (a partition whose end is 0
     * needs no commit); emits an error and exits 3 when the app failed, 4 after 120 s.
     */
    static void awaitCommitted(final KafkaStreams streams, final Admin admin, final String applicationId,
                               final Map<TopicPartition, Long> ends) throws Exception {
        awaitCommitted(streams, admin, applicationId, 120_000L, "committed offsets " + ends, committed -> {
            boolean done = true;
            for (final Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
                final OffsetAndMetadata offset = committed.get(end.getKey());
                done &= end.getValue() == 0 || offset != null && offset.offset() >= end.getValue();
            }
            return done;
        });
    }

    /**
     * Waits (see below) until the group's committed offsets of {@code topic}'s partitions sum to {@code total} (the
     * input), or, for {@code total} -1 (a repartition topic, whose records are all written once the input is
     * committed), reach each partition's log end as it is now.
     */
    static void awaitTopicCommitted(final KafkaStreams streams, final Admin admin, final String applicationId,
                                    final String topic, final int partitions, final long total,
                                    final long timeoutMs) throws Exception {
        final Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        final var ends = total < 0 ? admin.listOffsets(latest).all().get() : null;
        awaitCommitted(streams, admin, applicationId, timeoutMs, "the committed offsets of " + topic, committed -> {
            boolean done = true;
            long sum = 0;
            for (final TopicPartition tp : latest.keySet()) {
                final OffsetAndMetadata offset = committed.get(tp);
                final long at = offset == null ? 0 : offset.offset();
                sum += at;
                if (ends != null) {
                    done &= at >= ends.get(tp).offset();
                }
            }
            return done && (ends != null || sum >= total);
        });
    }

    /**
     * The one wait of the resume apps: returns once the app is RUNNING and {@code reached} holds for the group's
     * committed offsets (read every 100 ms); emits an error and exits 3 when the app failed, or closes it and exits
     * 4 when {@code timeoutMs} passed first ({@code waitingFor} says for what).
     */
    static void awaitCommitted(final KafkaStreams streams, final Admin admin, final String applicationId,
                               final long timeoutMs, final String waitingFor,
                               final Predicate<Map<TopicPartition, OffsetAndMetadata>> reached) throws Exception {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            final KafkaStreams.State state = streams.state();
            if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING
                || state == KafkaStreams.State.PENDING_ERROR) {
                emit(Map.of("event", "error", "message", "Kafka Streams state " + state));
                System.exit(3);
            }
            final Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
            if (state == KafkaStreams.State.RUNNING && reached.test(committed)) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                emit(Map.of("event", "error", "message", "timed out waiting for " + waitingFor + " (committed "
                    + committed + ", state " + state + ")"));
                streams.close(Duration.ofSeconds(30));
                System.exit(4);
            }
            Thread.sleep(100);
        }
    }

    /**
     * Leaves the group (so that the tool may commit offsets right away: it must be empty), then the result line; with
     * {@value #CLOSE_ENV}={@code REMAIN_IN_GROUP} the plain {@code close()} instead, as most applications close: the
     * members stay in the group until {@code session.timeout.ms} after their last heartbeat. The line's
     * {@code group_membership_on_close} says which.
     */
    static void closeAndEmitResult(final KafkaStreams streams, final AtomicLong restored,
                                   final Map<String, Object> contents) {
        final CloseOptions.GroupMembershipOperation operation =
            CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP.name().equals(System.getenv(CLOSE_ENV))
                ? CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP
                : CloseOptions.GroupMembershipOperation.LEAVE_GROUP;
        if (operation == CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP) {
            streams.close(Duration.ofSeconds(60));
        } else {
            streams.close(CloseOptions.groupMembershipOperation(operation).withTimeout(Duration.ofSeconds(60)));
        }
        emit(Map.of("event", "result", "restored", restored.get(), "store", contents,
            "state", streams.state().toString(), "group_membership_on_close", operation.name()));
    }
}
