package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.internals.AutoOffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.InternalTopicProperties;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.processor.internals.OracleInternals;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.StateDirectory;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.processor.internals.Task;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;
import org.apache.kafka.streams.state.internals.RocksDbWindowBytesStoreSupplier;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * State operations that need a live Kafka Streams 4.2 object in a given state, answered by that object:
 *
 * <ul>
 *   <li>{@code commit_offsets}: a real {@link StreamTask} ({@link StreamTaskHarness}) brought into the scenario's
 *       state (committed partition times and processor metadata restored from commit metadata, one record processed
 *       per processed partition, head records buffered, consumer positions and next offsets set), then
 *       {@code commitNeeded()} and {@code prepareCommit(true)}, as {@code TaskExecutor#commitTasksAndMaybeUpdate...}
 *       calls them.</li>
 *   <li>{@code partition_time}: the same task over one partition, committed partition time restored, the records
 *       processed (negative timestamps dropped by {@link LogAndSkipOnInvalidTimestamp} in {@code RecordQueue}),
 *       then {@code PartitionGroup#partitionTimestamp}.</li>
 *   <li>{@code purge_offsets}: a RUNNING (or SUSPENDED) task whose repartition sources are Kafka internal topics
 *       (decorated by {@code InternalTopologyBuilder}), {@code updateCommittedOffsets} as {@code TaskManager} does
 *       after a commit, then {@code purgeableOffsets()}.</li>
 *   <li>{@code register_stores}: a real {@link ProcessorStateManager} (changelog map from a real topology),
 *       {@code registerStore} per store in order (the innermost real store, as {@code ProcessorStateManagerTest}
 *       registers stores), then {@code changelogOffsets()} and a real {@code checkpoint()} read back.</li>
 *   <li>{@code store_layout}: the store inside a real task of the scenario's task id in a temporary
 *       {@code state.dir}, one put at {@code segment_timestamp}, clean close; then the directory tree, RocksDB's
 *       own {@code listColumnFamilies} and the column family that holds the entry.</li>
 * </ul>
 */
final class StateOpsRunner {
    private static final String SOURCE = "source";
    private static final String PROC = "proc";
    private static final String INPUT = "input";
    private static final byte[] KEY = "k".getBytes(StandardCharsets.UTF_8);
    private static final byte[] VALUE = "v".getBytes(StandardCharsets.UTF_8);
    /** {@code RecordQueue.UNKNOWN}. */
    private static final long UNKNOWN = -1L;

    private StateOpsRunner() {
    }

    // ---------------------------------------------------------------------------------------------------------
    // task set-up shared by commit_offsets, partition_time and purge_offsets

    private static StreamsConfig config(final String applicationId, final Path stateDir,
                                        final Map<String, Object> extra) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:0");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // Process whichever partition holds data (the scenarios describe a task's state, not a fetch race).
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, StreamsConfig.MAX_TASK_IDLE_MS_DISABLED);
        props.putAll(extra);
        return new StreamsConfig(props);
    }

    private static MockConsumer<byte[], byte[]> consumer(final List<TopicPartition> partitions) {
        final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(AutoOffsetResetStrategy.EARLIEST.name());
        consumer.assign(partitions);
        final Map<TopicPartition, Long> beginning = new HashMap<>();
        partitions.forEach(tp -> beginning.put(tp, 0L));
        consumer.updateBeginningOffsets(beginning);
        return consumer;
    }

    private static ConsumerRecord<byte[], byte[]> record(final TopicPartition tp, final long offset,
                                                         final long timestamp) {
        return new ConsumerRecord<>(tp.topic(), tp.partition(), offset, timestamp, TimestampType.CREATE_TIME,
            KEY.length, VALUE.length, KEY, VALUE, new RecordHeaders(), Optional.empty());
    }

    /** A processor that only counts what it is handed (the task's processing is what is observed). */
    private static final class CountingProcessor implements Processor<byte[], byte[], Void, Void> {
        private final int[] counter;

        CountingProcessor(final int[] counter) {
            this.counter = counter;
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            counter[0]++;
        }
    }

    /** Runs {@code task.process} until {@code expected} records reached the processor; fails if it stalls. */
    private static void processRecords(final StreamTask task, final int[] counter, final int expected) {
        int guard = 0;
        while (counter[0] < expected) {
            if (!task.process(0L) && ++guard > 3) {
                throw new IllegalStateException("StreamTask processed " + counter[0] + " of " + expected
                    + " records and is not processable");
            }
        }
    }

    private static void start(final StreamTask task) {
        task.initializeIfNeeded();
        task.completeRestoration(noReset -> { });
    }

    private static void close(final StreamTaskHarness h) {
        try {
            h.task.suspend();
            h.task.closeDirty();
        } catch (final RuntimeException ignored) {
            // nothing to release but files, which the caller deletes
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // commit_offsets

    static ObjectNode commitOffsets(final JsonNode input) throws Exception {
        final Map<TopicPartition, JsonNode> parts = new LinkedHashMap<>();
        input.get("partitions").fields().forEachRemaining(e -> parts.put(StateRunner.partition(e.getKey()),
            e.getValue()));
        final List<TopicPartition> partitions = new ArrayList<>(parts.keySet());
        final Set<String> topics = new LinkedHashSet<>();
        partitions.forEach(tp -> topics.add(tp.topic()));
        final boolean needsCommit = input.get("processor_metadata_needs_commit").asBoolean();
        final ProcessorMetadata committedProcessorMetadata = new ProcessorMetadata();
        if (!needsCommit) {
            // Unchanged since the last commit: the task restores it from the committed metadata.
            for (final JsonNode e : input.path("processor_metadata")) {
                committedProcessorMetadata.put(e.get("key").asText(), e.get("value").asLong());
            }
        }

        final MockConsumer<byte[], byte[]> consumer = consumer(partitions);
        final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
        for (final Map.Entry<TopicPartition, JsonNode> e : parts.entrySet()) {
            final JsonNode p = e.getValue();
            final long partitionTime = p.get("partition_time").asLong();
            final long start = firstOffset(p);
            if (partitionTime != UNKNOWN || !committedProcessorMetadata.equals(new ProcessorMetadata())) {
                committed.put(e.getKey(), new OffsetAndMetadata(start,
                    new TopicPartitionMetadata(partitionTime, committedProcessorMetadata).encode()));
            }
        }
        if (!committed.isEmpty()) {
            consumer.commitSync(committed);
        }

        final Path stateDir = Files.createTempDirectory("oracle-co-");
        final int[] processed = {0};
        final StreamTaskHarness h = StreamTaskHarness.build(config("oracle", stateDir, Map.of()), new TaskId(0, 0),
            partitions, consumer, Time.SYSTEM, new LogContext(), false, builder -> {
                builder.addSource(null, SOURCE, null, new ByteArrayDeserializer(), new ByteArrayDeserializer(),
                    topics.toArray(new String[0]));
                final ProcessorSupplier<byte[], byte[], Void, Void> proc = () -> new CountingProcessor(processed);
                builder.addProcessor(PROC, proc, SOURCE);
            });
        try {
            start(h.task);
            if (needsCommit) {
                // What a processor does through its context (ProcessorContextImpl#addProcessorMetadataKeyValue).
                for (final JsonNode e : input.path("processor_metadata")) {
                    h.context.addProcessorMetadataKeyValue(e.get("key").asText(), e.get("value").asLong());
                }
            }
            // One partition at a time, so the partition group processes exactly the record meant.
            for (final Map.Entry<TopicPartition, JsonNode> e : parts.entrySet()) {
                final JsonNode p = e.getValue();
                if (p.get("processed_any").asBoolean()) {
                    final long ts = p.get("partition_time").asLong();
                    if (ts < 0) {
                        throw new IllegalArgumentException(e.getKey() + ": processed_any with an unknown partition "
                            + "time is not a state a task can be in");
                    }
                    final long offset = p.hasNonNull("last_processed_offset") ? p.get("last_processed_offset").asLong()
                        : firstOffset(p);
                    h.task.addRecords(e.getKey(), List.of(record(e.getKey(), offset, ts)));
                    processRecords(h.task, processed, processed[0] + 1);
                }
            }
            for (final Map.Entry<TopicPartition, JsonNode> e : parts.entrySet()) {
                final JsonNode p = e.getValue();
                if (p.hasNonNull("head_buffered_offset")) {
                    final long ts = Math.max(0L, p.get("partition_time").asLong());
                    h.task.addRecords(e.getKey(), List.of(record(e.getKey(), p.get("head_buffered_offset").asLong(),
                        ts)));
                }
                if (p.hasNonNull("next_offset_to_consume")) {
                    final long next = p.get("next_offset_to_consume").asLong();
                    consumer.seek(e.getKey(), next);
                    // StreamThread hands ConsumerRecords#nextOffsets to the task after each poll.
                    h.task.updateNextOffsets(e.getKey(), new OffsetAndMetadata(next));
                }
            }
            // TaskExecutor#commitTasksAndMaybeUpdateCommittableOffsets: commitNeeded() first, then prepareCommit.
            final Map<TopicPartition, OffsetAndMetadata> offsets = h.task.commitNeeded()
                ? h.task.prepareCommit(true) : Map.of();
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode o = out.putObject("offsets");
            final Map<String, OffsetAndMetadata> sorted = new TreeMap<>();
            offsets.forEach((tp, om) -> sorted.put(tp.topic() + "-" + tp.partition(), om));
            sorted.forEach((tp, om) -> {
                final ObjectNode n = o.putObject(tp);
                n.put("offset", om.offset());
                n.put("metadata", om.metadata());
            });
            return out;
        } finally {
            close(h);
            deleteRecursively(stateDir);
        }
    }

    private static long firstOffset(final JsonNode p) {
        if (p.hasNonNull("last_processed_offset")) {
            return p.get("last_processed_offset").asLong();
        }
        if (p.hasNonNull("head_buffered_offset")) {
            return p.get("head_buffered_offset").asLong();
        }
        return 0L;
    }

    // ---------------------------------------------------------------------------------------------------------
    // partition_time

    static ObjectNode partitionTime(final JsonNode input) throws Exception {
        final TopicPartition tp = new TopicPartition(INPUT, 0);
        final List<TopicPartition> partitions = List.of(tp);
        final long committedTime = input.get("committed_partition_time").asLong();
        final MockConsumer<byte[], byte[]> consumer = consumer(partitions);
        if (committedTime != UNKNOWN) {
            consumer.commitSync(Map.of(tp, new OffsetAndMetadata(0L,
                new TopicPartitionMetadata(committedTime, new ProcessorMetadata()).encode())));
        }
        final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        long offset = 0;
        for (final JsonNode ts : input.get("processed_record_timestamps")) {
            records.add(record(tp, offset++, ts.asLong()));
        }
        final int toProcess = records.size();
        for (final JsonNode ts : input.get("dropped_record_timestamps")) {
            if (ts.asLong() >= 0) {
                throw new IllegalArgumentException("a dropped record needs a negative timestamp, got " + ts);
            }
            records.add(record(tp, offset++, ts.asLong()));
        }

        final Path stateDir = Files.createTempDirectory("oracle-pt-");
        final int[] processed = {0};
        final StreamTaskHarness h = StreamTaskHarness.build(
            config("oracle", stateDir, Map.of(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG,
                LogAndSkipOnInvalidTimestamp.class)),
            new TaskId(0, 0), partitions, consumer, Time.SYSTEM, new LogContext(), false, builder -> {
                builder.addSource(null, SOURCE, null, new ByteArrayDeserializer(), new ByteArrayDeserializer(), INPUT);
                final ProcessorSupplier<byte[], byte[], Void, Void> proc = () -> new CountingProcessor(processed);
                builder.addProcessor(PROC, proc, SOURCE);
            });
        try {
            start(h.task);
            if (!records.isEmpty()) {
                h.task.addRecords(tp, records);
            }
            processRecords(h.task, processed, toProcess);
            while (h.task.hasRecordsQueued()) {
                h.task.process(0L);
            }
            if (processed[0] != toProcess) {
                throw new IllegalStateException("processed " + processed[0] + " records, expected " + toProcess);
            }
            final ObjectNode out = Main.MAPPER.createObjectNode();
            out.put("partition_time", OracleInternals.partitionTime(h.task, tp));
            return out;
        } finally {
            close(h);
            deleteRecursively(stateDir);
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // purge_offsets

    static ObjectNode purgeOffsets(final JsonNode input) throws Exception {
        final String state = input.get("task_state").asText();
        if (!state.equals("RUNNING") && !state.equals("SUSPENDED")) {
            // TaskManager#maybePurgeCommittedRecords asks only the tasks it owns as running (activeRunningTaskIterable);
            // which tasks those are is TaskManager's bookkeeping, not a StreamTask answer.
            throw new UnsupportedOperationException("purge_offsets for a " + state + " task: TaskManager, not "
                + "StreamTask, decides which tasks are asked; the oracle answers RUNNING and SUSPENDED tasks only");
        }
        final Map<TopicPartition, Long> committed = new LinkedHashMap<>();
        input.get("task_committed_offsets").fields().forEachRemaining(e ->
            committed.put(StateRunner.partition(e.getKey()), e.getValue().asLong()));
        final List<String> repartitionTopics = new ArrayList<>();
        input.get("repartition_topics").forEach(t -> repartitionTopics.add(t.asText()));
        // Kafka names a repartition topic <application.id>-<name>; the builder decorates internal names with the
        // application id, so the scenario's topics are rebuilt from (prefix, rest).
        final String applicationId = applicationIdOf(repartitionTopics);
        final List<TopicPartition> partitions = new ArrayList<>(committed.keySet());
        final Set<String> topics = new LinkedHashSet<>();
        partitions.forEach(tp -> topics.add(tp.topic()));
        topics.addAll(repartitionTopics);

        final Path stateDir = Files.createTempDirectory("oracle-pg-");
        final StreamTaskHarness h = StreamTaskHarness.build(config(applicationId, stateDir, Map.of()),
            new TaskId(0, 0), partitions, consumer(partitions), Time.SYSTEM, new LogContext(), false, builder -> {
                final List<String> sources = new ArrayList<>();
                for (final String topic : topics) {
                    final String source = SOURCE + "-" + topic;
                    if (repartitionTopics.contains(topic)) {
                        final String internal = topic.substring(applicationId.length() + 1);
                        builder.addInternalTopic(internal, InternalTopicProperties.empty());
                        builder.addSource(null, source, null, new ByteArrayDeserializer(),
                            new ByteArrayDeserializer(), internal);
                    } else {
                        builder.addSource(null, source, null, new ByteArrayDeserializer(),
                            new ByteArrayDeserializer(), topic);
                    }
                    sources.add(source);
                }
                final ProcessorSupplier<byte[], byte[], Void, Void> proc = () -> new CountingProcessor(new int[1]);
                builder.addProcessor(PROC, proc, sources.toArray(new String[0]));
            });
        try {
            for (final String topic : repartitionTopics) {
                if (!OracleInternals.isRepartitionTopic(h.topology, topic)) {
                    throw new IllegalStateException("Kafka did not build " + topic + " as a repartition topic");
                }
            }
            start(h.task);
            if (state.equals("SUSPENDED")) {
                h.task.suspend();
            }
            // TaskManager#commitOffsetsOrTransaction: after a successful commit, each committed offset.
            committed.forEach(h.task::updateCommittedOffsets);
            final Map<String, Long> sorted = new TreeMap<>();
            h.task.purgeableOffsets().forEach((tp, off) -> sorted.put(tp.topic() + "-" + tp.partition(), off));
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode r = out.putObject("records_to_delete");
            sorted.forEach(r::put);
            return out;
        } finally {
            close(h);
            deleteRecursively(stateDir);
        }
    }

    private static String applicationIdOf(final List<String> repartitionTopics) {
        if (repartitionTopics.isEmpty()) {
            return "oracle";
        }
        final String first = repartitionTopics.get(0);
        final int dash = first.indexOf('-');
        if (dash <= 0) {
            throw new UnsupportedOperationException("repartition topic " + first + " is not <application.id>-<name>");
        }
        final String applicationId = first.substring(0, dash);
        for (final String t : repartitionTopics) {
            if (!t.startsWith(applicationId + "-")) {
                throw new UnsupportedOperationException("repartition topics " + repartitionTopics
                    + " do not share one application id");
            }
        }
        return applicationId;
    }

    // ---------------------------------------------------------------------------------------------------------
    // register_stores

    /** Thrown by {@link #registerStores} for an exception of {@code registerStore}; carries the stores so far. */
    static final class RegisterFailure extends Exception {
        RegisterFailure(final Throwable cause) {
            super(cause);
        }
    }

    static ObjectNode registerStores(final JsonNode input) throws Exception {
        final String applicationId = input.get("application_id").asText();
        final TaskId taskId = TaskId.parse(input.get("task").asText());
        final List<JsonNode> specs = new ArrayList<>();
        input.get("stores").forEach(specs::add);

        final Path stateDir = Files.createTempDirectory("oracle-rs-");
        try {
            final StreamsConfig config = config(applicationId, stateDir, Map.of());
            // The changelog map comes from a real topology: every distinct store connected to one processor,
            // logging on or off as the scenario says (InternalTopologyBuilder decorates changelog topics).
            final InternalTopologyBuilder builder = new InternalTopologyBuilder(
                new org.apache.kafka.streams.TopologyConfig(config));
            builder.addSource(null, SOURCE, null, new ByteArrayDeserializer(), new ByteArrayDeserializer(), INPUT);
            final ProcessorSupplier<byte[], byte[], Void, Void> proc = () -> new CountingProcessor(new int[1]);
            builder.addProcessor(PROC, proc, SOURCE);
            final Set<String> added = new LinkedHashSet<>();
            for (final JsonNode s : specs) {
                final String name = s.get("name").asText();
                if (added.add(name)) {
                    builder.addStateStore(kvBuilder(name, s.get("persistent").asBoolean(),
                        s.get("logged").asBoolean()), PROC);
                }
            }
            builder.rewriteTopology(config);
            final Map<String, String> storeToChangelogTopic = builder.buildTopology().storeToChangelogTopic();

            final StateDirectory stateDirectory = new StateDirectory(config, Time.SYSTEM, true, false);
            final ProcessorStateManager stateManager = new ProcessorStateManager(taskId, Task.TaskType.ACTIVE, false,
                new LogContext(), stateDirectory, new TaskRunner.NoChangelogRegister(), storeToChangelogTopic,
                Set.of(new TopicPartition(INPUT, taskId.partition())), false);
            for (final JsonNode s : specs) {
                final StateStore store = innerStore(s.get("name").asText(), s.get("persistent").asBoolean());
                try {
                    stateManager.registerStore(store, (k, v) -> { }, () -> { });
                } catch (final RuntimeException e) {
                    throw new RegisterFailure(e);
                }
            }
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode changelogs = out.putObject("changelog_partitions");
            final Map<TopicPartition, String> storeOf = new HashMap<>();
            final Map<String, String> sorted = new TreeMap<>();
            for (final TopicPartition tp : stateManager.changelogOffsets().keySet()) {
                for (final String name : added) {
                    if (tp.topic().equals(stateManager.changelogFor(name))) {
                        sorted.put(name, tp.topic() + "-" + tp.partition());
                        storeOf.put(tp, name);
                    }
                }
            }
            sorted.forEach(changelogs::put);
            // ProcessorStateManager#checkpoint writes one entry per checkpointed store: read the real file back.
            stateManager.checkpoint();
            final File checkpoint = OracleInternals.checkpointFileFor(stateDirectory, taskId);
            final Set<String> checkpointed = new LinkedHashSet<>();
            for (final TopicPartition tp : new OffsetCheckpoint(checkpoint).read().keySet()) {
                checkpointed.add(storeOf.get(tp));
            }
            final ArrayNode stores = out.putArray("checkpointed_stores");
            for (final String name : added) {
                if (checkpointed.contains(name)) {
                    stores.add(name);
                }
            }
            stateManager.close();
            return out;
        } finally {
            deleteRecursively(stateDir);
        }
    }

    private static StoreBuilder<KeyValueStore<byte[], byte[]>> kvBuilder(final String name, final boolean persistent,
                                                                          final boolean logged) {
        final StoreBuilder<KeyValueStore<byte[], byte[]>> b = Stores.keyValueStoreBuilder(
            persistent ? Stores.persistentKeyValueStore(name) : Stores.inMemoryKeyValueStore(name),
            Serdes.ByteArray(), Serdes.ByteArray());
        return logged ? b.withLoggingEnabled(Map.of()) : b.withLoggingDisabled();
    }

    /** The innermost bytes store of the kind (a RocksDBStore or InMemoryKeyValueStore, not opened). */
    private static StateStore innerStore(final String name, final boolean persistent) {
        return persistent ? Stores.persistentKeyValueStore(name).get() : Stores.inMemoryKeyValueStore(name).get();
    }

    // ---------------------------------------------------------------------------------------------------------
    // store_layout

    static ObjectNode storeLayout(final JsonNode input) throws Exception {
        final String applicationId = input.get("application_id").asText();
        final TaskId taskId = TaskId.parse(input.get("task").asText());
        final String storeName = input.get("store_name").asText();
        final String storeType = input.get("store_type").asText();
        final boolean segmented = storeType.equals("window") || storeType.equals("timestamped_window")
            || storeType.equals("session");
        final long timestamp = input.hasNonNull("segment_timestamp") ? input.get("segment_timestamp").asLong() : 0L;
        final Long retention = input.hasNonNull("retention_ms") ? input.get("retention_ms").asLong() : null;
        final Long segmentInterval = input.hasNonNull("segment_interval_ms")
            ? input.get("segment_interval_ms").asLong() : null;
        if (segmented && retention == null) {
            throw new IllegalArgumentException("store_layout of a " + storeType + " store needs retention_ms");
        }

        final long[] supplierSegmentInterval = {-1L};
        final StoreBuilder<?> storeBuilder;
        switch (storeType) {
            case "key_value" -> storeBuilder = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(storeName),
                Serdes.ByteArray(), Serdes.ByteArray());
            case "timestamped_key_value" -> storeBuilder = Stores.timestampedKeyValueStoreBuilder(
                Stores.persistentTimestampedKeyValueStore(storeName), Serdes.ByteArray(), Serdes.ByteArray());
            case "window", "timestamped_window" -> {
                final boolean timestamped = storeType.equals("timestamped_window");
                final WindowBytesStoreSupplier supplier;
                if (segmentInterval == null) {
                    supplier = timestamped
                        ? Stores.persistentTimestampedWindowStore(storeName, Duration.ofMillis(retention),
                            Duration.ofMillis(1), false)
                        : Stores.persistentWindowStore(storeName, Duration.ofMillis(retention), Duration.ofMillis(1),
                            false);
                } else {
                    // Kafka's public Stores API has no segment interval; its own supplier takes one.
                    supplier = new RocksDbWindowBytesStoreSupplier(storeName, retention, segmentInterval, 1L, false,
                        timestamped);
                }
                supplierSegmentInterval[0] = supplier.segmentIntervalMs();
                storeBuilder = timestamped
                    ? Stores.timestampedWindowStoreBuilder(supplier, Serdes.ByteArray(), Serdes.ByteArray())
                    : Stores.windowStoreBuilder(supplier, Serdes.ByteArray(), Serdes.ByteArray());
            }
            case "session" -> {
                final SessionBytesStoreSupplier supplier = Stores.persistentSessionStore(storeName,
                    Duration.ofMillis(retention));
                if (segmentInterval != null && segmentInterval != supplier.segmentIntervalMs()) {
                    throw new UnsupportedOperationException("Kafka Streams 4.2 has no session store with a chosen "
                        + "segment interval (RocksDbSessionBytesStoreSupplier derives it from the retention)");
                }
                supplierSegmentInterval[0] = supplier.segmentIntervalMs();
                storeBuilder = Stores.sessionStoreBuilder(supplier, Serdes.ByteArray(), Serdes.ByteArray());
            }
            default -> throw new IllegalArgumentException("unknown store_type " + storeType);
        }
        storeBuilder.withCachingDisabled();

        final Path base = Files.createTempDirectory("oracle-ly-");
        final Path stateDir = base.resolve("state");
        final TopicPartition tp = new TopicPartition(INPUT, taskId.partition());
        final List<TopicPartition> partitions = List.of(tp);
        final StreamTaskHarness h = StreamTaskHarness.build(config(applicationId, stateDir, Map.of()), taskId,
            partitions, consumer(partitions), Time.SYSTEM, new LogContext(), true, builder -> {
                builder.addSource(null, SOURCE, null, new ByteArrayDeserializer(), new ByteArrayDeserializer(), INPUT);
                final ProcessorSupplier<byte[], byte[], Void, Void> proc = () -> new PuttingProcessor(storeName,
                    storeType, timestamp, input);
                builder.addProcessor(PROC, proc, SOURCE);
                builder.addStateStore(storeBuilder, PROC);
            });
        try {
            start(h.task);
            h.task.addRecords(tp, List.of(record(tp, 0L, timestamp)));
            while (h.task.hasRecordsQueued()) {
                h.task.process(0L);
            }
            // A clean close as TaskManager does it: suspend, commit, checkpoint, close.
            h.task.suspend();
            h.task.prepareCommit(true);
            h.task.postCommit(true);
            h.task.closeClean();

            final Path taskDir = stateDir.resolve(applicationId).resolve(taskId.toString());
            final List<Path> dbs;
            try (Stream<Path> walk = Files.walk(taskDir)) {
                dbs = walk.filter(p -> Files.isRegularFile(p.resolve("CURRENT"))).sorted().toList();
            }
            if (dbs.size() != 1) {
                throw new IllegalStateException("expected one RocksDB under " + taskDir + ", found " + dbs);
            }
            final Path db = dbs.get(0);
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final String shownStateDir = input.get("state_dir").asText();
            if (segmented) {
                final String dirName = db.getFileName().toString();
                final long segmentStart = Long.parseLong(dirName.substring(dirName.lastIndexOf('.') + 1));
                final long interval = supplierSegmentInterval[0];
                if (segmentStart % interval != 0) {
                    throw new IllegalStateException("segment " + dirName + " is not a multiple of " + interval);
                }
                out.put("segment_interval_ms", interval);
                out.put("segment_id", segmentStart / interval);
            }
            out.put("db_path", shownStateDir + "/" + stateDir.relativize(db));
            final List<String> families = new ArrayList<>();
            try (Options options = new Options()) {
                for (final byte[] cf : RocksDB.listColumnFamilies(options, db.toString())) {
                    families.add(new String(cf, StandardCharsets.UTF_8));
                }
            }
            final ArrayNode cfs = out.putArray("column_families");
            families.forEach(cfs::add);
            out.put("data_column_family", columnFamilyHolding(db, families));
            if (!segmented) {
                final File checkpoint = OracleInternals.checkpointFileFor(h.stateDirectory, taskId);
                if (!checkpoint.isFile()) {
                    throw new IllegalStateException("no checkpoint written at " + checkpoint);
                }
                out.put("checkpoint_path", shownStateDir + "/" + stateDir.relativize(checkpoint.toPath()));
            }
            return out;
        } finally {
            try {
                h.task.closeDirty();
            } catch (final RuntimeException ignored) {
                // already closed
            }
            deleteRecursively(base);
        }
    }

    /** The one column family of the closed database that holds the put entry. */
    private static String columnFamilyHolding(final Path db, final List<String> families) throws Exception {
        final List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        for (final String f : families) {
            descriptors.add(new ColumnFamilyDescriptor(f.getBytes(StandardCharsets.UTF_8)));
        }
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        final List<String> holding = new ArrayList<>();
        try (DBOptions options = new DBOptions();
             RocksDB rocks = RocksDB.openReadOnly(options, db.toString(), descriptors, handles)) {
            for (int i = 0; i < handles.size(); i++) {
                try (RocksIterator it = rocks.newIterator(handles.get(i))) {
                    it.seekToFirst();
                    if (it.isValid()) {
                        holding.add(families.get(i));
                    }
                }
            }
            handles.forEach(ColumnFamilyHandle::close);
        }
        if (holding.size() != 1) {
            throw new IllegalStateException("expected the entry in one column family, found it in " + holding);
        }
        return holding.get(0);
    }

    /** Puts one entry into the store at the scenario's timestamp (window start / session end). */
    private static final class PuttingProcessor implements Processor<byte[], byte[], Void, Void> {
        private final String storeName;
        private final String storeType;
        private final long timestamp;
        private final JsonNode input;
        private ProcessorContext<Void, Void> context;

        PuttingProcessor(final String storeName, final String storeType, final long timestamp, final JsonNode input) {
            this.storeName = storeName;
            this.storeType = storeType;
            this.timestamp = timestamp;
            this.input = input;
        }

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            this.context = context;
        }

        @Override
        @SuppressWarnings("unchecked")
        public void process(final Record<byte[], byte[]> record) {
            final StateStore store = context.getStateStore(storeName);
            switch (storeType) {
                case "key_value" -> ((KeyValueStore<byte[], byte[]>) store).put(KEY, VALUE);
                case "timestamped_key_value" -> ((TimestampedKeyValueStore<byte[], byte[]>) store).put(KEY,
                    ValueAndTimestamp.make(VALUE, timestamp));
                case "window" -> ((WindowStore<byte[], byte[]>) store).put(KEY, VALUE, timestamp);
                case "timestamped_window" -> ((TimestampedWindowStore<byte[], byte[]>) store).put(KEY,
                    ValueAndTimestamp.make(VALUE, timestamp), timestamp);
                case "session" -> {
                    // Starts at 0 so that a segment chosen by the start would show in another directory.
                    final long start = input.hasNonNull("session_start") ? input.get("session_start").asLong() : 0L;
                    ((SessionStore<byte[], byte[]>) store).put(new Windowed<>(KEY, new SessionWindow(start,
                        timestamp)), VALUE);
                }
                default -> throw new IllegalArgumentException("unknown store_type " + storeType);
            }
        }
    }

    private static void deleteRecursively(final Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ignored) {
            // a temp directory left behind is harmless
        }
    }
}
