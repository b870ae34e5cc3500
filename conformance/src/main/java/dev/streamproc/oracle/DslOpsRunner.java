package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The DSL operator programs of {@code tests/integration/conformance/dsl_ops_programs.py} written with Kafka's own
 * {@link StreamsBuilder} and run on Kafka's {@link TopologyTestDriver} with the record cache off
 * ({@code statestore.cache.max.bytes=0}), for the {@code dsl_ops} section of {@code reference}: streamproc builds the
 * same topologies with the Processor API from {@code streamproc.dsl.internals} and must produce the same output
 * records (key, value, timestamp) and the same final store contents.
 *
 * <p>Windowed keys are written {@code key@start/end}; values as strings, a null value as JSON null.
 */
public final class DslOpsRunner {

    private DslOpsRunner() {
    }

    private static final StringSerializer SER = new StringSerializer();
    private static final StringDeserializer DE = new StringDeserializer();

    private static Properties props() {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "dsl-ops-app");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, PrivateStateDir.PATH);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        return props;
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static String windowed(final Windowed<String> key) {
        return key.key() + "@" + key.window().start() + "/" + key.window().end();
    }

    private static String str(final Object value) {
        return value == null ? null : value.toString();
    }

    /** Pipes {@code [topic, key, value, timestamp]} entries in order; returns the "out" records. */
    private static ArrayNode run(final TopologyTestDriver driver, final JsonNode inputs) {
        for (final JsonNode entry : inputs) {
            final TestInputTopic<String, String> in = driver.createInputTopic(entry.get(0).asText(), SER, SER);
            in.pipeInput(new TestRecord<>(text(entry.get(1)), text(entry.get(2)), null, entry.get(3).asLong()));
        }
        final ArrayNode out = Main.MAPPER.createArrayNode();
        for (final TestRecord<String, String> record : driver.createOutputTopic("out", DE, DE).readRecordsToList()) {
            final ArrayNode node = out.addArray();
            node.add(record.key());
            node.add(record.value());
            node.add(record.timestamp());
        }
        return out;
    }

    /** Kafka's {@code dropped-records-total} of the driver's one task. */
    private static double dropped(final TopologyTestDriver driver) {
        double total = 0;
        for (final var entry : driver.metrics().entrySet()) {
            if ("dropped-records-total".equals(entry.getKey().name())) {
                total += ((Number) entry.getValue().metricValue()).doubleValue();
            }
        }
        return total;
    }

    static ArrayNode runAll(final JsonNode requests) {
        final ArrayNode out = Main.MAPPER.createArrayNode();
        requests.forEach(request -> out.add(runOne(request)));
        return out;
    }

    static ObjectNode runOne(final JsonNode request) {
        final ObjectNode out = Main.MAPPER.createObjectNode();
        request.fields().forEachRemaining(entry -> {
            final JsonNode params = entry.getValue();
            switch (params.get("program").asText()) {
                case "window_count" -> out.set(entry.getKey(), windowAggregate(params, false));
                case "window_reduce" -> out.set(entry.getKey(), windowAggregate(params, true));
                case "session" -> out.set(entry.getKey(), session(params));
                case "sliding" -> out.set(entry.getKey(), sliding(params));
                case "stream_stream_join" -> out.set(entry.getKey(), streamStreamJoin(params));
                case "stream_table_join" -> out.set(entry.getKey(), streamTableJoin(params));
                case "count" -> out.set(entry.getKey(), count(params));
                case "table_ops" -> out.set(entry.getKey(), tableOps(params));
                case "table_suppress" -> out.set(entry.getKey(), tableSuppress(params));
                case "table_table_join" -> out.set(entry.getKey(), tableTableJoin(params));
                default -> throw new IllegalArgumentException("unknown dsl_ops program " + params.get("program"));
            }
        });
        return out;
    }

    private static TimeWindows timeWindows(final JsonNode params) {
        return TimeWindows.ofSizeAndGrace(Duration.ofMillis(params.get("size").asLong()),
            Duration.ofMillis(params.get("grace").asLong())).advanceBy(Duration.ofMillis(params.get("advance").asLong()));
    }

    /** in -> groupByKey -> windowedBy(TimeWindows) -> count() or reduce(a,b -> a+","+b) [-> suppress] -> out. */
    static ObjectNode windowAggregate(final JsonNode params, final boolean reduce) {
        final StreamsBuilder builder = new StreamsBuilder();
        final var windowed = builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey().windowedBy(timeWindows(params));
        KTable<Windowed<String>, String> table = reduce
            ? windowed.reduce((a, b) -> a + "," + b)
            : windowed.count().mapValues(v -> str(v));
        if (params.path("suppress").asBoolean(false)) {
            table = table.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
        }
        table.toStream().map((k, v) -> KeyValue.pair(windowed(k), v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ArrayNode store = answer.putArray("store");
            final String storeName = params.get("store").asText();
            if (reduce) {
                final WindowStore<String, ValueAndTimestamp<String>> ws = driver.getTimestampedWindowStore(storeName);
                try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> it = ws.all()) {
                    it.forEachRemaining(kv -> store.addArray().add(windowed(kv.key)).add(kv.value.value())
                        .add(kv.value.timestamp()));
                }
            } else {
                final WindowStore<String, ValueAndTimestamp<Long>> ws = driver.getTimestampedWindowStore(storeName);
                try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> it = ws.all()) {
                    it.forEachRemaining(kv -> store.addArray().add(windowed(kv.key)).add(str(kv.value.value()))
                        .add(kv.value.timestamp()));
                }
            }
        }
        return answer;
    }

    /** in -> groupByKey -> windowedBy(SessionWindows) -> aggregate("", agg+v, a+b) -> out. */
    static ObjectNode session(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(params.get("gap").asLong()),
                Duration.ofMillis(params.get("grace").asLong())))
            .aggregate(() -> "", (k, v, agg) -> agg + v, (k, a, b) -> a + "|" + b,
                Materialized.with(Serdes.String(), Serdes.String()))
            .toStream().map((k, v) -> KeyValue.pair(windowed(k), v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ArrayNode store = answer.putArray("store");
            final SessionStore<String, String> ss = driver.getSessionStore(params.get("store").asText());
            final TreeSet<String> keys = new TreeSet<>();
            params.get("inputs").forEach(e -> {
                if (!e.get(1).isNull()) {
                    keys.add(e.get(1).asText());
                }
            });
            for (final String key : keys) {
                try (KeyValueIterator<Windowed<String>, String> it = ss.fetch(key)) {
                    it.forEachRemaining(kv -> store.addArray().add(windowed(kv.key)).add(kv.value));
                }
            }
            // fetchSession of every session the output named, in the order first named: null for a session merged
            // away, and for one that ended before observedStreamTime - retention + 1 though its segment remains.
            final ArrayNode fetched = answer.putArray("fetch_session");
            final Set<String> named = new LinkedHashSet<>();
            answer.get("out").forEach(record -> named.add(record.get(0).asText()));
            for (final String session : named) {
                final int at = session.lastIndexOf('@');
                final int slash = session.indexOf('/', at);
                fetched.addArray().add(session).add(ss.fetchSession(session.substring(0, at),
                    Long.parseLong(session.substring(at + 1, slash)), Long.parseLong(session.substring(slash + 1))));
            }
        }
        return answer;
    }

    private static final ValueJoiner<String, String, String> JOINER = (a, b) -> a + "+" + b;

    /** left, right -> join/leftJoin/outerJoin(JoinWindows before/after/grace) -> out; the join window stores. */
    static ObjectNode streamStreamJoin(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> left = builder.stream("left", Consumed.with(Serdes.String(), Serdes.String()));
        final KStream<String, String> right = builder.stream("right", Consumed.with(Serdes.String(), Serdes.String()));
        final JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(params.get("after").asLong()),
                Duration.ofMillis(params.get("grace").asLong()))
            .before(Duration.ofMillis(params.get("before").asLong()));
        final StreamJoined<String, String, String> joined = StreamJoined.with(Serdes.String(), Serdes.String(),
            Serdes.String());
        final KStream<String, String> result = switch (params.get("kind").asText()) {
            case "inner" -> left.join(right, JOINER, windows, joined);
            case "left" -> left.leftJoin(right, JOINER, windows, joined);
            default -> left.outerJoin(right, JOINER, windows, joined);
        };
        result.to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ObjectNode stores = answer.putObject("stores");
            for (final JsonNode name : params.get("stores")) {
                final ArrayNode contents = stores.putArray(name.asText());
                final WindowStore<String, String> ws = driver.getWindowStore(name.asText());
                try (KeyValueIterator<Windowed<String>, String> it = ws.all()) {
                    it.forEachRemaining(kv -> contents.addArray().add(windowed(kv.key)).add(kv.value));
                }
            }
        }
        return answer;
    }

    /** stream, table -> join/leftJoin -> out; the table's store. */
    static ObjectNode streamTableJoin(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> stream = builder.stream("stream", Consumed.with(Serdes.String(), Serdes.String()));
        final KTable<String, String> table = builder.table("table", Consumed.with(Serdes.String(), Serdes.String()));
        final Joined<String, String, String> joined = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
        final KStream<String, String> result = "inner".equals(params.get("kind").asText())
            ? stream.join(table, JOINER, joined)
            : stream.leftJoin(table, JOINER, joined);
        result.to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ArrayNode store = answer.putArray("store");
            final KeyValueStore<String, ValueAndTimestamp<String>> kv =
                driver.getTimestampedKeyValueStore(params.get("store").asText());
            try (KeyValueIterator<String, ValueAndTimestamp<String>> it = kv.all()) {
                it.forEachRemaining(e -> store.addArray().add(e.key).add(e.value.value()).add(e.value.timestamp()));
            }
        }
        return answer;
    }

    /** in -> groupByKey -> count() -> toStream -> out, with the count store. */
    static ObjectNode count(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .count()
            .toStream().mapValues(v -> str(v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ArrayNode store = answer.putArray("store");
            final KeyValueStore<String, ValueAndTimestamp<Long>> kv =
                driver.getTimestampedKeyValueStore(params.get("store").asText());
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = kv.all()) {
                it.forEachRemaining(e -> store.addArray().add(e.key).add(str(e.value.value())).add(e.value.timestamp()));
            }
        }
        return answer;
    }


    private static ArrayNode outRecords(final TopologyTestDriver driver, final String topic) {
        final ArrayNode out = Main.MAPPER.createArrayNode();
        for (final TestRecord<String, String> record : driver.createOutputTopic(topic, DE, DE).readRecordsToList()) {
            out.addArray().add(record.key()).add(record.value()).add(record.timestamp());
        }
        return out;
    }

    private static ArrayNode kvStore(final TopologyTestDriver driver, final String name) {
        final ArrayNode store = Main.MAPPER.createArrayNode();
        final KeyValueStore<String, ValueAndTimestamp<String>> kv = driver.getTimestampedKeyValueStore(name);
        try (KeyValueIterator<String, ValueAndTimestamp<String>> it = kv.all()) {
            it.forEachRemaining(e -> store.addArray().add(e.key).add(e.value.value()).add(e.value.timestamp()));
        }
        return store;
    }

    /**
     * table -> filter(value not ending in "0") -> [mapValues(v + "!") -> out;
     * groupBy(group of "group:amount", amount) -> aggregate("", agg + "+" + v, agg + "-" + v) -> out2].
     */
    static ObjectNode tableOps(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> filtered = builder.table("table", Consumed.with(Serdes.String(), Serdes.String()))
            .filter((k, v) -> !v.endsWith("0"));
        filtered.mapValues(v -> v + "!").toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
        filtered.groupBy((k, v) -> KeyValue.pair(v.split(":")[0], v.split(":")[1]),
                Grouped.with(Serdes.String(), Serdes.String()))
            .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                Materialized.with(Serdes.String(), Serdes.String()))
            .toStream().to("out2", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            answer.set("out2", outRecords(driver, "out2"));
            final ArrayNode repartition = answer.putArray("repartition");
            for (final TestRecord<String, byte[]> record : driver.createOutputTopic(
                    "dsl-ops-app-KTABLE-AGGREGATE-STATE-STORE-0000000008-repartition", DE,
                    new org.apache.kafka.common.serialization.ByteArrayDeserializer()).readRecordsToList()) {
                repartition.addArray().add(record.key()).add(java.util.HexFormat.of().formatHex(record.value()))
                    .add(record.timestamp());
            }
            final ObjectNode stores = answer.putObject("stores");
            for (final JsonNode name : params.get("stores")) {
                stores.set(name.asText(), kvStore(driver, name.asText()));
            }
        }
        return answer;
    }

    /** left, right tables -> join/leftJoin/outerJoin(a + "+" + b) -> out; both tables' stores. */
    static ObjectNode tableTableJoin(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> left = builder.table("left", Consumed.with(Serdes.String(), Serdes.String()));
        final KTable<String, String> right = builder.table("right", Consumed.with(Serdes.String(), Serdes.String()));
        final KTable<String, String> joined = switch (params.get("kind").asText()) {
            case "inner" -> left.join(right, JOINER);
            case "left" -> left.leftJoin(right, JOINER);
            default -> left.outerJoin(right, JOINER);
        };
        joined.toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ObjectNode stores = answer.putObject("stores");
            for (final JsonNode name : params.get("stores")) {
                stores.set(name.asText(), kvStore(driver, name.asText()));
            }
        }
        return answer;
    }

    /** in -> groupByKey -> windowedBy(SlidingWindows) -> aggregate("", agg + v) -> out; the window store. */
    static ObjectNode sliding(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(params.get("difference").asLong()),
                Duration.ofMillis(params.get("grace").asLong())))
            .aggregate(() -> "", (k, v, agg) -> agg + v, Materialized.with(Serdes.String(), Serdes.String()))
            .toStream().map((k, v) -> KeyValue.pair(windowed(k), v))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ArrayNode store = answer.putArray("store");
            final WindowStore<String, ValueAndTimestamp<String>> ws =
                driver.getTimestampedWindowStore(params.get("store").asText());
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<String>> it = ws.all()) {
                it.forEachRemaining(kv -> store.addArray().add(windowed(kv.key)).add(kv.value.value())
                    .add(kv.value.timestamp()));
            }
        }
        return answer;
    }

    /** table -> suppress(untilTimeLimit(wait, unbounded | maxRecords(n).emitEarlyWhenFull)) -> out. */
    static ObjectNode tableSuppress(final JsonNode params) {
        final StreamsBuilder builder = new StreamsBuilder();
        final Duration wait = Duration.ofMillis(params.get("wait").asLong());
        final Suppressed<String> suppressed = params.get("max_records").isNull()
            ? Suppressed.untilTimeLimit(wait, Suppressed.BufferConfig.unbounded())
            : Suppressed.untilTimeLimit(wait,
                Suppressed.BufferConfig.maxRecords(params.get("max_records").asLong()).emitEarlyWhenFull());
        builder.table("table", Consumed.with(Serdes.String(), Serdes.String()))
            .suppress(suppressed)
            .toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        answer.put("describe", builder.build().describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props(), Instant.ofEpochMilli(0))) {
            answer.set("out", run(driver, params.get("inputs")));
            answer.put("dropped", dropped(driver));
            final ObjectNode stores = answer.putObject("stores");
            for (final JsonNode name : params.get("stores")) {
                stores.set(name.asText(), kvStore(driver, name.asText()));
            }
        }
        return answer;
    }
}
