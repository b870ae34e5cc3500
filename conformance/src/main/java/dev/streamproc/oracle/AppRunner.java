package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.DeserializationExceptionHandler;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.FailOnInvalidTimestamp;
import org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp;
import org.apache.kafka.streams.processor.WallclockTimestampExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Application-level oracle: one ordering scenario through a real {@link KafkaStreams} instance on a real broker.
 *
 * <p>Each run creates the scenario's topics under unique names ({@code spapp-<uuid>-<topic>}, partition counts from
 * the scenario), produces the records one send at a time (each record is its own batch, so small fetch sizes split
 * them), seeds committed partition times through the group's committed offset metadata (the real
 * {@link TopicPartitionMetadata} encoding, offset = the first record), then runs {@code KafkaStreams} with the
 * scenario's extractor, handlers and {@code max.task.idle.ms}, source {@code source} on every topic and the recording
 * processor {@code proc}, until the group has committed every partition's end offset (or the app failed, or a
 * bound elapsed). Results are reported with the scenario's topic names.
 *
 * <p>Transactional inputs ({@link OrderingInput}): records with a {@code txn} are written by one transactional
 * producer per transaction id and each {@code control} entry becomes a real commit or abort marker at its offset
 * (see {@code LogWriter}); {@code processing_guarantee}/{@code isolation_level} make the app read
 * {@code read_committed}; with {@code expected.committed_offsets} the group's offsets after the clean close are
 * reported.
 *
 * <p>What is ours, not Kafka's: the value deserializer that rejects a leading 0xFF byte (as {@link TaskRunner}),
 * {@code proc}, thin recording wrappers around the real extractor and handlers, and a consumer interceptor that
 * restores <em>negative</em> timestamps: {@code ProducerRecord} refuses a negative timestamp, so such records are
 * produced with timestamp 0 and the interceptor gives the consumer's record the scenario's timestamp back before
 * Kafka Streams sees it (a broker-stored negative timestamp is what an old client or a {@code -1}
 * {@code NO_TIMESTAMP} batch would give).
 *
 * <p>What a live run cannot show: {@code skip_steps} (a {@code CorruptedRecord} placeholder step touches no user
 * code), listed under {@code not_observable}. What it cannot fix: tie order, drop positions, punctuation timing and
 * wall-clock values depend on fetch boundaries and timing, so the runner repeats the scenario with different
 * {@code max.poll.records}/fetch sizes and prints the set of distinct results.
 */
final class AppRunner {
    static final String NOT_OBSERVABLE = "skip_steps";
    /** Kafka Streams' default {@code max.poll.records} (StreamsConfig overrides the consumer's 500). */
    static final int STREAMS_MAX_POLL_RECORDS = 1000;
    static final int CONSUMER_DEFAULT_FETCH_MAX_BYTES = 52_428_800;
    /** Run i uses entry i % length: Streams' defaults first, then one record per poll, one batch per fetch. */
    static final int[] MAX_POLL_SCHEDULE = {STREAMS_MAX_POLL_RECORDS, 1, STREAMS_MAX_POLL_RECORDS, 3};
    static final int[] FETCH_BYTES_SCHEDULE = {CONSUMER_DEFAULT_FETCH_MAX_BYTES, CONSUMER_DEFAULT_FETCH_MAX_BYTES, 1, 1};
    static final long RUN_TIMEOUT_MS = 90_000L;
    static final long POLL_COMMITTED_MS = 100L;
    static final long MARKER_TIMEOUT_MS = 30_000L;

    /** Live runs by application id; the stream thread's name ({@code <client.id>-StreamThread-1}) finds its run. */
    static final Map<String, Run> RUNS = new ConcurrentHashMap<>();
    /** Real topic name + partition + offset -> the scenario's negative timestamp, for the interceptor. */
    static final Map<String, Long> NEGATIVE_TIMESTAMPS = new ConcurrentHashMap<>();

    private AppRunner() {
    }

    static Run currentRun() {
        final String thread = Thread.currentThread().getName();
        for (final Map.Entry<String, Run> e : RUNS.entrySet()) {
            if (thread.startsWith(e.getKey())) {
                return e.getValue();
            }
        }
        throw new IllegalStateException("no app-level run for thread " + thread);
    }

    /** Runs the scenario {@code repeat} times (in parallel) and returns {@code results} (distinct) and {@code runs}. */
    static ObjectNode run(final String bootstrap, final JsonNode scenario, final Integer maxPollRecords,
                          final Integer fetchMaxBytes, final int repeat) throws Exception {
        final ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, repeat));
        final List<Future<ObjectNode>> futures = new ArrayList<>();
        final List<int[]> settings = new ArrayList<>();
        try {
            for (int i = 0; i < repeat; i++) {
                final int maxPoll = maxPollRecords != null ? maxPollRecords
                    : MAX_POLL_SCHEDULE[i % MAX_POLL_SCHEDULE.length];
                final int fetchBytes = fetchMaxBytes != null ? fetchMaxBytes
                    : FETCH_BYTES_SCHEDULE[i % FETCH_BYTES_SCHEDULE.length];
                settings.add(new int[] {maxPoll, fetchBytes});
                futures.add(pool.submit(() -> new Run(bootstrap, scenario, maxPoll, fetchBytes).execute()));
            }
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ArrayNode results = out.putArray("results");
            final ArrayNode runs = out.putArray("runs");
            final List<JsonNode> distinct = new ArrayList<>();
            for (int i = 0; i < futures.size(); i++) {
                final ObjectNode result = futures.get(i).get();
                final long millis = result.remove("_elapsed_ms").asLong();
                int index = distinct.indexOf(result);
                if (index < 0) {
                    distinct.add(result);
                    results.add(result);
                    index = distinct.size() - 1;
                }
                final ObjectNode r = runs.addObject();
                r.put("max_poll_records", settings.get(i)[0]);
                r.put("fetch_max_bytes", settings.get(i)[1]);
                r.put("result", index);
                r.put("elapsed_ms", millis);
            }
            out.putArray("not_observable").add(NOT_OBSERVABLE);
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    /** One live run of the scenario. */
    static final class Run {
        private final String bootstrap;
        private final JsonNode scenario;
        private final JsonNode config;
        private final int maxPollRecords;
        private final int fetchMaxBytes;
        final String appId = "spapp-" + UUID.randomUUID().toString().substring(0, 12);
        private final String prefix = appId + "-";

        // observations (written by the single stream thread, read after close)
        final ArrayNode order = Main.MAPPER.createArrayNode();
        final ArrayNode streamTimes = Main.MAPPER.createArrayNode();
        final ArrayNode dropped = Main.MAPPER.createArrayNode();
        final ArrayNode punctuationsFired = Main.MAPPER.createArrayNode();
        final ArrayNode extracted = Main.MAPPER.createArrayNode();
        final ArrayNode contexts = Main.MAPPER.createArrayNode();
        final Set<String> failProcessing = new HashSet<>();
        volatile ObjectNode pendingFailure;
        volatile ObjectNode processingFailure;
        volatile Throwable fatal;

        Run(final String bootstrap, final JsonNode scenario, final int maxPollRecords, final int fetchMaxBytes) {
            this.bootstrap = bootstrap;
            this.scenario = scenario;
            this.config = scenario.get("config");
            this.maxPollRecords = maxPollRecords;
            this.fetchMaxBytes = fetchMaxBytes;
        }

        String real(final String topic) {
            return prefix + topic;
        }

        String scenarioTopic(final String realTopic) {
            return realTopic.startsWith(prefix) ? realTopic.substring(prefix.length()) : realTopic;
        }

        ObjectNode execute() throws Exception {
            final long started = System.currentTimeMillis();
            RUNS.put(appId, this);
            final Path stateDir = Files.createTempDirectory("streamproc-app-oracle-");
            final Map<String, Object> adminProps = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin admin = Admin.create(adminProps)) {
                final Map<TopicPartition, Long> endOffsets = setUp(admin);
                final KafkaStreams streams = new KafkaStreams(topology(), streamsProps(stateDir));
                streams.setUncaughtExceptionHandler(e -> {
                    fatal = e;
                    return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
                long droppedMetric = -1;
                try {
                    streams.start();
                    awaitConsumed(admin, streams, endOffsets);
                    droppedMetric = droppedRecordsTotal(streams);
                } finally {
                    streams.close(Duration.ofSeconds(30));
                }
                if (fatal == null && droppedMetric != dropped.size()) {
                    System.err.println("[oracle app] " + appId + ": dropped-records-total is " + droppedMetric
                        + " but the oracle recorded " + dropped.size() + " drops");
                }
                final ObjectNode result = result();
                if (OrderingInput.wantsCommittedOffsets(scenario)) {
                    // What the group holds after the clean close (its last commit), with the scenario's names.
                    result.set(OrderingInput.COMMITTED_OFFSETS, OrderingInput.committedOffsets(scenario,
                        admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get(), this::real));
                }
                result.put("_elapsed_ms", System.currentTimeMillis() - started);
                tearDown(admin, endOffsets.keySet());
                return result;
            } finally {
                RUNS.remove(appId);
                deleteRecursively(stateDir);
            }
        }

        /** Topics, records and committed partition times; returns each partition's end offset. */
        private Map<TopicPartition, Long> setUp(final Admin admin) throws Exception {
            final Map<String, Integer> partitionCounts = new LinkedHashMap<>();
            for (final JsonNode p : scenario.get("partitions")) {
                partitionCounts.merge(p.get("topic").asText(), p.get("partition").asInt() + 1, Math::max);
            }
            final List<NewTopic> topics = new ArrayList<>();
            for (final Map.Entry<String, Integer> e : partitionCounts.entrySet()) {
                topics.add(new NewTopic(real(e.getKey()), e.getValue(), (short) 1));
            }
            admin.createTopics(topics).all().get();

            final Map<TopicPartition, Long> endOffsets = new LinkedHashMap<>();
            final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
            try (LogWriter writer = new LogWriter(admin)) {
                writer.write();
            }
            for (final JsonNode p : scenario.get("partitions")) {
                final TopicPartition tp = new TopicPartition(real(p.get("topic").asText()), p.get("partition").asInt());
                // The group commits a partition only once the task consumed a record of it (StreamTask
                // #commitNeeded, #committableOffsetsAndMetadata); then at the position after every marker.
                endOffsets.put(tp, OrderingInput.delivered(scenario, p).isEmpty() ? 0L : OrderingInput.endPosition(p));
                if (p.hasNonNull("committed_partition_time")) {
                    final String metadata = new TopicPartitionMetadata(p.get("committed_partition_time").asLong(),
                        new ProcessorMetadata()).encode();
                    committed.put(tp, new OffsetAndMetadata(0L, metadata));
                }
            }
            if (!committed.isEmpty()) {
                admin.alterConsumerGroupOffsets(appId, committed).all().get();
            }
            return endOffsets;
        }

        /**
         * Writes the scenario's partitions so that every entry lands at its offset: plain records through an
         * idempotent producer, records with a {@code txn} through one transactional producer per transaction id,
         * and each transaction's {@code control} entries by {@code commitTransaction}/{@code abortTransaction}
         * once every partition of the transaction has reached its marker (the broker writes the markers of all the
         * transaction's partitions then). Each record is sent and acknowledged alone (its own batch). Entries are
         * taken partition by partition in list order, the first partition whose next entry can go first.
         */
        private final class LogWriter implements AutoCloseable {
            private final Admin admin;
            private final Properties base = new Properties();
            private final ByteArraySerializer bytes = new ByteArraySerializer();
            private final KafkaProducer<byte[], byte[]> plain;
            private final Map<String, KafkaProducer<byte[], byte[]>> transactional = new LinkedHashMap<>();

            LogWriter(final Admin admin) {
                this.admin = admin;
                base.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                base.put(ProducerConfig.ACKS_CONFIG, "all");
                base.put(ProducerConfig.LINGER_MS_CONFIG, 0);
                plain = new KafkaProducer<>(base, bytes, bytes);
            }

            void write() throws Exception {
                final List<JsonNode> parts = new ArrayList<>();
                scenario.get("partitions").forEach(parts::add);
                final int[] next = new int[parts.size()];
                int remaining = 0;
                for (final JsonNode p : parts) {
                    remaining += p.get("records").size();
                }
                while (remaining > 0) {
                    boolean progressed = false;
                    for (int i = 0; i < parts.size() && !progressed; i++) {
                        final JsonNode records = parts.get(i).get("records");
                        if (next[i] >= records.size()) {
                            continue;
                        }
                        final JsonNode entry = records.get(next[i]);
                        if (!OrderingInput.isControl(entry)) {
                            send(parts.get(i), entry);
                            next[i]++;
                            remaining--;
                            progressed = true;
                        } else if (allAtMarker(parts, next, entry.get(OrderingInput.TXN).asText())) {
                            remaining -= endTransaction(parts, next, entry);
                            progressed = true;
                        }
                    }
                    if (!progressed) {
                        throw new IllegalArgumentException("the scenario's markers cannot be written in any order: "
                            + "each partition waits for a transaction that has records still to come elsewhere");
                    }
                }
            }

            private void send(final JsonNode p, final JsonNode r) throws Exception {
                final String topic = real(p.get("topic").asText());
                final int partition = p.get("partition").asInt();
                final long offset = r.get("offset").asLong();
                final long timestamp = r.get("timestamp").asLong();
                if (timestamp < 0) {
                    NEGATIVE_TIMESTAMPS.put(key(topic, partition, offset), timestamp);
                }
                if (r.path("fail_processing").asBoolean(false)) {
                    failProcessing.add(key(topic, partition, offset));
                }
                final KafkaProducer<byte[], byte[]> producer = r.hasNonNull(OrderingInput.TXN)
                    ? transaction(r.get(OrderingInput.TXN).asText()) : plain;
                final RecordMetadata meta = producer.send(new ProducerRecord<>(topic, partition,
                    Math.max(0L, timestamp), keyBytes(r), valueBytes(r), headers(r))).get();
                if (meta.offset() != offset) {
                    throw new IllegalStateException("produced " + topic + "-" + partition + " offset " + meta.offset()
                        + " but the scenario says " + offset + " (offsets start at 0, markers take one offset each)");
                }
            }

            private KafkaProducer<byte[], byte[]> transaction(final String txn) {
                return transactional.computeIfAbsent(txn, id -> {
                    final Properties props = new Properties();
                    props.putAll(base);
                    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, appId + "-txn-" + id);
                    final KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props, bytes, bytes);
                    producer.initTransactions();
                    producer.beginTransaction();
                    return producer;
                });
            }

            /** True when every partition holding a marker of {@code txn} has that marker as its next entry. */
            private boolean allAtMarker(final List<JsonNode> parts, final int[] next, final String txn) {
                for (int i = 0; i < parts.size(); i++) {
                    final JsonNode records = parts.get(i).get("records");
                    boolean hasMarker = false;
                    for (final JsonNode r : records) {
                        hasMarker |= OrderingInput.isControl(r) && txn.equals(r.get(OrderingInput.TXN).asText());
                    }
                    if (!hasMarker) {
                        continue;
                    }
                    final JsonNode head = next[i] < records.size() ? records.get(next[i]) : null;
                    if (head == null || !OrderingInput.isControl(head)
                        || !txn.equals(head.get(OrderingInput.TXN).asText())) {
                        return false;
                    }
                }
                return true;
            }

            /** Commits or aborts, waits until every marker is in its log at its offset; returns the markers. */
            private int endTransaction(final List<JsonNode> parts, final int[] next, final JsonNode marker)
                throws Exception {
                final String txn = marker.get(OrderingInput.TXN).asText();
                final KafkaProducer<byte[], byte[]> producer = transaction(txn);
                if (OrderingInput.ABORT.equals(marker.get(OrderingInput.CONTROL).asText())) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
                final Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                final Map<TopicPartition, Long> expected = new HashMap<>();
                int written = 0;
                for (int i = 0; i < parts.size(); i++) {
                    final JsonNode records = parts.get(i).get("records");
                    if (next[i] < records.size() && OrderingInput.isControl(records.get(next[i]))
                        && txn.equals(records.get(next[i]).get(OrderingInput.TXN).asText())) {
                        final TopicPartition tp = new TopicPartition(real(parts.get(i).get("topic").asText()),
                            parts.get(i).get("partition").asInt());
                        latest.put(tp, OffsetSpec.latest());
                        expected.put(tp, records.get(next[i]).get("offset").asLong() + 1);
                        next[i]++;
                        written++;
                    }
                }
                // The coordinator writes the markers after answering EndTxn; wait for them before the next write.
                final long deadline = System.currentTimeMillis() + MARKER_TIMEOUT_MS;
                while (true) {
                    boolean done = true;
                    for (final Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e
                        : admin.listOffsets(latest).all().get().entrySet()) {
                        final long end = e.getValue().offset();
                        if (end > expected.get(e.getKey())) {
                            throw new IllegalStateException("marker of " + txn + " in " + e.getKey() + " landed at "
                                + (end - 1) + " but the scenario says " + (expected.get(e.getKey()) - 1));
                        }
                        done &= end == expected.get(e.getKey());
                    }
                    if (done) {
                        return written;
                    }
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("markers of " + txn + " not written within "
                            + MARKER_TIMEOUT_MS + " ms: " + expected);
                    }
                    Thread.sleep(POLL_COMMITTED_MS);
                }
            }

            @Override
            public void close() {
                plain.close();
                transactional.values().forEach(KafkaProducer::close);
            }
        }

        private void tearDown(final Admin admin, final Set<TopicPartition> partitions) {
            final Set<String> topics = new LinkedHashSet<>();
            partitions.forEach(tp -> topics.add(tp.topic()));
            // The group stays: Kafka Streams' consumers do not leave it on close, so it is not empty until the
            // session times out; its name is unique and it holds nothing but offsets.
            try {
                admin.deleteTopics(topics).all().get();
            } catch (final Exception e) {
                System.err.println("[oracle app] could not delete topics " + topics + ": " + e);
            }
            NEGATIVE_TIMESTAMPS.keySet().removeIf(k -> k.startsWith(prefix));
        }

        private Topology topology() {
            final Set<String> topics = new LinkedHashSet<>();
            for (final JsonNode p : scenario.get("partitions")) {
                topics.add(real(p.get("topic").asText()));
            }
            final Topology topology = new Topology();
            topology.addSource(TaskRunner.SOURCE, new StringDeserializer(),
                new TaskRunner.RejectingStringDeserializer(), topics.toArray(new String[0]));
            topology.addProcessor(TaskRunner.PROC, () -> new AppProcessor(this), TaskRunner.SOURCE);
            return topology;
        }

        private Properties streamsProps(final Path stateDir) {
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            props.put(StreamsConfig.CLIENT_ID_CONFIG, appId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                config.path("processing_guarantee").asText(StreamsConfig.AT_LEAST_ONCE));
            if (OrderingInput.readCommitted(config)) {
                // exactly_once_v2 sets it itself; at_least_once takes the main consumer's override.
                props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG),
                    OrderingInput.READ_COMMITTED);
            }
            props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, config.path("max_task_idle_ms").asLong(0L));
            props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, AppTimestampExtractor.class);
            props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, AppDeserializationHandler.class);
            props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, AppProcessingHandler.class);
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), maxPollRecords);
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.FETCH_MAX_BYTES_CONFIG), fetchMaxBytes);
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG),
                Math.min(fetchMaxBytes, ConsumerConfig.DEFAULT_MAX_PARTITION_FETCH_BYTES));
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG),
                NegativeTimestampInterceptor.class.getName());
            return props;
        }

        /** Until the group committed every end offset, the app failed or stopped, or the bound elapsed. */
        private void awaitConsumed(final Admin admin, final KafkaStreams streams,
                                   final Map<TopicPartition, Long> endOffsets) throws Exception {
            final long deadline = System.currentTimeMillis() + RUN_TIMEOUT_MS;
            while (System.currentTimeMillis() < deadline) {
                if (fatal != null) {
                    return;
                }
                final KafkaStreams.State state = streams.state();
                if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING
                    || state == KafkaStreams.State.PENDING_ERROR) {
                    return;
                }
                final Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata().get();
                boolean done = true;
                for (final Map.Entry<TopicPartition, Long> e : endOffsets.entrySet()) {
                    if (e.getValue() == 0L) {
                        continue;
                    }
                    final OffsetAndMetadata c = committed.get(e.getKey());
                    if (c == null || c.offset() < e.getValue()) {
                        done = false;
                        break;
                    }
                }
                if (done) {
                    return;
                }
                Thread.sleep(POLL_COMMITTED_MS);
            }
            throw new IllegalStateException("app " + appId + " did not consume every input offset within "
                + RUN_TIMEOUT_MS + " ms (order so far: " + order + ")");
        }

        private ObjectNode result() {
            final ObjectNode out = Main.MAPPER.createObjectNode();
            out.set("order", order);
            out.set("stream_time_after_each", streamTimes);
            out.set("dropped", dropped);
            if (scenario.has("punctuations")) {
                out.set("punctuations_fired", punctuationsFired);
            }
            final JsonNode expected = scenario.path("expected");
            if (expected.has("extracted_timestamps")) {
                out.set("extracted_timestamps", extracted);
            }
            if (expected.has("record_contexts")) {
                out.set("record_contexts", contexts);
            }
            if (fatal != null) {
                out.set("error", describeError(fatal));
            }
            return out;
        }

        private ObjectNode describeError(final Throwable e) {
            final ObjectNode err = Main.MAPPER.createObjectNode();
            final ObjectNode cause = processingFailure != null ? processingFailure : pendingFailure;
            if (cause != null) {
                err.put("reason", cause.get("reason").asText());
                err.put("topic", cause.get("topic").asText());
                err.put("partition", cause.get("partition").asInt());
                err.put("offset", cause.get("offset").asLong());
                err.put("before_record_index", processingFailure != null ? order.size() - 1 : order.size());
            } else {
                err.put("reason", "unknown");
                err.put("before_record_index", order.size());
            }
            err.put("kafka_exception", e.getClass().getSimpleName());
            // Kafka's message names the real (prefixed) topic; report it with the scenario's names.
            final String message = e.getMessage() == null ? "" : e.getMessage().replace(prefix, "");
            err.put("kafka_message_prefix", message);
            final JsonNode expectedContains = scenario.path("expected").path("error").path("kafka_message_contains");
            if (expectedContains.isArray()) {
                final ArrayNode found = err.putArray("kafka_message_contains");
                for (final JsonNode c : expectedContains) {
                    if (message.contains(c.asText())) {
                        found.add(c.asText());
                    }
                }
            }
            System.err.println("[oracle app] " + appId + " failed: " + e);
            return err;
        }

        ObjectNode recordRef(final String reason, final String realTopic, final int partition, final long offset) {
            final ObjectNode n = Main.MAPPER.createObjectNode();
            n.put("reason", reason);
            n.put("topic", scenarioTopic(realTopic));
            n.put("partition", partition);
            n.put("offset", offset);
            return n;
        }

        void addDrop(final String realTopic, final int partition, final long offset, final String reason,
                     final String indexField, final int index) {
            final ObjectNode d = dropped.addObject();
            d.put("topic", scenarioTopic(realTopic));
            d.put("partition", partition);
            d.put("offset", offset);
            d.put("reason", reason);
            d.put(indexField, index);
        }

        private long droppedRecordsTotal(final KafkaStreams streams) {
            double total = 0;
            for (final Map.Entry<MetricName, ? extends Metric> m : streams.metrics().entrySet()) {
                final MetricName n = m.getKey();
                if (n.name().equals("dropped-records-total") && n.group().equals("stream-task-metrics")) {
                    total += ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
            return (long) total;
        }
    }

    static String key(final String realTopic, final int partition, final long offset) {
        return realTopic + "\u0000" + partition + "\u0000" + offset;
    }

    private static byte[] keyBytes(final JsonNode r) {
        return r.hasNonNull("key") ? r.get("key").asText().getBytes(StandardCharsets.UTF_8) : null;
    }

    private static byte[] valueBytes(final JsonNode r) {
        if (r.path("corrupt").asBoolean(false)) {
            return TaskRunner.CORRUPT_VALUE.clone();
        }
        return r.hasNonNull("value") ? r.get("value").asText().getBytes(StandardCharsets.UTF_8) : null;
    }

    private static RecordHeaders headers(final JsonNode r) {
        final RecordHeaders headers = new RecordHeaders();
        if (r.has("headers")) {
            r.get("headers").fields().forEachRemaining(h -> headers.add(h.getKey(),
                h.getValue().isNull() ? null : h.getValue().asText().getBytes(StandardCharsets.UTF_8)));
        }
        return headers;
    }

    private static void deleteRecursively(final Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ignored) {
            // a temp directory left behind is harmless
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Our parts: processor, recording wrappers, the negative-timestamp interceptor.

    /** {@code proc}: records metadata and stream time, schedules the scenario's punctuations, throws on request. */
    static final class AppProcessor implements Processor<String, String, Void, Void> {
        private final Run run;
        private ProcessorContext<Void, Void> context;

        AppProcessor(final Run run) {
            this.run = run;
        }

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            this.context = context;
            OrderingInput.schedulePunctuations(context, run.scenario, run.punctuationsFired, run.order::size);
        }

        @Override
        public void process(final Record<String, String> record) {
            final org.apache.kafka.streams.processor.api.RecordMetadata meta = context.recordMetadata().orElseThrow();
            final String topic = run.scenarioTopic(meta.topic());
            final ArrayNode o = run.order.addArray();
            o.add(topic);
            o.add(meta.partition());
            o.add(meta.offset());
            run.streamTimes.add(context.currentStreamTimeMs());
            final ObjectNode c = run.contexts.addObject();
            c.put("topic", topic);
            c.put("partition", meta.partition());
            c.put("offset", meta.offset());
            c.put("timestamp", record.timestamp());
            final ObjectNode h = c.putObject("headers");
            for (final Header header : record.headers()) {
                if (header.value() == null) {
                    h.putNull(header.key());
                } else {
                    h.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
                }
            }
            c.put("key", record.key());
            c.put("value", record.value());
            if (run.failProcessing.contains(key(meta.topic(), meta.partition(), meta.offset()))) {
                run.processingFailure = run.recordRef("processing_exception", meta.topic(), meta.partition(),
                    meta.offset());
                throw new RuntimeException("fail_processing: scenario asks proc to fail on " + topic + "-"
                    + meta.partition() + "@" + meta.offset());
            }
        }
    }

    /** Delegates to the scenario's real extractor (found through the stream thread's run) and notes each call. */
    public static final class AppTimestampExtractor implements TimestampExtractor {
        private final Map<String, TimestampExtractor> delegates = new ConcurrentHashMap<>();

        private static TimestampExtractor create(final String name) {
            return switch (name) {
                case "FailOnInvalidTimestamp" -> new FailOnInvalidTimestamp();
                case "LogAndSkipOnInvalidTimestamp" -> new LogAndSkipOnInvalidTimestamp();
                case "UsePartitionTimeOnInvalidTimestamp" -> new UsePartitionTimeOnInvalidTimestamp();
                // live: the real wall clock, so results differ between runs (D-4)
                case "WallclockTimestampExtractor" -> new WallclockTimestampExtractor();
                default -> throw new IllegalArgumentException("unknown timestamp_extractor " + name);
            };
        }

        private static String reasonOnThrow(final String name) {
            return switch (name) {
                case "FailOnInvalidTimestamp" -> "negative_timestamp";
                case "UsePartitionTimeOnInvalidTimestamp" -> "partition_time_unknown";
                default -> "extractor_exception";
            };
        }

        @Override
        public long extract(final ConsumerRecord<Object, Object> record, final long partitionTime) {
            final Run r = currentRun();
            final String name = r.config.path("timestamp_extractor").asText("FailOnInvalidTimestamp");
            final TimestampExtractor delegate = delegates.computeIfAbsent(name, AppTimestampExtractor::create);
            final long ts;
            try {
                ts = delegate.extract(record, partitionTime);
            } catch (final RuntimeException e) {
                r.pendingFailure = r.recordRef(reasonOnThrow(name), record.topic(), record.partition(),
                    record.offset());
                throw e;
            }
            final ObjectNode x = r.extracted.addObject();
            x.put("topic", r.scenarioTopic(record.topic()));
            x.put("partition", record.partition());
            x.put("offset", record.offset());
            x.put("partition_time_arg", partitionTime);
            x.put("timestamp", ts);
            if (ts < 0) {
                r.addDrop(record.topic(), record.partition(), record.offset(), "negative_timestamp",
                    "before_record_index", r.order.size());
            }
            return ts;
        }
    }

    /** Delegates to the real deserialization handler and notes RESUME drops and FAIL causes. */
    public static final class AppDeserializationHandler implements DeserializationExceptionHandler {
        private Map<String, ?> configs = Map.of();

        @Override
        public void configure(final Map<String, ?> configs) {
            this.configs = configs;
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final ConsumerRecord<byte[], byte[]> record,
                                    final Exception exception) {
            final Run r = currentRun();
            final String name = r.config.path("deserialization_exception_handler").asText("LogAndFailExceptionHandler");
            final DeserializationExceptionHandler delegate = switch (name) {
                case "LogAndFailExceptionHandler" -> new LogAndFailExceptionHandler();
                case "LogAndContinueExceptionHandler" -> new LogAndContinueExceptionHandler();
                default -> throw new IllegalArgumentException("unknown deserialization_exception_handler " + name);
            };
            delegate.configure(configs);
            final Response response = delegate.handleError(context, record, exception);
            if (response != null && response.result() == Result.RESUME) {
                r.addDrop(record.topic(), record.partition(), record.offset(), "deserialization",
                    "before_record_index", r.order.size());
            } else {
                r.pendingFailure = r.recordRef("deserialization", record.topic(), record.partition(), record.offset());
            }
            return response;
        }
    }

    /** Delegates to the real processing exception handler and notes RESUME drops. */
    public static final class AppProcessingHandler implements ProcessingExceptionHandler {
        private Map<String, ?> configs = Map.of();

        @Override
        public void configure(final Map<String, ?> configs) {
            this.configs = configs;
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final Record<?, ?> record,
                                    final Exception exception) {
            final Run r = currentRun();
            final String name = r.config.path("processing_exception_handler")
                .asText("LogAndFailProcessingExceptionHandler");
            final ProcessingExceptionHandler delegate = switch (name) {
                case "LogAndFailProcessingExceptionHandler" -> new LogAndFailProcessingExceptionHandler();
                case "LogAndContinueProcessingExceptionHandler" -> new LogAndContinueProcessingExceptionHandler();
                default -> throw new IllegalArgumentException("unknown processing_exception_handler " + name);
            };
            delegate.configure(configs);
            final Response response = delegate.handleError(context, record, exception);
            if (response != null && response.result() == Result.RESUME) {
                r.addDrop(context.topic(), context.partition(), context.offset(), "processing_exception",
                    "record_index", r.order.size() - 1);
                r.processingFailure = null;
            }
            return response;
        }
    }

    /**
     * Gives records the scenario's negative timestamp back (the producer cannot write one). Every other record
     * passes unchanged, in the same order, with the same offsets and next offsets.
     */
    public static final class NegativeTimestampInterceptor implements ConsumerInterceptor<byte[], byte[]> {
        @Override
        public ConsumerRecords<byte[], byte[]> onConsume(final ConsumerRecords<byte[], byte[]> records) {
            if (NEGATIVE_TIMESTAMPS.isEmpty() || records.isEmpty()) {
                return records;
            }
            final Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> out = new LinkedHashMap<>();
            boolean changed = false;
            for (final TopicPartition tp : records.partitions()) {
                final List<ConsumerRecord<byte[], byte[]>> list = new ArrayList<>();
                for (final ConsumerRecord<byte[], byte[]> rec : records.records(tp)) {
                    final Long ts = NEGATIVE_TIMESTAMPS.get(key(rec.topic(), rec.partition(), rec.offset()));
                    if (ts == null) {
                        list.add(rec);
                    } else {
                        changed = true;
                        list.add(new ConsumerRecord<>(rec.topic(), rec.partition(), rec.offset(), ts,
                            rec.timestampType(), rec.serializedKeySize(), rec.serializedValueSize(), rec.key(),
                            rec.value(), rec.headers(), rec.leaderEpoch(), rec.deliveryCount()));
                    }
                }
                out.put(tp, list);
            }
            return changed ? new ConsumerRecords<>(out, records.nextOffsets()) : records;
        }

        @Override
        public void onCommit(final Map<TopicPartition, OffsetAndMetadata> offsets) {
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(final Map<String, ?> configs) {
        }
    }
}
