package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * The command line shared by the live sub-commands ({@code restore}, {@code topology}):
 * {@code <bootstrap> <scenario.json>... [--parallel N] [--<option> VALUE]...}, at most N scenarios at a time, one
 * JSON line per file in argument order, as {@code batch} prints them.
 *
 * <p>Compiled into both oracle jars (the 4.3.1 one copies it with {@link RestorePlanRunner}), so it uses nothing else
 * of the project.
 */
public final class LiveBatch {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private LiveBatch() {
    }

    /**
     * Parse {@code args}, run {@code runFile(bootstrap, file)} for every file, print the lines; the exit code (2 on
     * a usage error). {@code options} takes the sub-command's own {@code --name VALUE} pairs.
     */
    public static int run(final String command, final String[] args, final Map<String, Consumer<String>> options,
                          final BiFunction<String, String, ObjectNode> runFile) throws Exception {
        int parallel = 2;
        final List<String> positional = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--parallel") && i + 1 < args.length) {
                parallel = Integer.parseInt(args[++i]);
            } else if (options.containsKey(args[i]) && i + 1 < args.length) {
                options.get(args[i]).accept(args[++i]);
            } else {
                positional.add(args[i]);
            }
        }
        if (positional.size() < 2 || parallel < 1) {
            final StringBuilder usage = new StringBuilder("usage: " + command + " <bootstrap> <scenario.json>..."
                + " [--parallel N]");
            options.keySet().forEach(name -> usage.append(" [").append(name).append(" VALUE]"));
            System.err.println(usage);
            return 2;
        }
        final String bootstrap = positional.get(0);
        final List<String> files = positional.subList(1, positional.size());
        final ExecutorService pool = Executors.newFixedThreadPool(parallel);
        try {
            final List<Future<ObjectNode>> futures = new ArrayList<>();
            for (final String file : files) {
                futures.add(pool.submit(() -> runFile.apply(bootstrap, file)));
            }
            for (int i = 0; i < files.size(); i++) {
                ObjectNode line;
                try {
                    line = futures.get(i).get();
                } catch (final ExecutionException e) {
                    line = MAPPER.createObjectNode();
                    line.put("file", files.get(i));
                    line.put("oracle_error", String.valueOf(e.getCause()));
                }
                System.out.println(MAPPER.writeValueAsString(line));
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.flush();
        return 0;
    }
}
