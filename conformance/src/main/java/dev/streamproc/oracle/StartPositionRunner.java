package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.InvalidOffsetException;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.AutoOffsetReset;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * {@code planning} scenarios that start from the group's committed offsets, answered by a real {@code KafkaStreams}
 * 4.2.2 application on a real broker: where does Kafka Streams really start reading each input partition?
 *
 * <p>Per scenario, under a unique prefix {@code sp-<uuid>-} for the application id and every topic:
 * <ol>
 *   <li>the scenario's topics with its partition counts (source topics it lists without a topic stay missing);
 *   each partition filled to its log end: the listed records with their kinds (plain, transactional committed,
 *   aborted or still open, commit/abort markers at their offsets), or, without a record list, plain records up to
 *   the last stable offset and one open transaction from there to the log end; then cut at its log start with
 *   {@code DeleteRecords}, and the built log start/end checked;</li>
 *   <li>the group's committed offsets (with their commit metadata) set with {@code alterConsumerGroupOffsets};</li>
 *   <li>a {@code KafkaStreams} app with the scenario's application id, processing guarantee, isolation level,
 *   {@code auto.offset.reset} and per-topic reset policies ({@code Consumed.with(AutoOffsetReset)}), one source
 *   per input topic and a processor that records the offset of every record it receives; its main consumer
 *   (a {@link KafkaConsumer} from this runner's client supplier) records each assigned partition's position after
 *   every poll.</li>
 * </ol>
 * The app runs until every position has reached what it can read (the last stable offset under
 * {@code read_committed}, else the log end) and nothing moved for {@link #QUIET_MS}, or until it dies. The answer per partition:
 * {@code live_starts} = the first offset it received, or, where it received none, its first position (an empty
 * range: the consumer's position after the first poll that knew it); {@code delivered} (inclusive intervals) and
 * {@code end_positions}; {@code resets}: each partition with a committed offset where the app started elsewhere
 * (Kafka Streams' silent reset by its {@code auto.offset.reset} after {@code OFFSET_OUT_OF_RANGE}). When the app
 * dies the answer is {@code {"error": {"kafka_exception", "kafka_message"}}} with whatever it had received.
 */
final class StartPositionRunner {
    static final String KIND = "planning";
    private static final long RUNNING_TIMEOUT_MS = 60_000L;
    private static final long SETTLE_TIMEOUT_MS = 40_000L;
    private static final long QUIET_MS = 1_000L;

    private StartPositionRunner() {
    }

    /** {@code startpos <bootstrap> <scenario.json>... [--parallel N]} ({@link LiveBatch}). */
    static int run(final String[] args) throws Exception {
        return LiveBatch.run("startpos", args, Map.of(), StartPositionRunner::runFile);
    }

    static ObjectNode runFile(final String bootstrap, final String file) {
        final ObjectNode line = Main.MAPPER.createObjectNode();
        line.put("file", file);
        try {
            final JsonNode scenario = Main.MAPPER.readTree(new File(file));
            line.put("kind", scenario.path("kind").asText());
            line.put("id", scenario.path("id").asText());
            final String reason = unsupported(scenario);
            if (reason != null) {
                line.put("unsupported", reason);
            } else {
                final Live live = new Live(bootstrap, scenario.path("input"));
                line.set("result", live.run());
                line.set("observations", live.observations);
            }
        } catch (final Exception | AssertionError e) {
            System.err.println("[oracle startpos] " + file + ":");
            e.printStackTrace(System.err);
            line.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
        }
        return line;
    }

    /** Why this mode cannot rebuild the scenario, or {@code null}. */
    static String unsupported(final JsonNode scenario) {
        if (!KIND.equals(scenario.path("kind").asText())) {
            return "the startpos mode answers planning scenarios only";
        }
        final JsonNode input = scenario.path("input");
        final String mode = input.path("request").path("start").path("mode").asText("committed");
        if (!mode.equals("committed")) {
            return "start mode '" + mode + "' is a reset tool's scenario, not a live app's start";
        }
        final JsonNode group = input.path("group");
        if (group.path("members").size() > 0) {
            return "the group has active members: the reset tool answers that case";
        }
        final List<String> bad = new ArrayList<>();
        input.path("topics").fields().forEachRemaining(t -> t.getValue().path("partitions").fields()
            .forEachRemaining(p -> {
                final JsonNode part = p.getValue();
                if (part.path("high_watermark").asLong() != part.path("log_end").asLong()) {
                    bad.add(t.getKey() + "-" + p.getKey() + ": a high watermark below the log end needs a replica");
                }
            }));
        return bad.isEmpty() ? null : String.join("; ", bad);
    }

    /** What the app did, filled by its stream thread and read by the runner. */
    static final class Observed {
        final Map<TopicPartition, TreeSet<Long>> delivered = new ConcurrentHashMap<>();
        final Map<TopicPartition, Long> firstPosition = new ConcurrentHashMap<>();
        final Map<TopicPartition, Long> position = new ConcurrentHashMap<>();
        volatile long lastChange = System.currentTimeMillis();
        volatile Throwable fatal;
        volatile boolean running;

        void deliver(final TopicPartition tp, final long offset) {
            final TreeSet<Long> set = delivered.computeIfAbsent(tp, k -> new TreeSet<>());
            synchronized (set) {
                set.add(offset);
            }
            lastChange = System.currentTimeMillis();
        }

        void position(final TopicPartition tp, final long offset) {
            firstPosition.putIfAbsent(tp, offset);
            final Long before = position.put(tp, offset);
            if (before == null || before != offset) {
                lastChange = System.currentTimeMillis();
            }
        }
    }

    /** Kafka's own clients, with a main consumer that notes each assigned partition's position after a poll. */
    static final class PositionNotingSupplier extends DefaultKafkaClientSupplier {
        private final Observed observed;

        PositionNotingSupplier(final Observed observed) {
            this.observed = observed;
        }

        @Override
        public Consumer<byte[], byte[]> getConsumer(final Map<String, Object> config) {
            return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer()) {
                @Override
                public ConsumerRecords<byte[], byte[]> poll(final Duration timeout) {
                    final ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
                    for (final TopicPartition tp : assignment()) {
                        try {
                            observed.position(tp, position(tp, Duration.ZERO));
                        } catch (final org.apache.kafka.common.errors.TimeoutException e) {
                            // no position yet (committed offset still being fetched): the next poll tells
                        }
                    }
                    return records;
                }
            };
        }
    }

    private static final class Recorder implements Processor<byte[], byte[], Void, Void> {
        private final Observed observed;
        private ProcessorContext<Void, Void> context;

        Recorder(final Observed observed) {
            this.observed = observed;
        }

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            final RecordMetadata meta = context.recordMetadata().orElseThrow();
            observed.deliver(new TopicPartition(meta.topic(), meta.partition()), meta.offset());
        }
    }

    private static final class Live {
        final String bootstrap;
        final JsonNode input;
        final String prefix = "sp-" + UUID.randomUUID().toString().substring(0, 12) + "-";
        final String appId;
        final ObjectNode observations = Main.MAPPER.createObjectNode();
        final List<KafkaProducer<byte[], byte[]>> openTransactions = new ArrayList<>();

        Live(final String bootstrap, final JsonNode input) {
            this.bootstrap = bootstrap;
            this.input = input;
            appId = prefix + input.path("application_id").asText();
        }

        String name(final TopicPartition tp) {
            return tp.topic().replace(prefix, "") + "-" + tp.partition();
        }

        ObjectNode run() throws Exception {
            final Path stateDir = Files.createTempDirectory("streamproc-startpos-");
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                try {
                    build(admin);
                    commit(admin);
                    return runStreams(stateDir);
                } finally {
                    for (final KafkaProducer<byte[], byte[]> producer : openTransactions) {
                        producer.close(Duration.ZERO);
                    }
                    final Set<String> ours = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                        .filter(t -> t.startsWith(prefix)).collect(Collectors.toSet());
                    admin.deleteTopics(ours);
                }
            } finally {
                try (Stream<Path> paths = Files.walk(stateDir)) {
                    paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }

        private void build(final Admin admin) throws Exception {
            final List<NewTopic> topics = new ArrayList<>();
            input.path("topics").fields().forEachRemaining(e -> topics.add(
                new NewTopic(prefix + e.getKey(), e.getValue().path("partitions").size(), (short) 1)));
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            BrokerTopics.awaitReady(admin, topics.stream().map(NewTopic::name).toList(), Duration.ofSeconds(30));
            final Map<TopicPartition, RecordsToDelete> cuts = new HashMap<>();
            final Map<TopicPartition, long[]> bounds = new HashMap<>();
            for (final var t : iterable(input.path("topics").fields())) {
                for (final var p : iterable(t.getValue().path("partitions").fields())) {
                    final TopicPartition tp = new TopicPartition(prefix + t.getKey(), Integer.parseInt(p.getKey()));
                    final JsonNode part = p.getValue();
                    fill(admin, tp, part);
                    final long logStart = part.path("log_start").asLong();
                    if (logStart > 0) {
                        cuts.put(tp, RecordsToDelete.beforeOffset(logStart));
                    }
                    bounds.put(tp, new long[] {logStart, part.path("log_end").asLong(),
                        part.path("last_stable_offset").asLong(part.path("high_watermark").asLong())});
                }
            }
            if (!cuts.isEmpty()) {
                admin.deleteRecords(cuts).all().get(30, TimeUnit.SECONDS);
            }
            final Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
            final Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            bounds.keySet().forEach(tp -> {
                earliest.put(tp, OffsetSpec.earliest());
                latest.put(tp, OffsetSpec.latest());
            });
            final var starts = admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS);
            final var ends = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
            for (final var e : bounds.entrySet()) {
                final long start = starts.get(e.getKey()).offset();
                final long end = ends.get(e.getKey()).offset();
                if (start != e.getValue()[0] || end != e.getValue()[1]) {
                    throw new IllegalStateException("built log [" + start + ", " + end + ") of " + name(e.getKey())
                        + " differs from the scenario's [" + e.getValue()[0] + ", " + e.getValue()[1] + ")");
                }
            }
        }

        private Properties producerProps(final String transactionalId) {
            final Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            if (transactionalId != null) {
                props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
                props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "300000");
            }
            return props;
        }

        /**
         * One partition's log, offset by offset. A record list gives each offset's kind; a partition without one
         * gets plain records below its last stable offset and an open transaction from there to its log end.
         */
        private void fill(final Admin admin, final TopicPartition tp, final JsonNode part) throws Exception {
            final long logEnd = part.path("log_end").asLong();
            final long stable = part.path("last_stable_offset").asLong(part.path("high_watermark").asLong());
            final Map<Long, String> kinds = new TreeMap<>();
            final Map<Long, Long> stamps = new HashMap<>();
            if (part.has("records") && !part.path("records").isNull()) {
                for (final JsonNode r : part.path("records")) {
                    kinds.put(r.get(0).asLong(), r.get(2).asText());
                    stamps.put(r.get(0).asLong(), r.get(1).asLong());
                }
            }
            final KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(producerProps(null));
            KafkaProducer<byte[], byte[]> txn = null;
            boolean open = false;
            try {
                for (long o = 0; o < logEnd; o++) {
                    final String kind = kinds.getOrDefault(o, o < stable ? "data" : "data_txn_open");
                    if (kind.startsWith("marker_")) {
                        if (txn == null || !open) {
                            throw new IllegalStateException(name(tp) + ": marker at " + o + " closes no transaction");
                        }
                        txn.flush();
                        if (kind.equals("marker_abort")) {
                            txn.abortTransaction();
                        } else {
                            txn.commitTransaction();
                        }
                        open = false;
                        awaitLogEnd(admin, tp, o + 1);
                        continue;
                    }
                    final ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(tp.topic(), tp.partition(),
                        stamps.getOrDefault(o, 1L), ("k" + o).getBytes(StandardCharsets.UTF_8),
                        ("v" + o).getBytes(StandardCharsets.UTF_8));
                    if (kind.equals("data")) {
                        if (open) {
                            throw new IllegalStateException(name(tp) + ": plain record " + o + " inside a transaction");
                        }
                        plain.send(record);
                    } else if (kind.startsWith("data_txn_")) {
                        plain.flush();
                        if (txn == null) {
                            txn = new KafkaProducer<>(producerProps(appId + "-layout-" + tp));
                            txn.initTransactions();
                        }
                        if (!open) {
                            txn.beginTransaction();
                            open = true;
                        }
                        txn.send(record).get();
                    } else {
                        throw new IllegalStateException(name(tp) + ": unknown record kind '" + kind + "' at " + o);
                    }
                }
                plain.flush();
                if (txn != null) {
                    txn.flush();
                }
            } finally {
                plain.close();
                if (txn != null && open) {
                    openTransactions.add(txn);  // left open while the app runs; closed afterwards
                } else if (txn != null) {
                    txn.close();
                }
            }
            awaitLogEnd(admin, tp, logEnd);
        }

        private void awaitLogEnd(final Admin admin, final TopicPartition tp, final long expected) throws Exception {
            final long deadline = System.currentTimeMillis() + 30_000L;
            long end;
            do {
                end = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)
                    .get(30, TimeUnit.SECONDS).offset();
                if (end >= expected) {
                    break;
                }
                Thread.sleep(5);
            } while (System.currentTimeMillis() < deadline);
            if (end != expected) {
                throw new IllegalStateException("log end of " + name(tp) + " is " + end + ", expected " + expected);
            }
        }

        private void commit(final Admin admin) throws Exception {
            final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            input.path("committed").fields().forEachRemaining(e -> {
                final String key = e.getKey();
                final int dash = key.lastIndexOf('-');
                offsets.put(new TopicPartition(prefix + key.substring(0, dash),
                    Integer.parseInt(key.substring(dash + 1))), new OffsetAndMetadata(
                    e.getValue().path("offset").asLong(), e.getValue().path("metadata").asText("")));
            });
            if (!offsets.isEmpty()) {
                admin.alterConsumerGroupOffsets(appId, offsets).all().get(30, TimeUnit.SECONDS);
            }
        }

        private static AutoOffsetReset policy(final String name) {
            return switch (name) {
                case "earliest" -> AutoOffsetReset.earliest();
                case "latest" -> AutoOffsetReset.latest();
                case "none" -> AutoOffsetReset.none();
                default -> {
                    if (name.startsWith("by_duration:")) {
                        yield AutoOffsetReset.byDuration(Duration.parse(name.substring("by_duration:".length())));
                    }
                    throw new IllegalArgumentException("unknown reset policy '" + name + "'");
                }
            };
        }

        private ObjectNode runStreams(final Path stateDir) throws Exception {
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            props.put(StreamsConfig.CLIENT_ID_CONFIG, appId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            props.put(StreamsConfig.POLL_MS_CONFIG, 50);
            props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
            props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
            final String guarantee = input.path("processing_guarantee").asText("at_least_once");
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
            if (input.has("isolation_level") && guarantee.equals("at_least_once")) {
                props.put(StreamsConfig.consumerPrefix(ConsumerConfig.ISOLATION_LEVEL_CONFIG),
                    input.path("isolation_level").asText());
            }
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG),
                input.path("auto_offset_reset").asText("earliest"));
            observations.put("application_id", appId.replace(prefix, ""));
            observations.put("processing_guarantee", guarantee);
            observations.put("auto_offset_reset", input.path("auto_offset_reset").asText("earliest"));

            final Observed observed = new Observed();
            final StreamsBuilder builder = new StreamsBuilder();
            final JsonNode policies = input.path("reset_policies");
            for (final JsonNode topic : input.path("source_topics")) {
                Consumed<byte[], byte[]> consumed = Consumed.with(Serdes.ByteArray(), Serdes.ByteArray());
                if (policies.has(topic.asText())) {
                    consumed = consumed.withOffsetResetPolicy(policy(policies.path(topic.asText()).asText()));
                }
                builder.stream(prefix + topic.asText(), consumed).process(() -> new Recorder(observed));
            }
            final KafkaStreams streams = new KafkaStreams(builder.build(), props, new PositionNotingSupplier(observed));
            final long started = System.currentTimeMillis();
            try {
                streams.setUncaughtExceptionHandler(e -> {
                    observed.fatal = e;
                    return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
                streams.setStateListener((now, before) -> {
                    if (now == KafkaStreams.State.RUNNING) {
                        observed.running = true;
                    }
                });
                streams.start();
                // every position must reach what the app can read (the LSO under read_committed, else the log
                // end) and stay there: a slow poll on a loaded machine must not end the run early
                final boolean readCommitted = !guarantee.equals("at_least_once")
                    || input.path("isolation_level").asText().equals("read_committed");
                final Map<TopicPartition, Long> ends = new HashMap<>();
                input.path("topics").fields().forEachRemaining(t -> t.getValue().path("partitions").fields()
                    .forEachRemaining(p -> ends.put(new TopicPartition(prefix + t.getKey(),
                        Integer.parseInt(p.getKey())), readCommitted
                        ? p.getValue().path("last_stable_offset").asLong(p.getValue().path("log_end").asLong())
                        : p.getValue().path("log_end").asLong())));
                while (observed.fatal == null && streams.state() != KafkaStreams.State.ERROR
                    && streams.state() != KafkaStreams.State.PENDING_ERROR) {
                    final long now = System.currentTimeMillis();
                    final boolean settled = observed.running
                        && ends.entrySet().stream().allMatch(e -> observed.position.getOrDefault(e.getKey(), -1L)
                            >= e.getValue())
                        && now - observed.lastChange >= QUIET_MS;
                    if (settled) {
                        break;
                    }
                    if (now - started > (observed.running ? SETTLE_TIMEOUT_MS : RUNNING_TIMEOUT_MS)) {
                        throw new IllegalStateException("the app did not settle in time: state " + streams.state()
                            + ", positions " + observed.position + ", ends " + ends);
                    }
                    Thread.sleep(100);
                }
            } finally {
                streams.close(Duration.ofSeconds(30));
            }
            observations.put("elapsed_ms", System.currentTimeMillis() - started);
            return result(observed);
        }

        private ObjectNode result(final Observed observed) {
            final ObjectNode out = Main.MAPPER.createObjectNode();
            if (observed.fatal != null) {
                Throwable reported = observed.fatal;
                // the handler sees the StreamThread's wrapper; Kafka's own exception is its cause when there is one
                while (reported.getCause() != null
                    && reported.getClass().getName().equals("org.apache.kafka.streams.errors.StreamsException")
                    && reported.getCause() instanceof org.apache.kafka.streams.errors.StreamsException) {
                    reported = reported.getCause();
                }
                final ObjectNode err = out.putObject("error");
                err.put("kafka_exception", reported.getClass().getName());
                err.put("kafka_message", String.valueOf(reported.getMessage()).replace(prefix, ""));
                for (Throwable c = observed.fatal; c != null; c = c.getCause()) {
                    if (c instanceof InvalidOffsetException invalid) {
                        // the consumer's own exception names the partitions it could not position
                        err.put("kafka_cause", c.getClass().getName() + ": "
                            + String.valueOf(c.getMessage()).replace(prefix, ""));
                        final ArrayNode names = err.putArray("partitions");
                        invalid.partitions().stream().map(this::name).sorted().forEach(names::add);
                        break;
                    }
                }
                observations.put("failure", String.valueOf(observed.fatal).replace(prefix, ""));
            }
            final ObjectNode starts = out.putObject("live_starts");
            final ObjectNode delivered = out.putObject("delivered");
            final ObjectNode ends = out.putObject("end_positions");
            final ObjectNode resets = out.putObject("resets");
            final Map<String, Long> committed = new HashMap<>();
            input.path("committed").fields().forEachRemaining(e ->
                committed.put(e.getKey(), e.getValue().path("offset").asLong()));
            final Set<TopicPartition> seen = new TreeSet<>(Comparator.comparing(this::name));
            seen.addAll(observed.firstPosition.keySet());
            seen.addAll(observed.delivered.keySet());
            for (final TopicPartition tp : seen) {
                final String name = name(tp);
                final TreeSet<Long> offsets = observed.delivered.getOrDefault(tp, new TreeSet<>());
                final Long start;
                synchronized (offsets) {
                    start = offsets.isEmpty() ? observed.firstPosition.get(tp) : offsets.first();
                    final ArrayNode intervals = delivered.putArray(name);
                    long[] run = null;
                    for (final long o : offsets) {
                        if (run != null && o == run[1] + 1) {
                            run[1] = o;
                        } else {
                            if (run != null) {
                                intervals.addArray().add(run[0]).add(run[1]);
                            }
                            run = new long[] {o, o};
                        }
                    }
                    if (run != null) {
                        intervals.addArray().add(run[0]).add(run[1]);
                    }
                }
                if (start != null) {
                    starts.put(name, start);
                    if (committed.containsKey(name) && committed.get(name).longValue() != start) {
                        resets.putObject(name).put("committed", committed.get(name)).put("started_at", start);
                    }
                }
                if (observed.position.containsKey(tp)) {
                    ends.put(name, observed.position.get(tp));
                }
            }
            return out;
        }
    }

    private static <T> Iterable<T> iterable(final java.util.Iterator<T> it) {
        return () -> it;
    }
}
