package dev.streamproc.oracle43;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import dev.streamproc.oracle.RestorePlanRunner;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.StateDirectory;
import org.apache.kafka.streams.processor.internals.Task;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.Ks43OffsetsProbe;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The Kafka Streams 4.3.1 oracle for state operations only 4.3 has.
 *
 * <pre>
 *   java -jar streamproc-oracle-ks43.jar state &lt;state scenario.json&gt;
 *   java -jar streamproc-oracle-ks43.jar batch &lt;scenario.json&gt;...
 *   java -jar streamproc-oracle-ks43.jar restore &lt;bootstrap&gt; &lt;restore_plan scenario.json&gt;... [--parallel N]
 * </pre>
 *
 * <p>Same protocol as the 4.2.2 oracle ({@code dev.streamproc.oracle.Main}): {@code state} prints one JSON object
 * in the scenario's {@code expected} shape (exit 2 with {@code {"oracle_error"}} on an oracle failure);
 * {@code batch} prints one line per file, in argument order: {@code {"file", "kind", "result"}},
 * {@code {"file", "kind", "unsupported"}} or {@code {"file", "kind", "oracle_error"}}.
 *
 * <p>{@code offsets_cf_entry}: the entry a real 4.3.1 {@code RocksDBStore} writes into its {@code offsets} column
 * family ({@link Ks43OffsetsProbe}): {@code status} after the store was opened (read while open) or opened and
 * closed; {@code changelog_offset} after {@code commit({partition: offset})}, the call
 * {@code ProcessorStateManager#commit} makes per logged store (with {@code OFFSET_UNKNOWN} = -4 when the offset is
 * unknown). The entry is found among what the column family holds, by its key.
 *
 * <p>{@code register_stores} (4.3 scenarios whose {@code expected} is an error): a real 4.3.1
 * {@code ProcessorStateManager#registerStore} per store in order, as in the 4.2.2 oracle; 4.3 refuses every store
 * name that is a prefix of {@code .checkpoint}. A registration that succeeds is not answered: 4.3 has no
 * {@code .checkpoint} per task any more (KIP-1035), so {@code checkpointed_stores} has no 4.3 meaning.
 */
public final class Ks43Main {
    static {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
    }

    static final ObjectMapper MAPPER = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final String STATUS_KEY = "status";

    private Ks43Main() {
    }

    public static void main(final String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("restore")) {
            System.exit(RestorePlanRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 2 && args[0].equals("batch")) {
            for (int i = 1; i < args.length; i++) {
                System.out.println(MAPPER.writeValueAsString(batchLine(args[i])));
                System.out.flush();
            }
            System.exit(0);
        }
        if (args.length != 2 || !args[0].equals("state")) {
            System.err.println("usage: java -jar streamproc-oracle-ks43.jar state <scenario.json> | batch <file>..."
                + " | restore <bootstrap> <scenario.json>...");
            System.exit(2);
        }
        ObjectNode result;
        int exit = 0;
        try {
            result = run(MAPPER.readTree(new File(args[1])));
        } catch (final Exception | AssertionError e) {
            e.printStackTrace(System.err);
            result = MAPPER.createObjectNode();
            result.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
            exit = 2;
        }
        System.out.println(MAPPER.writeValueAsString(result));
        System.out.flush();
        System.exit(exit);
    }

    private static ObjectNode batchLine(final String file) {
        final ObjectNode line = MAPPER.createObjectNode();
        line.put("file", file);
        try {
            final JsonNode scenario = MAPPER.readTree(new File(file));
            line.put("kind", scenario.path("kind").asText());
            line.set("result", run(scenario));
        } catch (final UnsupportedOperationException e) {
            line.put("unsupported", e.getMessage());
        } catch (final Exception | AssertionError e) {
            System.err.println("[oracle-ks43] " + file + ":");
            e.printStackTrace(System.err);
            line.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
        }
        return line;
    }

    static ObjectNode run(final JsonNode scenario) throws Exception {
        final String kind = scenario.path("kind").asText();
        final String operation = scenario.path("operation").asText();
        if (kind.equals("state") && operation.equals("offsets_cf_entry")) {
            return offsetsCfEntry(scenario.get("input"));
        }
        if (kind.equals("state") && operation.equals("register_stores")) {
            return registerStores(scenario);
        }
        throw new UnsupportedOperationException("the Kafka Streams 4.3 oracle answers state/offsets_cf_entry and "
            + "state/register_stores only, not " + kind + "/" + operation);
    }

    private static ObjectNode registerStores(final JsonNode scenario) throws Exception {
        final JsonNode input = scenario.get("input");
        final String applicationId = input.get("application_id").asText();
        final TaskId taskId = TaskId.parse(input.get("task").asText());
        final Path dir = Files.createTempDirectory("oracle-ks43-rs-");
        try {
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:0");
            props.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
            final StreamsConfig config = new StreamsConfig(props);
            final Map<String, String> storeToChangelogTopic = new HashMap<>();
            for (final JsonNode s : input.get("stores")) {
                if (s.get("logged").asBoolean()) {
                    final String name = s.get("name").asText();
                    storeToChangelogTopic.put(name, ProcessorStateManager.storeChangelogTopic(applicationId, name,
                        null));
                }
            }
            final StateDirectory stateDirectory = new StateDirectory(config, Time.SYSTEM, true, false);
            // No log prefix: the message is Kafka's text alone (a live task's is prefixed "stream-thread [..] task [..] ").
            final ProcessorStateManager stateManager = new ProcessorStateManager(taskId, Task.TaskType.ACTIVE, false,
                new LogContext(), stateDirectory, storeToChangelogTopic,
                Set.of(new TopicPartition("input", taskId.partition())));
            for (final JsonNode s : input.get("stores")) {
                final String name = s.get("name").asText();
                final StateStore store = s.get("persistent").asBoolean() ? Stores.persistentKeyValueStore(name).get()
                    : Stores.inMemoryKeyValueStore(name).get();
                try {
                    stateManager.registerStore(store, (k, v) -> { }, () -> { });
                } catch (final IllegalArgumentException e) {
                    return registerError(scenario, e);
                }
            }
            throw new UnsupportedOperationException("register_stores on Kafka Streams 4.3: every store registered; "
                + "4.3 keeps no per-task .checkpoint (KIP-1035), so the oracle answers only the refusals");
        } finally {
            try (Stream<Path> walk = Files.walk(dir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (final IOException ignored) {
                // a temp directory left behind is harmless
            }
        }
    }

    /** The scenario error shape, as the 4.2.2 oracle's {@code StateRunner} prints it. */
    private static ObjectNode registerError(final JsonNode scenario, final IllegalArgumentException e) {
        final String message = e.getMessage() == null ? "" : e.getMessage();
        final ObjectNode out = MAPPER.createObjectNode();
        final ObjectNode err = out.putObject("error");
        if (message.startsWith("Illegal store name: ")) {
            err.put("type", "IllegalStoreName");
        } else if (message.endsWith(" has already been registered.")) {
            err.put("type", "DuplicateStore");
        }
        final JsonNode expectedContains = scenario.path("expected").path("error").path("message_contains");
        if (expectedContains.isArray()) {
            final var found = err.putArray("message_contains");
            for (final JsonNode c : expectedContains) {
                if (message.contains(c.asText())) {
                    found.add(c.asText());
                }
            }
        }
        err.put("kafka_exception", e.getClass().getSimpleName());
        err.put("kafka_message_contains", message);
        return out;
    }

    private static ObjectNode offsetsCfEntry(final JsonNode input) throws Exception {
        final String entry = input.get("entry").asText();
        final Path dir = Files.createTempDirectory("oracle-ks43-");
        try {
            final Map<String, String> cf;
            final String key;
            switch (entry) {
                case "status" -> {
                    final String state = input.get("state").asText();
                    if (!state.equals("open") && !state.equals("closed")) {
                        throw new IllegalArgumentException("unknown status state " + state);
                    }
                    cf = Ks43OffsetsProbe.offsetsColumnFamily(dir.toFile(), new TaskId(0, 0), "s", null,
                        state.equals("open"));
                    key = STATUS_KEY;
                }
                case "changelog_offset" -> {
                    final String partition = input.get("partition").asText();
                    final int dash = partition.lastIndexOf('-');
                    final TopicPartition tp = new TopicPartition(partition.substring(0, dash),
                        Integer.parseInt(partition.substring(dash + 1)));
                    cf = Ks43OffsetsProbe.offsetsColumnFamily(dir.toFile(), new TaskId(0, tp.partition()), "s",
                        Map.of(tp, input.get("offset").asLong()), false);
                    // The store keys the entry by TopicPartition#toString, which is "<topic>-<partition>".
                    key = tp.toString();
                }
                default -> throw new IllegalArgumentException("unknown offsets column family entry " + entry);
            }
            final String keyHex = HEX.formatHex(key.getBytes(StandardCharsets.UTF_8));
            if (!cf.containsKey(keyHex)) {
                throw new IllegalStateException("the offsets column family holds no entry " + key + ": " + cf);
            }
            final ObjectNode out = MAPPER.createObjectNode();
            out.put("column_family", Ks43OffsetsProbe.OFFSETS_COLUMN_FAMILY);
            out.put("key_hex", keyHex);
            out.put("value_hex", cf.get(keyHex));
            return out;
        } finally {
            try (Stream<Path> walk = Files.walk(dir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (final IOException ignored) {
                // a temp directory left behind is harmless
            }
        }
    }
}
