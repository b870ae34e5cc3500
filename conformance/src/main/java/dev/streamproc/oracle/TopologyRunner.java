package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.errors.TopologyException;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.processor.internals.OracleInternals;
import org.apache.kafka.streams.processor.internals.TopologyMetadata;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * {@code topology} scenarios answered by a real {@code KafkaStreams} 4.2.2 application on a real broker.
 *
 * <p>Per scenario: the scenario's program ({@link TopologyPrograms}) is built and its {@code describe()} compared
 * with the scenario's text, identical or line by line (without indentation, blank lines or order: t13 is a
 * re-indented paste), into {@code observations}; then, under a unique prefix {@code tp-<uuid>-} for the
 * application id and every topic, the scenario's topics are created with its partition counts (internal topics it
 * lists as existing too), the app runs until RUNNING and its task assignment is stable, and the answer is read
 * from Kafka Streams itself:
 * <ul>
 *   <li>sub-topologies: source, sink, repartition and changelog topics from {@code InternalTopologyBuilder}'s
 *   {@code subtopologyToTopicsInfo()} (the map the assignor uses), patterns, dynamic sinks and store names from
 *   {@code describe()}; global stores from {@code describe()} and the broker;</li>
 *   <li>{@code copartition_groups}: {@code InternalTopologyBuilder#copartitionGroups()} (groups of 2 or more);</li>
 *   <li>{@code internal_topics}: every topic the app has on the broker (created by it, or listed as existing),
 *   with its partition count; {@code changelog_partitions} from the same;</li>
 *   <li>{@code tasks}: {@code KafkaStreams#metadataForLocalThreads()} (one instance, one thread: every task).</li>
 * </ul>
 * A failure of the app (e.g. {@code TopologyException} "Topics not co-partitioned") is the answer
 * {@code {"error": {"kafka_exception", "kafka_message"}}}. {@code stages} is streamproc's own (the batch order of
 * sub-topologies): Kafka Streams has no such notion, so the answer lists it under {@code not_observable}, as do the
 * optional extras. Names are reported with the prefix removed.
 */
final class TopologyRunner {
    static final String KIND = "topology";
    private static final long RUNNING_TIMEOUT_MS = 90_000L;
    private static final long STABLE_MS = 1_500L;
    static final List<String> NOT_OBSERVABLE = List.of("stages", "repartition_count_derivation",
        "intermediate_user_topics");

    private TopologyRunner() {
    }

    /** {@code topology <bootstrap> <scenario.json>... [--parallel N]} ({@link LiveBatch}). */
    static int run(final String[] args) throws Exception {
        return LiveBatch.run("topology", args, Map.of(), TopologyRunner::runFile);
    }

    static ObjectNode runFile(final String bootstrap, final String file) {
        final ObjectNode line = Main.MAPPER.createObjectNode();
        line.put("file", file);
        try {
            final JsonNode scenario = Main.MAPPER.readTree(new File(file));
            final String id = scenario.path("id").asText();
            line.put("kind", scenario.path("kind").asText());
            line.put("id", id);
            final TopologyPrograms.Program program = TopologyPrograms.forScenario(id);
            if (!KIND.equals(scenario.path("kind").asText())) {
                line.put("unsupported", "the topology mode answers topology scenarios only");
            } else if (program == null) {
                line.put("unsupported", "no Java program for scenario " + id + " in TopologyPrograms");
            } else {
                final Live live = new Live(bootstrap, scenario.path("input"), program);
                line.set("result", live.run());
                line.set("observations", live.observations);
            }
        } catch (final Exception | AssertionError e) {
            System.err.println("[oracle topology] " + file + ":");
            e.printStackTrace(System.err);
            line.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
        }
        return line;
    }

    /** The lines of a describe() text without indentation, trailing blanks, blank lines or order. */
    static List<String> describeLines(final String text) {
        return Arrays.stream(text.split("\r?\n")).map(String::strip).filter(s -> !s.isEmpty()).sorted()
            .collect(Collectors.toList());
    }

    private static final class Live {
        final String bootstrap;
        final JsonNode input;
        final TopologyPrograms.Program program;
        final String prefix = "tp-" + UUID.randomUUID().toString().substring(0, 12) + "-";
        final String scenarioAppId;
        final String appId;
        final ObjectNode observations = Main.MAPPER.createObjectNode();

        Live(final String bootstrap, final JsonNode input, final TopologyPrograms.Program program) {
            this.bootstrap = bootstrap;
            this.input = input;
            this.program = program;
            scenarioAppId = input.path("application_id").asText();
            appId = prefix + scenarioAppId;
        }

        /** The scenario's name of a topic or store: the prefix removed wherever it is (a table's store name
         * embeds its topic's name). */
        String strip(final String name) {
            return name.replace(prefix, "");
        }

        Properties props(final String applicationId) throws IOException {
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
            input.path("config").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
            return props;
        }

        ObjectNode run() throws Exception {
            checkDescribe();
            final Path stateDir = Files.createTempDirectory("streamproc-topology-");
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                try {
                    createTopics(admin);
                    return runStreams(admin, stateDir);
                } finally {
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

        /**
         * Whether Kafka describes the program with the scenario's text: identical, or the same lines. A difference is
         * reported, not fatal: it is either a wrong translation here or a describe() text Kafka does not print
         * (t08's join node name), and only the scenario files can tell which (the tests check it).
         */
        private void checkDescribe() throws IOException {
            final String text = input.path("describe").asText();
            final String kafka = program.build(t -> t, props(scenarioAppId)).describe().toString();
            observations.put("describe_identical", kafka.equals(text));
            final boolean sameLines = describeLines(kafka).equals(describeLines(text));
            observations.put("describe_same_lines", sameLines);
            if (!sameLines) {
                observations.put("kafka_describe", kafka);
            }
        }

        private void createTopics(final Admin admin) throws Exception {
            final List<NewTopic> topics = new ArrayList<>();
            input.path("partition_counts").fields().forEachRemaining(e -> {
                if (!e.getKey().startsWith("__")) {
                    topics.add(new NewTopic(prefix + e.getKey(), e.getValue().asInt(), (short) 1));
                }
            });
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            BrokerTopics.awaitReady(admin, topics.stream().map(NewTopic::name).toList(), Duration.ofSeconds(30));
        }

        private ObjectNode runStreams(final Admin admin, final Path stateDir) throws Exception {
            final Properties props = props(appId);
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            final Topology topology = program.build(t -> prefix + t, props);
            final CountDownLatch settled = new CountDownLatch(1);
            final AtomicReference<Throwable> fatal = new AtomicReference<>();
            final KafkaStreams streams = new KafkaStreams(topology, props);
            try {
                streams.setUncaughtExceptionHandler(e -> {
                    fatal.compareAndSet(null, e);
                    settled.countDown();
                    return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
                streams.setStateListener((now, before) -> {
                    if (now == KafkaStreams.State.RUNNING || now == KafkaStreams.State.ERROR) {
                        settled.countDown();
                    }
                });
                streams.start();
                if (!settled.await(RUNNING_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("the app did not reach RUNNING in " + RUNNING_TIMEOUT_MS + " ms");
                }
                if (fatal.get() != null) {
                    return error(fatal.get());
                }
                final Map<String, List<String>> tasks = stableTasks(streams, fatal);
                if (fatal.get() != null) {
                    return error(fatal.get());
                }
                return result(admin, topology, tasks);
            } finally {
                streams.close(Duration.ofSeconds(30));
            }
        }

        /** Task id -> sorted source partitions, once two readings {@link #STABLE_MS} apart agree. */
        private Map<String, List<String>> stableTasks(final KafkaStreams streams, final AtomicReference<Throwable> fatal)
            throws InterruptedException {
            final long deadline = System.currentTimeMillis() + RUNNING_TIMEOUT_MS;
            Map<String, List<String>> previous = null;
            while (System.currentTimeMillis() < deadline && fatal.get() == null) {
                final Map<String, List<String>> tasks = new TreeMap<>();
                if (streams.state() == KafkaStreams.State.RUNNING) {
                    for (final ThreadMetadata thread : streams.metadataForLocalThreads()) {
                        for (final TaskMetadata task : thread.activeTasks()) {
                            tasks.put(task.taskId().toString(), task.topicPartitions().stream()
                                .map(tp -> strip(tp.topic()) + "-" + tp.partition()).sorted()
                                .collect(Collectors.toList()));
                        }
                    }
                    if (tasks.equals(previous)) {
                        return tasks;
                    }
                    previous = tasks;
                }
                Thread.sleep(STABLE_MS);
            }
            throw new IllegalStateException("the task assignment did not settle; last " + previous);
        }

        private ObjectNode error(final Throwable thrown) {
            Throwable cause = thrown;
            while (cause != null && !(cause instanceof TopologyException)) {
                cause = cause.getCause();
            }
            final Throwable reported = cause != null ? cause : thrown;
            observations.put("failure", String.valueOf(thrown));
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode err = out.putObject("error");
            err.put("kafka_exception", reported.getClass().getSimpleName());
            err.put("kafka_message", String.valueOf(reported.getMessage()).replace(prefix, ""));
            return out;
        }

        private ObjectNode result(final Admin admin, final Topology topology, final Map<String, List<String>> tasks)
            throws Exception {
            final Map<String, Integer> counts = partitionCounts(admin);
            final InternalTopologyBuilder builder = internalBuilder(topology);
            final Map<Integer, InternalTopologyBuilder.TopicsInfo> infos = new HashMap<>();
            for (final Map.Entry<TopologyMetadata.Subtopology, InternalTopologyBuilder.TopicsInfo> e
                : builder.subtopologyToTopicsInfo().entrySet()) {
                infos.put(OracleInternals.subtopologyId(e.getKey()), e.getValue());
            }
            final Set<String> repartitionTopics = new TreeSet<>();
            infos.values().forEach(info -> repartitionTopics.addAll(info.repartitionSourceTopics.keySet()));
            final TopologyDescription description = topology.describe();

            final ObjectNode out = Main.MAPPER.createObjectNode();
            out.putNull("topology_name");
            final ArrayNode subtopologies = out.putArray("subtopologies");
            final List<TopologyDescription.Subtopology> subs = new ArrayList<>(description.subtopologies());
            subs.sort(Comparator.comparingInt(TopologyDescription.Subtopology::id));
            for (final TopologyDescription.Subtopology sub : subs) {
                final InternalTopologyBuilder.TopicsInfo info = infos.get(sub.id());
                final ObjectNode s = subtopologies.addObject();
                s.put("id", sub.id());
                strings(s.putArray("source_topics"), info.sourceTopics);
                final ArrayNode patterns = s.putArray("source_patterns");
                final ArrayNode dynamic = s.putArray("dynamic_sinks");
                final Set<String> stores = new TreeSet<>();
                for (final TopologyDescription.Node node : sub.nodes()) {
                    if (node instanceof TopologyDescription.Source source && source.topicPattern() != null) {
                        patterns.add(source.topicPattern().pattern());
                    } else if (node instanceof TopologyDescription.Sink sink && sink.topicNameExtractor() != null) {
                        dynamic.add(strip(sink.name()));
                    } else if (node instanceof TopologyDescription.Processor processor) {
                        stores.addAll(processor.stores());
                    }
                }
                strings(s.putArray("sink_topics"), info.sinkTopics);
                strings(s.putArray("repartition_source_topics"), info.repartitionSourceTopics.keySet());
                strings(s.putArray("repartition_sink_topics"), info.sinkTopics.stream()
                    .filter(repartitionTopics::contains).collect(Collectors.toList()));
                final ArrayNode storeArray = s.putArray("stores");
                for (final String store : stores) {
                    final String changelog = appId + "-" + store + "-changelog";
                    final ObjectNode st = storeArray.addObject();
                    st.put("name", strip(store));
                    if (info.stateChangelogTopics.containsKey(changelog)) {
                        st.put("changelog_topic", strip(changelog));
                        st.put("changelog_partitions", counts.get(changelog));
                    } else {
                        st.putNull("changelog_topic");
                        st.putNull("changelog_partitions");
                    }
                }
            }
            final ArrayNode globals = out.putArray("global_stores");
            final List<TopologyDescription.GlobalStore> globalStores = new ArrayList<>(description.globalStores());
            globalStores.sort(Comparator.comparingInt(TopologyDescription.GlobalStore::id));
            for (final TopologyDescription.GlobalStore global : globalStores) {
                final String topic = global.source().topicSet().iterator().next();
                final ObjectNode g = globals.addObject();
                g.put("id", global.id());
                g.put("source_node", strip(global.source().name()));
                g.put("processor_node", strip(global.processor().name()));
                g.put("topic", strip(topic));
                g.put("store", strip(global.processor().stores().iterator().next()));
                g.putNull("changelog_topic");
                g.put("topic_partitions", counts.get(topic));
            }
            final List<List<String>> groups = new ArrayList<>();
            for (final Set<String> group : builder.copartitionGroups()) {
                if (group.size() >= 2) {
                    groups.add(group.stream().map(this::strip).sorted().collect(Collectors.toList()));
                }
            }
            groups.sort(Comparator.comparing(Object::toString));
            final ArrayNode groupArray = out.putArray("copartition_groups");
            groups.forEach(g -> strings(groupArray.addArray(), g));
            final ObjectNode internal = out.putObject("internal_topics");
            counts.forEach((topic, n) -> {
                if (topic.startsWith(appId + "-")) {
                    internal.put(strip(topic), n);
                }
            });
            final ObjectNode taskNode = out.putObject("tasks");
            tasks.forEach((task, partitions) -> strings(taskNode.putArray(task), partitions));
            final ArrayNode hidden = out.putArray("not_observable");
            NOT_OBSERVABLE.forEach(hidden::add);
            return out;
        }

        private void strings(final ArrayNode array, final Collection<String> topics) {
            topics.stream().map(this::strip).sorted().forEach(array::add);
        }

        /** Every topic of this run on the broker (sorted by name), with its partition count. */
        private Map<String, Integer> partitionCounts(final Admin admin) throws Exception {
            final Set<String> ours = admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                .filter(t -> t.startsWith(prefix)).collect(Collectors.toSet());
            final Map<String, Integer> counts = new TreeMap<>();
            for (final TopicDescription d : admin.describeTopics(ours).allTopicNames().get(30, TimeUnit.SECONDS)
                .values()) {
                counts.put(d.name(), d.partitions().size());
            }
            return counts;
        }
    }

    static InternalTopologyBuilder internalBuilder(final Topology topology) throws ReflectiveOperationException {
        final Field f = Topology.class.getDeclaredField("internalTopologyBuilder");
        f.setAccessible(true);
        return (InternalTopologyBuilder) f.get(topology);
    }
}
