package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.IntegerDeserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailExceptionHandler;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The programs of {@code tests/unit/driver_programs.py} on Kafka's own {@link TopologyTestDriver}
 * (kafka-streams-test-utils 4.2.2), for the {@code test_driver} section of {@code reference} ({@link
 * ReferenceRunner}): the request gives each program's inputs (generated from fixed seeds by
 * {@code streamproc_dev.conformance.reference}), the answer is what Kafka's driver produced, so that
 * {@code tests/integration/conformance/test_reference_test_driver.py} checks streamproc's driver against it.
 *
 * <p>Output records are {@code {"key", "value", "timestamp", "headers": [[key, utf-8 value]]}}, in the order the
 * output topic returns them.
 */
public final class TestDriverRunner {

    private TestDriverRunner() {
    }

    private static final StringSerializer STRING_SER = new StringSerializer();
    private static final StringDeserializer STRING_DE = new StringDeserializer();

    private static Properties props() {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "driver-app");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.STATE_DIR_CONFIG, PrivateStateDir.PATH);
        return props;
    }

    /** The DSL programs' driver: String default serdes, the record cache off (its flushes are timing, not order). */
    private static Properties dslProps() {
        final Properties props = props();
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        return props;
    }

    private static <K, V> ArrayNode records(final TestOutputTopic<K, V> output) {
        final ArrayNode out = Main.MAPPER.createArrayNode();
        for (final TestRecord<K, V> record : output.readRecordsToList()) {
            final ObjectNode node = out.addObject();
            node.set("key", Main.MAPPER.valueToTree(record.key()));
            node.set("value", Main.MAPPER.valueToTree(record.value()));
            node.put("timestamp", record.timestamp());
            final ArrayNode headers = node.putArray("headers");
            for (final Header header : record.headers()) {
                headers.addArray().add(header.key()).add(ReferenceRunner.utf8(header.value()));
            }
        }
        return out;
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    /** {@code [key, value, timestamp]} of a request: key may be null, timestamp may be null (the topic's clock). */
    private static TestRecord<String, String> record(final JsonNode entry) {
        final RecordHeaders headers = new RecordHeaders();
        if (entry.size() > 3) {
            for (final JsonNode header : entry.get(3)) {
                headers.add(header.get(0).asText(), header.get(1).asText().getBytes(StandardCharsets.UTF_8));
            }
        }
        final JsonNode timestamp = entry.get(2);
        return new TestRecord<>(text(entry.get(0)), text(entry.get(1)), headers,
            timestamp == null || timestamp.isNull() ? null : timestamp.asLong());
    }

    /** Forwards every record whose value is not "drop". */
    static final class Filter implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            if (!"drop".equals(record.value())) {
                context.forward(record);
            }
        }
    }

    /** Counts per key in store "counts"; every 10 ms of stream time and 1000 ms of wall-clock time emits counts. */
    static final class Counter implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("counts");
            context.schedule(Duration.ofMillis(10), PunctuationType.STREAM_TIME, this::emit);
            context.schedule(Duration.ofMillis(1000), PunctuationType.WALL_CLOCK_TIME,
                timestamp -> context.forward(new Record<>("wall", (long) count(), timestamp)));
        }

        private int count() {
            int n = 0;
            try (KeyValueIterator<String, Long> it = store.all()) {
                while (it.hasNext()) {
                    it.next();
                    n++;
                }
            }
            return n;
        }

        private void emit(final long timestamp) {
            try (KeyValueIterator<String, Long> it = store.all()) {
                while (it.hasNext()) {
                    final KeyValue<String, Long> entry = it.next();
                    context.forward(new Record<>(entry.key, entry.value, timestamp));
                }
            }
        }

        @Override
        public void process(final Record<String, String> record) {
            final Long old = store.get(record.key());
            store.put(record.key(), old == null ? 1L : old + 1);
        }
    }

    /** Re-keys "cust:amount" by customer, value the amount. */
    static final class Rekey implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            final String[] parts = record.value().split(":");
            context.forward(record.withKey(parts[0]).withValue(parts[1]));
        }
    }

    /** Sums amounts per key in store "totals" and forwards the new total. */
    static final class Total implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("totals");
        }

        @Override
        public void process(final Record<String, String> record) {
            final Long old = store.get(record.key());
            final long total = (old == null ? 0L : old) + Long.parseLong(record.value());
            store.put(record.key(), total);
            context.forward(record.withValue(total));
        }
    }

    /** Splits "a,b" into one record per item (same timestamp), keyed by the item. */
    static final class Split implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            for (final String item : record.value().split(",")) {
                context.forward(record.withKey(item).withValue(item));
            }
        }
    }

    /** Forwards the value with a tag appended. */
    static final class Tag implements Processor<String, String, String, String> {
        private final String tag;
        private ProcessorContext<String, String> context;

        Tag(final String tag) {
            this.tag = tag;
        }

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            context.forward(record.withValue(record.value() + "@" + tag));
        }
    }

    /** Forwards "topic/offset" of the record being processed. */
    static final class Where implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            final String where = context.recordMetadata().map(m -> m.topic() + "/" + m.offset()).orElse("none");
            context.forward(record.withValue(where));
        }
    }

    /** Each request of the list (one per seed) answered in order. */
    static ArrayNode runAll(final JsonNode requests) {
        final ArrayNode out = Main.MAPPER.createArrayNode();
        requests.forEach(request -> out.add(run(request)));
        return out;
    }

    static ObjectNode run(final JsonNode request) {
        final ObjectNode out = Main.MAPPER.createObjectNode();
        if (request.has("filter")) {
            out.set("filter", filter(request.get("filter")));
        }
        if (request.has("counter")) {
            out.set("counter", counter(request.get("counter")));
        }
        if (request.has("rekey")) {
            out.set("rekey", rekey(request.get("rekey")));
        }
        if (request.has("fanout")) {
            out.set("fanout", fanOut(request.get("fanout")));
        }
        if (request.has("pattern")) {
            out.set("pattern", pattern(request.get("pattern")));
        }
        if (request.has("idle")) {
            out.set("idle", idle(request.get("idle")));
        }
        if (request.has("dsl")) {
            out.set("dsl", dsl(request.get("dsl")));
        }
        if (request.has("dsl_joins")) {
            out.set("dsl_joins", dslJoins(request.get("dsl_joins")));
        }
        if (request.has("dsl_more")) {
            out.set("dsl_more", dslMore(request.get("dsl_more")));
        }
        if (request.has("dsl_windows")) {
            out.set("dsl_windows", dslWindows(request.get("dsl_windows")));
        }
        if (request.has("global_store")) {
            final ObjectNode global = out.putObject("global_store");
            for (final String handler : List.of("continue", "fail")) {
                global.set(handler, globalStore(request.get("global_store"), handler.equals("continue")));
            }
        }
        return out;
    }

    /** A global store's state-update processor: keeps the value as it is. */
    static final class KeepAmount implements Processor<String, Integer, Void, Void> {
        private KeyValueStore<String, Integer> store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore("amounts");
        }

        @Override
        public void process(final Record<String, Integer> record) {
            store.put(record.key(), record.value());
        }
    }

    /** Forwards {@code <value>=<amount of the global store at key value>}. */
    static final class AmountLookup implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, Integer> store;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("amounts");
        }

        @Override
        public void process(final Record<String, String> record) {
            context.forward(record.withValue(record.value() + "=" + store.get(record.value())));
        }
    }

    /**
     * A global store of 4-byte integers ({@code IntegerDeserializer}: a value of another length cannot be
     * deserialized) and a stream looking it up, with {@code deserialization.exception.handler} LogAndContinue or
     * LogAndFail: the global task's handling of an undecodable record (the driver pipes global records through
     * {@code GlobalStateUpdateTask#update}). Records are {@code [topic, key, value, timestamp]}, values sent as
     * UTF-8 strings (4 ASCII characters decode to an integer).
     */
    static ObjectNode globalStore(final JsonNode request, final boolean logAndContinue) {
        final Topology topology = new Topology();
        topology.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("amounts"), Serdes.String(),
            Serdes.Integer()).withLoggingDisabled(), "amounts-source", STRING_DE, new IntegerDeserializer(), "amounts",
            "amounts-update", KeepAmount::new);
        topology.addSource("orders", STRING_DE, STRING_DE, "orders");
        topology.addProcessor("lookup", AmountLookup::new, "orders");
        topology.addSink("out", "out", STRING_SER, STRING_SER, "lookup");
        final Properties props = props();
        props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
            logAndContinue ? LogAndContinueExceptionHandler.class : LogAndFailExceptionHandler.class);
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", STRING_DE, STRING_DE);
            int piped = 0;
            for (final JsonNode entry : request.get("records")) {
                try {
                    driver.createInputTopic(entry.get(0).asText(), STRING_SER, STRING_SER)
                        .pipeInput(text(entry.get(1)), text(entry.get(2)), entry.get(3).asLong());
                } catch (final StreamsException e) {
                    answer.put("error", e.getMessage());
                    break;
                }
                piped++;
            }
            answer.put("piped", piped);
            answer.set("out", records(out));
            final ObjectNode store = answer.putObject("store");
            try (KeyValueIterator<String, Integer> all = driver.<String, Integer>getKeyValueStore("amounts").all()) {
                all.forEachRemaining(kv -> store.put(kv.key, kv.value));
            }
            double dropped = 0;
            for (final java.util.Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> m
                    : driver.metrics().entrySet()) {
                if (m.getKey().name().equals("dropped-records-total")) {
                    dropped += ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
            answer.put("dropped", (long) dropped);
        }
        return answer;
    }

    /** in -> filter (drops value "drop") -> out, on an input topic whose clock starts and advances as asked. */
    static ObjectNode filter(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "in");
        topology.addProcessor("filter", Filter::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "filter");
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", STRING_SER, STRING_SER,
                Instant.ofEpochMilli(request.get("start_timestamp_ms").asLong()),
                Duration.ofMillis(request.get("auto_advance_ms").asLong()));
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", STRING_DE, STRING_DE);
            for (final JsonNode entry : request.get("records")) {
                in.pipeInput(record(entry));
            }
            answer.set("out", records(out));
        }
        return answer;
    }

    /** words -> count (store "counts", STREAM_TIME 10 ms emits every count, WALL_CLOCK_TIME 1000 ms the key count). */
    static ObjectNode counter(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "words");
        topology.addProcessor("count", Counter::new, "src");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"), Serdes.String(),
            Serdes.Long()).withLoggingDisabled(), "count");
        topology.addSink("sink", "counts", STRING_SER, new LongSerializer(), "count");
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("words", STRING_SER, STRING_SER);
            final TestOutputTopic<String, Long> out = driver.createOutputTopic("counts", STRING_DE,
                new LongDeserializer());
            final TreeSet<String> keys = new TreeSet<>();
            for (final JsonNode entry : request.get("words")) {
                in.pipeInput(entry.get(0).asText(), "x", entry.get(1).asLong());
                keys.add(entry.get(0).asText());
            }
            answer.set("after_records", records(out));
            final ArrayNode advances = answer.putArray("after_each_advance");
            for (final JsonNode advance : request.get("wall_clock_advances")) {
                driver.advanceWallClockTime(Duration.ofMillis(advance.asLong()));
                advances.add(records(out));
            }
            final KeyValueStore<String, Long> store = driver.getKeyValueStore("counts");
            final ObjectNode contents = answer.putObject("store");
            keys.forEach(key -> contents.put(key, store.get(key)));
        }
        return answer;
    }

    /** orders -> rekey -> orders-by-customer (a topic the topology reads) -> total (store "totals") -> totals. */
    static ObjectNode rekey(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("orders-src", STRING_DE, STRING_DE, "orders");
        topology.addProcessor("rekey", Rekey::new, "orders-src");
        topology.addSink("by-customer-sink", "orders-by-customer", STRING_SER, STRING_SER, "rekey");
        topology.addSource("by-customer-src", STRING_DE, STRING_DE, "orders-by-customer");
        topology.addProcessor("total", Total::new, "by-customer-src");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("totals"), Serdes.String(),
            Serdes.Long()).withLoggingDisabled(), "total");
        topology.addSink("totals-sink", "totals", STRING_SER, new LongSerializer(), "total");
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("orders", STRING_SER, STRING_SER);
            for (final JsonNode entry : request.get("orders")) {
                in.pipeInput(record(entry));
            }
            answer.set("orders-by-customer",
                records(driver.createOutputTopic("orders-by-customer", STRING_DE, STRING_DE)));
            answer.set("totals", records(driver.createOutputTopic("totals", STRING_DE, new LongDeserializer())));
            answer.set("produced_topic_names", Main.MAPPER.valueToTree(new TreeSet<>(driver.producedTopicNames())));
        }
        return answer;
    }

    /** in -> split -> mid -> b (tag B) -> [mid2, trace]; mid2 -> c (tag C) -> trace: the order records are sent. */
    static ObjectNode fanOut(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("in-src", STRING_DE, STRING_DE, "in");
        topology.addProcessor("split", Split::new, "in-src");
        topology.addSink("mid-sink", "mid", STRING_SER, STRING_SER, "split");
        topology.addSource("mid-src", STRING_DE, STRING_DE, "mid");
        topology.addProcessor("b", () -> new Tag("B"), "mid-src");
        topology.addSink("mid2-sink", "mid2", STRING_SER, STRING_SER, "b");
        topology.addSink("trace-b", "trace", STRING_SER, STRING_SER, "b");
        topology.addSource("mid2-src", STRING_DE, STRING_DE, "mid2");
        topology.addProcessor("c", () -> new Tag("C"), "mid2-src");
        topology.addSink("trace-c", "trace", STRING_SER, STRING_SER, "c");
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", STRING_SER, STRING_SER);
            for (final JsonNode entry : request.get("inputs")) {
                in.pipeInput(record(entry));
            }
            answer.set("trace", records(driver.createOutputTopic("trace", STRING_DE, STRING_DE)));
        }
        return answer;
    }

    /** A pattern source "events-.*" -> where (value "topic/offset") -> out; other topics are refused. */
    static ObjectNode pattern(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, java.util.regex.Pattern.compile("events-.*"));
        topology.addProcessor("where", Where::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "where");
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final ArrayNode errors = answer.putArray("errors");
            for (final JsonNode entry : request.get("records")) {
                try {
                    driver.createInputTopic(entry.get(0).asText(), STRING_SER, STRING_SER)
                        .pipeInput(entry.get(1).asText(), entry.get(2).asText(), entry.get(3).asLong());
                    errors.addNull();
                } catch (final IllegalArgumentException e) {
                    errors.add(e.getMessage());
                }
            }
            answer.set("out", records(driver.createOutputTopic("out", STRING_DE, STRING_DE)));
        }
        return answer;
    }

    /** One task reads left and right with max.task.idle.ms: a record on left waits for the wall clock. */
    static ObjectNode idle(final JsonNode request) {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "left", "right");
        topology.addProcessor("filter", Filter::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "filter");
        final Properties props = props();
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, request.get("max_task_idle_ms").asLong());
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", STRING_DE, STRING_DE);
            final TestInputTopic<String, String> left = driver.createInputTopic("left", STRING_SER, STRING_SER);
            for (final JsonNode entry : request.get("left")) {
                left.pipeInput(record(entry));
            }
            answer.put("after_pipe", out.getQueueSize());
            final ArrayNode sizes = answer.putArray("after_each_advance");
            for (final JsonNode advance : request.get("wall_clock_advances")) {
                driver.advanceWallClockTime(Duration.ofMillis(advance.asLong()));
                sizes.add(out.getQueueSize());
            }
            answer.set("out", records(out));
        }
        return answer;
    }

    /**
     * A DSL program (its Python twin is {@code dsl_topology} in {@code tests/driver_programs.py}), with the record
     * cache off ({@code statestore.cache.max.bytes=0}): with a cache, which updates reach the output depends on
     * when the cache is flushed, which Kafka leaves to commit timing; without it every update is forwarded.
     * dsl-in -> filter -> mapValues -> dsl-mapped; -> count (dsl-counts) -> dsl-counts-out;
     * dsl-in -> map (swap) -> repartition -> aggregate (dsl-agg) -> dsl-agg-out; dsl-table (dsl-table-store) -> out.
     */
    static ObjectNode dsl(final JsonNode request) {
        final org.apache.kafka.streams.StreamsBuilder builder = new org.apache.kafka.streams.StreamsBuilder();
        final org.apache.kafka.streams.kstream.Consumed<String, String> strings =
            org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String());
        final org.apache.kafka.streams.kstream.KStream<String, String> in = builder.stream("dsl-in", strings);
        final org.apache.kafka.streams.kstream.KStream<String, String> mapped = in
            .filter((k, v) -> v != null && !v.equals("drop"))
            .mapValues(v -> v + "!");
        mapped.to("dsl-mapped", org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.String()));
        mapped.groupByKey()
            .count(org.apache.kafka.streams.kstream.Materialized.as("dsl-counts"))
            .toStream()
            .to("dsl-counts-out", org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.Long()));
        in.map((k, v) -> org.apache.kafka.streams.KeyValue.pair(v, k))
            .groupByKey()
            .aggregate(() -> "", (k, v, agg) -> agg + v,
                org.apache.kafka.streams.kstream.Materialized.<String, String,
                    org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as(
                    "dsl-agg").withValueSerde(Serdes.String()))
            .toStream()
            .to("dsl-agg-out", org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.String()));
        builder.table("dsl-table", strings, org.apache.kafka.streams.kstream.Materialized.as("dsl-table-store"))
            .toStream()
            .to("dsl-table-out", org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.String()));
        final Topology topology = builder.build();
        final Properties props = dslProps();
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("dsl-in", STRING_SER, STRING_SER);
            final TestInputTopic<String, String> table = driver.createInputTopic("dsl-table", STRING_SER, STRING_SER);
            for (final JsonNode entry : request.get("records")) {
                (entry.get(0).asText().equals("table") ? table : input).pipeInput(
                    new TestRecord<>(text(entry.get(1)), text(entry.get(2)), null, entry.get(3).asLong()));
            }
            answer.set("dsl-mapped", records(driver.createOutputTopic("dsl-mapped", STRING_DE, STRING_DE)));
            answer.set("dsl-counts-out",
                records(driver.createOutputTopic("dsl-counts-out", STRING_DE, new LongDeserializer())));
            answer.set("dsl-agg-out", records(driver.createOutputTopic("dsl-agg-out", STRING_DE, STRING_DE)));
            answer.set("dsl-table-out", records(driver.createOutputTopic("dsl-table-out", STRING_DE, STRING_DE)));
            final ObjectNode stores = answer.putObject("stores");
            for (final String name : List.of("dsl-counts", "dsl-agg", "dsl-table-store")) {
                final ObjectNode contents = stores.putObject(name);
                try (org.apache.kafka.streams.state.KeyValueIterator<Object, org.apache.kafka.streams.state
                        .ValueAndTimestamp<Object>> it = driver.getTimestampedKeyValueStore(name).all()) {
                    while (it.hasNext()) {
                        final org.apache.kafka.streams.KeyValue<Object, org.apache.kafka.streams.state
                            .ValueAndTimestamp<Object>> kv = it.next();
                        contents.putArray(String.valueOf(kv.key))
                            .add(Main.MAPPER.valueToTree(kv.value.value())).add(kv.value.timestamp());
                    }
                }
            }
        }
        return answer;
    }

    /**
     * Joins, windows and table operations through the DSL (twin: {@code dsl_joins_topology} in
     * {@code tests/driver_programs.py}); record cache off, as in {@link #dsl}.
     */
    static ObjectNode dslJoins(final JsonNode request) {
        final org.apache.kafka.streams.StreamsBuilder builder = new org.apache.kafka.streams.StreamsBuilder();
        final org.apache.kafka.streams.kstream.Consumed<String, String> strings =
            org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String());
        final org.apache.kafka.streams.kstream.Produced<String, String> out =
            org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.String());
        final org.apache.kafka.streams.kstream.Produced<String, Long> counts =
            org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.Long());
        final org.apache.kafka.streams.kstream.KStream<String, String> orders = builder.stream("j-orders", strings);
        final org.apache.kafka.streams.kstream.KStream<String, String> payments =
            builder.stream("j-payments", strings);
        final org.apache.kafka.streams.kstream.KTable<String, String> customers =
            builder.table("j-customers", strings);
        final org.apache.kafka.streams.kstream.KTable<String, String> regions = builder.table("j-regions", strings);
        orders.leftJoin(customers, (o, c) -> o + "/" + c).to("j-enriched", out);
        orders.groupByKey()
            .windowedBy(org.apache.kafka.streams.kstream.TimeWindows.ofSizeAndGrace(Duration.ofMillis(10),
                Duration.ofMillis(5)))
            .count()
            .toStream()
            .map((w, c) -> KeyValue.pair(w.key() + "@" + w.window().start(), c))
            .to("j-windowed", counts);
        customers.filter((k, v) -> !"x".equals(v))
            .mapValues(v -> v + "!")
            .toStream()
            .to("j-customers-out", out);
        customers.groupBy((k, v) -> KeyValue.pair(v, v)).count().toStream().to("j-by-name", counts);
        customers.join(regions, (c, r) -> c + "@" + r).toStream().to("j-customer-regions", out);
        orders.leftJoin(payments, (o, p) -> o + "+" + p,
                org.apache.kafka.streams.kstream.JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5),
                    Duration.ofMillis(2)),
                org.apache.kafka.streams.kstream.StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("j-paid", out);
        final Topology topology = builder.build();
        final Properties props = dslProps();
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final java.util.Map<String, TestInputTopic<String, String>> inputs = new java.util.HashMap<>();
            for (final String topic : List.of("j-orders", "j-payments", "j-customers", "j-regions")) {
                inputs.put(topic, driver.createInputTopic(topic, STRING_SER, STRING_SER));
            }
            for (final JsonNode entry : request.get("records")) {
                inputs.get(entry.get(0).asText()).pipeInput(
                    new TestRecord<>(text(entry.get(1)), text(entry.get(2)), null, entry.get(3).asLong()));
            }
            for (final String topic : List.of("j-enriched", "j-customers-out", "j-customer-regions", "j-paid")) {
                answer.set(topic, records(driver.createOutputTopic(topic, STRING_DE, STRING_DE)));
            }
            for (final String topic : List.of("j-windowed", "j-by-name")) {
                answer.set(topic, records(driver.createOutputTopic(topic, STRING_DE, new LongDeserializer())));
            }
        }
        return answer;
    }

    /**
     * split/branch, flatMap, merge, repartition, a session-window count, KTable groupBy reduce and table-table
     * left/outer joins, a stream-stream outer join (twin: {@code dsl_more_topology} in tests/driver_programs.py).
     */
    static ObjectNode dslMore(final JsonNode request) {
        final org.apache.kafka.streams.StreamsBuilder builder = new org.apache.kafka.streams.StreamsBuilder();
        final org.apache.kafka.streams.kstream.Consumed<String, String> strings =
            org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String());
        final org.apache.kafka.streams.kstream.Produced<String, String> out =
            org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.String());
        final org.apache.kafka.streams.kstream.Produced<String, Long> counts =
            org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.Long());
        final org.apache.kafka.streams.kstream.KStream<String, String> events = builder.stream("m-events", strings);
        final org.apache.kafka.streams.kstream.KStream<String, String> other = builder.stream("m-other", strings);
        final java.util.Map<String, org.apache.kafka.streams.kstream.KStream<String, String>> branches = events
            .filter((k, v) -> v != null)
            .split(org.apache.kafka.streams.kstream.Named.as("m-"))
            .branch((k, v) -> v.startsWith("a"), org.apache.kafka.streams.kstream.Branched.as("a"))
            .branch((k, v) -> v.startsWith("b"), org.apache.kafka.streams.kstream.Branched.as("b"))
            .defaultBranch(org.apache.kafka.streams.kstream.Branched.as("rest"));
        branches.get("m-a").flatMap((k, v) -> List.of(KeyValue.pair(k, v + "1"), KeyValue.pair(v, k == null ? "-" : k)))
            .merge(branches.get("m-b"))
            .repartition()
            .to("m-merged", out);
        branches.get("m-rest").groupByKey()
            .windowedBy(org.apache.kafka.streams.kstream.SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5),
                Duration.ofMillis(3)))
            .count()
            .toStream()
            .map((w, c) -> KeyValue.pair(w.key() + "@" + w.window().start() + "-" + w.window().end(), c))
            .to("m-sessions", counts);
        final org.apache.kafka.streams.kstream.KTable<String, String> left = builder.table("m-left", strings);
        final org.apache.kafka.streams.kstream.KTable<String, String> right = builder.table("m-right", strings);
        left.groupBy((k, v) -> KeyValue.pair(v, k)).reduce((a, b) -> a + b, (a, b) -> a.replace(b, ""))
            .toStream().to("m-reduced", out);
        left.leftJoin(right, (l, r) -> l + "<" + r).toStream().to("m-left-join", out);
        left.outerJoin(right, (l, r) -> l + ">" + r,
                org.apache.kafka.streams.kstream.Materialized.as("m-outer"))
            .toStream().to("m-outer-join", out);
        events.outerJoin(other, (l, r) -> l + "|" + r,
                org.apache.kafka.streams.kstream.JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(4),
                    Duration.ofMillis(1)),
                org.apache.kafka.streams.kstream.StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("m-stream-outer", out);
        final Topology topology = builder.build();
        final Properties props = dslProps();
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final java.util.Map<String, TestInputTopic<String, String>> inputs = new java.util.HashMap<>();
            for (final String topic : List.of("m-events", "m-other", "m-left", "m-right")) {
                inputs.put(topic, driver.createInputTopic(topic, STRING_SER, STRING_SER));
            }
            for (final JsonNode entry : request.get("records")) {
                inputs.get(entry.get(0).asText()).pipeInput(
                    new TestRecord<>(text(entry.get(1)), text(entry.get(2)), null, entry.get(3).asLong()));
            }
            for (final String topic : List.of("m-merged", "m-reduced", "m-left-join", "m-outer-join",
                    "m-stream-outer")) {
                answer.set(topic, records(driver.createOutputTopic(topic, STRING_DE, STRING_DE)));
            }
            answer.set("m-sessions", records(driver.createOutputTopic("m-sessions", STRING_DE,
                new LongDeserializer())));
        }
        return answer;
    }

    /** Sliding windows and both kinds of suppress (twin: {@code dsl_windows_topology} in tests/driver_programs.py). */
    static ObjectNode dslWindows(final JsonNode request) {
        final org.apache.kafka.streams.StreamsBuilder builder = new org.apache.kafka.streams.StreamsBuilder();
        final org.apache.kafka.streams.kstream.Produced<String, Long> counts =
            org.apache.kafka.streams.kstream.Produced.with(Serdes.String(), Serdes.Long());
        final org.apache.kafka.streams.kstream.KGroupedStream<String, String> grouped = builder
            .stream("w-in", org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey();
        grouped.windowedBy(org.apache.kafka.streams.kstream.SlidingWindows.ofTimeDifferenceAndGrace(
                Duration.ofMillis(10), Duration.ofMillis(3)))
            .count()
            .toStream()
            .map((w, c) -> KeyValue.pair(w.key() + "@" + w.window().start() + "-" + w.window().end(), c))
            .to("w-sliding", counts);
        grouped.windowedBy(org.apache.kafka.streams.kstream.TimeWindows.ofSizeAndGrace(Duration.ofMillis(10),
                Duration.ofMillis(2)))
            .count()
            .suppress(org.apache.kafka.streams.kstream.Suppressed.untilWindowCloses(
                org.apache.kafka.streams.kstream.Suppressed.BufferConfig.unbounded()))
            .toStream()
            .map((w, c) -> KeyValue.pair(w.key() + "@" + w.window().start(), c))
            .to("w-final", counts);
        grouped.count()
            .suppress(org.apache.kafka.streams.kstream.Suppressed.untilTimeLimit(Duration.ofMillis(5),
                org.apache.kafka.streams.kstream.Suppressed.BufferConfig.unbounded()))
            .toStream()
            .to("w-limited", counts);
        final Topology topology = builder.build();
        final Properties props = dslProps();
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> input = driver.createInputTopic("w-in", STRING_SER, STRING_SER);
            for (final JsonNode entry : request.get("records")) {
                input.pipeInput(new TestRecord<>(text(entry.get(0)), text(entry.get(1)), null, entry.get(2).asLong()));
            }
            for (final String topic : List.of("w-sliding", "w-final", "w-limited")) {
                answer.set(topic, records(driver.createOutputTopic(topic, STRING_DE, new LongDeserializer())));
            }
        }
        return answer;
    }
}
