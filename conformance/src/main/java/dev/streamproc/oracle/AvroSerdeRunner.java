package dev.streamproc.oracle;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericContainer;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DatumWriter;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * {@code avro-serde}: values through the oracle's Avro serde ({@link RegistrySerdes}: Apicurio's Kafka serde in
 * Confluent's wire format, standing for Confluent's {@code KafkaAvroSerializer}/{@code KafkaAvroDeserializer}), for
 * byte-identity tests with streamproc's serdes. One JVM answers every line of stdin, one JSON request per line:
 *
 * <pre>
 *   {"registry": "http://127.0.0.1:PORT", "user": u|null, "password": p|null, "topic": t, "is_key": bool,
 *    "schema": "&lt;avsc JSON text&gt;", "value": &lt;the datum in Avro's JSON encoding&gt;,
 *    "kind": "generic"|"specific", "subject_strategy": "topic"|"record"|"topic_record",
 *    "auto_register": bool, "use_latest_version": bool}
 * </pre>
 *
 * answered by one line {@code {"bytes": "<hex>"}} or {@code {"error": "<one line>"}}. The datum is decoded with
 * Avro's {@code JsonDecoder} against {@code schema} (unions as {@code {"type": value}}, bytes and fixed as ISO-8859-1
 * strings): into a generic datum, or for {@code specific} into the generated class named by the schema's full name
 * (its {@code SCHEMA$} is the reader schema, and is what the serializer registers, as Confluent's does for a
 * SpecificRecord). With {@code "bytes": "<hex>"} instead of {@code value} the request is deserialized (generic or
 * specific reader; {@code schema} not needed): {@code {"value": <Avro JSON encoding>, "class": <Java class>}} or
 * {@code {"error": ...}}. Defaults: {@code kind} generic, {@code subject_strategy} topic, {@code auto_register} true,
 * {@code use_latest_version} false, {@code is_key} false, no auth.
 *
 * <p>A top-level {@code bytes} schema is answered {@code {"unsupported": reason, "apicurio_bytes": hex}} (and its
 * deserialization {@code {"unsupported": reason}}): there Apicurio's serde writes Avro's length-prefixed bytes and
 * Confluent's serializers the raw bytes.
 *
 * <p>Each request gets a new serializer (or deserializer), as a new producer would: no serde cache carries one
 * request's registry answers into the next.
 */
final class AvroSerdeRunner {
    /** Where Apicurio's serde does not stand for Confluent's (README.md, "Schema Registry"). */
    static final String TOP_LEVEL_BYTES = "a top-level bytes schema: Confluent's serializers (Java's "
        + "AbstractKafkaAvroSerializer, confluent_kafka's AvroSerializer) write the raw bytes after the schema id, "
        + "Apicurio's serde writes Avro's length-prefixed bytes; the oracle does not stand for Confluent here";

    private AvroSerdeRunner() {
    }

    static int run(final String[] args) throws Exception {
        if (args.length != 0) {
            System.err.println("usage: java -jar streamproc-oracle.jar avro-serde < requests.jsonl");
            return 2;
        }
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = answer(Main.MAPPER.readTree(line));
            } catch (final Exception | LinkageError e) {
                e.printStackTrace(System.err);
                answer = Main.MAPPER.createObjectNode();
                answer.put("error", oneLine(e));
            }
            System.out.println(Main.MAPPER.writeValueAsString(answer));
            System.out.flush();
        }
        return 0;
    }

    private static ObjectNode answer(final JsonNode request) throws Exception {
        final String kind = request.path("kind").asText("generic");
        if (!kind.equals("generic") && !kind.equals("specific")) {
            throw new IllegalArgumentException("unknown kind '" + kind + "' (generic or specific)");
        }
        final boolean specific = kind.equals("specific");
        final Map<String, Object> settings = RegistrySerdes.settings(required(request, "registry").asText(),
            text(request, "user"), text(request, "password"), request.path("auto_register").asBoolean(true),
            request.path("use_latest_version").asBoolean(false), request.path("subject_strategy").asText("topic"),
            specific);
        final String topic = required(request, "topic").asText();
        final boolean isKey = request.path("is_key").asBoolean(false);
        final ObjectNode answer = Main.MAPPER.createObjectNode();
        if (request.hasNonNull("bytes")) {
            final byte[] bytes = HexFormat.of().parseHex(request.get("bytes").asText());
            final Object value;
            try (AvroKafkaDeserializer<Object> deserializer = new AvroKafkaDeserializer<>()) {
                deserializer.configure(settings, isKey);
                value = deserializer.deserialize(topic, new RecordHeaders(), bytes);
            }
            if (value instanceof ByteBuffer) {
                answer.put("unsupported", TOP_LEVEL_BYTES);
                return answer;
            }
            answer.set("value", Main.MAPPER.readTree(avroJson(value)));
            answer.put("class", value == null ? null : value.getClass().getName());
            return answer;
        }
        if (!request.has("value")) {
            throw new IllegalArgumentException("a request needs \"value\" (to serialize) or \"bytes\" (to deserialize)");
        }
        final JsonNode schemaNode = required(request, "schema");
        final Schema schema = new Schema.Parser().parse(schemaNode.isTextual() ? schemaNode.asText()
            : schemaNode.toString());
        final Object datum = decode(schema, request.get("value"), specific);
        try (AvroKafkaSerializer<Object> serializer = new AvroKafkaSerializer<>()) {
            serializer.configure(settings, isKey);
            final byte[] bytes = serializer.serialize(topic, new RecordHeaders(), datum);
            final String hex = bytes == null ? null : HexFormat.of().formatHex(bytes);
            if (schema.getType() == Schema.Type.BYTES) {
                answer.put("unsupported", TOP_LEVEL_BYTES);
                answer.put("apicurio_bytes", hex);
            } else {
                answer.put("bytes", hex);
            }
        }
        return answer;
    }

    /** The datum from Avro's JSON encoding: generic, or the generated SpecificRecord class of the schema's name. */
    private static Object decode(final Schema schema, final JsonNode value, final boolean specific) throws Exception {
        final DatumReader<Object> reader;
        if (specific) {
            final Class<?> generated = SpecificData.get().getClass(schema);
            if (generated == null || !SpecificRecord.class.isAssignableFrom(generated)) {
                throw new IllegalArgumentException("no generated SpecificRecord class for " + schema.getFullName()
                    + " (the oracle compiles examples/kafka_streams_examples/avro/*.avsc)");
            }
            reader = new SpecificDatumReader<>(schema, SpecificData.get().getSchema(generated));
        } else {
            reader = new GenericDatumReader<>(schema);
        }
        return reader.read(null, DecoderFactory.get().jsonDecoder(schema, value.toString()));
    }

    /** A deserialized value in Avro's JSON encoding, with its own schema (a record's, or its primitive type's). */
    private static String avroJson(final Object value) throws Exception {
        final Schema schema = schemaOf(value);
        final DatumWriter<Object> writer = value instanceof SpecificRecord ? new SpecificDatumWriter<>(schema)
            : new GenericDatumWriter<>(schema);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final JsonEncoder encoder = EncoderFactory.get().jsonEncoder(schema, out);
        writer.write(value, encoder);
        encoder.flush();
        return out.toString(StandardCharsets.UTF_8);
    }

    private static Schema schemaOf(final Object value) {
        if (value == null) {
            return Schema.create(Schema.Type.NULL);
        } else if (value instanceof GenericContainer container) {
            return container.getSchema();
        } else if (value instanceof CharSequence) {
            return Schema.create(Schema.Type.STRING);
        } else if (value instanceof Integer) {
            return Schema.create(Schema.Type.INT);
        } else if (value instanceof Long) {
            return Schema.create(Schema.Type.LONG);
        } else if (value instanceof Float) {
            return Schema.create(Schema.Type.FLOAT);
        } else if (value instanceof Double) {
            return Schema.create(Schema.Type.DOUBLE);
        } else if (value instanceof Boolean) {
            return Schema.create(Schema.Type.BOOLEAN);
        } else if (value instanceof ByteBuffer) {
            return Schema.create(Schema.Type.BYTES);
        }
        throw new IllegalStateException("cannot print a deserialized " + value.getClass().getName());
    }

    private static JsonNode required(final JsonNode request, final String field) {
        final JsonNode node = request.get(field);
        if (node == null || node.isNull()) {
            throw new IllegalArgumentException("the request has no \"" + field + "\"");
        }
        return node;
    }

    private static String text(final JsonNode request, final String field) {
        final JsonNode node = request.get(field);
        return node == null || node.isNull() ? null : node.asText();
    }

    /**
     * An exception as one line: each cause's class and message (a registry's answer, e.g. a rule violation, is in
     * its {@code detail}), joined by {@code ": "} without repeats.
     */
    static String oneLine(final Throwable error) {
        final StringBuilder line = new StringBuilder();
        String previous = null;
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            String message = e.getMessage();
            final String detail = detail(e);
            if (detail != null && (message == null || !message.contains(detail))) {
                message = message == null ? detail : message + " (" + detail + ")";
            }
            final String part = e.getClass().getName() + (message == null ? "" : ": " + message);
            if (previous != null && previous.contains(part)) {
                continue;
            }
            if (line.length() > 0) {
                line.append(" <- ");
            }
            line.append(part);
            previous = part;
        }
        return line.toString().replaceAll("\\s*[\\r\\n]+\\s*", " ");
    }

    /** Apicurio's client errors (RFC 7807 problem details) carry the registry's message in {@code getDetail()}. */
    private static String detail(final Throwable e) {
        try {
            final Object detail = e.getClass().getMethod("getDetail").invoke(e);
            return detail == null ? null : detail.toString();
        } catch (final ReflectiveOperationException | RuntimeException ignored) {
            return null;
        }
    }
}
