package dev.streamproc.oracle;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.ContextualFixedKeyProcessor;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * DSL programs whose {@code describe()} text streamproc's Python DSL must reproduce byte for byte: the Python
 * twin of each program is {@code streamproc_dev/conformance/dsl_programs.py} (same name, same calls in the same
 * order). {@code java -jar streamproc-oracle.jar dsl <dir>} writes {@code <dir>/<name>.txt} for each.
 *
 * <p>String serdes throughout (serdes do not show in describe()); no application id (describe() shows raw
 * internal topic names). A name ending in {@code -optimized} is built with {@code topology.optimization=all}.
 */
final class DslPrograms {
    private DslPrograms() {
    }

    private static final Consumed<String, String> STRINGS = Consumed.with(Serdes.String(), Serdes.String());

    static Map<String, Supplier<Topology>> all() {
        final Map<String, Supplier<Topology>> p = new LinkedHashMap<>();
        p.put("stateless-chain", DslPrograms::statelessChain);
        p.put("stateless-named", DslPrograms::statelessNamed);
        p.put("foreach-peek", DslPrograms::foreachPeek);
        p.put("merge", DslPrograms::merge);
        p.put("split-branch", DslPrograms::splitBranch);
        p.put("split-named", DslPrograms::splitNamed);
        p.put("repartition", DslPrograms::repartition);
        p.put("process-values", DslPrograms::processValues);
        p.put("group-by-count", DslPrograms::groupByCount);
        p.put("group-by-key-reduce-named", DslPrograms::groupByKeyReduceNamed);
        p.put("grouped-aggregate", DslPrograms::groupedAggregate);
        p.put("two-aggregates-one-repartition", () -> twoAggregates(false));
        p.put("two-aggregates-one-repartition-optimized", () -> twoAggregates(true));
        p.put("windowed-aggregate-materialized", DslPrograms::windowedAggregate);
        p.put("sliding-count", DslPrograms::slidingCount);
        p.put("session-aggregate", DslPrograms::sessionAggregate);
        p.put("filtered-windowed-aggregate", DslPrograms::filteredWindowedAggregate);
        p.put("filtered-session-count", DslPrograms::filteredSessionCount);
        p.put("branched-windowed-count", DslPrograms::branchedWindowedCount);
        p.put("suppress-window-close", DslPrograms::suppressWindowClose);
        p.put("suppress-time-limit", DslPrograms::suppressTimeLimit);
        p.put("table-ops", DslPrograms::tableOps);
        p.put("table-group-by", DslPrograms::tableGroupBy);
        p.put("table-table-joins", DslPrograms::tableTableJoins);
        p.put("stream-table-left-join-named", DslPrograms::streamTableLeftJoin);
        p.put("stream-global-table-join", DslPrograms::streamGlobalTableJoin);
        p.put("stream-stream-outer-join-named", DslPrograms::streamStreamOuterJoin);
        p.put("stream-stream-left-join", DslPrograms::streamStreamLeftJoin);
        p.put("stream-stream-inner-join-named", DslPrograms::streamStreamInnerJoin);
        p.put("stream-stream-self-join", DslPrograms::streamStreamSelfJoin);
        p.put("table-source-optimized", () -> tableSource(true));
        p.put("table-source", () -> tableSource(false));
        p.put("rekey-join-optimized", () -> rekeyJoin(true));
        p.put("rekey-join", () -> rekeyJoin(false));
        p.put("merge-rekey-optimized", () -> mergeRekey(true));
        p.put("merge-rekey", () -> mergeRekey(false));
        p.put("stream-join-rekey-optimized", () -> streamJoinRekey(true));
        p.put("grouped-named-optimized", DslPrograms::groupedNamedOptimized);
        p.put("named-sources-and-joins", DslPrograms::namedSourcesAndJoins);
        p.put("named-rekey-joins", DslPrograms::namedRekeyJoins);
        p.put("bytes-count", DslPrograms::bytesCount);
        p.put("bytes-window-sum", DslPrograms::bytesWindowSum);
        p.put("bytes-window-count", DslPrograms::bytesWindowCount);
        return p;
    }

    static List<String> writeAll(final Path dir) throws Exception {
        Files.createDirectories(dir);
        final List<String> written = new ArrayList<>();
        for (final Map.Entry<String, Supplier<Topology>> e : all().entrySet()) {
            Files.writeString(dir.resolve(e.getKey() + ".txt"), e.getValue().get().describe().toString(),
                StandardCharsets.UTF_8);
            written.add(e.getKey());
        }
        for (final Map.Entry<String, Supplier<Topology>> e : errors().entrySet()) {
            String message;
            try {
                e.getValue().get();
                message = "no exception";
            } catch (final RuntimeException exception) {
                message = exception.getMessage();
            }
            Files.writeString(dir.resolve(e.getKey() + ".error.txt"), message + "\n", StandardCharsets.UTF_8);
            written.add(e.getKey());
        }
        return written;
    }

    /** Programs Kafka Streams refuses while they are built: the exception's message is written. */
    static Map<String, Supplier<Topology>> errors() {
        final Map<String, Supplier<Topology>> p = new LinkedHashMap<>();
        p.put("error-duplicate-processor-name", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("in", STRINGS).filter((k, v) -> true, Named.as("same")).mapValues(v -> v, Named.as("same"));
            return b.build();
        });
        p.put("error-duplicate-store-name", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("a", STRINGS).groupByKey().count(Materialized.as("counts"));
            b.stream("b", STRINGS).groupByKey().count(Materialized.as("counts"));
            return b.build();
        });
        p.put("error-unknown-store", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("in", STRINGS).process(() -> new ContextualProcessor<String, String, String, String>() {
                @Override
                public void process(final Record<String, String> record) {
                }
            }, "missing");
            return b.build();
        });
        p.put("error-illegal-name", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("in", STRINGS).filter((k, v) -> true, Named.as("not legal!"));
            return b.build();
        });
        p.put("error-empty-name", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("in", STRINGS).filter((k, v) -> true, Named.as(""));
            return b.build();
        });
        p.put("error-topic-twice", () -> {
            final StreamsBuilder b = new StreamsBuilder();
            b.stream("in", STRINGS).to("out");
            b.table("in", STRINGS);
            return b.build();
        });
        return p;
    }

    private static Topology build(final StreamsBuilder builder, final boolean optimized) {
        final Properties props = new Properties();
        props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG,
            optimized ? StreamsConfig.OPTIMIZE : StreamsConfig.NO_OPTIMIZATION);
        return builder.build(props);
    }

    static Topology statelessChain() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .filter((k, v) -> v != null)
            .filterNot((k, v) -> v.isEmpty())
            .mapValues(v -> v.toUpperCase())
            .map((k, v) -> KeyValue.pair(v, k))
            .flatMapValues(v -> List.of(v, v))
            .flatMap((k, v) -> List.of(KeyValue.pair(k, v)))
            .selectKey((k, v) -> v)
            .mapValues((k, v) -> k + v)
            .to("out");
        return b.build();
    }

    static Topology statelessNamed() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(Serdes.String(), Serdes.String()).withName("orders-in"))
            .filter((k, v) -> v != null, Named.as("non-null"))
            .mapValues(v -> v.toUpperCase(), Named.as("upper"))
            .selectKey((k, v) -> v, Named.as("by-value"))
            .peek((k, v) -> { }, Named.as("look"))
            .to("out", Produced.<String, String>as("orders-out"));
        return b.build();
    }

    static Topology foreachPeek() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> s = b.stream("in", STRINGS);
        s.peek((k, v) -> { }).to("out");
        s.foreach((k, v) -> { });
        return b.build();
    }

    static Topology merge() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> a = b.stream("a", STRINGS);
        final KStream<String, String> c = b.stream("c", STRINGS);
        a.merge(c).mapValues(v -> v).merge(b.stream("d", STRINGS), Named.as("all")).to("out");
        return b.build();
    }

    static Topology splitBranch() {
        final StreamsBuilder b = new StreamsBuilder();
        final Map<String, KStream<String, String>> branches = b.stream("in", STRINGS)
            .split()
            .branch((k, v) -> v.startsWith("a"))
            .branch((k, v) -> v.startsWith("b"), Branched.withConsumer(ks -> ks.to("bees")))
            .defaultBranch();
        branches.values().forEach(ks -> ks.to("rest"));
        return b.build();
    }

    static Topology splitNamed() {
        final StreamsBuilder b = new StreamsBuilder();
        final Map<String, KStream<String, String>> branches = b.stream("in", STRINGS)
            .split(Named.as("route-"))
            .branch((k, v) -> v.startsWith("a"), Branched.as("a"))
            .branch((k, v) -> v.startsWith("b"), Branched.withFunction(ks -> ks.mapValues(v -> v), "b"))
            .noDefaultBranch();
        branches.get("route-a").to("as");
        branches.get("route-b").to("bs");
        return b.build();
    }

    static Topology repartition() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .repartition()
            .repartition(Repartitioned.<String, String>as("spread").withNumberOfPartitions(3))
            .to("out");
        return b.build();
    }

    static Topology processValues() {
        final StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("seen"),
            Serdes.String(), Serdes.String()));
        b.stream("in", STRINGS)
            .process(() -> new ContextualProcessor<String, String, String, String>() {
                @Override
                public void process(final Record<String, String> record) {
                    context().forward(record);
                }
            }, "seen")
            .processValues(() -> new ContextualFixedKeyProcessor<String, String, String>() {
                @Override
                public void process(final FixedKeyRecord<String, String> record) {
                    context().forward(record);
                }
            }, Named.as("values"))
            .to("out");
        return b.build();
    }

    static Topology groupByCount() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("words", STRINGS)
            .groupBy((k, v) -> v)
            .count()
            .toStream()
            .to("counts");
        return b.build();
    }

    static Topology groupByKeyReduceNamed() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .reduce((a, c) -> a + c, Named.as("concat"), Materialized.as("concatenated"))
            .toStream(Named.as("changes"))
            .to("out");
        return b.build();
    }

    static Topology groupedAggregate() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupBy((k, v) -> v, Grouped.as("by-value"))
            .aggregate(() -> "", (k, v, agg) -> agg + v, Materialized.with(Serdes.String(), Serdes.String()))
            .toStream()
            .to("out");
        return b.build();
    }

    /** Bytes keys and values, a Long count: the shape streamproc runs over columns (spark/columnar_count.py). */
    static Topology bytesCount() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
            .groupByKey()
            .count(Materialized.<Bytes, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.Bytes())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .to("counts", Produced.with(Serdes.Bytes(), Serdes.Long()));
        return b.build();
    }

    /**
     * The bench's window workload made small (bench/workloads.py {@code dsl_window}), the shape streamproc runs over
     * columns (spark/columnar_window.py): re-key by the value's first byte through a named repartition topic, then
     * the total value length per key in 10 s tumbling windows with 5 min grace (longer than a hand-off test's data
     * spans, shorter than the oracle's latest records: those are dropped), Bytes keys and a Long sum in a timestamped
     * window store; {@code toStream(mapper)} is {@code toStream().selectKey(mapper)}.
     */
    static Topology bytesWindowSum() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
            .selectKey((k, v) -> Bytes.wrap(new byte[] {v.get()[0]}))
            .repartition(Repartitioned.with(Serdes.Bytes(), Serdes.Bytes()).withName("rekeyed"))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofMinutes(5)))
            .aggregate(() -> 0L, (k, v, sum) -> sum + v.get().length,
                Materialized.<Bytes, Long, WindowStore<Bytes, byte[]>>as("sums")
                    .withKeySerde(Serdes.Bytes())
                    .withValueSerde(Serdes.Long()))
            .toStream((windowed, sum) -> windowed.key())
            .to("sums", Produced.with(Serdes.Bytes(), Serdes.Long()));
        return b.build();
    }

    /**
     * The windowed {@code count()} streamproc folds over columns (spark/columnar_window.py's count fold): Bytes keys
     * and values (an interactive query prints a Bytes key, not a byte[]'s identity hash), no re-key, 10 s windows
     * hopping by 5 s (each record falls in two) with 20 s grace: of the oracle's late records, some are dropped from
     * both windows and some (on two of three seeds) from the earlier one only, counted in the later; a Long count in
     * a timestamped window store; {@code toStream(mapper)} is {@code toStream().selectKey(mapper)}.
     */
    static Topology bytesWindowCount() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(Serdes.Bytes(), Serdes.Bytes()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(20))
                .advanceBy(Duration.ofSeconds(5)))
            .count(Materialized.<Bytes, Long, WindowStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.Bytes())
                .withValueSerde(Serdes.Long()))
            .toStream((windowed, count) -> windowed.key())
            .to("counts", Produced.with(Serdes.Bytes(), Serdes.Long()));
        return b.build();
    }

    static Topology twoAggregates(final boolean optimized) {
        final StreamsBuilder b = new StreamsBuilder();
        final KGroupedStream<String, String> grouped = b.stream("in", STRINGS)
            .selectKey((k, v) -> v)
            .groupByKey();
        grouped.count().toStream().to("counts");
        grouped.reduce((a, c) -> a + c).toStream().to("reduced");
        return build(b, optimized);
    }

    static Topology windowedAggregate() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
            .aggregate(() -> "", (k, v, agg) -> agg + v, Materialized.as("per-minute"))
            .toStream()
            .selectKey((w, v) -> w.key())
            .to("out");
        return b.build();
    }

    /** A windowed aggregate behind filters and a value mapper: they decide which records reach it, so its stream
     * time (issue #29 runs the prefix in every key shard). */
    static Topology filteredWindowedAggregate() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .filter((k, v) -> !v.startsWith("b"))
            .mapValues(v -> v + "!")
            .filterNot((k, v) -> v.startsWith("c"))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .aggregate(() -> "", (k, v, agg) -> agg + v, Materialized.as("filtered-per-10s"))
            .toStream()
            .selectKey((w, v) -> w.key())
            .to("out");
        return b.build();
    }

    /** A session count behind a filter: which records reach it decides its stream time and which sessions merge. */
    static Topology filteredSessionCount() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .filter((k, v) -> v.startsWith("a"))
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10)))
            .count()
            .toStream()
            .map((w, n) -> KeyValue.pair(w.key(), n))
            .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /**
     * A windowed count behind a peek, a flatMapValues, a split and a merge: which records reach it (a b value's
     * none; a c value of odd length none) decides its stream time. The split's default branch goes to a sink.
     */
    static Topology branchedWindowedCount() {
        final StreamsBuilder b = new StreamsBuilder();
        final Map<String, KStream<String, String>> branches = b.stream("in", STRINGS)
            .peek((k, v) -> { })
            .flatMapValues(v -> v.startsWith("b") ? List.<String>of() : List.of(v, v + "!"))
            .split(Named.as("pick-"))
            .branch((k, v) -> v.startsWith("a") && v.endsWith("!"), Branched.as("a"))
            .branch((k, v) -> v.startsWith("c"), Branched.as("c"))
            .defaultBranch(Branched.as("rest"));
        branches.get("pick-rest").to("rest");
        branches.get("pick-a")
            .merge(branches.get("pick-c").filter((k, v) -> !v.endsWith("!") && v.length() % 2 == 0))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .count(Materialized.as("branched-per-10s"))
            .toStream()
            .map((w, n) -> KeyValue.pair(w.key(), n))
            .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology slidingCount() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(30), Duration.ofSeconds(5)))
            .count()
            .toStream()
            .selectKey((w, v) -> w.key())
            .to("out");
        return b.build();
    }

    static Topology sessionAggregate() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(10)))
            .aggregate(() -> "", (k, v, agg) -> agg + v, (k, a1, a2) -> a1 + a2)
            .toStream()
            .selectKey((w, v) -> w.key())
            .to("out");
        return b.build();
    }

    static Topology suppressWindowClose() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
            .count()
            .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
            .toStream()
            .selectKey((w, v) -> w.key())
            .to("out");
        return b.build();
    }

    static Topology suppressTimeLimit() {
        final StreamsBuilder b = new StreamsBuilder();
        b.stream("in", STRINGS)
            .groupByKey()
            .count(Materialized.as("counts"))
            .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(5), Suppressed.BufferConfig.maxRecords(100))
                .withName("hold"))
            .toStream()
            .to("out");
        return b.build();
    }

    static Topology tableOps() {
        final StreamsBuilder b = new StreamsBuilder();
        b.table("in", STRINGS, Materialized.as("source-table"))
            .filter((k, v) -> v != null)
            .filterNot((k, v) -> v.isEmpty(), Named.as("non-empty"))
            .mapValues(v -> v.toUpperCase(), Materialized.as("upper"))
            .toStream()
            .to("out");
        return b.build();
    }

    static Topology tableGroupBy() {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("in", STRINGS);
        t.groupBy((k, v) -> KeyValue.pair(v, v)).count().toStream().to("counts");
        t.groupBy((k, v) -> KeyValue.pair(v, v), Grouped.as("regroup"))
            .reduce((a, c) -> a + c, (a, o) -> a, Materialized.as("reduced"))
            .toStream().to("reduced-out");
        t.groupBy((k, v) -> KeyValue.pair(k, v))
            .aggregate(() -> "", (k, v, agg) -> agg + v, (k, v, agg) -> agg)
            .toStream().to("aggregated");
        return b.build();
    }

    static Topology tableTableJoins() {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> left = b.table("left", STRINGS);
        final KTable<String, String> right = b.table("right", STRINGS);
        left.join(right, (l, r) -> l + r).toStream().to("inner");
        left.leftJoin(right, (l, r) -> l + r, Named.as("lj")).toStream().to("left-out");
        left.outerJoin(right, (l, r) -> l + r, Materialized.as("outer")).toStream().to("outer-out");
        return b.build();
    }

    static Topology streamTableLeftJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> customers = b.table("customers", STRINGS, Materialized.as("customer-store"));
        b.stream("orders", STRINGS)
            .leftJoin(customers, (o, c) -> o + c, Joined.as("enrich"))
            .to("out");
        return b.build();
    }

    static Topology streamGlobalTableJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final GlobalKTable<String, String> products = b.globalTable("products", STRINGS);
        final GlobalKTable<String, String> prices = b.globalTable("prices", STRINGS, Materialized.as("price-store"));
        b.stream("orders", STRINGS)
            .join(products, (k, v) -> v, (o, p) -> o + p)
            .leftJoin(prices, (k, v) -> k, (o, p) -> o + p, Named.as("priced"))
            .to("out");
        return b.build();
    }

    static Topology streamStreamOuterJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> left = b.stream("left", STRINGS);
        final KStream<String, String> right = b.stream("right", STRINGS);
        left.outerJoin(right, (l, r) -> l + r,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(1)),
                StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                    .withName("pair").withStoreName("pairs"))
            .to("out");
        return b.build();
    }

    static Topology streamStreamInnerJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> left = b.stream("left", STRINGS);
        final KStream<String, String> right = b.stream("right", STRINGS);
        left.join(right, (l, r) -> l + r,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(1)),
                StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                    .withName("match").withStoreName("matches"))
            .to("out");
        return b.build();
    }

    static Topology streamStreamSelfJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> in = b.stream("in", STRINGS);
        in.join(in, (l, r) -> l + r,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)),
                StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("out");
        return b.build();
    }

    static Topology streamStreamLeftJoin() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> left = b.stream("left", STRINGS);
        final KStream<String, String> right = b.stream("right", STRINGS);
        left.leftJoin(right, (l, r) -> l + r,
                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(10)))
            .to("out");
        return b.build();
    }

    static Topology tableSource(final boolean optimized) {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("in", STRINGS,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("in-store"));
        t.toStream().to("out");
        return build(b, optimized);
    }

    static Topology rekeyJoin(final boolean optimized) {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> users = b.table("users", STRINGS);
        final KStream<String, String> clicks = b.stream("clicks", STRINGS).selectKey((k, v) -> v);
        clicks.join(users, (c, u) -> c + u).to("enriched");
        clicks.groupByKey().count().toStream().to("click-counts");
        return build(b, optimized);
    }

    static Topology mergeRekey(final boolean optimized) {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> a = b.stream("a", STRINGS).selectKey((k, v) -> v);
        final KStream<String, String> c = b.stream("c", STRINGS).selectKey((k, v) -> v);
        final KStream<String, String> merged = a.merge(c);
        merged.groupByKey().count().toStream().to("counts");
        merged.groupByKey().reduce((x, y) -> x + y).toStream().to("reduced");
        return build(b, optimized);
    }

    static Topology streamJoinRekey(final boolean optimized) {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> left = b.stream("left", STRINGS).map((k, v) -> KeyValue.pair(v, k));
        final KStream<String, String> right = b.stream("right", STRINGS);
        left.join(right, (l, r) -> l + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(5)))
            .to("joined");
        left.groupByKey().count().toStream().to("left-counts");
        return build(b, optimized);
    }

    static Topology groupedNamedOptimized() {
        final StreamsBuilder b = new StreamsBuilder();
        final KStream<String, String> rekeyed = b.stream("in", STRINGS).selectKey((k, v) -> v);
        rekeyed.groupByKey(Grouped.as("first")).count().toStream().to("counts");
        rekeyed.groupByKey(Grouped.as("second")).reduce((x, y) -> x + y).toStream().to("reduced");
        return build(b, true);
    }

    static Topology namedSourcesAndJoins() {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("t", Consumed.with(Serdes.String(), Serdes.String()).withName("t-src"),
            Materialized.as("t-store"));
        final GlobalKTable<String, String> g = b.globalTable("g",
            Consumed.with(Serdes.String(), Serdes.String()).withName("g-src"));
        final KStream<String, String> s = b.stream("s", Consumed.with(Serdes.String(), Serdes.String()).withName("s-src"));
        s.join(t, (v, tv) -> v + tv, Joined.<String, String, String>as("st"))
            .join(g, (k, v) -> k, (v, gv) -> v + gv, Named.as("sg"))
            .to("out", Produced.<String, String>as("out-sink"));
        final KStream<String, String> s2 = b.stream("s2", STRINGS);
        s.join(s2, (l, r) -> l + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)),
                StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                    .withName("ss"))
            .to("out2");
        return b.build();
    }

    static Topology namedRekeyJoins() {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> t = b.table("t", STRINGS);
        final KStream<String, String> rekeyed = b.stream("s", STRINGS).selectKey((k, v) -> v);
        rekeyed.join(t, (v, tv) -> v + tv, Joined.<String, String, String>as("rk")).to("out");
        final KStream<String, String> other = b.stream("o", STRINGS).map((k, v) -> KeyValue.pair(v, k));
        rekeyed.leftJoin(other, (l, r) -> l + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(1)),
                StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                    .withName("pair").withStoreName("pair-store"))
            .to("out2");
        return b.build();
    }
}
