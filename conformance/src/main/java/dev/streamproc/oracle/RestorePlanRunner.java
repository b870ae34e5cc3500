package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

/**
 * {@code restore_plan} scenarios answered by a real {@code KafkaStreams} application on a real broker.
 *
 * <p>The same source is compiled into both oracle jars: against Kafka Streams 4.2.2 (this project) and against
 * 4.3.1 ({@code ks43/runner}, which adds this one file to its sources), so it uses no other class of the project. Each
 * jar answers the scenarios whose {@code ks_version} is its own {@code major.minor} and calls the others
 * unsupported.
 *
 * <p>Per scenario (state.md §4-§5, scenarios README {@code restore_plan}):
 * <ol>
 *   <li>a fresh {@code application.id} {@code rp-<uuid>}; the changelog topic {@code <app>-<store>-changelog} (or,
 *   for a source-topic changelog, the source topic {@code <app>-<topic>}) with {@code p+1} partitions
 *   ({@code cleanup.policy=delete}, so that null keys are accepted and {@code DeleteRecords} works), and partition
 *   {@code p} filled so that its offsets are exactly the scenario's: padding below {@code log_start_offset} removed
 *   with {@code DeleteRecords}, committed data from a plain producer, each transaction marker written by
 *   {@code commitTransaction}/{@code abortTransaction} of a transactional producer whose records are the
 *   aborted offsets before the marker (abort) or the data run before it (commit). The layout is verified by
 *   {@code listOffsets} and a {@code read_uncommitted} and a {@code read_committed} scan before the app starts;
 *   a layout this cannot build exactly is refused ({@link UnsupportedOperationException}), never approximated;</li>
 *   <li>for a source-topic changelog the group's committed offset via {@code alterConsumerGroupOffsets};</li>
 *   <li>the task directory {@code <state.dir>/<app>/0_p}: when not empty, a real RocksDB database at
 *   {@code rocksdb/<store>} holding one sentinel key that no changelog holds; the {@code .checkpoint} written by
 *   Kafka's {@link OffsetCheckpoint} (an empty but present file is written by hand, since
 *   {@code OffsetCheckpoint.write} deletes the file for an empty map);</li>
 *   <li>{@code KafkaStreams} with the scenario's {@code processing.guarantee}, one store (Processor API store, or
 *   {@code table()} with {@code topology.optimization=reuse.ktable.source.topics}), a global
 *   {@link StateRestoreListener}, until the task is RUNNING; then the sentinel is read back by an interactive
 *   query and the app is closed.</li>
 * </ol>
 *
 * <p>Observations come from Kafka Streams' own log lines, read synchronously on the logging thread through a tee of
 * {@code System.err} (slf4j-simple prints there): {@code TaskCorruptedException} = StreamThread's "Detected the
 * states of tasks [..] are corrupted"; wipe = the task's "Wiping state stores for ACTIVE task .." (debug, from
 * {@code StateManagerUtil.closeStateManager}, cross-checked with the sentinel); checkpoint deleted at init = the
 * first initialisation ended ("Initialized state stores", logged right after
 * {@code ProcessorStateManager.initializeStoreOffsetsFromCheckpoint} returns, or the "did not find checkpoint offsets"
 * warning just before it throws {@code TaskCorruptedException}) and the file present before the start is gone at
 * that moment. Start, end and records restored are those of the last {@code onRestoreStart} of the
 * changelog partition and the {@code onRestoreEnd} that follows it; the task is RUNNING at its "Restored and ready to run"
 * ({@code StreamTask.completeRestoration}).
 */
public final class RestorePlanRunner {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    static final String OPERATION = "restore_plan";
    private static final String SENTINEL_KEY = "__streamproc_rp_sentinel__";
    private static final long RUNNING_TIMEOUT_MS = 120_000L;
    private static final int SCAN_TIMEOUT_MS = 30_000;
    /** Observations of the running scenarios, by application id (log lines carry it in their thread names). */
    private static final Map<String, Observations> RUNNING = new ConcurrentHashMap<>();
    private static volatile boolean teeInstalled;
    /** {@code poll.ms} of every app ({@code null}: Kafka Streams' default, 100 ms); the restore poll's timeout. */
    static volatile Long pollMs;

    private RestorePlanRunner() {
    }

    /**
     * {@code restore <bootstrap> <scenario.json>... [--parallel N] [--poll-ms MS]}: one JSON line per file, in
     * argument order ({@link LiveBatch}); the exit code. Both oracle jars' {@code main} hand the sub-command here.
     */
    public static int run(final String[] args) throws Exception {
        configureLogging();
        return LiveBatch.run("restore", args, Map.of("--poll-ms", value -> pollMs = Long.parseLong(value)),
            RestorePlanRunner::runFile);
    }

    /** {@code major.minor} of the Kafka Streams on the classpath: the {@code ks_version} this runner can answer. */
    static String runningMinorVersion() {
        final String[] parts = AppInfoParser.getVersion().split("\\.");
        return parts.length >= 2 ? parts[0] + "." + parts[1] : AppInfoParser.getVersion();
    }

    /** Loggers whose lines are the observations; set before any Kafka class creates its logger. */
    static void configureLogging() {
        final String prefix = "org.slf4j.simpleLogger.log.org.apache.kafka.streams.processor.internals.";
        System.setProperty(prefix + "StreamTask", "debug");
        System.setProperty(prefix + "ProcessorStateManager", "info");
        System.setProperty(prefix + "StoreChangelogReader", "info");
        System.setProperty(prefix + "DefaultStateUpdater", "info");
        installTee();
    }

    private static synchronized void installTee() {
        if (!teeInstalled) {
            System.setErr(new PrintStream(new LineTee(System.err), true, StandardCharsets.UTF_8));
            teeInstalled = true;
        }
    }

    static ObjectNode runFile(final String bootstrap, final String file) {
        final ObjectNode line = MAPPER.createObjectNode();
        line.put("file", file);
        try {
            final JsonNode scenario = MAPPER.readTree(new File(file));
            line.put("kind", scenario.path("kind").asText());
            line.put("id", scenario.path("id").asText());
            if (!"state".equals(scenario.path("kind").asText())
                || !OPERATION.equals(scenario.path("operation").asText())) {
                line.put("unsupported", "the restore mode answers state/restore_plan scenarios only");
                return line;
            }
            final String version = scenario.path("ks_version").asText("4.2");
            if (!version.equals(runningMinorVersion())) {
                line.put("unsupported", "needs Kafka Streams " + version + " (ks_version); this oracle jar runs "
                    + "Kafka Streams " + AppInfoParser.getVersion());
                return line;
            }
            final Scenario run = new Scenario(bootstrap, scenario);
            line.set("result", run.run());
            line.set("observations", run.observations.toJson());
        } catch (final UnsupportedOperationException e) {
            line.put("unsupported", e.getMessage());
        } catch (final Exception | AssertionError e) {
            System.err.println("[oracle restore] " + file + ":");
            e.printStackTrace(System.err);
            line.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
        }
        return line;
    }

    // ---------------------------------------------------------------------------------------------- observations

    /** What one app showed; written by Kafka Streams' threads (log lines, restore listener), read at the end. */
    static final class Observations {
        final String appId;
        final String taskId;
        final TopicPartition changelog;
        final Path checkpointFile;
        final boolean checkpointPresentAtStart;
        final CountDownLatch running = new CountDownLatch(1);
        final List<String> events = Collections.synchronizedList(new ArrayList<>());
        final List<long[]> restores = Collections.synchronizedList(new ArrayList<>());
        volatile String firstInit;
        volatile boolean deletedAtInit;
        volatile boolean corrupted;
        volatile boolean wiped;
        volatile Boolean sentinelPresent;
        volatile Throwable fatal;

        Observations(final String appId, final String taskId, final TopicPartition changelog, final Path checkpointFile,
                     final boolean checkpointPresentAtStart) {
            this.appId = appId;
            this.taskId = taskId;
            this.changelog = changelog;
            this.checkpointFile = checkpointFile;
            this.checkpointPresentAtStart = checkpointPresentAtStart;
        }

        void onLogLine(final String line) {
            final String taskTag = "task [" + taskId + "]";
            if (line.contains("did not find checkpoint offsets while stores are not empty") && line.contains(taskTag)) {
                final boolean exists = Files.exists(checkpointFile);
                event("init threw TaskCorruptedException (no checkpoint offset, stores not empty); .checkpoint "
                    + (exists ? "present" : "absent"));
                if (firstInit == null) {
                    firstInit = "corrupted";
                    // 4.2 throws before its EOS delete; 4.3 migrated and deleted the legacy file before this check
                    deletedAtInit = checkpointPresentAtStart && !exists;
                }
            } else if (line.contains("Initialized state stores") && line.contains(taskTag)) {
                final boolean exists = Files.exists(checkpointFile);
                event("initialized state stores; .checkpoint " + (exists ? "present" : "absent"));
                if (firstInit == null) {
                    firstInit = "ok";
                    deletedAtInit = checkpointPresentAtStart && !exists;
                }
            } else if (line.contains("Detected the states of tasks") && line.contains(taskId)) {
                event("TaskCorruptedException handled by the stream thread");
                corrupted = true;
            } else if (line.contains("Encountered task corrupted exception")) {
                // the task id is on the exception's line, not this one: the stream thread's line decides
                event("state updater: TaskCorruptedException");
            } else if (line.contains("Wiping state stores for") && line.contains("task " + taskId)) {
                event("wiped the task directory");
                wiped = true;
            } else if (line.contains("fetching records from restore consumer") && line.contains(changelog.toString())) {
                event("restore consumer: " + line.substring(line.indexOf("Encountered")).split(" fetching")[0]);
            } else if (line.contains("Restored and ready to run") && line.contains(taskTag)) {
                event("task RUNNING");
                running.countDown();
            }
        }

        void event(final String text) {
            events.add(text);
        }

        ObjectNode toJson() {
            final ObjectNode out = MAPPER.createObjectNode();
            out.put("application_id", appId);
            out.put("changelog_partition", changelog.toString());
            out.put("task", taskId);
            final ArrayNode restoreArray = out.putArray("restores");
            synchronized (restores) {
                for (final long[] r : restores) {
                    final ArrayNode entry = restoreArray.addArray();
                    for (final long v : r) {
                        entry.add(v);
                    }
                }
            }
            final ArrayNode eventArray = out.putArray("events");
            synchronized (events) {
                events.forEach(eventArray::add);
            }
            if (sentinelPresent == null) {
                out.putNull("sentinel_present");
            } else {
                out.put("sentinel_present", sentinelPresent);
            }
            return out;
        }
    }

    /** Splits what is printed on {@code System.err} into lines, hands them to the running scenarios, forwards WARN+. */
    static final class LineTee extends OutputStream {
        private final PrintStream target;
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        private boolean forwarding = true;

        LineTee(final PrintStream target) {
            this.target = target;
        }

        @Override
        public synchronized void write(final int b) {
            if (b == '\n') {
                flushLine();
            } else {
                buffer.write(b);
            }
        }

        @Override
        public synchronized void write(final byte[] bytes, final int off, final int len) {
            for (int i = off; i < off + len; i++) {
                write(bytes[i]);
            }
        }

        private void flushLine() {
            final String line = buffer.toString(StandardCharsets.UTF_8);
            buffer.reset();
            if (line.startsWith("[")) {
                forwarding = !(line.contains("] INFO ") || line.contains("] DEBUG ") || line.contains("] TRACE "));
                for (final Observations obs : RUNNING.values()) {
                    if (line.contains(obs.appId)) {
                        obs.onLogLine(line);
                    }
                }
            }
            if (forwarding) {
                target.println(line);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------- scenario

    private static final class Scenario {
        final String bootstrap;
        final JsonNode input;
        final String appId = "rp-" + UUID.randomUUID().toString().substring(0, 12);
        final String guarantee;
        final String storeName;
        final boolean persistent;
        final boolean logged;
        final boolean sourceTopicChangelog;
        final int partition;
        final String topic;
        final String inputTopic;
        final TopicPartition tp;
        final long logStart;
        final long logEnd;
        final Set<Long> control;
        final Set<Long> aborted;
        final Set<Long> nullKeys;
        Observations observations;

        Scenario(final String bootstrap, final JsonNode scenario) {
            this.bootstrap = bootstrap;
            this.input = scenario.path("input");
            guarantee = input.path("processing_guarantee").asText();
            final JsonNode store = input.path("store");
            storeName = store.path("name").asText();
            persistent = store.path("persistent").asBoolean();
            logged = store.path("logged").asBoolean();
            sourceTopicChangelog = store.path("source_topic_changelog").asBoolean(false);
            final String partitionText = input.path("changelog_partition").asText();
            final int dash = partitionText.lastIndexOf('-');
            partition = Integer.parseInt(partitionText.substring(dash + 1));
            if (sourceTopicChangelog) {
                topic = appId + "-" + partitionText.substring(0, dash);
                inputTopic = topic;
            } else {
                topic = appId + "-" + storeName + "-changelog";
                inputTopic = appId + "-input";
            }
            tp = new TopicPartition(topic, partition);
            final JsonNode cl = input.path("changelog");
            logStart = cl.path("log_start_offset").asLong();
            logEnd = cl.path("log_end_offset").asLong();
            control = longs(cl.path("control_offsets"));
            aborted = longs(cl.path("aborted_offsets"));
            nullKeys = longs(cl.path("null_key_offsets"));
        }

        private static Set<Long> longs(final JsonNode array) {
            final Set<Long> out = new TreeSet<>();
            array.forEach(n -> out.add(n.asLong()));
            return out;
        }

        ObjectNode run() throws Exception {
            final Path stateDir = Files.createTempDirectory("streamproc-rp-");
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                try {
                    createTopics(admin);
                    if (logged || sourceTopicChangelog) {
                        produceLayout(admin);
                    }
                    if (sourceTopicChangelog && !input.path("group_committed_offset").isNull()) {
                        final long committed = input.path("group_committed_offset").asLong();
                        admin.alterConsumerGroupOffsets(appId, Map.of(tp, new OffsetAndMetadata(committed)))
                            .all().get(30, TimeUnit.SECONDS);
                    }
                    final Path taskDir = stateDir.resolve(appId).resolve("0_" + partition);
                    Files.createDirectories(taskDir);
                    final boolean sentinel = prepareTaskDir(taskDir);
                    return runStreams(stateDir, taskDir, sentinel);
                } finally {
                    final List<String> topics = sourceTopicChangelog ? List.of(topic) : List.of(topic, inputTopic);
                    admin.deleteTopics(topics);
                }
            } finally {
                deleteRecursively(stateDir);
            }
        }

        private void createTopics(final Admin admin) throws Exception {
            final Map<String, String> configs = Map.of("cleanup.policy", "delete", "retention.ms", "-1");
            final List<NewTopic> topics = new ArrayList<>();
            topics.add(new NewTopic(topic, partition + 1, (short) 1).configs(configs));
            if (!sourceTopicChangelog) {
                topics.add(new NewTopic(inputTopic, partition + 1, (short) 1));
            }
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            BrokerTopics.awaitReady(admin, topics.stream().map(NewTopic::name).toList(), Duration.ofSeconds(30));
        }

        // ------------------------------------------------------------------------------------------- the log

        /** Offsets of each transaction's own records, keyed by its marker offset; checks the layout can be built. */
        private Map<Long, Set<Long>> transactions() {
            final Map<Long, Set<Long>> txns = new HashMap<>();
            final Set<Long> inTxn = new TreeSet<>();
            long previous = logStart - 1;
            for (final long marker : control) {
                if (marker < logStart || marker >= logEnd) {
                    throw new UnsupportedOperationException("control offset " + marker + " outside [log start "
                        + logStart + ", log end " + logEnd + ")");
                }
                final Set<Long> run = new TreeSet<>();
                boolean abort = false;
                for (long o = previous + 1; o < marker; o++) {
                    if (!control.contains(o)) {
                        run.add(o);
                        abort |= aborted.contains(o);
                    }
                }
                if (abort) {
                    run.retainAll(aborted);
                }
                if (run.isEmpty()) {
                    throw new UnsupportedOperationException("marker " + marker + " closes no records of its own "
                        + "(two markers in a row); this layout needs concurrent transactional producers");
                }
                txns.put(marker, run);
                inTxn.addAll(run);
                previous = marker;
            }
            for (final long o : aborted) {
                if (!inTxn.contains(o)) {
                    throw new UnsupportedOperationException("aborted record " + o + " has no abort marker after it "
                        + "before the next marker or the log end");
                }
            }
            return txns;
        }

        private void produceLayout(final Admin admin) throws Exception {
            final Map<Long, Set<Long>> txns = transactions();
            final Map<Long, Long> markerOf = new HashMap<>();
            txns.forEach((marker, records) -> records.forEach(o -> markerOf.put(o, marker)));
            final Properties common = new Properties();
            common.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            common.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            common.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            common.put(ProducerConfig.ACKS_CONFIG, "all");
            common.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            final Properties txnProps = new Properties();
            txnProps.putAll(common);
            txnProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, appId + "-layout");
            try (KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(common);
                 KafkaProducer<byte[], byte[]> txn = txns.isEmpty() ? null : new KafkaProducer<>(txnProps)) {
                if (txn != null) {
                    txn.initTransactions();
                }
                boolean open = false;
                for (long o = 0; o < logEnd; o++) {
                    if (control.contains(o)) {
                        plain.flush();
                        txn.flush();
                        if (aborted.containsAll(txns.get(o))) {
                            txn.abortTransaction();
                        } else {
                            txn.commitTransaction();
                        }
                        open = false;
                        // the coordinator writes markers after EndTxn returns: wait for this one before going on
                        awaitLogEnd(admin, o + 1);
                        continue;
                    }
                    final byte[] key = nullKeys.contains(o) ? null : ("k" + o).getBytes(StandardCharsets.UTF_8);
                    final byte[] value = ("v" + o).getBytes(StandardCharsets.UTF_8);
                    final ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, partition, key, value);
                    if (markerOf.containsKey(o)) {
                        plain.flush();
                        if (!open) {
                            txn.beginTransaction();
                            open = true;
                        }
                        txn.send(record).get();
                    } else {
                        if (txn != null) {
                            txn.flush();
                        }
                        plain.send(record).get();
                    }
                }
                plain.flush();
            }
            if (logStart > 0) {
                admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(logStart))).all().get(30, TimeUnit.SECONDS);
            }
            verifyLayout(admin);
        }

        private long listOffset(final Admin admin, final OffsetSpec spec) throws Exception {
            return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get(30, TimeUnit.SECONDS).offset();
        }

        private void awaitLogEnd(final Admin admin, final long expected) throws Exception {
            final long deadline = System.currentTimeMillis() + 30_000L;
            long end = listOffset(admin, OffsetSpec.latest());
            while (end < expected && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
                end = listOffset(admin, OffsetSpec.latest());
            }
            if (end != expected) {
                throw new IllegalStateException("log end of " + tp + " is " + end + " after the marker, expected "
                    + expected);
            }
        }

        private void verifyLayout(final Admin admin) throws Exception {
            final long start = listOffset(admin, OffsetSpec.earliest());
            final long end = listOffset(admin, OffsetSpec.latest());
            if (start != logStart || end != logEnd) {
                throw new IllegalStateException("built log [" + start + ", " + end + ") of " + tp + " differs from the "
                    + "scenario's [" + logStart + ", " + logEnd + ")");
            }
            final Set<Long> data = new TreeSet<>();
            for (long o = logStart; o < logEnd; o++) {
                if (!control.contains(o)) {
                    data.add(o);
                }
            }
            final Map<Long, Boolean> uncommitted = scan("read_uncommitted");
            final Set<Long> nullSeen = new TreeSet<>();
            uncommitted.forEach((o, isNull) -> {
                if (isNull) {
                    nullSeen.add(o);
                }
            });
            if (!uncommitted.keySet().equals(data) || !nullSeen.equals(nullKeysIn(logStart, logEnd))) {
                throw new IllegalStateException("read_uncommitted scan of " + tp + " saw records " + uncommitted.keySet()
                    + " (null keys " + nullSeen + "), expected " + data + " (null keys " + nullKeys + ")");
            }
            final Set<Long> committed = new TreeSet<>(data);
            committed.removeAll(aborted);
            final Map<Long, Boolean> readCommitted = scan("read_committed");
            if (!readCommitted.keySet().equals(committed)) {
                throw new IllegalStateException("read_committed scan of " + tp + " saw " + readCommitted.keySet()
                    + ", expected " + committed);
            }
        }

        private Set<Long> nullKeysIn(final long from, final long to) {
            final Set<Long> out = new TreeSet<>();
            nullKeys.stream().filter(o -> o >= from && o < to).forEach(out::add);
            return out;
        }

        /** Offset → key is null, for every record a consumer with this isolation level returns. */
        private Map<Long, Boolean> scan(final String isolation) {
            final Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            final Map<Long, Boolean> seen = new java.util.TreeMap<>();
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
                consumer.assign(List.of(tp));
                consumer.seek(tp, logStart);
                final long deadline = System.currentTimeMillis() + SCAN_TIMEOUT_MS;
                while (consumer.position(tp) < logEnd && System.currentTimeMillis() < deadline) {
                    for (final ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                        seen.put(r.offset(), r.key() == null);
                    }
                }
            }
            return seen;
        }

        // --------------------------------------------------------------------------------------- local state

        /** Write the task directory; true when a sentinel key was planted in a real store directory. */
        private boolean prepareTaskDir(final Path taskDir) throws Exception {
            boolean sentinel = false;
            if (!input.path("task_dir_empty").asBoolean()) {
                final Path db = taskDir.resolve("rocksdb").resolve(storeName);
                Files.createDirectories(db.getParent());
                RocksDB.loadLibrary();
                try (Options options = new Options().setCreateIfMissing(true);
                     RocksDB rocks = RocksDB.open(options, db.toString())) {
                    rocks.put(SENTINEL_KEY.getBytes(StandardCharsets.UTF_8), "x".getBytes(StandardCharsets.UTF_8));
                }
                sentinel = persistent;
            }
            final JsonNode checkpoint = input.path("checkpoint");
            final Path file = taskDir.resolve(".checkpoint");
            if (checkpoint.path("file_present").asBoolean()) {
                final JsonNode entry = checkpoint.path("entry");
                if (entry.isNull() || entry.isMissingNode()) {
                    // OffsetCheckpoint.write deletes the file for an empty map: version 0, no entries, by hand
                    Files.writeString(file, "0\n0\n", StandardCharsets.UTF_8);
                } else {
                    new OffsetCheckpoint(file.toFile()).write(Map.of(tp, entry.asLong()));
                }
            }
            return sentinel;
        }

        // ---------------------------------------------------------------------------------------------- the app

        private Topology topology(final Properties props) {
            if (sourceTopicChangelog) {
                final StreamsBuilder builder = new StreamsBuilder();
                Materialized<String, String, KeyValueStore<Bytes, byte[]>> materialized = persistent
                    ? Materialized.as(Stores.persistentTimestampedKeyValueStore(storeName))
                    : Materialized.as(Stores.inMemoryKeyValueStore(storeName));
                materialized = materialized.withCachingDisabled();
                if (!logged) {
                    materialized = materialized.withLoggingDisabled();
                }
                builder.table(inputTopic, Consumed.with(Serdes.String(), Serdes.String()), materialized);
                props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.REUSE_KTABLE_SOURCE_TOPICS);
                return builder.build(props);
            }
            StoreBuilder<KeyValueStore<String, String>> store = Stores.keyValueStoreBuilder(
                persistent ? Stores.persistentKeyValueStore(storeName) : Stores.inMemoryKeyValueStore(storeName),
                Serdes.String(), Serdes.String()).withCachingDisabled();
            store = logged ? store.withLoggingEnabled(Map.of()) : store.withLoggingDisabled();
            final String name = storeName;
            final Topology topology = new Topology();
            topology.addSource("source", Serdes.String().deserializer(), Serdes.String().deserializer(), inputTopic);
            topology.addProcessor("proc", () -> new Processor<String, String, Void, Void>() {
                private KeyValueStore<String, String> kv;

                @Override
                public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<Void, Void> context) {
                    kv = context.getStateStore(name);
                }

                @Override
                public void process(final Record<String, String> record) {
                    kv.put(record.key(), record.value());
                }
            }, "source");
            topology.addStateStore(store, "proc");
            return topology;
        }

        private ObjectNode runStreams(final Path stateDir, final Path taskDir, final boolean sentinel)
            throws Exception {
            final Path checkpointFile = taskDir.resolve(".checkpoint");
            observations = new Observations(appId, "0_" + partition, tp, checkpointFile, Files.exists(checkpointFile));
            final Observations obs = observations;
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            props.put(StreamsConfig.CLIENT_ID_CONFIG, appId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
            props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
            if (pollMs != null) {
                props.put(StreamsConfig.POLL_MS_CONFIG, pollMs);
            }
            final Topology topology = topology(props);
            RUNNING.put(appId, obs);
            final KafkaStreams streams = new KafkaStreams(topology, props);
            try {
                streams.setGlobalStateRestoreListener(new StateRestoreListener() {
                    @Override
                    public void onRestoreStart(final TopicPartition partition, final String store, final long start,
                                               final long end) {
                        if (partition.equals(tp)) {
                            obs.restores.add(new long[] {start, end, -1});
                            obs.event("onRestoreStart(" + start + ", " + end + ")");
                        }
                    }

                    @Override
                    public void onBatchRestored(final TopicPartition partition, final String store, final long last,
                                                final long count) {
                    }

                    @Override
                    public void onRestoreEnd(final TopicPartition partition, final String store, final long total) {
                        if (partition.equals(tp)) {
                            synchronized (obs.restores) {
                                if (!obs.restores.isEmpty()) {
                                    obs.restores.get(obs.restores.size() - 1)[2] = total;
                                }
                            }
                            obs.event("onRestoreEnd(" + total + ")");
                        }
                    }

                    @Override
                    public void onRestoreSuspended(final TopicPartition partition, final String store,
                                                   final long total) {
                        if (partition.equals(tp)) {
                            obs.event("onRestoreSuspended(" + total + ")");
                        }
                    }
                });
                streams.setUncaughtExceptionHandler(e -> {
                    obs.fatal = e;
                    obs.running.countDown();
                    return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
                streams.start();
                if (!obs.running.await(RUNNING_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("task 0_" + partition + " of " + appId + " did not reach RUNNING in "
                        + RUNNING_TIMEOUT_MS + " ms; events " + obs.events);
                }
                if (obs.fatal != null) {
                    throw new IllegalStateException("Kafka Streams failed: " + obs.fatal, obs.fatal);
                }
                if (sentinel) {
                    obs.sentinelPresent = readSentinel(streams);
                }
            } finally {
                streams.close(Duration.ofSeconds(60));
                RUNNING.remove(appId);
            }
            if (obs.sentinelPresent != null && obs.sentinelPresent == obs.wiped) {
                throw new IllegalStateException("the wipe log line (" + obs.wiped + ") disagrees with the sentinel key "
                    + "(present: " + obs.sentinelPresent + "); events " + obs.events);
            }
            return result(obs);
        }

        private boolean readSentinel(final KafkaStreams streams) throws InterruptedException {
            final long deadline = System.currentTimeMillis() + 30_000L;
            while (true) {
                try {
                    final ReadOnlyKeyValueStore<String, Object> store = streams.store(StoreQueryParameters
                        .fromNameAndType(storeName, QueryableStoreTypes.<String, Object>keyValueStore())
                        .withPartition(partition)
                        .enableStaleStores());
                    return store.get(SENTINEL_KEY) != null;
                } catch (final org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(50);
                }
            }
        }

        private ObjectNode result(final Observations obs) {
            final ObjectNode out = MAPPER.createObjectNode();
            out.put("task_corrupted", obs.corrupted);
            out.put("local_state_wiped", obs.wiped);
            out.put("checkpoint_deleted_at_init", obs.deletedAtInit);
            long[] last = null;
            synchronized (obs.restores) {
                if (!obs.restores.isEmpty()) {
                    last = obs.restores.get(obs.restores.size() - 1);
                }
            }
            if (last == null) {
                out.putNull("start_offset");
                out.putNull("restore_end_offset");
                out.put("records_restored", 0);
            } else {
                if (last[2] < 0) {
                    throw new IllegalStateException("the last restore of " + tp + " never ended; events " + obs.events);
                }
                out.put("start_offset", last[0]);
                out.put("restore_end_offset", last[1]);
                out.put("records_restored", last[2]);
            }
            return out;
        }
    }

    private static void deleteRecursively(final Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException e) {
            System.err.println("[oracle restore] could not delete " + root + ": " + e);
        }
    }
}
