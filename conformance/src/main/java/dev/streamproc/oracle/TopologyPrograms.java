package dev.streamproc.oracle;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;

/**
 * The {@code program} of each shared topology scenario, written out in Java. A scenario gives its program in
 * prose-like Java ({@code "same as t04"}, {@code joiner}, {@code f}); these are the programs that prose stands for,
 * built with the default serdes of the run's configuration. {@link TopologyRunner} checks that each one's
 * {@code describe()} is the scenario's text before it trusts anything else, so a wrong translation cannot pass.
 *
 * <p>Topic names go through {@code topic}, so that a live run can give every topic a unique prefix.
 */
final class TopologyPrograms {
    /** Builds a scenario's topology; {@code topic} maps the scenario's topic names to the run's. */
    interface Program {
        Topology build(UnaryOperator<String> topic, Properties props);
    }

    private TopologyPrograms() {
    }

    private static Program dsl(final java.util.function.BiConsumer<StreamsBuilder, UnaryOperator<String>> body) {
        return (topic, props) -> {
            final StreamsBuilder builder = new StreamsBuilder();
            body.accept(builder, topic);
            return builder.build(props);
        };
    }

    /** t04: {@code left.join(right, joiner, JoinWindows.ofTimeDifferenceWithNoGrace(5 min)).to("joined")}. */
    private static void leftRightJoin(final StreamsBuilder b, final UnaryOperator<String> t) {
        final KStream<String, String> left = b.stream(t.apply("left"));
        final KStream<String, String> right = b.stream(t.apply("right"));
        left.join(right, (l, r) -> l + r, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)))
            .to(t.apply("joined"));
    }

    /** t04's join beside an unrelated re-keyed count: the repartition topic makes Kafka check co-partitioning. */
    private static Program joinWithRepartitionElsewhere() {
        return dsl((b, t) -> {
            leftRightJoin(b, t);
            b.<String, String>stream(t.apply("clicks")).selectKey((k, v) -> v).groupByKey().count();
        });
    }

    private static Program globalTableJoin() {
        return dsl((b, t) -> {
            final GlobalKTable<String, String> products = b.globalTable(t.apply("products"));
            b.<String, String>stream(t.apply("purchases"))
                .join(products, (k, v) -> v, (purchase, product) -> purchase + product)
                .to(t.apply("purchases-enriched"));
        });
    }

    /** {@code orders} re-keyed and joined with the table {@code customers}; {@code tableFirst} as in t11. */
    private static Program rekeyStreamTableJoin(final boolean tableFirst) {
        return dsl((b, t) -> {
            final KStream<String, String> orders;
            final KTable<String, String> customers;
            if (tableFirst) {
                customers = b.table(t.apply("customers"));
                orders = b.stream(t.apply("orders"));
            } else {
                orders = b.stream(t.apply("orders"));
                customers = b.table(t.apply("customers"));
            }
            orders.selectKey((k, v) -> v).join(customers, (order, customer) -> order + customer)
                .to(t.apply("enriched-orders"));
        });
    }

    private static final Map<String, Program> BY_SCENARIO = Map.ofEntries(
        Map.entry("t01-filter-to", dsl((b, t) ->
            b.<String, String>stream(t.apply("input")).filter((k, v) -> v != null).to(t.apply("output")))),
        Map.entry("t02-groupbykey-count", dsl((b, t) ->
            b.<String, String>stream(t.apply("words")).groupByKey().count().toStream().to(t.apply("word-counts")))),
        Map.entry("t03-selectkey-groupbykey-aggregate", dsl((b, t) ->
            b.<String, String>stream(t.apply("clicks"))
                .selectKey((k, v) -> v)
                .groupByKey()
                .aggregate(() -> 0L, (k, v, agg) -> agg + 1, Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .to(t.apply("clicks-per-user")))),
        Map.entry("t04-stream-stream-join", dsl(TopologyPrograms::leftRightJoin)),
        Map.entry("t04b-stream-stream-join-not-copartitioned", dsl(TopologyPrograms::leftRightJoin)),
        Map.entry("t05-rekey-stream-table-join", rekeyStreamTableJoin(false)),
        Map.entry("t06-two-independent-subtopologies", dsl((b, t) -> {
            b.<String, String>stream(t.apply("payments")).mapValues(v -> v).to(t.apply("payments-clean"));
            b.<String, String>stream(t.apply("audit")).filter((k, v) -> true).to(t.apply("audit-filtered"));
        })),
        Map.entry("t08-global-table-join", globalTableJoin()),
        Map.entry("t09-ktable-groupby-count", dsl((b, t) ->
            b.<String, String>table(t.apply("users"))
                .groupBy((id, user) -> KeyValue.pair(user, user))
                .count()
                .toStream()
                .to(t.apply("users-per-country")))),
        Map.entry("t11-ids-not-topological", rekeyStreamTableJoin(true)),
        Map.entry("t13-tolerant-parsing", globalTableJoin()),
        Map.entry("t30-join-unequal-with-repartition-elsewhere", joinWithRepartitionElsewhere()),
        Map.entry("t31-join-equal-with-repartition-elsewhere", joinWithRepartitionElsewhere()),
        Map.entry("t14-intermediate-user-topic", dsl((b, t) -> {
            b.<String, String>stream(t.apply("raw")).mapValues(v -> v).to(t.apply("clean"));
            b.<String, String>stream(t.apply("clean")).groupByKey().count();
        })));

    /** The program of the scenario {@code id}, or {@code null} when it has no Java translation here. */
    static Program forScenario(final String id) {
        return BY_SCENARIO.get(id);
    }
}
