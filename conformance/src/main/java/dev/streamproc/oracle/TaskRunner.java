package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.internals.AutoOffsetResetStrategy;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.DeserializationExceptionHandler;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.processor.FailOnInvalidTimestamp;
import org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.ChangelogRegister;
import org.apache.kafka.streams.processor.internals.ProcessorContextImpl;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.ProcessorTopology;
import org.apache.kafka.streams.processor.internals.RecordCollectorImpl;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.processor.internals.Task;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Task-level oracle: replays one ordering scenario through a real Kafka Streams 4.2 {@link StreamTask} built on a
 * real {@link ProcessorTopology}, constructed the way {@code TopologyTestDriver#setupTask} does it (real
 * {@code PartitionGroup}/{@code RecordQueue}/{@code RecordDeserializer}/{@code PunctuationQueue}, real
 * {@code ProcessorContextImpl}, {@code ProcessorStateManager}, {@code RecordCollectorImpl}, metrics), with a
 * {@link MockConsumer} as main consumer (committed offsets carry the scenario's restored partition times, encoded
 * with the real {@link TopicPartitionMetadata}).
 *
 * <p>What is ours, not Kafka's: the frozen {@link FrozenTime} clock; the value deserializer that rejects a leading
 * 0xFF byte; the processor {@code proc}; thin recording wrappers around the real extractor and the real handlers
 * (they delegate and return the delegate's answer unchanged, and only note what happened); and, for
 * {@code WallclockTimestampExtractor}, a stand-in that returns the frozen clock (the real one reads
 * {@code System.currentTimeMillis()}, which cannot be frozen).
 *
 * <p>Stepping follows ordering.md section 9.1: restore (commit metadata), init (schedules), one stream-time
 * punctuation check (D-5; a no-op while stream time is unknown), add every partition once in list order (D-1), then
 * {@code process} + {@code maybePunctuateStreamTime} + {@code maybePunctuateSystemTime} per step (D-3, D-4).
 */
final class TaskRunner {
    static final TaskId TASK_ID = new TaskId(0, 0);
    static final String SOURCE = "source";
    static final String PROC = "proc";
    /** The scenario's corrupt value bytes (scenarios README, ordering/). */
    static final byte[] CORRUPT_VALUE = {(byte) 0xFF, (byte) 0x01};

    /** Everything the wrappers and {@code proc} observe. Static because Kafka instantiates handlers by class. */
    static final class Recorder {
        static TaskRunner current;
    }

    private final JsonNode scenario;
    private final JsonNode config;
    private final long wallClockMs;
    private final long maxTaskIdleMs;
    private final FrozenTime time;

    // observations
    final ArrayNode order = Main.MAPPER.createArrayNode();
    final ArrayNode streamTimes = Main.MAPPER.createArrayNode();
    final ArrayNode dropped = Main.MAPPER.createArrayNode();
    final ArrayNode skipSteps = Main.MAPPER.createArrayNode();
    final ArrayNode punctuationsFired = Main.MAPPER.createArrayNode();
    final ArrayNode extracted = Main.MAPPER.createArrayNode();
    final ArrayNode contexts = Main.MAPPER.createArrayNode();
    final Set<String> failProcessing = new HashSet<>();
    /** The fatal cause seen by a wrapper in the current step (reason + record), if any. */
    ObjectNode pendingFailure;
    /** Set while {@code proc} is throwing for a {@code fail_processing} record. */
    ObjectNode processingFailure;

    TaskRunner(final JsonNode scenario) {
        this.scenario = scenario;
        this.config = scenario.get("config");
        this.wallClockMs = config.has("virtual_wall_clock_ms") ? config.get("virtual_wall_clock_ms").asLong() : 0L;
        this.maxTaskIdleMs = config.has("max_task_idle_ms") ? config.get("max_task_idle_ms").asLong() : 0L;
        this.time = new FrozenTime(wallClockMs);
    }

    static String key(final String topic, final int partition, final long offset) {
        return topic + "\u0000" + partition + "\u0000" + offset;
    }

    ObjectNode run() throws Exception {
        Recorder.current = this;
        final List<TopicPartition> partitions = new ArrayList<>();
        final Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> records = new HashMap<>();
        final Map<TopicPartition, Long> committedTimes = new HashMap<>();
        final Set<String> topics = new LinkedHashSet<>();
        for (final JsonNode p : scenario.get("partitions")) {
            final TopicPartition tp = new TopicPartition(p.get("topic").asText(), p.get("partition").asInt());
            partitions.add(tp);
            topics.add(tp.topic());
            if (p.hasNonNull("committed_partition_time")) {
                committedTimes.put(tp, p.get("committed_partition_time").asLong());
            }
            final List<ConsumerRecord<byte[], byte[]>> list = new ArrayList<>();
            // Only what the consumer returns: no control markers, no aborted records under read_committed.
            for (final JsonNode r : OrderingInput.delivered(scenario, p)) {
                list.add(toConsumerRecord(tp, r));
                if (r.path("fail_processing").asBoolean(false)) {
                    failProcessing.add(key(tp.topic(), tp.partition(), r.get("offset").asLong()));
                }
            }
            records.put(tp, list);
        }

        final Path stateDir = Files.createTempDirectory("streamproc-oracle-");
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "streamproc-oracle");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:0");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, maxTaskIdleMs);
        props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, RecordingTimestampExtractor.class);
        props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, RecordingDeserializationHandler.class);
        props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, RecordingProcessingHandler.class);
        props.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "DEBUG");
        final StreamsConfig streamsConfig = new StreamsConfig(props);

        final LogContext logContext = new LogContext("oracle ");
        final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(AutoOffsetResetStrategy.EARLIEST.name());
        consumer.assign(partitions);
        final Map<TopicPartition, Long> beginning = new HashMap<>();
        for (final TopicPartition tp : partitions) {
            final List<ConsumerRecord<byte[], byte[]>> list = records.get(tp);
            beginning.put(tp, list.isEmpty() ? 0L : list.get(0).offset());
        }
        consumer.updateBeginningOffsets(beginning);
        if (!committedTimes.isEmpty()) {
            final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
            for (final Map.Entry<TopicPartition, Long> e : committedTimes.entrySet()) {
                final String metadata = new TopicPartitionMetadata(e.getValue(), new ProcessorMetadata()).encode();
                committed.put(e.getKey(), new OffsetAndMetadata(beginning.get(e.getKey()), metadata));
            }
            consumer.commitSync(committed);
        }

        // Source `source` on every topic (String key, corrupt-rejecting String value) -> `proc`.
        final StreamTaskHarness harness = StreamTaskHarness.build(streamsConfig, TASK_ID, partitions, consumer, time,
            logContext, false, builder -> {
                builder.addSource(null, SOURCE, null, new StringDeserializer(), new RejectingStringDeserializer(),
                    topics.toArray(new String[0]));
                final org.apache.kafka.streams.processor.api.ProcessorSupplier<String, String, Void, Void> proc =
                    () -> new RecordingProcessor(this);
                builder.addProcessor(PROC, proc, SOURCE);
            });
        final Metrics metrics = harness.metrics;
        final StreamTask task = harness.task;

        ObjectNode error = null;
        ArrayNode committedOffsets = null;
        long droppedMetric;
        try {
            // ST-8: restore partition times from the committed metadata, then init the topology (schedules).
            task.initializeIfNeeded();
            task.completeRestoration(noReset -> { });
            // D-5: one stream-time check before the first record (no-op while stream time is unknown).
            task.maybePunctuateStreamTime();
            // D-1: every partition once, in list order, before the first step.
            for (final TopicPartition tp : partitions) {
                if (!records.get(tp).isEmpty()) {
                    task.addRecords(tp, records.get(tp));
                }
            }
            if (OrderingInput.wantsCommittedOffsets(scenario)) {
                // What the poll that returned these records tells the task (StreamThread#pollPhase): the consumer's
                // position after the whole partition, past trailing markers and aborted records.
                for (final JsonNode p : scenario.get("partitions")) {
                    final TopicPartition tp = new TopicPartition(p.get("topic").asText(), p.get("partition").asInt());
                    final long end = OrderingInput.endPosition(p);
                    consumer.seek(tp, end);
                    task.updateNextOffsets(tp, new OffsetAndMetadata(end));
                }
            }
            final Map<TopicPartition, Long> consumed = consumedOffsets(task);
            while (task.hasRecordsQueued()) {
                final Map<TopicPartition, Long> before = new HashMap<>(consumed);
                final int processedBefore = order.size();
                task.updateLags();
                boolean stepped = task.process(time.milliseconds());
                if (!stepped && maxTaskIdleMs > 0) {
                    // D-2: a live task would wait max.task.idle.ms on its drained, caught-up partitions and then
                    // process anyway. The wall clock stays frozen; only this readiness check sees the deadline.
                    System.err.println("[oracle] D-2: task not ready at the frozen clock; readiness check at +"
                        + maxTaskIdleMs + " ms (max.task.idle.ms)");
                    stepped = task.process(time.milliseconds() + maxTaskIdleMs);
                }
                if (!stepped) {
                    throw new IllegalStateException("StreamTask is not processable although records are queued"
                        + " (max.task.idle.ms=" + maxTaskIdleMs + ")");
                }
                if (order.size() == processedBefore) {
                    recordSkipStep(before, consumed, processedBefore);
                }
                task.maybePunctuateStreamTime();
                task.maybePunctuateSystemTime();
            }
            if (OrderingInput.wantsCommittedOffsets(scenario)) {
                task.commitNeeded();
                committedOffsets = OrderingInput.committedOffsets(scenario, task.prepareCommit(true), t -> t);
            }
        } catch (final RuntimeException e) {
            error = describeError(e);
        } finally {
            droppedMetric = droppedRecordsTotal(metrics);
            try {
                task.suspend();
                task.closeDirty();
            } catch (final RuntimeException ignored) {
                // the task may already be in a state where close is refused; nothing to release but files
            }
            deleteRecursively(stateDir);
        }
        if (droppedMetric != dropped.size()) {
            throw new IllegalStateException("dropped-records-total is " + droppedMetric + " but the oracle recorded "
                + dropped.size() + " drops: " + dropped);
        }

        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.set("order", order);
        out.set("stream_time_after_each", streamTimes);
        out.set("dropped", dropped);
        out.set("skip_steps", skipSteps);
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
        if (error != null) {
            out.set("error", error);
        }
        if (OrderingInput.wantsCommittedOffsets(scenario)) {
            out.set(OrderingInput.COMMITTED_OFFSETS, committedOffsets == null ? Main.MAPPER.createArrayNode()
                : committedOffsets);
        }
        return out;
    }

    private ConsumerRecord<byte[], byte[]> toConsumerRecord(final TopicPartition tp, final JsonNode r) {
        final byte[] key = r.hasNonNull("key") ? r.get("key").asText().getBytes(StandardCharsets.UTF_8) : null;
        final byte[] value;
        if (r.path("corrupt").asBoolean(false)) {
            value = CORRUPT_VALUE.clone();
        } else {
            value = r.hasNonNull("value") ? r.get("value").asText().getBytes(StandardCharsets.UTF_8) : null;
        }
        final RecordHeaders headers = new RecordHeaders();
        if (r.has("headers")) {
            r.get("headers").fields().forEachRemaining(h ->
                headers.add(h.getKey(), h.getValue().isNull() ? null : h.getValue().asText().getBytes(StandardCharsets.UTF_8)));
        }
        return new ConsumerRecord<>(tp.topic(), tp.partition(), r.get("offset").asLong(), r.get("timestamp").asLong(),
            TimestampType.CREATE_TIME, key == null ? ConsumerRecord.NULL_SIZE : key.length,
            value == null ? ConsumerRecord.NULL_SIZE : value.length, key, value, headers,
            OrderingInput.leaderEpoch(r));
    }

    @SuppressWarnings("unchecked")
    private static Map<TopicPartition, Long> consumedOffsets(final StreamTask task) throws ReflectiveOperationException {
        final Field f = StreamTask.class.getDeclaredField("consumedOffsets");
        f.setAccessible(true);
        return (Map<TopicPartition, Long>) f.get(task);
    }

    /** A step in which {@code proc} saw nothing: StreamTask consumed a {@code CorruptedRecord} placeholder. */
    private void recordSkipStep(final Map<TopicPartition, Long> before, final Map<TopicPartition, Long> after,
                                final int processedBefore) {
        for (final Map.Entry<TopicPartition, Long> e : after.entrySet()) {
            if (!e.getValue().equals(before.get(e.getKey()))) {
                final ObjectNode s = skipSteps.addObject();
                s.put("topic", e.getKey().topic());
                s.put("partition", e.getKey().partition());
                s.put("offset", e.getValue());
                s.put("before_record_index", processedBefore);
                return;
            }
        }
        throw new IllegalStateException("a step processed nothing and consumed no offset");
    }

    private ObjectNode describeError(final RuntimeException e) {
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
        final String message = e.getMessage() == null ? "" : e.getMessage();
        err.put("kafka_message_prefix", message);
        final JsonNode expectedContains = scenario.path("expected").path("error").path("kafka_message_contains");
        if (expectedContains.isArray()) {
            // Echo the scenario's substrings that Kafka's message really contains: equal lists mean agreement.
            final ArrayNode found = err.putArray("kafka_message_contains");
            for (final JsonNode c : expectedContains) {
                if (message.contains(c.asText())) {
                    found.add(c.asText());
                }
            }
        }
        System.err.println("[oracle] task failed: " + e);
        return err;
    }

    private static long droppedRecordsTotal(final Metrics metrics) {
        double total = 0;
        for (final Map.Entry<MetricName, ? extends Metric> m : metrics.metrics().entrySet()) {
            final MetricName n = m.getKey();
            if (n.name().equals("dropped-records-total") && n.group().equals("stream-task-metrics")
                && TASK_ID.toString().equals(n.tags().get("task-id"))) {
                total += ((Number) m.getValue().metricValue()).doubleValue();
            }
        }
        return (long) total;
    }

    private static void deleteRecursively(final Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ignored) {
            // a temp directory left behind is harmless
        }
    }

    ObjectNode recordRef(final String reason, final String topic, final int partition, final long offset) {
        final ObjectNode n = Main.MAPPER.createObjectNode();
        n.put("reason", reason);
        n.put("topic", topic);
        n.put("partition", partition);
        n.put("offset", offset);
        return n;
    }

    void addDrop(final String topic, final int partition, final long offset, final String reason,
                 final String indexField, final int index) {
        final ObjectNode d = dropped.addObject();
        d.put("topic", topic);
        d.put("partition", partition);
        d.put("offset", offset);
        d.put("reason", reason);
        d.put(indexField, index);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Our parts: clock, deserializer, processor, recording wrappers.

    /** A {@link Time} frozen at the scenario's virtual wall clock (D-4). {@code sleep} does not advance it. */
    static final class FrozenTime implements Time {
        private final long ms;

        FrozenTime(final long ms) {
            this.ms = ms;
        }

        @Override
        public long milliseconds() {
            return ms;
        }

        @Override
        public long nanoseconds() {
            return TimeUnit.MILLISECONDS.toNanos(ms);
        }

        @Override
        public void sleep(final long ms) {
        }

        @Override
        public void waitObject(final Object obj, final java.util.function.Supplier<Boolean> condition,
                               final long deadlineMs) {
            if (!condition.get()) {
                throw new org.apache.kafka.common.errors.TimeoutException("frozen clock: condition not met");
            }
        }
    }

    /** UTF-8 String deserializer that rejects a leading 0xFF byte, as the scenarios' corrupt records require. */
    public static final class RejectingStringDeserializer implements Deserializer<String> {
        private final StringDeserializer delegate = new StringDeserializer();

        @Override
        public String deserialize(final String topic, final byte[] data) {
            if (data != null && data.length > 0 && data[0] == (byte) 0xFF) {
                throw new SerializationException("corrupt value: leading byte 0xFF (topic " + topic + ")");
            }
            return delegate.deserialize(topic, data);
        }

        @Override
        public String deserialize(final String topic, final Headers headers, final byte[] data) {
            return deserialize(topic, data);
        }
    }

    /** The scenario topology's {@code proc}: records what it receives, schedules, throws on request. */
    static final class RecordingProcessor implements Processor<String, String, Void, Void> {
        private final TaskRunner runner;
        private ProcessorContext<Void, Void> context;

        RecordingProcessor(final TaskRunner runner) {
            this.runner = runner;
        }

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            this.context = context;
            OrderingInput.schedulePunctuations(context, runner.scenario, runner.punctuationsFired, runner.order::size);
        }

        @Override
        public void process(final Record<String, String> record) {
            final RecordMetadata meta = context.recordMetadata().orElseThrow();
            final ArrayNode o = runner.order.addArray();
            o.add(meta.topic());
            o.add(meta.partition());
            o.add(meta.offset());
            runner.streamTimes.add(context.currentStreamTimeMs());
            final ObjectNode c = runner.contexts.addObject();
            c.put("topic", meta.topic());
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
            if (runner.failProcessing.contains(key(meta.topic(), meta.partition(), meta.offset()))) {
                runner.processingFailure = runner.recordRef("processing_exception", meta.topic(), meta.partition(),
                    meta.offset());
                throw new RuntimeException("fail_processing: scenario asks proc to fail on " + meta.topic() + "-"
                    + meta.partition() + "@" + meta.offset());
            }
        }
    }

    /** Delegates to the scenario's real extractor and notes each call (and negative-timestamp drops). */
    public static final class RecordingTimestampExtractor implements TimestampExtractor {
        private final TimestampExtractor delegate;
        private final String reasonOnThrow;

        public RecordingTimestampExtractor() {
            final TaskRunner r = Recorder.current;
            final String name = r.config.path("timestamp_extractor").asText("FailOnInvalidTimestamp");
            switch (name) {
                case "FailOnInvalidTimestamp":
                    delegate = new FailOnInvalidTimestamp();
                    reasonOnThrow = "negative_timestamp";
                    break;
                case "LogAndSkipOnInvalidTimestamp":
                    delegate = new LogAndSkipOnInvalidTimestamp();
                    reasonOnThrow = "extractor_exception";
                    break;
                case "UsePartitionTimeOnInvalidTimestamp":
                    delegate = new UsePartitionTimeOnInvalidTimestamp();
                    reasonOnThrow = "partition_time_unknown";
                    break;
                case "WallclockTimestampExtractor":
                    // The real WallclockTimestampExtractor reads System.currentTimeMillis(); D-4 freezes it.
                    final long frozen = r.time.milliseconds();
                    delegate = (record, partitionTime) -> frozen;
                    reasonOnThrow = "extractor_exception";
                    break;
                default:
                    throw new IllegalArgumentException("unknown timestamp_extractor " + name);
            }
        }

        @Override
        public long extract(final ConsumerRecord<Object, Object> record, final long partitionTime) {
            final TaskRunner r = Recorder.current;
            final long ts;
            try {
                ts = delegate.extract(record, partitionTime);
            } catch (final RuntimeException e) {
                r.pendingFailure = r.recordRef(reasonOnThrow, record.topic(), record.partition(), record.offset());
                throw e;
            }
            final ObjectNode x = r.extracted.addObject();
            x.put("topic", record.topic());
            x.put("partition", record.partition());
            x.put("offset", record.offset());
            x.put("partition_time_arg", partitionTime);
            x.put("timestamp", ts);
            if (ts < 0) {
                // RecordQueue#updateHead drops it (RQ-5); the metric cross-check confirms the count.
                r.addDrop(record.topic(), record.partition(), record.offset(), "negative_timestamp",
                    "before_record_index", r.order.size());
            }
            return ts;
        }
    }

    /** Delegates to the real deserialization handler and notes RESUME drops and FAIL causes. */
    public static final class RecordingDeserializationHandler implements DeserializationExceptionHandler {
        private DeserializationExceptionHandler delegate;

        @Override
        public void configure(final Map<String, ?> configs) {
            final String name = Recorder.current.config.path("deserialization_exception_handler")
                .asText("LogAndFailExceptionHandler");
            delegate = switch (name) {
                case "LogAndFailExceptionHandler" -> new LogAndFailExceptionHandler();
                case "LogAndContinueExceptionHandler" -> new LogAndContinueExceptionHandler();
                default -> throw new IllegalArgumentException("unknown deserialization_exception_handler " + name);
            };
            delegate.configure(configs);
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final ConsumerRecord<byte[], byte[]> record,
                                    final Exception exception) {
            final TaskRunner r = Recorder.current;
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
    public static final class RecordingProcessingHandler implements ProcessingExceptionHandler {
        private ProcessingExceptionHandler delegate;

        @Override
        public void configure(final Map<String, ?> configs) {
            final String name = Recorder.current.config.path("processing_exception_handler")
                .asText("LogAndFailProcessingExceptionHandler");
            delegate = switch (name) {
                case "LogAndFailProcessingExceptionHandler" -> new LogAndFailProcessingExceptionHandler();
                case "LogAndContinueProcessingExceptionHandler" -> new LogAndContinueProcessingExceptionHandler();
                default -> throw new IllegalArgumentException("unknown processing_exception_handler " + name);
            };
            delegate.configure(configs);
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final Record<?, ?> record,
                                    final Exception exception) {
            final TaskRunner r = Recorder.current;
            final Response response = delegate.handleError(context, record, exception);
            if (response != null && response.result() == Result.RESUME) {
                r.addDrop(context.topic(), context.partition(), context.offset(), "processing_exception",
                    "record_index", r.order.size() - 1);
                r.processingFailure = null;
            }
            return response;
        }
    }

    /** No changelogs in this topology; TopologyTestDriver uses the same no-op register. */
    static final class NoChangelogRegister implements ChangelogRegister {
        @Override
        public void register(final TopicPartition partition, final ProcessorStateManager stateManager) {
        }

        @Override
        public void register(final Set<TopicPartition> partitions, final ProcessorStateManager stateManager) {
        }

        @Override
        public void unregister(final Collection<TopicPartition> partitions) {
        }
    }
}
