package dev.streamproc.oracle;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;

import java.util.Comparator;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Topologies built with Kafka Streams 4.2.2's own DSL and Processor API, whose {@code Topology#describe()} text is
 * kept in {@code conformance/golden/<name>.txt} so that streamproc's describe() parser and topology analysis are
 * tested on real output, not on hand-written text.
 *
 * <p>Every topology is built with a default {@code StreamsBuilder} (no optimization), String serdes, and no
 * application id: describe() shows raw internal names ({@code …-repartition}), which the analysis prefixes.
 */
final class GoldenTopologies {
    private GoldenTopologies() {
    }

    /** Name -> builder, in the order they are written. */
    static Map<String, Supplier<Topology>> all() {
        final Map<String, Supplier<Topology>> topologies = new LinkedHashMap<>();
        topologies.put("passthrough-one-topic", () -> passThrough("input"));
        topologies.put("passthrough-two-topics", () -> passThrough("left", "right"));
        topologies.put("count", GoldenTopologies::count);
        topologies.put("windowed-count-tumbling", () -> windowedCount(TimeWindows.ofSizeAndGrace(
            Duration.ofSeconds(10), Duration.ofSeconds(5))));
        topologies.put("windowed-count-hopping", () -> windowedCount(TimeWindows.ofSizeAndGrace(
            Duration.ofSeconds(10), Duration.ofSeconds(2)).advanceBy(Duration.ofSeconds(5))));
        topologies.put("repartition-aggregate", GoldenTopologies::repartitionAggregate);
        topologies.put("stream-table-join", GoldenTopologies::streamTableJoin);
        topologies.put("stream-stream-join", GoldenTopologies::streamStreamJoin);
        topologies.put("punctuation", GoldenTopologies::punctuation);
        return topologies;
    }

    /** The application id under which {@code copartition-groups.json} names internal topics. */
    static final String APPLICATION_ID = "golden-app";

    /**
     * Writes {@code <name>.txt} (describe()) per topology and {@code copartition-groups.json}: name -> Kafka's own
     * {@code InternalTopologyBuilder#copartitionGroups()} (sorted lists of full topic names), which describe()
     * does not show.
     */
    static List<String> writeAll(final Path dir) throws Exception {
        Files.createDirectories(dir);
        final List<String> written = new ArrayList<>();
        final ObjectNode groups = Main.MAPPER.createObjectNode();
        for (final Map.Entry<String, Supplier<Topology>> e : all().entrySet()) {
            final String text = e.getValue().get().describe().toString();
            Files.writeString(dir.resolve(e.getKey() + ".txt"), text, StandardCharsets.UTF_8);
            final ArrayNode list = groups.putArray(e.getKey());
            for (final List<String> group : copartitionGroups(e.getValue().get())) {
                final ArrayNode g = list.addArray();
                group.forEach(g::add);
            }
            written.add(e.getKey());
        }
        Files.writeString(dir.resolve("copartition-groups.json"),
            Main.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(groups) + "\n", StandardCharsets.UTF_8);
        return written;
    }

    /** Kafka's copartition groups of a topology, with internal topics prefixed by {@link #APPLICATION_ID}. */
    static List<List<String>> copartitionGroups(final Topology topology) throws ReflectiveOperationException {
        final InternalTopologyBuilder builder = TopologyRunner.internalBuilder(topology);
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APPLICATION_ID);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:0");
        builder.rewriteTopology(new StreamsConfig(props));
        final List<List<String>> out = new ArrayList<>();
        for (final Set<String> group : builder.copartitionGroups()) {
            out.add(new ArrayList<>(new TreeSet<>(group)));
        }
        out.sort(Comparator.comparing(Object::toString));
        return out;
    }

    /** The ordering scenarios' topology: source {@code source} on every topic, processor {@code proc}. */
    static Topology passThrough(final String... topics) {
        final Topology topology = new Topology();
        topology.addSource(TaskRunner.SOURCE, topics);
        topology.addProcessor(TaskRunner.PROC, () -> new Processor<Object, Object, Void, Void>() {
            @Override
            public void process(final Record<Object, Object> record) {
            }
        }, TaskRunner.SOURCE);
        return topology;
    }

    static Topology count() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("words", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
            .toStream()
            .to("word-counts", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology windowedCount(final TimeWindows windows) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("clicks", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(windows)
            .count()
            .toStream()
            .map((windowed, count) -> org.apache.kafka.streams.KeyValue.pair(windowed.key(), count))
            .to("click-counts", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology repartitionAggregate() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("orders", Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .aggregate(() -> 0L, (key, value, total) -> total + value.length(),
                Materialized.with(Serdes.String(), Serdes.Long()))
            .toStream()
            .to("order-totals", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Topology streamTableJoin() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KTable<String, String> customers = builder.table("customers",
            Consumed.with(Serdes.String(), Serdes.String()));
        builder.stream("orders", Consumed.with(Serdes.String(), Serdes.String()))
            .join(customers, (order, customer) -> order + "/" + customer)
            .to("enriched-orders", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    static Topology streamStreamJoin() {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<String, String> left = builder.stream("impressions",
            Consumed.with(Serdes.String(), Serdes.String()));
        final KStream<String, String> right = builder.stream("clicks",
            Consumed.with(Serdes.String(), Serdes.String()));
        left.join(right, (impression, click) -> impression + "/" + click,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)),
                StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("impression-clicks", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** Processor API: a processor with a store, punctuating on stream time and on wall-clock time. */
    static Topology punctuation() {
        final Topology topology = new Topology();
        topology.addSource("source", "events");
        topology.addProcessor("punctuator", PunctuatingProcessor::new, "source");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("last-seen"),
            Serdes.String(), Serdes.String()), "punctuator");
        topology.addSink("sink", "punctuations", "punctuator");
        return topology;
    }

    static final class PunctuatingProcessor implements Processor<String, String, String, String> {
        @Override
        public void init(final ProcessorContext<String, String> context) {
            context.schedule(Duration.ofSeconds(10), PunctuationType.STREAM_TIME,
                ts -> context.forward(new Record<>("stream-time", Long.toString(ts), ts)));
            context.schedule(Duration.ofSeconds(30), PunctuationType.WALL_CLOCK_TIME,
                ts -> context.forward(new Record<>("wall-clock", Long.toString(ts), ts)));
        }

        @Override
        public void process(final Record<String, String> record) {
        }
    }
}
