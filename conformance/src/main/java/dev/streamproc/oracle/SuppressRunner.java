package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.test.TestRecord;

/**
 * {@code suppress-run}: the suppress buffer's changelog as Kafka Streams 4.2.2 writes it, on its own
 * {@code TopologyTestDriver} (which commits, and so flushes the buffer, after every input record), record cache off.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar suppress-run &lt;request.json&gt;
 * </pre>
 *
 * <p>Request ({@code tests/integration/conformance/test_suppress_buffer_changelog.py}):
 * {@code {"runs": [{"id", "program", "max_bytes", "records": [[key, value, timestamp, [[header, value]...]]...],
 * "split"}]}}; programs: {@code window-close} (10 s windows, 2 s grace, count, untilWindowCloses(unbounded)),
 * {@code time-limit} (count, untilTimeLimit(5 s, maxRecords(100)), named {@code hold}), {@code max-bytes} and
 * {@code max-bytes-shutdown} (count, untilTimeLimit(60 s, maxBytes(n)) emitting early or shutting down), all
 * {@code in -> ... -> out} with String keys and values (counts as Long). The answer gives per run two parts (the
 * first {@code split} records, then the rest): {@code {"outputs": [[key hex, value hex, ts]...],
 * "changelogs": {topic: [[key hex, value hex, [[header, value hex]...]]...]}}}; a run Kafka fails gets
 * {@code "error"} (the failing part's outputs up to then are kept).
 */
final class SuppressRunner {
    private static final StringSerializer STRING_SER = new StringSerializer();
    private static final ByteArrayDeserializer BYTES_DE = new ByteArrayDeserializer();

    private SuppressRunner() {
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -jar streamproc-oracle.jar suppress-run <request.json>");
            return 2;
        }
        final JsonNode request = Main.MAPPER.readTree(new File(args[0]));
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        final ObjectNode runs = answer.putObject("runs");
        for (final JsonNode run : request.get("runs")) {
            final ObjectNode result = runs.putObject(run.get("id").asText());
            runOne(program(run), run, result);
        }
        System.out.println(Main.MAPPER.writeValueAsString(answer));
        return 0;
    }

    static Topology program(final JsonNode run) {
        final String name = run.get("program").asText();
        final StreamsBuilder b = new StreamsBuilder();
        final var grouped = b.stream("in", Consumed.with(Serdes.String(), Serdes.String())).groupByKey();
        switch (name) {
            case "window-close" -> grouped
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2)))
                .count()
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream()
                .selectKey((w, v) -> w.key())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            case "time-limit" -> grouped
                .count(Materialized.as("counts"))
                .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(5), Suppressed.BufferConfig.maxRecords(100))
                    .withName("hold"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            case "max-bytes" -> grouped
                .count()
                .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(60),
                    Suppressed.BufferConfig.maxBytes(run.get("max_bytes").asLong()).emitEarlyWhenFull()))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            case "max-bytes-shutdown" -> grouped
                .count()
                .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(60),
                    Suppressed.BufferConfig.maxBytes(run.get("max_bytes").asLong()).shutDownWhenFull()))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            default -> throw new IllegalArgumentException("no suppress program " + name);
        }
        return b.build();
    }

    private static String hex(final byte[] bytes) {
        return bytes == null ? null : HexFormat.of().formatHex(bytes);
    }

    private static void runOne(final Topology topology, final JsonNode run, final ObjectNode result) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "suppress-run");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.STATE_DIR_CONFIG, PrivateStateDir.PATH);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        final ArrayNode parts = result.putArray("parts");
        final int split = run.get("split").asInt();
        final JsonNode records = run.get("records");
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            final TestInputTopic<String, String> in = driver.createInputTopic("in", STRING_SER, STRING_SER);
            final TestOutputTopic<byte[], byte[]> out = driver.createOutputTopic("out", BYTES_DE, BYTES_DE);
            ObjectNode part = parts.addObject();
            for (int i = 0; i < records.size(); i++) {
                if (i == split) {
                    collect(driver, out, part);
                    part = parts.addObject();
                }
                final JsonNode r = records.get(i);
                final RecordHeaders headers = new RecordHeaders();
                for (final JsonNode h : r.get(3)) {
                    headers.add(h.get(0).asText(),
                        h.get(1).isNull() ? null : h.get(1).asText().getBytes(StandardCharsets.UTF_8));
                }
                try {
                    in.pipeInput(new TestRecord<>(r.get(0).isNull() ? null : r.get(0).asText(),
                        r.get(1).isNull() ? null : r.get(1).asText(), headers,
                        Instant.ofEpochMilli(r.get(2).asLong())));
                } catch (final RuntimeException e) {
                    collect(driver, out, part);
                    Throwable cause = e;
                    while (cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    result.put("error", cause.getMessage());
                    return;
                }
            }
            collect(driver, out, part);
        }
    }

    private static void collect(final TopologyTestDriver driver, final TestOutputTopic<byte[], byte[]> out,
                                final ObjectNode part) {
        final ArrayNode outputs = part.putArray("outputs");
        for (final TestRecord<byte[], byte[]> r : out.readRecordsToList()) {
            outputs.addArray().add(hex(r.key())).add(hex(r.value())).add(r.timestamp());
        }
        final ObjectNode changelogs = part.putObject("changelogs");
        final Set<String> topics = new TreeSet<>(driver.producedTopicNames());
        for (final String topic : topics) {
            if (!topic.endsWith("-changelog")) {
                continue;
            }
            final ArrayNode list = changelogs.putArray(topic);
            final TestOutputTopic<byte[], byte[]> changelog = driver.createOutputTopic(topic, BYTES_DE, BYTES_DE);
            for (final TestRecord<byte[], byte[]> r : changelog.readRecordsToList()) {
                final ArrayNode headers = Main.MAPPER.createArrayNode();
                for (final Header h : r.headers()) {
                    headers.addArray().add(h.key()).add(hex(h.value()));
                }
                list.addArray().add(hex(r.key())).add(hex(r.value())).add(headers).add(r.timestamp());
            }
        }
    }
}
