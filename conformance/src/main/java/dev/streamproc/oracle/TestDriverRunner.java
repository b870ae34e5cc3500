package dev.streamproc.oracle;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The programs of {@code tests/unit/test_testing.py} on the real {@link TopologyTestDriver} (kafka-streams-test-utils
 * 4.2.2). Prints one line per output record, {@code <case> <topic> <key> <value> <timestamp> <headers>}, so that
 * the Python driver's expected outputs can be checked against Kafka's.
 *
 * <pre>
 * javac -cp conformance/target/streamproc-oracle.jar -d /tmp/oracle conformance/src/main/java/dev/streamproc/oracle/TestDriverRunner.java
 * java -cp conformance/target/streamproc-oracle.jar:/tmp/oracle dev.streamproc.oracle.TestDriverRunner
 * </pre>
 */
public final class TestDriverRunner {

    private TestDriverRunner() {
    }

    private static final StringSerializer STRING_SER = new StringSerializer();
    private static final StringDeserializer STRING_DE = new StringDeserializer();

    private static Properties props() {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "driver-app");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        return props;
    }

    private static String headers(final org.apache.kafka.common.header.Headers headers) {
        final List<String> parts = new ArrayList<>();
        for (final Header header : headers) {
            parts.add(header.key() + "=" + (header.value() == null ? "null" : new String(header.value(), StandardCharsets.UTF_8)));
        }
        return "[" + String.join(",", parts) + "]";
    }

    private static <K, V> void print(final String name, final String topic, final TestOutputTopic<K, V> output) {
        for (final TestRecord<K, V> record : output.readRecordsToList()) {
            System.out.println(name + " " + topic + " " + record.key() + " " + record.value() + " " + record.timestamp()
                + " " + headers(record.headers()));
        }
    }

    /** Forwards every record whose value is not "drop". */
    static final class Filter implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            if (!"drop".equals(record.value())) {
                context.forward(record);
            }
        }
    }

    /** Counts per key in store "counts"; every 10 ms of stream time and 1000 ms of wall-clock time emits counts. */
    static final class Counter implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("counts");
            context.schedule(Duration.ofMillis(10), PunctuationType.STREAM_TIME, this::emit);
            context.schedule(Duration.ofMillis(1000), PunctuationType.WALL_CLOCK_TIME,
                timestamp -> context.forward(new Record<>("wall", (long) count(), timestamp)));
        }

        private int count() {
            int n = 0;
            try (KeyValueIterator<String, Long> it = store.all()) {
                while (it.hasNext()) {
                    it.next();
                    n++;
                }
            }
            return n;
        }

        private void emit(final long timestamp) {
            try (KeyValueIterator<String, Long> it = store.all()) {
                while (it.hasNext()) {
                    final KeyValue<String, Long> entry = it.next();
                    context.forward(new Record<>(entry.key, entry.value, timestamp));
                }
            }
        }

        @Override
        public void process(final Record<String, String> record) {
            final Long old = store.get(record.key());
            store.put(record.key(), old == null ? 1L : old + 1);
        }
    }

    /** Re-keys "cust:amount" by customer, value the amount. */
    static final class Rekey implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            final String[] parts = record.value().split(":");
            context.forward(record.withKey(parts[0]).withValue(parts[1]));
        }
    }

    /** Sums amounts per key in store "totals" and forwards the new total. */
    static final class Total implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("totals");
        }

        @Override
        public void process(final Record<String, String> record) {
            final Long old = store.get(record.key());
            final long total = (old == null ? 0L : old) + Long.parseLong(record.value());
            store.put(record.key(), total);
            context.forward(record.withValue(total));
        }
    }

    /** Splits "a,b" into one record per item (same timestamp), keyed by the item. */
    static final class Split implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            for (final String item : record.value().split(",")) {
                context.forward(record.withKey(item).withValue(item));
            }
        }
    }

    /** Forwards the value with a tag appended. */
    static final class Tag implements Processor<String, String, String, String> {
        private final String tag;
        private ProcessorContext<String, String> context;

        Tag(final String tag) {
            this.tag = tag;
        }

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            context.forward(record.withValue(record.value() + "@" + tag));
        }
    }

    static void passThroughAndFilter() {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "in");
        topology.addProcessor("filter", Filter::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "filter");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", STRING_SER, STRING_SER,
                Instant.ofEpochMilli(100), Duration.ofMillis(5));
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", STRING_DE, STRING_DE);
            in.pipeInput("a", "1");
            in.pipeInput("b", "drop");
            final RecordHeaders headers = new RecordHeaders();
            headers.add("h", "x".getBytes(StandardCharsets.UTF_8));
            in.pipeInput(new TestRecord<>("c", "3", headers, 7L));
            in.pipeInput(null, "4");
            print("filter", "out", out);
        }
    }

    static void counter() {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "words");
        topology.addProcessor("count", Counter::new, "src");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("counts"), Serdes.String(),
            Serdes.Long()).withLoggingDisabled(), "count");
        topology.addSink("sink", "counts", STRING_SER, new LongSerializer(), "count");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("words", STRING_SER, STRING_SER);
            final TestOutputTopic<String, Long> out = driver.createOutputTopic("counts", STRING_DE, new LongDeserializer());
            in.pipeInput("a", "x", 0L);
            in.pipeInput("b", "x", 3L);
            in.pipeInput("a", "x", 9L);
            in.pipeInput("c", "x", 10L);
            in.pipeInput("a", "x", 4L);
            in.pipeInput("b", "x", 25L);
            driver.advanceWallClockTime(Duration.ofMillis(999));
            driver.advanceWallClockTime(Duration.ofMillis(1));
            driver.advanceWallClockTime(Duration.ofMillis(2500));
            print("counter", "counts", out);
            final KeyValueStore<String, Long> store = driver.getKeyValueStore("counts");
            System.out.println("counter store a=" + store.get("a") + " b=" + store.get("b") + " c=" + store.get("c"));
        }
    }

    static void rekey() {
        final Topology topology = new Topology();
        topology.addSource("orders-src", STRING_DE, STRING_DE, "orders");
        topology.addProcessor("rekey", Rekey::new, "orders-src");
        topology.addSink("by-customer-sink", "orders-by-customer", STRING_SER, STRING_SER, "rekey");
        topology.addSource("by-customer-src", STRING_DE, STRING_DE, "orders-by-customer");
        topology.addProcessor("total", Total::new, "by-customer-src");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("totals"), Serdes.String(),
            Serdes.Long()).withLoggingDisabled(), "total");
        topology.addSink("totals-sink", "totals", STRING_SER, new LongSerializer(), "total");
        System.out.println("rekey describe " + topology.describe().toString().replace("\n", "|"));
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("orders", STRING_SER, STRING_SER);
            in.pipeInput("o1", "alice:10", 1L);
            in.pipeInput("o2", "bob:5", 2L);
            in.pipeInput("o3", "alice:7", 3L);
            print("rekey", "orders-by-customer",
                driver.createOutputTopic("orders-by-customer", STRING_DE, STRING_DE));
            print("rekey", "totals", driver.createOutputTopic("totals", STRING_DE, new LongDeserializer()));
        }
    }

    static void fanOut() {
        final Topology topology = new Topology();
        topology.addSource("in-src", STRING_DE, STRING_DE, "in");
        topology.addProcessor("split", Split::new, "in-src");
        topology.addSink("mid-sink", "mid", STRING_SER, STRING_SER, "split");
        topology.addSource("mid-src", STRING_DE, STRING_DE, "mid");
        topology.addProcessor("b", () -> new Tag("B"), "mid-src");
        topology.addSink("mid2-sink", "mid2", STRING_SER, STRING_SER, "b");
        topology.addSink("trace-b", "trace", STRING_SER, STRING_SER, "b");
        topology.addSource("mid2-src", STRING_DE, STRING_DE, "mid2");
        topology.addProcessor("c", () -> new Tag("C"), "mid2-src");
        topology.addSink("trace-c", "trace", STRING_SER, STRING_SER, "c");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", STRING_SER, STRING_SER);
            in.pipeInput("k", "x,y", 5L);
            in.pipeInput("k", "z", 1L);
            print("fanout", "trace", driver.createOutputTopic("trace", STRING_DE, STRING_DE));
        }
    }

    /** Forwards "topic/offset" of the record being processed. */
    static final class Where implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            final String where = context.recordMetadata().map(m -> m.topic() + "/" + m.offset()).orElse("none");
            context.forward(record.withValue(where));
        }
    }

    static void pattern() {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, java.util.regex.Pattern.compile("events-.*"));
        topology.addProcessor("where", Where::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "where");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props(), Instant.ofEpochMilli(0))) {
            driver.createInputTopic("events-eu", STRING_SER, STRING_SER).pipeInput("k", "v", 1L);
            driver.createInputTopic("events-us", STRING_SER, STRING_SER).pipeInput("k", "v", 2L);
            try {
                driver.createInputTopic("other", STRING_SER, STRING_SER).pipeInput("k", "v", 3L);
            } catch (final IllegalArgumentException e) {
                System.out.println("pattern error " + e.getMessage());
            }
            print("pattern", "out", driver.createOutputTopic("out", STRING_DE, STRING_DE));
        }
    }

    static void idle() {
        final Topology topology = new Topology();
        topology.addSource("src", STRING_DE, STRING_DE, "left", "right");
        topology.addProcessor("filter", Filter::new, "src");
        topology.addSink("sink", "out", STRING_SER, STRING_SER, "filter");
        final Properties props = props();
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 100L);
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestOutputTopic<String, String> out = driver.createOutputTopic("out", STRING_DE, STRING_DE);
            driver.createInputTopic("left", STRING_SER, STRING_SER).pipeInput("k", "v", 3L);
            System.out.println("idle after-pipe size=" + out.getQueueSize());
            driver.advanceWallClockTime(Duration.ofMillis(99));
            System.out.println("idle after-99 size=" + out.getQueueSize());
            driver.advanceWallClockTime(Duration.ofMillis(1));
            System.out.println("idle after-100 size=" + out.getQueueSize());
        }
    }

    public static void main(final String[] args) {
        idle();
        pattern();
        passThroughAndFilter();
        counter();
        rekey();
        fanOut();
    }
}
