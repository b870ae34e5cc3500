package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.PriorityQueue;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * {@code reference}: the reference values streamproc's unit-level reproductions are checked against, computed by the
 * real Java and Kafka classes at test time instead of being pasted into the tests.
 *
 * <pre>
 *   java -jar streamproc-oracle.jar reference &lt;request.json&gt;
 * </pre>
 *
 * <p>The request (written by {@code streamproc_dev.conformance.reference}, inputs generated from fixed seeds) may hold:
 * <ul>
 *   <li>{@code priority_queue}: a list of traces, each {@code {"ops": ["o<key>", "p", "r<id>", ...]}}: offer a new
 *   element with that {@code long} key (ids count from 0), poll, or {@code remove(element id)}, on a real
 *   {@code java.util.PriorityQueue} with {@code Comparator.comparingLong} (the only comparator Kafka Streams puts on
 *   its heaps) and identity-equal elements. Answer per trace: {@code results} (per op: the polled id, {@code null}
 *   for an empty poll, {@code true}/{@code false} for a remove, {@code null} for an offer) and {@code layouts} (the
 *   backing array in iterator order after every op).</li>
 *   <li>{@code murmur2}: {@code {"partition_counts": [...], "keys": [{"type": "string"|"long"|"int"|"bytes",
 *   "value": ...}]}}: each key serialized by Kafka's serializer ({@code bytes}: hex, as is), then
 *   {@code Utils.murmur2} and {@code BuiltInPartitioner.partitionForKey} for each count. Answer per key:
 *   {@code serialized} (hex), {@code murmur2}, {@code partitions}.</li>
 *   <li>{@code strings}: {@code {"decode": [hex...], "encode": [[UTF-16 code units]...]}}: Kafka's
 *   {@code StringDeserializer} on each byte sequence (malformed UTF-8 included) and {@code StringSerializer} on each
 *   string (unpaired surrogates included). Answer: {@code decoded} (the UTF-16 code units of each result) and
 *   {@code encoded} (hex).</li>
 *   <li>{@code test_driver}: a list of inputs (one per seed) for the programs of {@link TestDriverRunner} on Kafka's
 *   own {@code TopologyTestDriver}; answer: the list of their outputs.</li>
 *   <li>{@code dsl_ops}: a list (one per seed) of named DSL programs with their inputs for {@link DslOpsRunner};
 *   answer: per program its outputs, final store contents and {@code describe()}.</li>
 * </ul>
 * One JSON object on stdout with an answer for each section of the request; exit 2 with {@code {"oracle_error"}}
 * when the request is malformed.
 */
final class ReferenceRunner {

    private ReferenceRunner() {
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -jar streamproc-oracle.jar reference <request.json>");
            return 2;
        }
        final JsonNode request = Main.MAPPER.readTree(new File(args[0]));
        final ObjectNode out = Main.MAPPER.createObjectNode();
        int exit = 0;
        try {
            if (request.has("priority_queue")) {
                out.set("priority_queue", priorityQueue(request.get("priority_queue")));
            }
            if (request.has("murmur2")) {
                out.set("murmur2", murmur2(request.get("murmur2")));
            }
            if (request.has("strings")) {
                out.set("strings", strings(request.get("strings")));
            }
            if (request.has("test_driver")) {
                out.set("test_driver", TestDriverRunner.runAll(request.get("test_driver")));
            }
            if (request.has("dsl_ops")) {
                out.set("dsl_ops", DslOpsRunner.runAll(request.get("dsl_ops")));
            }
        } catch (final Exception | AssertionError e) {
            e.printStackTrace(System.err);
            out.removeAll();
            out.put("oracle_error", e.getClass().getName() + ": " + e.getMessage());
            exit = 2;
        }
        System.out.println(Main.MAPPER.writeValueAsString(out));
        System.out.flush();
        return exit;
    }

    /** An element without {@code equals}: {@code remove(Object)} finds it by identity, as Kafka's queues do. */
    private static final class Element {
        final int id;
        final long key;

        Element(final int id, final long key) {
            this.id = id;
            this.key = key;
        }
    }

    static ArrayNode priorityQueue(final JsonNode traces) {
        final ArrayNode answers = Main.MAPPER.createArrayNode();
        for (final JsonNode trace : traces) {
            final PriorityQueue<Element> queue = new PriorityQueue<>(Comparator.comparingLong(e -> e.key));
            final List<Element> elements = new ArrayList<>();
            final ObjectNode answer = answers.addObject();
            final ArrayNode results = answer.putArray("results");
            final ArrayNode layouts = answer.putArray("layouts");
            for (final JsonNode opNode : trace.get("ops")) {
                final String op = opNode.asText();
                if (op.startsWith("o")) {
                    final Element element = new Element(elements.size(), Long.parseLong(op.substring(1)));
                    elements.add(element);
                    queue.offer(element);
                    results.addNull();
                } else if (op.equals("p")) {
                    final Element polled = queue.poll();
                    if (polled == null) {
                        results.addNull();
                    } else {
                        results.add(polled.id);
                    }
                } else if (op.startsWith("r")) {
                    results.add(queue.remove(elements.get(Integer.parseInt(op.substring(1)))));
                } else {
                    throw new IllegalArgumentException("unknown priority-queue op '" + op + "'");
                }
                final ArrayNode layout = layouts.addArray();
                for (final Element element : queue) {
                    layout.add(element.id);
                }
            }
        }
        return answers;
    }

    static ArrayNode murmur2(final JsonNode request) {
        final List<Integer> counts = new ArrayList<>();
        request.get("partition_counts").forEach(n -> counts.add(n.asInt()));
        final ArrayNode answers = Main.MAPPER.createArrayNode();
        try (StringSerializer strings = new StringSerializer();
             LongSerializer longs = new LongSerializer();
             IntegerSerializer ints = new IntegerSerializer()) {
            for (final JsonNode key : request.get("keys")) {
                final JsonNode value = key.get("value");
                final byte[] bytes = switch (key.get("type").asText()) {
                    case "string" -> strings.serialize("t", value.asText());
                    case "long" -> longs.serialize("t", value.asLong());
                    case "int" -> ints.serialize("t", value.asInt());
                    case "bytes" -> HexFormat.of().parseHex(value.asText());
                    default -> throw new IllegalArgumentException("unknown key type " + key.get("type"));
                };
                final ObjectNode answer = answers.addObject();
                answer.put("serialized", HexFormat.of().formatHex(bytes));
                answer.put("murmur2", Utils.murmur2(bytes));
                final ArrayNode partitions = answer.putArray("partitions");
                for (final int count : counts) {
                    partitions.add(BuiltInPartitioner.partitionForKey(bytes, count));
                }
            }
        }
        return answers;
    }

    static ObjectNode strings(final JsonNode request) {
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        try (StringSerializer serializer = new StringSerializer();
             StringDeserializer deserializer = new StringDeserializer()) {
            final ArrayNode decoded = answer.putArray("decoded");
            for (final JsonNode hex : request.get("decode")) {
                final String text = deserializer.deserialize("t", HexFormat.of().parseHex(hex.asText()));
                final ArrayNode units = decoded.addArray();
                text.chars().forEach(units::add);
            }
            final ArrayNode encoded = answer.putArray("encoded");
            for (final JsonNode units : request.get("encode")) {
                final char[] chars = new char[units.size()];
                for (int i = 0; i < chars.length; i++) {
                    chars[i] = (char) units.get(i).asInt();
                }
                encoded.add(HexFormat.of().formatHex(serializer.serialize("t", new String(chars))));
            }
        }
        return answer;
    }

    static String utf8(final byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }
}
