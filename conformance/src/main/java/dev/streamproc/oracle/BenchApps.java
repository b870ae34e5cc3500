package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The benchmark workloads of {@code bench/compare.py} as a real {@code KafkaStreams} app, run the way a user
 * reprocesses a range today: (the reset tool has run before, in its own JVM) wipe local state
 * ({@code KafkaStreams#cleanUp}), start, run until every input record has reached the workload's last stage, stop.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar bench BOOTSTRAP APP_ID WORKLOAD API INPUT OUTPUT THREADS CACHE EXPECTED STATE_DIR
 * </pre>
 *
 * <p>WORKLOAD: {@code pass_through} (filter + mapValues + to), {@code count} (count per key in a persistent
 * timestamped store, every count sent on), {@code window} (re-key by item through a repartition topic, then a
 * 60 s tumbling-window sum of the amount in a persistent window store), {@code filter_count} (DSL only: issue #16's
 * filter + mapValues + groupByKey + count), {@code window_count} (DSL only: a 60 s tumbling-window count per key,
 * Kafka Streams' built-in adder), {@code session_count} (DSL only: a count per key in sessions of 5 min of
 * inactivity; a merged session's tombstone is sent on too), {@code aggregate} (DSL only: the amount summed per key
 * by an aggregator). API: {@code papi} (Processor API, the same
 * processors as bench/workloads.py; the window workload's re-key is the DSL's {@code repartition()}, the only public
 * way to an internal topic) or {@code dsl}. CACHE: {@code default} (10 MiB, the stores' caching on as the DSL sets
 * it), {@code off} ({@code statestore.cache.max.bytes=0}) or {@code one-flush} (1 GiB and a day's commit interval:
 * the cache flushed once, by {@code close()}). The records' values are {@code IIIII,AAAAAA,…}: item
 * (5 digits), amount (6 digits), padding; the filter drops amounts ending in 0.
 *
 * <p>Prints one JSON object: wall seconds from {@code start()} to the last record seen and to {@code close()}
 * returned, the records counted, and the JVM's CPU seconds per thread kind read from {@code /proc/self/task/*}
 * just before {@code close()} (JIT compiler threads are {@code C1/C2 CompilerThre}, GC threads {@code GC Thread#},
 * {@code G1 …}); the caller adds the process's total from {@code wait4}.
 */
final class BenchApps {
    static final long WINDOW_MS = 60_000L;
    static final long SESSION_GAP_MS = 300_000L;
    static final Duration GRACE = Duration.ofDays(7); // longer than any data set spans: nothing is dropped as late

    private BenchApps() {
    }

    static boolean keep(final byte[] value) {
        return value[11] != '0';
    }

    static byte[] project(final byte[] value) {
        return Arrays.copyOf(value, 12);
    }

    static byte[] item(final byte[] value) {
        return Arrays.copyOf(value, 5);
    }

    static long amount(final byte[] value) {
        long n = 0;
        for (int i = 6; i < 12; i++) {
            n = n * 10 + (value[i] - '0');
        }
        return n;
    }

    static final class FilterMap implements Processor<byte[], byte[], byte[], byte[]> {
        private final AtomicLong seen;
        private ProcessorContext<byte[], byte[]> context;

        FilterMap(final AtomicLong seen) {
            this.seen = seen;
        }

        @Override
        public void init(final ProcessorContext<byte[], byte[]> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            seen.incrementAndGet();
            if (keep(record.value())) {
                context.forward(record.withValue(project(record.value())));
            }
        }
    }

    static final class Count implements Processor<byte[], byte[], byte[], Long> {
        private final AtomicLong seen;
        private ProcessorContext<byte[], Long> context;
        private TimestampedKeyValueStore<byte[], Long> store;

        Count(final AtomicLong seen) {
            this.seen = seen;
        }

        @Override
        public void init(final ProcessorContext<byte[], Long> context) {
            this.context = context;
            this.store = context.getStateStore("counts");
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            seen.incrementAndGet();
            final ValueAndTimestamp<Long> old = store.get(record.key());
            final long count = old == null ? 1 : old.value() + 1;
            store.put(record.key(), ValueAndTimestamp.make(count, record.timestamp()));
            context.forward(record.withValue(count));
        }
    }

    static final class WindowSum implements Processor<byte[], byte[], byte[], Long> {
        private final AtomicLong seen;
        private ProcessorContext<byte[], Long> context;
        private TimestampedWindowStore<byte[], Long> store;

        WindowSum(final AtomicLong seen) {
            this.seen = seen;
        }

        @Override
        public void init(final ProcessorContext<byte[], Long> context) {
            this.context = context;
            this.store = context.getStateStore("sums");
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            seen.incrementAndGet();
            final long start = record.timestamp() - Math.floorMod(record.timestamp(), WINDOW_MS);
            final ValueAndTimestamp<Long> old = store.fetch(record.key(), start);
            final long sum = (old == null ? 0 : old.value()) + amount(record.value());
            store.put(record.key(), ValueAndTimestamp.make(sum, record.timestamp()), start);
            context.forward(record.withValue(sum));
        }
    }

    static Topology papi(final String workload, final String input, final String output, final AtomicLong seen) {
        final ByteArrayDeserializer in = new ByteArrayDeserializer();
        final ByteArraySerializer out = new ByteArraySerializer();
        switch (workload) {
            case "pass_through": {
                final Topology t = new Topology();
                t.addSource("in", in, in, input);
                t.addProcessor("filter-map", () -> new FilterMap(seen), "in");
                t.addSink("out", output, out, out, "filter-map");
                return t;
            }
            case "count": {
                final Topology t = new Topology();
                final StoreBuilder<TimestampedKeyValueStore<byte[], Long>> store = Stores
                    .timestampedKeyValueStoreBuilder(Stores.persistentTimestampedKeyValueStore("counts"),
                        Serdes.ByteArray(), Serdes.Long())
                    .withCachingEnabled();
                t.addSource("in", in, in, input);
                t.addProcessor("count", () -> new Count(seen), "in");
                t.addStateStore(store, "count");
                t.addSink("out", output, out, new LongSerializer(), "count");
                return t;
            }
            case "window": {
                final StreamsBuilder builder = new StreamsBuilder();
                builder.addStateStore(Stores
                    .timestampedWindowStoreBuilder(Stores.persistentTimestampedWindowStore("sums",
                        Duration.ofMillis(WINDOW_MS).plus(GRACE), Duration.ofMillis(WINDOW_MS), false),
                        Serdes.ByteArray(), Serdes.Long())
                    .withCachingEnabled());
                builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                    .selectKey((k, v) -> item(v))
                    .repartition(Repartitioned.with(Serdes.ByteArray(), Serdes.ByteArray()).withName("rekeyed"))
                    .process(() -> new WindowSum(seen), "sums")
                    .to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                return builder.build();
            }
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    static Topology dsl(final String workload, final String input, final String output, final AtomicLong seen) {
        final StreamsBuilder builder = new StreamsBuilder();
        final KStream<byte[], byte[]> stream =
            builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()));
        switch (workload) {
            case "pass_through":
                stream.peek((k, v) -> seen.incrementAndGet()).filter((k, v) -> keep(v))
                    .mapValues(BenchApps::project).to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
                break;
            case "count":
                stream.peek((k, v) -> seen.incrementAndGet()).groupByKey()
                    .count(Materialized.<byte[], Long>as(Stores.persistentTimestampedKeyValueStore("counts"))
                        .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream().to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            case "filter_count": // issue #16's filter -> mapValues -> groupByKey -> count (DSL only)
                stream.peek((k, v) -> seen.incrementAndGet()).filter((k, v) -> keep(v))
                    .mapValues(BenchApps::project).groupByKey()
                    .count(Materialized.<byte[], Long>as(Stores.persistentTimestampedKeyValueStore("counts"))
                        .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream().to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            case "aggregate": // issue #16's aggregation with user code (DSL only)
                stream.peek((k, v) -> seen.incrementAndGet()).groupByKey()
                    .aggregate(() -> 0L, (k, v, sum) -> sum + amount(v),
                        Materialized.<byte[], Long, KeyValueStore<Bytes, byte[]>>as("sums")
                            .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream().to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            case "window_count": // issue #16's windowed aggregation with the built-in adder (DSL only)
                stream.peek((k, v) -> seen.incrementAndGet()).groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), GRACE))
                    .count(Materialized.<byte[], Long, WindowStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream((windowed, count) -> windowed.key())
                    .to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            case "session_count": // issue #29's session-windowed count (5 min of inactivity; DSL only)
                stream.peek((k, v) -> seen.incrementAndGet()).groupByKey()
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(SESSION_GAP_MS), GRACE))
                    .count(Materialized.<byte[], Long, SessionStore<Bytes, byte[]>>as("sessions")
                        .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream((windowed, count) -> windowed.key())
                    .to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            case "window":
                stream.selectKey((k, v) -> item(v))
                    .repartition(Repartitioned.with(Serdes.ByteArray(), Serdes.ByteArray()).withName("rekeyed"))
                    .peek((k, v) -> seen.incrementAndGet()).groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), GRACE))
                    .aggregate(() -> 0L, (k, v, sum) -> sum + amount(v),
                        Materialized.<byte[], Long, WindowStore<Bytes, byte[]>>as("sums")
                            .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.Long()))
                    .toStream((windowed, sum) -> windowed.key())
                    .to(output, Produced.with(Serdes.ByteArray(), Serdes.Long()));
                break;
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
        return builder.build();
    }

    /** CPU seconds of this JVM's threads by kind, from {@code /proc/self/task/<tid>/{comm,stat}}. */
    static Map<String, Double> threadCpu() throws IOException {
        final Map<String, Double> kinds = new HashMap<>();
        final double ticks = 100.0; // USER_HZ on Linux
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (final Path task : (Iterable<Path>) tasks::iterator) {
                final String comm;
                final String stat;
                try {
                    comm = Files.readString(task.resolve("comm")).trim();
                    stat = Files.readString(task.resolve("stat"));
                } catch (final IOException gone) {
                    continue;
                }
                final String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                final double cpu = (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / ticks;
                final String kind;
                if (comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre")) {
                    kind = "jit";
                } else if (comm.startsWith("GC Thread") || comm.startsWith("G1 ")) {
                    kind = "gc";
                } else if (comm.contains("StreamThread") || comm.contains("-StreamThr")) {
                    kind = "stream_threads";
                } else {
                    kind = "other";
                }
                kinds.merge(kind, cpu, Double::sum);
            }
        }
        return kinds;
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 10) {
            System.err.println("usage: bench BOOTSTRAP APP_ID WORKLOAD API INPUT OUTPUT THREADS CACHE EXPECTED STATE_DIR");
            return 2;
        }
        final String workload = args[2];
        final long expected = Long.parseLong(args[8]);
        final AtomicLong seen = new AtomicLong();
        final Topology topology = args[3].equals("dsl")
            ? dsl(workload, args[4], args[5], seen) : papi(workload, args[4], args[5], seen);
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[6]));
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[9]);
        // short, so that the stream threads' names survive Linux's 15-character comm: "ks-StreamThread"
        props.put(StreamsConfig.CLIENT_ID_CONFIG, "ks");
        props.put("auto.offset.reset", "earliest");
        if (args[7].equals("off")) {
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        } else if (args[7].equals("one-flush")) {
            // a cache no run fills and no commit before close(): the record cache flushed once, at the end (what
            // streamproc's --record-cache flush-at-end emulates; tests/integration/handoff/test_record_cache_oracle.py)
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 1L << 30);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 86_400_000L);
        }
        final KafkaStreams streams = new KafkaStreams(topology, props);
        streams.cleanUp();
        final long started = System.nanoTime();
        streams.start();
        while (seen.get() < expected) {
            if (streams.state() == KafkaStreams.State.ERROR || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                System.out.println(Main.MAPPER.createObjectNode().put("error", "app stopped in state "
                    + streams.state() + " after " + seen.get() + " records"));
                return 2;
            }
            Thread.sleep(5);
        }
        final long processed = System.nanoTime();
        final Map<String, Double> cpu = threadCpu();
        final long gcMillis = ManagementFactory.getGarbageCollectorMXBeans().stream()
            .mapToLong(b -> Math.max(0, b.getCollectionTime())).sum();
        streams.close();
        final long closed = System.nanoTime();
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.put("records", seen.get());
        out.put("processing_s", (processed - started) / 1e9);
        out.put("until_closed_s", (closed - started) / 1e9);
        out.put("gc_pause_ms", gcMillis);
        final ObjectNode threads = out.putObject("thread_cpu_s");
        cpu.forEach(threads::put);
        System.out.println(out);
        return 0;
    }
}
