package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.processor.internals.InternalTopicProperties;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

import java.io.File;
import java.io.IOException;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The four Processor API programs of the process step's proof against Kafka Streams (issue 12): count per key,
 * tumbling-window count with grace, re-key → repartition → aggregate, stream–table join. Each runs as a real
 * {@link KafkaStreams} app on the broker over topics the caller filled, to the end offsets, then its final stores are
 * read by interactive queries and its {@code dropped-records-total} per task from the metrics.
 *
 * <p>{@code java -jar streamproc-oracle.jar proof <bootstrap> <spec.json>}; the spec names the topics, the apps
 * ({@code topology}, {@code application_id}, {@code output}) and the programs' parameters, so that the numbers have
 * one definition (the Python test's). Prints one JSON line per app (spec order): {@code {"application_id",
 * "topology", "describe", "stores": {name: [[key, value, timestamp] | [key, window start, value, timestamp]]},
 * "dropped": {task: n}, "elapsed_ms"}} or {@code {"application_id", "oracle_error"}}. Two apps run at a time.
 *
 * <p>Settings as streamproc's run models them: at-least-once, no record cache, commits every 100 ms, one thread,
 * LogAndContinue for records the value deserializer refuses, LogAndSkipOnInvalidTimestamp for negative timestamps.
 * Every program forwards the input's headers and adds {@code origin} = {@code <partition>:<offset>} of the record it
 * came from (re-key), so that the outputs of the repartitioned aggregate can be traced to their upstream task.
 * Python twins: {@code tests/integration/spark/proof_topologies.py}.
 */
final class ProofApps {
    static final long RUN_TIMEOUT_MS = 150_000L;

    private ProofApps() {
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -jar streamproc-oracle.jar proof <bootstrap> <spec.json>");
            return 2;
        }
        final String bootstrap = args[0];
        final JsonNode spec = Main.MAPPER.readTree(new File(args[1]));
        final ExecutorService pool = Executors.newFixedThreadPool(spec.path("parallel").asInt(2));
        try {
            final List<Future<ObjectNode>> futures = new ArrayList<>();
            for (final JsonNode app : spec.get("apps")) {
                futures.add(pool.submit(() -> {
                    try {
                        return runApp(bootstrap, spec, app);
                    } catch (final Exception | AssertionError e) {
                        e.printStackTrace(System.err);
                        final ObjectNode failed = Main.MAPPER.createObjectNode();
                        failed.put("application_id", app.get("application_id").asText());
                        failed.put("oracle_error", String.valueOf(e));
                        return failed;
                    }
                }));
            }
            for (final Future<ObjectNode> f : futures) {
                System.out.println(Main.MAPPER.writeValueAsString(f.get()));
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.flush();
        return 0;
    }

    // ---------------------------------------------------------------------------------------------------------
    // The programs.

    static Topology topology(final JsonNode spec, final JsonNode app) throws ReflectiveOperationException {
        final String words = spec.get("words").asText();
        final String output = app.get("output").asText();
        final Topology t = new Topology();
        switch (app.get("topology").asText()) {
            case "count" -> {
                t.addSource("words", Serdes.String().deserializer(), Serdes.Long().deserializer(), words);
                t.addProcessor("count", CountPerKey::new, "words");
                t.addStateStore(Stores.timestampedKeyValueStoreBuilder(
                    Stores.persistentTimestampedKeyValueStore("counts"), Serdes.String(), Serdes.Long()), "count");
                t.addSink("totals", output, Serdes.String().serializer(), Serdes.Long().serializer(), "count");
            }
            case "window" -> {
                final long size = spec.get("window_size_ms").asLong();
                final long grace = spec.get("window_grace_ms").asLong();
                final long retention = spec.get("window_retention_ms").asLong();
                t.addSource("words", Serdes.String().deserializer(), Serdes.Long().deserializer(), words);
                t.addProcessor("window-count", () -> new WindowCount(size, grace), "words");
                t.addStateStore(Stores.timestampedWindowStoreBuilder(
                    Stores.persistentTimestampedWindowStore("window-counts", Duration.ofMillis(retention),
                        Duration.ofMillis(size), false), Serdes.String(), Serdes.Long()), "window-count");
                t.addSink("window-totals", output, Serdes.String().serializer(), Serdes.String().serializer(),
                    "window-count");
            }
            case "rekey" -> {
                final long customers = spec.get("rekey_customers").asLong();
                final String repartition = spec.get("repartition").asText();
                t.addSource("words", Serdes.String().deserializer(), Serdes.Long().deserializer(), words);
                t.addProcessor("rekey", () -> new Rekey(customers), "words");
                TopologyRunner.internalBuilder(t).addInternalTopic(repartition, InternalTopicProperties.empty());
                t.addSink("to-customers", repartition, Serdes.String().serializer(), Serdes.Long().serializer(),
                    "rekey");
                t.addSource("from-customers", Serdes.String().deserializer(), Serdes.Long().deserializer(),
                    repartition);
                t.addProcessor("sum", SumPerKey::new, "from-customers");
                t.addStateStore(Stores.timestampedKeyValueStoreBuilder(
                    Stores.persistentTimestampedKeyValueStore("sums"), Serdes.String(), Serdes.Long()), "sum");
                t.addSink("sums-out", output, Serdes.String().serializer(), Serdes.Long().serializer(), "sum");
            }
            case "join" -> {
                t.addSource("customers", Serdes.String().deserializer(), Serdes.Long().deserializer(),
                    spec.get("customers").asText());
                t.addProcessor("customer-table", CustomerTable::new, "customers");
                t.addSource("words", Serdes.String().deserializer(), Serdes.Long().deserializer(), words);
                t.addProcessor("join", Join::new, "words");
                t.addStateStore(Stores.timestampedKeyValueStoreBuilder(
                    Stores.persistentTimestampedKeyValueStore("customer-store"), Serdes.String(), Serdes.Long()),
                    "customer-table", "join");
                t.addSink("joined", output, Serdes.String().serializer(), Serdes.String().serializer(), "join");
            }
            default -> throw new IllegalArgumentException("unknown proof topology " + app.get("topology"));
        }
        return t;
    }

    /** Count per key in a timestamped store (timestamp: the latest record's, as DSL aggregates keep it). */
    static final class CountPerKey implements Processor<String, Long, String, Long> {
        private ProcessorContext<String, Long> context;
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            store = context.getStateStore("counts");
        }

        @Override
        public void process(final Record<String, Long> record) {
            final ValueAndTimestamp<Long> old = store.get(record.key());
            final long count = old == null ? 1L : old.value() + 1L;
            final long timestamp = old == null ? record.timestamp() : Math.max(old.timestamp(), record.timestamp());
            store.put(record.key(), ValueAndTimestamp.make(count, timestamp));
            context.forward(record.withValue(count));
        }
    }

    /**
     * Tumbling windows of {@code size} with {@code grace}: a record whose window closed (end + grace at or before
     * stream time, as {@code KStreamWindowAggregate}) is skipped; otherwise the window's count goes up and
     * {@code "<window start>:<count>"} is forwarded.
     */
    static final class WindowCount implements Processor<String, Long, String, String> {
        private final long size;
        private final long grace;
        private ProcessorContext<String, String> context;
        private TimestampedWindowStore<String, Long> store;

        WindowCount(final long size, final long grace) {
            this.size = size;
            this.grace = grace;
        }

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("window-counts");
        }

        @Override
        public void process(final Record<String, Long> record) {
            final long start = record.timestamp() - record.timestamp() % size;
            if (start + size + grace <= context.currentStreamTimeMs()) {
                return;
            }
            final ValueAndTimestamp<Long> old = store.fetch(record.key(), start);
            final long count = old == null ? 1L : old.value() + 1L;
            final long timestamp = old == null ? record.timestamp() : Math.max(old.timestamp(), record.timestamp());
            store.put(record.key(), ValueAndTimestamp.make(count, timestamp), start);
            context.forward(record.withValue(start + ":" + count));
        }
    }

    /** The amount's customer ({@code c<amount % customers>}) becomes the key; the origin goes into a header. */
    static final class Rekey implements Processor<String, Long, String, Long> {
        private final long customers;
        private ProcessorContext<String, Long> context;

        Rekey(final long customers) {
            this.customers = customers;
        }

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, Long> record) {
            final RecordMetadata meta = context.recordMetadata().orElseThrow();
            final Record<String, Long> out = record.withKey("c" + Math.floorMod(record.value(), customers));
            out.headers().add("origin", (meta.partition() + ":" + meta.offset()).getBytes(StandardCharsets.UTF_8));
            context.forward(out);
        }
    }

    /** Sum of amounts per key (timestamp: the latest), forwarding each new sum. */
    static final class SumPerKey implements Processor<String, Long, String, Long> {
        private ProcessorContext<String, Long> context;
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            store = context.getStateStore("sums");
        }

        @Override
        public void process(final Record<String, Long> record) {
            final ValueAndTimestamp<Long> old = store.get(record.key());
            final long sum = (old == null ? 0L : old.value()) + record.value();
            final long timestamp = old == null ? record.timestamp() : Math.max(old.timestamp(), record.timestamp());
            store.put(record.key(), ValueAndTimestamp.make(sum, timestamp));
            context.forward(record.withValue(sum));
        }
    }

    /** The table side: the latest value per customer (its own timestamp), nothing forwarded. */
    static final class CustomerTable implements Processor<String, Long, Void, Void> {
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("customer-store");
        }

        @Override
        public void process(final Record<String, Long> record) {
            store.put(record.key(), ValueAndTimestamp.make(record.value(), record.timestamp()));
        }
    }

    /** The stream side: an inner join with the table's current value, {@code "<amount>/<customer value>"}. */
    static final class Join implements Processor<String, Long, String, String> {
        private ProcessorContext<String, String> context;
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("customer-store");
        }

        @Override
        public void process(final Record<String, Long> record) {
            final ValueAndTimestamp<Long> customer = store.get(record.key());
            if (customer != null) {
                context.forward(record.withValue(record.value() + "/" + customer.value()));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // One app: run to the end offsets, read the stores and metrics, close.

    static Properties props(final String bootstrap, final String applicationId, final Path stateDir) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
            LogAndContinueExceptionHandler.class);
        props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, LogAndSkipOnInvalidTimestamp.class);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        return props;
    }

    static ObjectNode runApp(final String bootstrap, final JsonNode spec, final JsonNode app) throws Exception {
        final long started = System.currentTimeMillis();
        final String applicationId = app.get("application_id").asText();
        final Topology topology = topology(spec, app);
        final Path stateDir = Files.createTempDirectory("streamproc-proof-");
        final Map<String, Object> adminProps = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.put("application_id", applicationId);
        out.put("topology", app.get("topology").asText());
        out.put("describe", topology.describe().toString());
        final Throwable[] fatal = new Throwable[1];
        try (Admin admin = Admin.create(adminProps)) {
            final KafkaStreams streams = new KafkaStreams(topology, props(bootstrap, applicationId, stateDir));
            streams.setUncaughtExceptionHandler(e -> {
                fatal[0] = e;
                return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            try {
                streams.start();
                awaitCaughtUp(admin, streams, applicationId, spec, app, fatal);
                final ObjectNode stores = out.putObject("stores");
                for (final String store : topology.describe().subtopologies().stream()
                    .flatMap(s -> s.nodes().stream())
                    .filter(n -> n instanceof org.apache.kafka.streams.TopologyDescription.Processor)
                    .flatMap(n -> ((org.apache.kafka.streams.TopologyDescription.Processor) n).stores().stream())
                    .sorted().distinct().toList()) {
                    stores.set(store, dump(streams, store, "window".equals(app.get("topology").asText())));
                }
                final ObjectNode dropped = out.putObject("dropped");
                final Map<String, Double> byTask = new TreeMap<>();
                for (final Map.Entry<MetricName, ? extends Metric> m : streams.metrics().entrySet()) {
                    final MetricName n = m.getKey();
                    if (n.name().equals("dropped-records-total") && n.group().equals("stream-task-metrics")) {
                        byTask.merge(n.tags().get("task-id"), ((Number) m.getValue().metricValue()).doubleValue(),
                            Double::sum);
                    }
                }
                byTask.forEach((task, n) -> dropped.put(task, n.longValue()));
            } finally {
                streams.close(Duration.ofSeconds(30));
            }
        } finally {
            deleteRecursively(stateDir);
        }
        out.put("elapsed_ms", System.currentTimeMillis() - started);
        return out;
    }

    /** Every entry of a store through interactive queries, in the store's iteration order. */
    static ArrayNode dump(final KafkaStreams streams, final String store, final boolean windowed) {
        final ArrayNode rows = Main.MAPPER.createArrayNode();
        if (windowed) {
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> all = streams.store(
                StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.<String, Long>timestampedWindowStore()))
                .all()) {
                while (all.hasNext()) {
                    final KeyValue<Windowed<String>, ValueAndTimestamp<Long>> e = all.next();
                    rows.addArray().add(e.key.key()).add(e.key.window().start()).add(e.value.value())
                        .add(e.value.timestamp());
                }
            }
        } else {
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> all = streams.store(
                StoreQueryParameters.fromNameAndType(store,
                    QueryableStoreTypes.<String, Long>timestampedKeyValueStore())).all()) {
                while (all.hasNext()) {
                    final KeyValue<String, ValueAndTimestamp<Long>> e = all.next();
                    rows.addArray().add(e.key).add(e.value.value()).add(e.value.timestamp());
                }
            }
        }
        return rows;
    }

    /**
     * Returns once the group has committed the end offset of every input partition and then of every repartition
     * partition (whose end is known once the inputs are committed: at-least-once flushes the producer before it
     * commits), and the app is RUNNING (interactive queries need it).
     */
    static void awaitCaughtUp(final Admin admin, final KafkaStreams streams, final String applicationId,
                              final JsonNode spec, final JsonNode app, final Throwable[] fatal) throws Exception {
        final Map<TopicPartition, Long> inputEnds = new HashMap<>();
        for (final JsonNode topic : app.get("inputs")) {
            inputEnds.putAll(endOffsets(admin, topic.asText()));
        }
        final long deadline = System.currentTimeMillis() + RUN_TIMEOUT_MS;
        Map<TopicPartition, Long> ends = inputEnds;
        boolean repartitionKnown = !"rekey".equals(app.get("topology").asText());
        while (true) {
            if (fatal[0] != null) {
                throw new IllegalStateException(applicationId + " failed", fatal[0]);
            }
            final Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            boolean done = streams.state() == KafkaStreams.State.RUNNING;
            for (final Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                final OffsetAndMetadata c = committed.get(e.getKey());
                done &= e.getValue() == 0 || (c != null && c.offset() >= e.getValue());
            }
            if (done && repartitionKnown) {
                return;
            }
            if (done) {
                final String repartition = applicationId + "-" + spec.get("repartition").asText();
                ends = new HashMap<>(inputEnds);
                ends.putAll(endOffsets(admin, repartition));
                repartitionKnown = true;
                continue;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(applicationId + ": not caught up after " + RUN_TIMEOUT_MS
                    + " ms (state " + streams.state() + ", committed " + committed + ", ends " + ends + ")");
            }
            Thread.sleep(100);
        }
    }

    static Map<TopicPartition, Long> endOffsets(final Admin admin, final String topic) throws Exception {
        BrokerTopics.awaitReady(admin, Set.of(topic), Duration.ofSeconds(30));
        final Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        admin.describeTopics(Set.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions()
            .forEach(p -> request.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
        final Map<TopicPartition, Long> ends = new HashMap<>();
        admin.listOffsets(request).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> ends.put(tp, info.offset()));
        return ends;
    }

    private static void deleteRecursively(final Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ignored) {
            // a temp directory left behind is harmless
        }
    }
}
