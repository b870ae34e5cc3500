package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.TimestampedWindowStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;
import org.apache.kafka.streams.state.internals.SegmentedBytesStore;
import org.apache.kafka.streams.state.internals.WrappedStateStore;
import org.apache.kafka.streams.test.TestRecord;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * State-level oracle: answers the pure operations of {@code scenarios/state/} with Kafka Streams 4.2's own classes.
 *
 * <ul>
 *   <li>{@code checkpoint_write}/{@code checkpoint_read}: {@link OffsetCheckpoint} on a temp file; the entries are
 *       handed over in a {@link HashMap} filled in the scenario's order, as {@code ProcessorStateManager#checkpoint}
 *       does.</li>
 *   <li>{@code commit_metadata_encode}/{@code _decode}: {@link TopicPartitionMetadata} + {@link ProcessorMetadata}.</li>
 *   <li>{@code internal_topic_name}: changelog via {@link ProcessorStateManager#storeChangelogTopic}; repartition via
 *       a real DSL {@code repartition(Repartitioned.as(name))} whose topic name {@link InternalTopologyBuilder}
 *       decorates with the application id.</li>
 *   <li>{@code changelog_record}: a real store (RocksDB, logging on, caching off) written by a processor inside
 *       {@link TopologyTestDriver}; the changelog record is what the driver captured from the task's record
 *       collector, the store bytes are read back from the innermost bytes store.</li>
 *   <li>{@code commit_offsets}, {@code partition_time}, {@code purge_offsets}, {@code register_stores},
 *       {@code store_layout}: a real {@code StreamTask}, {@code ProcessorStateManager} or store in the scenario's
 *       state, see {@link StateOpsRunner}.</li>
 * </ul>
 */
final class StateRunner {
    private static final HexFormat HEX = HexFormat.of();
    private static final String STORE = "s";
    private static final String APP_ID = "oracle";
    private static final String INPUT = "input";
    /** Operations answered on live objects by {@link StateOpsRunner}. */
    private static final java.util.Set<String> LIVE_OBJECT_OPERATIONS = java.util.Set.of("commit_offsets",
        "partition_time", "purge_offsets", "register_stores", "store_layout");

    private StateRunner() {
    }

    static ObjectNode run(final JsonNode scenario) throws Exception {
        final String operation = scenario.path("operation").asText();
        final JsonNode input = scenario.get("input");
        if (scenario.path("ks_version").asText("4.2").equals("4.3") && LIVE_OBJECT_OPERATIONS.contains(operation)) {
            // This jar holds Kafka Streams 4.2.2; a 4.2 answer to a 4.3 scenario would be a wrong answer.
            throw new UnsupportedOperationException("ks_version 4.3 " + operation + " is answered by the Kafka "
                + "Streams 4.3 oracle (conformance/ks43/runner), not by 4.2.2");
        }
        try {
            return switch (operation) {
                case "checkpoint_write" -> checkpointWrite(input);
                case "checkpoint_read" -> checkpointRead(input);
                case "commit_metadata_encode" -> commitMetadataEncode(input);
                case "commit_metadata_decode" -> commitMetadataDecode(input);
                case "internal_topic_name" -> internalTopicName(input);
                case "changelog_record" -> changelogRecord(input);
                case "commit_offsets" -> StateOpsRunner.commitOffsets(input);
                case "partition_time" -> StateOpsRunner.partitionTime(input);
                case "purge_offsets" -> StateOpsRunner.purgeOffsets(input);
                case "register_stores" -> registerStores(input);
                case "store_layout" -> StateOpsRunner.storeLayout(input);
                default -> throw new UnsupportedOperationException("state operation not supported by the oracle: "
                    + operation);
            };
        } catch (final KafkaSideFailure f) {
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode err = out.putObject("error");
            final Throwable e = f.getCause();
            final String message = e.getMessage() == null ? "" : e.getMessage();
            // streamproc's error class for this failure, from the state error catalogue (state.md section 17).
            if (operation.equals("checkpoint_read")) {
                err.put("type", "CheckpointCorrupt");
            } else if (operation.equals("checkpoint_write") && e instanceof IllegalStateException) {
                err.put("type", "InvalidCheckpointOffset");
            } else if (operation.equals("register_stores") && e instanceof IllegalArgumentException) {
                // ProcessorStateManager#registerStore throws IllegalArgumentException for both; its text tells them
                // apart (the oracle's LogContext has no prefix, so the message is Kafka's text alone).
                if (message.startsWith("Illegal store name: ")) {
                    err.put("type", "IllegalStoreName");
                } else if (message.endsWith(" has already been registered.")) {
                    err.put("type", "DuplicateStore");
                }
            }
            final JsonNode expectedContains = scenario.path("expected").path("error").path("message_contains");
            if (expectedContains.isArray()) {
                // Echo the scenario's substrings that Kafka's own message contains: equal lists mean agreement.
                final var found = err.putArray("message_contains");
                for (final JsonNode c : expectedContains) {
                    if (message.contains(c.asText())) {
                        found.add(c.asText());
                    }
                }
            }
            err.put("kafka_exception", e.getClass().getSimpleName());
            err.put("kafka_message_contains", message);
            return out;
        }
    }

    private static ObjectNode registerStores(final JsonNode input) throws Exception {
        try {
            return StateOpsRunner.registerStores(input);
        } catch (final StateOpsRunner.RegisterFailure f) {
            throw new KafkaSideFailure(f.getCause());
        }
    }

    /** Wraps an exception thrown by the Kafka class under test (as opposed to an oracle bug). */
    private static final class KafkaSideFailure extends Exception {
        KafkaSideFailure(final Throwable cause) {
            super(cause);
        }
    }

    static TopicPartition partition(final String text) {
        final int dash = text.lastIndexOf('-');
        return new TopicPartition(text.substring(0, dash), Integer.parseInt(text.substring(dash + 1)));
    }

    private static ObjectNode checkpointWrite(final JsonNode input) throws IOException, KafkaSideFailure {
        final Path dir = Files.createTempDirectory("oracle-cw-");
        try {
            final File file = dir.resolve(".checkpoint").toFile();
            if (input.hasNonNull("existing_content")) {
                Files.write(file.toPath(), input.get("existing_content").asText().getBytes(StandardCharsets.UTF_8));
            }
            final Map<TopicPartition, Long> offsets = new HashMap<>();
            for (final JsonNode e : input.get("entries")) {
                offsets.put(partition(e.get("partition").asText()), e.get("offset").asLong());
            }
            try {
                new OffsetCheckpoint(file).write(offsets);
            } catch (final IOException | RuntimeException e) {
                throw new KafkaSideFailure(e);
            }
            final ObjectNode out = Main.MAPPER.createObjectNode();
            out.put("file_exists", file.exists());
            if (file.exists()) {
                out.put("content", Files.readString(file.toPath(), StandardCharsets.UTF_8));
            } else {
                out.putNull("content");
            }
            return out;
        } finally {
            deleteRecursively(dir);
        }
    }

    private static ObjectNode checkpointRead(final JsonNode input) throws IOException, KafkaSideFailure {
        final Path dir = Files.createTempDirectory("oracle-cr-");
        try {
            final File file = dir.resolve(".checkpoint").toFile();
            if (input.hasNonNull("content")) {
                Files.write(file.toPath(), input.get("content").asText().getBytes(StandardCharsets.UTF_8));
            }
            final Map<TopicPartition, Long> offsets;
            try {
                offsets = new OffsetCheckpoint(file).read();
            } catch (final IOException | RuntimeException e) {
                throw new KafkaSideFailure(e);
            }
            final ObjectNode out = Main.MAPPER.createObjectNode();
            final ObjectNode o = out.putObject("offsets");
            for (final Map.Entry<String, Long> e : new TreeMap<>(toStringKeys(offsets)).entrySet()) {
                o.put(e.getKey(), e.getValue());
            }
            return out;
        } finally {
            deleteRecursively(dir);
        }
    }

    private static Map<String, Long> toStringKeys(final Map<TopicPartition, Long> offsets) {
        final Map<String, Long> m = new HashMap<>();
        offsets.forEach((tp, off) -> m.put(tp.topic() + "-" + tp.partition(), off));
        return m;
    }

    private static ObjectNode commitMetadataEncode(final JsonNode input) {
        final ProcessorMetadata processorMetadata = new ProcessorMetadata();
        for (final JsonNode e : input.path("processor_metadata")) {
            processorMetadata.put(e.get("key").asText(), e.get("value").asLong());
        }
        final String metadata = new TopicPartitionMetadata(input.get("partition_time").asLong(), processorMetadata)
            .encode();
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.put("metadata", metadata);
        return out;
    }

    @SuppressWarnings("unchecked")
    private static ObjectNode commitMetadataDecode(final JsonNode input) throws ReflectiveOperationException {
        final TopicPartitionMetadata decoded = TopicPartitionMetadata.decode(input.get("metadata").asText());
        final Field f = ProcessorMetadata.class.getDeclaredField("metadata");
        f.setAccessible(true);
        final Map<String, Long> entries = (Map<String, Long>) f.get(decoded.processorMetadata());
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.put("partition_time", decoded.partitionTime());
        final ObjectNode pm = out.putObject("processor_metadata");
        for (final Map.Entry<String, Long> e : new TreeMap<>(entries).entrySet()) {
            pm.put(e.getKey(), e.getValue());
        }
        return out;
    }

    private static ObjectNode internalTopicName(final JsonNode input) throws ReflectiveOperationException {
        final String appId = input.get("application_id").asText();
        final String name = input.get("name").asText();
        final String namedTopology = input.hasNonNull("named_topology") ? input.get("named_topology").asText() : null;
        final String kind = input.get("topic_kind").asText();
        final String topic;
        if (kind.equals("changelog")) {
            topic = ProcessorStateManager.storeChangelogTopic(appId, name, namedTopology);
        } else if (kind.equals("repartition")) {
            if (namedTopology != null) {
                throw new UnsupportedOperationException("named topologies are not supported for repartition names");
            }
            final StreamsBuilder builder = new StreamsBuilder();
            builder.stream(INPUT, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .repartition(Repartitioned.<byte[], byte[]>as(name))
                .foreach((k, v) -> { });
            final Topology topology = builder.build();
            final Field f = Topology.class.getDeclaredField("internalTopologyBuilder");
            f.setAccessible(true);
            final InternalTopologyBuilder itb = (InternalTopologyBuilder) f.get(topology);
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:0");
            itb.rewriteTopology(new StreamsConfig(props));
            final List<String> repartition = new ArrayList<>();
            for (final InternalTopologyBuilder.TopicsInfo info : itb.subtopologyToTopicsInfo().values()) {
                repartition.addAll(info.repartitionSourceTopics.keySet());
            }
            if (repartition.size() != 1) {
                throw new IllegalStateException("expected one repartition topic, got " + repartition);
            }
            topic = repartition.get(0);
        } else {
            throw new IllegalArgumentException("unknown topic_kind " + kind);
        }
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.put("topic", topic);
        return out;
    }

    // ---------------------------------------------------------------------------------------------------------
    // changelog_record

    private static byte[] hex(final JsonNode n) {
        return n == null || n.isNull() ? null : HEX.parseHex(n.asText());
    }

    private static ObjectNode changelogRecord(final JsonNode input) throws IOException {
        final String storeType = input.get("store_type").asText();
        final String op = input.get("operation").asText();
        final byte[] key = hex(input.get("key_hex"));
        final byte[] value = hex(input.get("value_hex"));
        final Long valueTs = input.hasNonNull("value_timestamp") ? input.get("value_timestamp").asLong() : null;
        final long contextTs = input.get("record_context_timestamp").asLong();

        final StoreBuilder<?> storeBuilder = switch (storeType) {
            case "key_value" -> Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE),
                Serdes.ByteArray(), Serdes.ByteArray());
            case "timestamped_key_value" -> Stores.timestampedKeyValueStoreBuilder(
                Stores.persistentTimestampedKeyValueStore(STORE), Serdes.ByteArray(), Serdes.ByteArray());
            case "window" -> Stores.windowStoreBuilder(Stores.persistentWindowStore(STORE, Duration.ofDays(1),
                Duration.ofMinutes(1), input.path("retain_duplicates").asBoolean(false)),
                Serdes.ByteArray(), Serdes.ByteArray());
            case "timestamped_window" -> Stores.timestampedWindowStoreBuilder(
                Stores.persistentTimestampedWindowStore(STORE, Duration.ofDays(1), Duration.ofMinutes(1),
                    input.path("retain_duplicates").asBoolean(false)),
                Serdes.ByteArray(), Serdes.ByteArray());
            case "session" -> Stores.sessionStoreBuilder(Stores.persistentSessionStore(STORE, Duration.ofDays(1)),
                Serdes.ByteArray(), Serdes.ByteArray());
            default -> throw new IllegalArgumentException("unknown store_type " + storeType);
        };
        final int putsBefore = input.path("puts_before").asInt(0);

        final Map<String, byte[]> storeBefore = new HashMap<>();
        final Map<String, byte[]> storeAfter = new HashMap<>();
        final ProcessorSupplier<byte[], byte[], Void, Void> supplier = () -> new Processor<>() {
            private StateStore store;

            @Override
            public void init(final ProcessorContext<Void, Void> context) {
                store = context.getStateStore(STORE);
            }

            @Override
            @SuppressWarnings("unchecked")
            public void process(final Record<byte[], byte[]> record) {
                for (int i = 0; i < putsBefore; i++) {
                    // earlier puts of this store instance (they advance the duplicate sequence number)
                    applyOp(store, storeType, "put", concat(key, new byte[] {(byte) i}), value, valueTs, input);
                }
                storeBefore.putAll(rawContent(store));
                applyOp(store, storeType, op, key, value, valueTs, input);
                storeAfter.putAll(rawContent(store));
            }
        };

        final Topology topology = new Topology();
        topology.addSource("src", new ByteArrayDeserializer(), new ByteArrayDeserializer(), INPUT);
        topology.addProcessor("op", supplier, "src");
        topology.addStateStore(storeBuilder, "op");

        final Path stateDir = Files.createTempDirectory("oracle-cl-");
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APP_ID);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        final String changelog = ProcessorStateManager.storeChangelogTopic(APP_ID, STORE, null);
        final List<TestRecord<byte[], byte[]>> logged;
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(contextTs))) {
            final TestInputTopic<byte[], byte[]> in = driver.createInputTopic(INPUT, new ByteArraySerializer(),
                new ByteArraySerializer());
            in.pipeInput(new TestRecord<>(new byte[] {0}, new byte[] {0}, Instant.ofEpochMilli(contextTs)));
            final TestOutputTopic<byte[], byte[]> out = driver.createOutputTopic(changelog,
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
            logged = out.readRecordsToList();
        } finally {
            deleteRecursively(stateDir);
        }
        if (logged.size() != putsBefore + 1) {
            throw new IllegalStateException("expected " + (putsBefore + 1) + " changelog records, got " + logged.size());
        }
        final TestRecord<byte[], byte[]> rec = logged.get(logged.size() - 1);

        final ObjectNode result = Main.MAPPER.createObjectNode();
        // The store entry the operation wrote: new or changed key; for a delete, the key is gone.
        String storeKey = null;
        for (final Map.Entry<String, byte[]> e : storeAfter.entrySet()) {
            final byte[] prev = storeBefore.get(e.getKey());
            if (prev == null || !java.util.Arrays.equals(prev, e.getValue())) {
                storeKey = e.getKey();
            }
        }
        if (storeKey != null) {
            result.put("store_key_hex", storeKey);
            result.put("store_value_hex", HEX.formatHex(storeAfter.get(storeKey)));
        } else {
            String removed = null;
            for (final String k : storeBefore.keySet()) {
                if (!storeAfter.containsKey(k)) {
                    removed = k;
                }
            }
            result.put("store_key_hex", removed != null ? removed : HEX.formatHex(rec.key()));
            result.putNull("store_value_hex");
        }
        result.put("changelog_key_hex", HEX.formatHex(rec.key()));
        if (rec.value() == null) {
            result.putNull("changelog_value_hex");
        } else {
            result.put("changelog_value_hex", HEX.formatHex(rec.value()));
        }
        result.put("changelog_timestamp", rec.timestamp());
        final var headers = result.putArray("changelog_headers");
        for (final Header h : rec.headers()) {
            final ObjectNode hn = headers.addObject();
            hn.put("key", h.key());
            if (h.value() == null) {
                hn.putNull("value_hex");
            } else {
                hn.put("value_hex", HEX.formatHex(h.value()));
            }
        }
        return result;
    }

    private static byte[] concat(final byte[] a, final byte[] b) {
        final byte[] r = new byte[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    @SuppressWarnings("unchecked")
    private static void applyOp(final StateStore store, final String storeType, final String op, final byte[] key,
                                final byte[] value, final Long valueTs, final JsonNode input) {
        final boolean delete = op.equals("delete");
        switch (storeType) {
            case "key_value" -> {
                final KeyValueStore<byte[], byte[]> s = (KeyValueStore<byte[], byte[]>) store;
                if (delete) {
                    s.delete(key);
                } else {
                    s.put(key, value);
                }
            }
            case "timestamped_key_value" -> {
                final TimestampedKeyValueStore<byte[], byte[]> s = (TimestampedKeyValueStore<byte[], byte[]>) store;
                if (delete) {
                    s.delete(key);
                } else {
                    s.put(key, ValueAndTimestamp.make(value, valueTs));
                }
            }
            case "window" -> {
                final WindowStore<byte[], byte[]> s = (WindowStore<byte[], byte[]>) store;
                s.put(key, delete ? null : value, input.get("window_start").asLong());
            }
            case "timestamped_window" -> {
                final TimestampedWindowStore<byte[], byte[]> s = (TimestampedWindowStore<byte[], byte[]>) store;
                s.put(key, delete || value == null ? null : ValueAndTimestamp.make(value, valueTs),
                    input.get("window_start").asLong());
            }
            case "session" -> {
                final SessionStore<byte[], byte[]> s = (SessionStore<byte[], byte[]>) store;
                final Windowed<byte[]> w = new Windowed<>(key,
                    new SessionWindow(input.get("session_start").asLong(), input.get("session_end").asLong()));
                if (delete) {
                    s.remove(w);
                } else {
                    s.put(w, value);
                }
            }
            default -> throw new IllegalArgumentException("unknown store_type " + storeType);
        }
    }

    /** Every raw (key, value) of the innermost bytes store: what lies in RocksDB. */
    @SuppressWarnings("unchecked")
    private static Map<String, byte[]> rawContent(final StateStore outer) {
        StateStore s = outer;
        while (s instanceof WrappedStateStore<?, ?, ?> w) {
            s = w.wrapped();
        }
        final Map<String, byte[]> content = new HashMap<>();
        final KeyValueIterator<Bytes, byte[]> it;
        if (s instanceof SegmentedBytesStore seg) {
            it = seg.all();
        } else if (s instanceof KeyValueStore<?, ?> kv) {
            it = ((KeyValueStore<Bytes, byte[]>) kv).all();
        } else {
            throw new IllegalStateException("cannot read raw content of " + s.getClass().getName());
        }
        try (it) {
            while (it.hasNext()) {
                final KeyValue<Bytes, byte[]> kv = it.next();
                content.put(HEX.formatHex(kv.key.get()), kv.value);
            }
        }
        return content;
    }

    private static void deleteRecursively(final Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ignored) {
            // a temp directory left behind is harmless
        }
    }
}
