package dev.streamproc.oracle;

import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.streams.Topology;

/**
 * {@code avro-app}: one of Confluent's Avro example applications ({@link WikipediaFeedAvroApp},
 * {@link PageViewRegionApp}) as a real {@code KafkaStreams} app on a real broker and a real Schema Registry, over
 * everything its input topics hold when it starts.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar avro-app &lt;bootstrap&gt; &lt;application.id&gt; &lt;state.dir&gt; &lt;program&gt;
 *       &lt;registry-base-url&gt; [&lt;user&gt; &lt;password&gt;]
 * </pre>
 *
 * <p>{@code program} is {@code wikipedia-feed} or {@code pageview-region}; {@code registry-base-url} is the
 * registry's root ({@code http://127.0.0.1:PORT}), whose v3 API ({@code /apis/registry/v3}) the serde speaks;
 * basic auth when a user is given (a password {@code -} is read from the environment variable
 * {@code REGISTRY_PASSWORD}, which keeps it off the command line). The run protocol is {@code dsl-app}'s ({@link DslAppRunner#appProps},
 * {@link DslAppRunner#runToCommittedEnds}): restore events, then {@code {"event": "result", "restored", "store":
 * {name: ["key -> value"...]}}} with store values as Java prints them (a generic or specific record's
 * {@code toString()} is its Avro JSON). The app's own settings (default serdes, registry) are the example's, by
 * each app's {@code configure}.
 */
final class AvroAppRunner {
    /** Each program: its topology and how it sets its serdes and registry into the streams properties. */
    private record Program(Supplier<Topology> topology, AppConfigurer configurer) {
    }

    @FunctionalInterface
    private interface AppConfigurer {
        void configure(Properties props, String registry, String user, String password);
    }

    private static final Map<String, Program> PROGRAMS = Map.of(
        "wikipedia-feed", new Program(WikipediaFeedAvroApp::topology, WikipediaFeedAvroApp::configure),
        "pageview-region", new Program(PageViewRegionApp::topology, PageViewRegionApp::configure));

    /** A password argument {@code -} means: the registry's password is in {@link #PASSWORD_ENV} (not on argv). */
    static final String PASSWORD_FROM_ENV = "-";
    static final String PASSWORD_ENV = "REGISTRY_PASSWORD";

    private AvroAppRunner() {
    }

    /**
     * {@code avro-describe <program>}: the program's {@code Topology#describe()} text, what a user compares a port with
     * ({@code streamproc topology check}).
     */
    static int describe(final String[] args) {
        final Program program = args.length == 1 ? PROGRAMS.get(args[0]) : null;
        if (program == null) {
            System.err.println("usage: java -jar streamproc-oracle.jar avro-describe wikipedia-feed|pageview-region");
            return 2;
        }
        System.out.print(program.topology().get().describe());
        return 0;
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 5 && args.length != 7) {
            System.err.println("usage: java -jar streamproc-oracle.jar avro-app <bootstrap> <application.id> "
                + "<state.dir> wikipedia-feed|pageview-region <registry-base-url> [<user> <password>]");
            return 2;
        }
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final Program program = PROGRAMS.get(args[3]);
        if (program == null) {
            StateResumeApp.emit(Map.of("event", "error", "message", "no Avro program " + args[3]
                + " (wikipedia-feed, pageview-region)"));
            return 2;
        }
        final String user = args.length == 7 ? args[5] : null;
        final String password = args.length != 7 ? null
            : PASSWORD_FROM_ENV.equals(args[6]) ? System.getenv(PASSWORD_ENV) : args[6];
        final Properties props = DslAppRunner.appProps(bootstrap, applicationId, args[2]);
        program.configurer().configure(props, args[4], user, password);
        DslAppRunner.runToCommittedEnds(program.topology().get(), props, bootstrap, applicationId);
        return 0;
    }
}
