package dev.streamproc.oracle;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.apache.kafka.streams.state.ReadOnlyWindowStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * {@code make demo}'s application "orders" as a real Kafka Streams 4.2 app. The Python twin, with the same node,
 * store and topic names, is {@code streamproc_dev/demo_topology.py}; keep the two in step.
 *
 * <pre>
 * demo-orders (String customer → JSON order; a value Jackson refuses is dropped: LogAndContinue)
 *   ├─ count-per-customer (store customer-counts) → to-customer-counts → demo-customer-counts (String → Long)
 *   └─ by-region-product (key = the order's region/product, value = its amount in cents)
 *        → &lt;application.id&gt;-revenue-by-region-product-repartition
 *        → daily-revenue (tumbling one-day windows, grace 28 days, store daily-revenue, retention 30 days)
 *        → to-daily-revenue → demo-daily-revenue (String "region/product@yyyy-mm-dd" → Long cents)
 * </pre>
 *
 * <p>Usage: {@code DemoOrdersApp describe} prints the topology; {@code DemoOrdersApp <bootstrap> <application.id>
 * <state.dir> <orders end offset sum> [<output suffix>]} runs (at-least-once, the protocol of
 * {@link StateResumeApp}: restore events on stdout) until the group's committed offsets of {@code demo-orders} sum
 * to the end offset and every partition of
 * the repartition topic is committed to its log end, then prints both stores, the dropped-records count, and closes.
 * The output suffix (default none) is appended to both output topics' names: the demo's reference run over the
 * whole input writes {@code demo-customer-counts-reference} and {@code demo-daily-revenue-reference}.
 */
public final class DemoOrdersApp {
    static final String ORDERS = "demo-orders";
    static final String CUSTOMER_COUNTS = "demo-customer-counts";
    static final String DAILY_REVENUE = "demo-daily-revenue";
    static final String COUNT_STORE = "customer-counts";
    static final String REVENUE_STORE = "daily-revenue";
    static final String REPARTITION = "revenue-by-region-product";
    static final long DAY_MS = 86_400_000L;
    static final long GRACE_MS = 28 * DAY_MS;
    static final long RETENTION_MS = 30 * DAY_MS;
    private static final ObjectMapper JSON = new ObjectMapper();

    private DemoOrdersApp() {
    }

    /** JSON values (Jackson's tree); a value that is not one JSON document fails, and the handler drops it. */
    static final class JsonSerde implements Serde<JsonNode> {
        @Override
        public Serializer<JsonNode> serializer() {
            return (topic, data) -> {
                try {
                    return data == null ? null : JSON.writeValueAsBytes(data);
                } catch (final Exception e) {
                    throw new SerializationException(e);
                }
            };
        }

        @Override
        public Deserializer<JsonNode> deserializer() {
            return (topic, data) -> {
                if (data == null) {
                    return null;
                }
                try {
                    final JsonNode node = JSON.readTree(StandardCharsets.UTF_8.newDecoder()
                        .decode(java.nio.ByteBuffer.wrap(data)).toString());
                    if (node == null || node.isMissingNode()) {
                        throw new SerializationException("no JSON document");
                    }
                    return node;
                } catch (final SerializationException e) {
                    throw e;
                } catch (final Exception e) {
                    throw new SerializationException("Error deserializing JSON message: " + e, e);
                }
            };
        }
    }

    /** Counts each customer's orders; forwards the new count. */
    static final class CountPerCustomer implements Processor<String, JsonNode, String, Long> {
        private ProcessorContext<String, Long> context;
        private TimestampedKeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            store = context.getStateStore(COUNT_STORE);
        }

        @Override
        public void process(final Record<String, JsonNode> record) {
            final ValueAndTimestamp<Long> old = store.get(record.key());
            final long count = old == null ? 1L : old.value() + 1L;
            store.put(record.key(), ValueAndTimestamp.make(count, record.timestamp()));
            context.forward(record.withValue(count));
        }
    }

    /** Re-keys an order by its region and product ({@code eu-west/grinder}), with its amount (cents) as the value. */
    static final class ByRegionProduct implements Processor<String, JsonNode, String, Long> {
        private ProcessorContext<String, Long> context;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, JsonNode> record) {
            context.forward(record.withKey(record.value().get("region").asText() + "/"
                    + record.value().get("product").asText())
                .withValue(record.value().get("amount_cents").asLong()));
        }
    }

    /**
     * Sums the amounts per region/product and day (a tumbling window) while stream time has not passed the window's
     * end plus the grace period; a later record is dropped (logged), as a DSL windowed aggregation drops it. The
     * store's timestamp is the latest record timestamp of the window (independent of the order records arrive in).
     */
    static final class DailyRevenue implements Processor<String, Long, String, Long> {
        private ProcessorContext<String, Long> context;
        private TimestampedWindowStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            this.context = context;
            store = context.getStateStore(REVENUE_STORE);
        }

        @Override
        public void process(final Record<String, Long> record) {
            final long windowStart = record.timestamp() - Math.floorMod(record.timestamp(), DAY_MS);
            if (windowStart + DAY_MS + GRACE_MS <= context.currentStreamTimeMs()) {
                System.err.println("daily-revenue: dropping a record of " + record.key() + " at "
                    + record.timestamp() + ", its window closed (stream time " + context.currentStreamTimeMs() + ")");
                return;
            }
            final ValueAndTimestamp<Long> old = store.fetch(record.key(), windowStart);
            final long total = (old == null ? 0L : old.value()) + record.value();
            final long timestamp = old == null ? record.timestamp() : Math.max(old.timestamp(), record.timestamp());
            store.put(record.key(), ValueAndTimestamp.make(total, timestamp), windowStart);
            context.forward(record.withKey(windowKey(record.key(), windowStart)).withValue(total));
        }
    }

    static String windowKey(final String key, final long windowStart) {
        return key + "@" + Instant.ofEpochMilli(windowStart).atOffset(ZoneOffset.UTC).toLocalDate();
    }

    static Topology topology(final String outputSuffix) {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.timestampedKeyValueStoreBuilder(
            Stores.persistentTimestampedKeyValueStore(COUNT_STORE), Serdes.String(), Serdes.Long()));
        builder.addStateStore(Stores.timestampedWindowStoreBuilder(
            Stores.persistentTimestampedWindowStore(REVENUE_STORE, Duration.ofMillis(RETENTION_MS),
                Duration.ofMillis(DAY_MS), false),
            Serdes.String(), Serdes.Long()));
        final var orders = builder.stream(ORDERS, Consumed.with(Serdes.String(), new JsonSerde()).withName("orders"));
        orders.process(CountPerCustomer::new, Named.as("count-per-customer"), COUNT_STORE)
            .to(CUSTOMER_COUNTS + outputSuffix,
                Produced.with(Serdes.String(), Serdes.Long()).withName("to-customer-counts"));
        orders.process(ByRegionProduct::new, Named.as("by-region-product"))
            .repartition(Repartitioned.<String, Long>as(REPARTITION)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .process(DailyRevenue::new, Named.as("daily-revenue"), REVENUE_STORE)
            .to(DAILY_REVENUE + outputSuffix,
                Produced.with(Serdes.String(), Serdes.Long()).withName("to-daily-revenue"));
        return builder.build();
    }

    public static void main(final String[] args) throws Exception {
        if (args.length == 1 && "describe".equals(args[0])) {
            System.out.println(topology("").describe());
            return;
        }
        final String bootstrap = args[0];
        final String applicationId = args[1];
        final long ordersEnd = Long.parseLong(args[3]);
        final Properties props = StateResumeApp.streamsProps(bootstrap, applicationId, args[2], false);
        props.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
            LogAndContinueExceptionHandler.class.getName());
        final AtomicLong restored = new AtomicLong();
        final String outputSuffix = args.length > 4 ? args[4] : "";
        final KafkaStreams streams = StateResumeApp.start(topology(outputSuffix), props, restored);
        awaitCommitted(streams, bootstrap, applicationId, ORDERS, ordersEnd);
        awaitCommitted(streams, bootstrap, applicationId, applicationId + "-" + REPARTITION + "-repartition", -1);

        final Map<String, Object> contents = new TreeMap<>();
        final ReadOnlyKeyValueStore<String, ValueAndTimestamp<Long>> counts = streams.store(
            StoreQueryParameters.fromNameAndType(COUNT_STORE, QueryableStoreTypes.timestampedKeyValueStore()));
        try (KeyValueIterator<String, ValueAndTimestamp<Long>> all = counts.all()) {
            while (all.hasNext()) {
                final KeyValue<String, ValueAndTimestamp<Long>> entry = all.next();
                contents.put(COUNT_STORE + ":" + entry.key, new long[] {entry.value.value(), entry.value.timestamp()});
            }
        }
        final ReadOnlyWindowStore<String, ValueAndTimestamp<Long>> revenue = streams.store(
            StoreQueryParameters.fromNameAndType(REVENUE_STORE, QueryableStoreTypes.timestampedWindowStore()));
        try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> all = revenue.all()) {
            while (all.hasNext()) {
                final KeyValue<Windowed<String>, ValueAndTimestamp<Long>> entry = all.next();
                contents.put(REVENUE_STORE + ":" + windowKey(entry.key.key(), entry.key.window().start()),
                    new long[] {entry.value.value(), entry.value.timestamp()});
            }
        }
        double dropped = 0;
        for (final Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
            if ("dropped-records-total".equals(metric.getKey().name())
                && "stream-task-metrics".equals(metric.getKey().group())) {
                dropped += ((Number) metric.getValue().metricValue()).doubleValue();
            }
        }
        StateResumeApp.emit(Map.of("event", "dropped", "records", (long) dropped));
        StateResumeApp.closeAndEmitResult(streams, restored, contents);
    }

    /**
     * Waits until the app is RUNNING and the group's committed offsets of {@code topic} sum to {@code total}, or
     * (total -1: the repartition topic) reach each partition's log end as it was once the input was committed;
     * emits an error and exits 3 when the app failed, 4 after 300 s.
     */
    private static void awaitCommitted(final KafkaStreams streams, final String bootstrap, final String applicationId,
                                       final String topic, final long total) throws Exception {
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            final int partitions = admin.describeTopics(java.util.List.of(topic)).allTopicNames().get()
                .get(topic).partitions().size();
            StateResumeApp.awaitTopicCommitted(streams, admin, applicationId, topic, partitions, total, 300_000L);
        }
    }
}
