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
 * </pre>
 *
 * Prints one JSON object on stdout, in the shape of the scenario's {@code expected}. Logs go to stderr
 * (slf4j-simple). Exit code 0 when a result (including an expected {@code error}) was produced, 2 on bad usage
 * or an oracle-internal failure (then stdout holds {@code {"oracle_error": "..."}}).
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
        if (args.length != 2 || !(args[0].equals("task") || args[0].equals("state"))) {
            System.err.println("usage: java -jar streamproc-oracle.jar task|state <scenario.json>");
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
}
