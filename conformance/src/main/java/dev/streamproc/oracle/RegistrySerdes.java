package dev.streamproc.oracle;

import java.util.LinkedHashMap;
import java.util.Map;

import io.apicurio.registry.resolver.config.SchemaResolverConfig;
import io.apicurio.registry.serde.avro.AvroSerdeConfig;
import io.apicurio.registry.serde.strategy.TopicIdStrategy;

/**
 * The oracle's stand-in for Confluent's Avro serdes ({@code KafkaAvroSerializer}/{@code KafkaAvroDeserializer},
 * {@code GenericAvroSerde}, {@code SpecificAvroSerde}), which are not on Maven Central: Apicurio Registry's Kafka
 * serde ({@code io.apicurio:apicurio-registry-avro-serde-kafka}, {@link io.apicurio.registry.serde.avro.AvroSerde}),
 * an independent implementation that writes Confluent's wire format (magic byte 0, the 4-byte schema id, Avro
 * binary) with the settings below. Every mode that serializes Avro through a registry takes them from here.
 *
 * <ul>
 *   <li>{@code apicurio.registry.url} = {@code <base>/apis/registry/v3}: Apicurio's own API on the registry
 *       whose Confluent API ({@code <base>/apis/ccompat/v7}) Confluent's clients use ({@code schema.registry.url}).
 *       A subject is an artifact of the default group; a schema id is Apicurio's content id (the registry runs
 *       with {@code apicurio.ccompat.legacy-id-mode.enabled=false}, {@code streamproc_dev/schema_registry.py}).</li>
 *   <li>ids in the payload (Apicurio's default: {@code apicurio.registry.headers.enabled=false},
 *       {@code Default4ByteIdHandler} writing the content id), as Confluent's serializer writes them.</li>
 *   <li>{@code apicurio.registry.auto-register} = Confluent's {@code auto.register.schemas} (its default true);
 *       {@code apicurio.registry.find-latest} = {@code use.latest.version}.</li>
 *   <li>{@code apicurio.registry.dereference-schema=true}: the record's whole schema ({@code Schema#toString()},
 *       nested named types inline) is registered under the one subject, as Confluent's serializer registers
 *       {@code AvroSchema#canonicalString()}; without it Apicurio registers each nested record or enum as an
 *       artifact of its own and refers to it.</li>
 *   <li>{@code apicurio.registry.canonicalize=true}: a schema already registered under the subject in another
 *       layout is found as that version, as Confluent's registry compares schemas.</li>
 *   <li>subject name strategies: Confluent's {@code TopicNameStrategy} = Apicurio's {@link TopicIdStrategy}
 *       ({@code <topic>-key}/{@code <topic>-value}); {@code RecordNameStrategy} and {@code TopicRecordNameStrategy}
 *       are ours ({@link RecordNameStrategy}, {@link TopicRecordNameStrategy}: the record's full name, and
 *       {@code <topic>-<full name>}, in the default group, records only): Apicurio's
 *       {@code QualifiedRecordIdStrategy} also takes an enum, and its {@code TopicRecordIdStrategy} names
 *       {@code <topic>-<simple name>} in a group named after the namespace.</li>
 *   <li>{@code apicurio.registry.use-specific-avro-reader} = Confluent's {@code specific.avro.reader} (which
 *       {@code SpecificAvroSerde} sets).</li>
 *   <li>basic auth: {@code apicurio.registry.auth.username}/{@code .password} for Confluent's
 *       {@code basic.auth.credentials.source=USER_INFO} and {@code basic.auth.user.info}.</li>
 * </ul>
 */
final class RegistrySerdes {
    /** Where Apicurio Registry serves its own (v3) REST API, which its serdes speak. */
    static final String V3_PATH = "/apis/registry/v3";

    private RegistrySerdes() {
    }

    /** Confluent's subject name strategies by the short names the requests use. */
    static String strategyClass(final String strategy) {
        return switch (strategy) {
            case "topic" -> TopicIdStrategy.class.getName();
            case "record" -> RecordNameStrategy.class.getName();
            case "topic_record" -> TopicRecordNameStrategy.class.getName();
            default -> throw new IllegalArgumentException("unknown subject_strategy '" + strategy
                + "' (topic, record or topic_record)");
        };
    }

    /**
     * The serde settings for the registry at {@code base} ({@code http://host:port}); {@code user} null for no
     * auth. {@code specificReader}: deserialize into the generated SpecificRecord classes.
     */
    static Map<String, Object> settings(final String base, final String user, final String password,
                                        final boolean autoRegister, final boolean useLatestVersion,
                                        final String strategy, final boolean specificReader) {
        final Map<String, Object> settings = new LinkedHashMap<>();
        settings.put(SchemaResolverConfig.REGISTRY_URL, stripSlash(base) + V3_PATH);
        if (user != null) {
            settings.put(SchemaResolverConfig.AUTH_USERNAME, user);
            settings.put(SchemaResolverConfig.AUTH_PASSWORD, password);
        }
        settings.put(SchemaResolverConfig.AUTO_REGISTER_ARTIFACT, String.valueOf(autoRegister));
        settings.put(SchemaResolverConfig.FIND_LATEST_ARTIFACT, String.valueOf(useLatestVersion));
        settings.put(SchemaResolverConfig.DEREFERENCE_SCHEMA, "true");
        settings.put(SchemaResolverConfig.CANONICALIZE, "true");
        settings.put(SchemaResolverConfig.ARTIFACT_RESOLVER_STRATEGY, strategyClass(strategy));
        settings.put(AvroSerdeConfig.USE_SPECIFIC_AVRO_READER, String.valueOf(specificReader));
        return settings;
    }

    /** The settings a Kafka Streams app of Confluent's examples has by default: auto-register, TopicNameStrategy. */
    static Map<String, Object> appSettings(final String base, final String user, final String password,
                                           final boolean specificReader) {
        return settings(base, user, password, true, false, "topic", specificReader);
    }

    private static String stripSlash(final String base) {
        return base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    }
}
