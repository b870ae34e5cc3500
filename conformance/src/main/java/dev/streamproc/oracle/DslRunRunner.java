package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Supplier;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.internals.SegmentedBytesStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * {@code dsl-run}: the results of the side-by-side DSL programs ({@link DslPrograms}, and the DSL programs of
 * {@link GoldenTopologies}) on Kafka's own {@code TopologyTestDriver}, record cache off
 * ({@code statestore.cache.max.bytes=0}: every update is forwarded, as streamproc forwards it), String default serdes
 * as the programs assume.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar dsl-run &lt;request.json&gt;
 * </pre>
 *
 * <p>The request ({@code tests/integration/conformance/test_dsl_programs_run.py}) is
 * {@code {"runs": [{"id", "registry": "dsl"|"golden", "program", "records": [[topic, key, value, timestamp]...],
 * "outputs": [topic...]}]}}; keys and values are strings (or null) serialized with {@code StringSerializer} and piped
 * in order. The answer is {@code {"runs": {id: {"outputs": {topic: [[key hex, value hex, timestamp]...]},
 * "dropped": dropped-records-total, "stores": {store: {"bytes_store": class, "entries": [[key hex, value hex]...]}}}}}},
 * outputs read as bytes; a run Kafka fails gets {@code {"error": message}}. A store's entries are what its innermost
 * bytes store holds after the last record (the store's own layout: a timestamped value is {@code timestamp ‖ value},
 * a window or session key is the segmented store's key), read through {@code all()} of the key-value bytes store or
 * of the segmented bytes store under the wrappers (metering, change-logging); a store with neither inner store (the
 * suppress buffer) gets its class and no entries.
 * One JVM for every run keeps the test fast.
 */
final class DslRunRunner {
    private static final StringSerializer STRING_SER = new StringSerializer();
    private static final ByteArrayDeserializer BYTES_DE = new ByteArrayDeserializer();

    private DslRunRunner() {
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -jar streamproc-oracle.jar dsl-run <request.json>");
            return 2;
        }
        final JsonNode request = Main.MAPPER.readTree(new File(args[0]));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        final ObjectNode runs = answer.putObject("runs");
        final Map<String, Supplier<Topology>> dsl = DslPrograms.all();
        final Map<String, Supplier<Topology>> golden = GoldenTopologies.all();
        for (final JsonNode run : request.get("runs")) {
            final String registry = run.get("registry").asText();
            final Supplier<Topology> program = (registry.equals("golden") ? golden : dsl)
                .get(run.get("program").asText());
            final ObjectNode result = runs.putObject(run.get("id").asText());
            if (program == null) {
                result.put("error", "no " + registry + " program " + run.get("program").asText());
                continue;
            }
            try {
                runOne(program.get(), run, result);
            } catch (final RuntimeException e) {
                result.removeAll();
                result.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
        System.out.println(Main.MAPPER.writeValueAsString(answer));
        return 0;
    }

    private static String hex(final byte[] bytes) {
        return bytes == null ? null : HexFormat.of().formatHex(bytes);
    }

    private static String text(final JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static void runOne(final Topology topology, final JsonNode run, final ObjectNode result) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "dsl-run");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.STATE_DIR_CONFIG, PrivateStateDir.PATH);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
            for (final JsonNode r : run.get("records")) {
                final String topic = r.get(0).asText();
                inputs.computeIfAbsent(topic, t -> driver.createInputTopic(t, STRING_SER, STRING_SER))
                    .pipeInput(new TestRecord<>(text(r.get(1)), text(r.get(2)),
                        Instant.ofEpochMilli(r.get(3).asLong())));
            }
            final ObjectNode outputs = result.putObject("outputs");
            for (final JsonNode t : run.get("outputs")) {
                final TestOutputTopic<byte[], byte[]> out = driver.createOutputTopic(t.asText(), BYTES_DE, BYTES_DE);
                final ArrayNode records = outputs.putArray(t.asText());
                for (final TestRecord<byte[], byte[]> r : out.readRecordsToList()) {
                    records.addArray().add(hex(r.key())).add(hex(r.value())).add(r.timestamp());
                }
            }
            double dropped = 0;
            for (final Map.Entry<MetricName, ? extends Metric> m : driver.metrics().entrySet()) {
                if (m.getKey().name().equals("dropped-records-total")) {
                    dropped += ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
            result.put("dropped", (long) dropped);
            final ObjectNode stores = result.putObject("stores");
            for (final Map.Entry<String, StateStore> store : new TreeMap<>(driver.getAllStateStores()).entrySet()) {
                storeContents(store.getValue(), stores.putObject(store.getKey()));
            }
        }
    }

    /** The raw entries of the innermost bytes store under {@code store}'s wrappers (the answer's "stores"). */
    @SuppressWarnings("unchecked")
    private static void storeContents(final StateStore store, final ObjectNode into) {
        StateStore inner = store;
        while (inner instanceof WrappedStateStore<?, ?, ?> wrapped) {
            inner = wrapped.wrapped();
        }
        into.put("bytes_store", inner.getClass().getSimpleName());
        final KeyValueIterator<Bytes, byte[]> all;
        if (inner instanceof SegmentedBytesStore segmented) {
            all = segmented.all();
        } else if (inner instanceof KeyValueStore<?, ?> keyValue) {
            all = ((KeyValueStore<Bytes, byte[]>) keyValue).all();
        } else {
            return;
        }
        final ArrayNode entries = into.putArray("entries");
        try (all) {
            while (all.hasNext()) {
                final KeyValue<Bytes, byte[]> entry = all.next();
                entries.addArray().add(hex(entry.key.get())).add(hex(entry.value));
            }
        }
    }
}
