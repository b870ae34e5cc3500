package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;

/**
 * Entry point of the Kafka Streams oracle.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar task  &lt;ordering scenario.json&gt;
 *   java -jar streamproc-oracle.jar state &lt;state scenario.json&gt;
 *   java -jar streamproc-oracle.jar batch &lt;scenario.json&gt;...
 *   java -jar streamproc-oracle.jar app &lt;bootstrap&gt; &lt;ordering scenario.json&gt; [--max-poll-records N]
 *       [--fetch-max-bytes N] [--repeat K]
 *   java -jar streamproc-oracle.jar golden &lt;output directory&gt;
 *   java -jar streamproc-oracle.jar dsl &lt;output directory&gt;
 *   java -jar streamproc-oracle.jar dsl-run &lt;request.json&gt;   (DslRunRunner: DSL programs' results)
 *   java -jar streamproc-oracle.jar suppress-run &lt;request.json&gt;   (SuppressRunner: the suppress buffer's changelog)
 *   java -jar streamproc-oracle.jar dsl-app BOOTSTRAP APP_ID STATE_DIR PROGRAM   (DslAppRunner: one as a real app)
 *   java -jar streamproc-oracle.jar avro-app BOOTSTRAP APP_ID STATE_DIR PROGRAM REGISTRY [USER PASSWORD]
 *       (AvroAppRunner: one of Confluent's Avro example apps as a real app)
 *   java -jar streamproc-oracle.jar avro-describe PROGRAM   (AvroAppRunner: an Avro example's describe() text)
 *   java -jar streamproc-oracle.jar avro-serde &lt; requests.jsonl   (AvroSerdeRunner: Avro through a registry)
 *   java -jar streamproc-oracle.jar restore &lt;bootstrap&gt; &lt;restore_plan scenario.json&gt;... [--parallel N]
 *       [--poll-ms MS]
 *   java -jar streamproc-oracle.jar topology &lt;bootstrap&gt; &lt;topology scenario.json&gt;... [--parallel N]
 *   java -jar streamproc-oracle.jar reference &lt;request.json&gt;
 *   java -jar streamproc-oracle.jar startpos &lt;bootstrap&gt; &lt;planning scenario.json&gt;... [--parallel N]
 *   java -jar streamproc-oracle.jar proof &lt;bootstrap&gt; &lt;spec.json&gt;
 *   java -jar streamproc-oracle.jar bench &lt;bootstrap&gt; &lt;app id&gt; &lt;workload&gt; ... (bench/compare.py; {@link BenchApps})
 * </pre>
 *
 * <p>{@code reference} ({@link ReferenceRunner}) answers the reference values of streamproc's unit-level
 * reproductions (java.util.PriorityQueue traces, murmur2 and the default partitioner, TopologyTestDriver outputs)
 * for the inputs a request gives.
 *
 * <p>{@code restore} ({@link RestorePlanRunner}) answers {@code restore_plan} scenarios with a real
 * {@code KafkaStreams} app per scenario on the broker (N at a time, default 2), one JSON line per file in argument
 * order: {@code {"file", "kind", "id", "result", "observations"}}, {@code {"file", ..., "unsupported"}} or
 * {@code {"file", ..., "oracle_error"}}; exit 0 unless the usage was wrong. {@code --poll-ms} sets the apps'
 * {@code poll.ms} (default Kafka Streams' 100 ms), which decides the race of a checkpoint beyond the log end.
 * {@code topology} ({@link TopologyRunner}) answers {@code topology} scenarios the same way: the scenario's program
 * as a real app on the broker, its sub-topologies, internal topics and tasks read from Kafka Streams.
 *
 * <p>{@code app} ({@link AppRunner}) runs the scenario K times (default 1) through a real {@code KafkaStreams}
 * instance on the broker and prints {@code {"results": [distinct results], "runs": [...], "not_observable": [...]}}.
 * {@code golden} ({@link GoldenTopologies}) writes each golden topology's {@code describe()} text to
 * {@code <dir>/<name>.txt} and prints the names written.
 *
 * {@code task}/{@code state} print one JSON object on stdout, in the shape of the scenario's {@code expected}.
 * Logs go to stderr (slf4j-simple). Exit code 0 when a result (including an expected {@code error}) was produced,
 * 2 on bad usage or an oracle-internal failure (then stdout holds {@code {"oracle_error": "..."}}).
 *
 * <p>{@code batch} runs many scenarios in one JVM (a JVM start costs about a second per scenario) and prints one
 * JSON object per line, in argument order: {@code {"file", "kind", "result"}} when the oracle answered,
 * {@code {"file", "kind", "unsupported"}} when it does not cover the scenario's kind or operation, and
 * {@code {"file", "kind", "oracle_error"}} when it failed on that scenario. Every scenario is attempted; exit 0
 * unless the usage was wrong.
 */
public final class Main {
    static {
        // slf4j-simple logs to stderr; keep Kafka's WARN/ERROR lines (drops, handler decisions), not its INFO noise.
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
    }

    static final ObjectMapper MAPPER = new ObjectMapper();

    private Main() {
    }

    public static void main(final String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("app")) {
            System.exit(app(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length == 2 && args[0].equals("golden")) {
            for (final String name : GoldenTopologies.writeAll(java.nio.file.Path.of(args[1]))) {
                System.out.println(name);
            }
            System.exit(0);
        }
        if (args.length == 2 && args[0].equals("dsl")) {
            for (final String name : DslPrograms.writeAll(java.nio.file.Path.of(args[1]))) {
                System.out.println(name);
            }
            System.exit(0);
        }
        if (args.length >= 1 && args[0].equals("batch")) {
            System.exit(batch(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("bench")) {
            System.exit(BenchApps.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("topology")) {
            System.exit(TopologyRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("dsl-app")) {
            System.exit(DslAppRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("avro-app")) {
            System.exit(AvroAppRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("avro-describe")) {
            System.exit(AvroAppRunner.describe(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("avro-serde")) {
            System.exit(AvroSerdeRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("dsl-run")) {
            System.exit(DslRunRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("suppress-run")) {
            System.exit(SuppressRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("reference")) {
            System.exit(ReferenceRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("proof")) {
            System.exit(ProofApps.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("startpos")) {
            System.exit(StartPositionRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length >= 1 && args[0].equals("restore")) {
            System.exit(RestorePlanRunner.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
        }
        if (args.length != 2 || !(args[0].equals("task") || args[0].equals("state"))) {
            System.err.println("usage: java -jar streamproc-oracle.jar task|state <scenario.json>"
                + " | batch <scenario.json>...");
            System.exit(2);
        }
        final JsonNode scenario = MAPPER.readTree(new File(args[1]));
        ObjectNode result;
        int exit = 0;
        try {
            result = args[0].equals("task") ? new TaskRunner(scenario).run() : StateRunner.run(scenario);
        } catch (final Exception | AssertionError e) {
            e.printStackTrace(System.err);
            result = MAPPER.createObjectNode();
            result.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
            exit = 2;
        }
        System.out.println(MAPPER.writeValueAsString(result));
        System.out.flush();
        // Kafka Streams leaves no non-daemon threads here, but exit explicitly to be safe.
        System.exit(exit);
    }

    /** The sub-command answering each scenario kind in {@code batch} mode. */
    static String commandForKind(final String kind) {
        return switch (kind) {
            case "ordering" -> "task";
            case "state" -> "state";
            default -> null;
        };
    }

    private static int batch(final String[] files) {
        if (files.length == 0) {
            System.err.println("usage: java -jar streamproc-oracle.jar batch <scenario.json>...");
            return 2;
        }
        for (final String file : files) {
            final ObjectNode line = MAPPER.createObjectNode();
            line.put("file", file);
            try {
                final JsonNode scenario = MAPPER.readTree(new File(file));
                final String kind = scenario.path("kind").asText();
                line.put("kind", kind);
                final String command = commandForKind(kind);
                if (command == null) {
                    line.put("unsupported", "the oracle has no mode for scenario kind '" + kind + "'");
                } else {
                    line.set("result", command.equals("task") ? new TaskRunner(scenario).run()
                        : StateRunner.run(scenario));
                }
            } catch (final UnsupportedOperationException e) {
                line.put("unsupported", e.getMessage());
            } catch (final Exception | AssertionError e) {
                System.err.println("[oracle] " + file + ":");
                e.printStackTrace(System.err);
                line.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
            }
            try {
                System.out.println(MAPPER.writeValueAsString(line));
            } catch (final com.fasterxml.jackson.core.JsonProcessingException e) {
                System.out.println("{\"file\":" + quote(file) + ",\"oracle_error\":\"cannot encode result\"}");
            }
            System.out.flush();
        }
        return 0;
    }

    private static int app(final String[] args) throws Exception {
        Integer maxPoll = null;
        Integer fetchBytes = null;
        int repeat = 1;
        final java.util.List<String> positional = new java.util.ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--max-poll-records" -> maxPoll = Integer.parseInt(args[++i]);
                case "--fetch-max-bytes" -> fetchBytes = Integer.parseInt(args[++i]);
                case "--repeat" -> repeat = Integer.parseInt(args[++i]);
                default -> positional.add(args[i]);
            }
        }
        if (positional.size() != 2 || repeat < 1) {
            System.err.println("usage: java -jar streamproc-oracle.jar app <bootstrap> <scenario.json>"
                + " [--max-poll-records N] [--fetch-max-bytes N] [--repeat K]");
            return 2;
        }
        final JsonNode scenario = MAPPER.readTree(new File(positional.get(1)));
        ObjectNode result;
        int exit = 0;
        try {
            if (!"ordering".equals(scenario.path("kind").asText("ordering"))) {
                throw new UnsupportedOperationException("app mode runs ordering scenarios only");
            }
            result = AppRunner.run(positional.get(0), scenario, maxPoll, fetchBytes, repeat);
        } catch (final Exception | AssertionError e) {
            e.printStackTrace(System.err);
            result = MAPPER.createObjectNode();
            result.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
            exit = 2;
        }
        System.out.println(MAPPER.writeValueAsString(result));
        System.out.flush();
        return exit;
    }

    private static String quote(final String text) {
        return MAPPER.getNodeFactory().textNode(text).toString();
    }
}
