package dev.streamproc.oracle;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Properties;

import io.apicurio.registry.serde.avro.AvroSerde;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;

/**
 * Confluent's {@code PageViewRegionLambdaExample} (github.com/confluentinc/kafka-streams-examples,
 * {@code src/main/java/io/confluent/examples/streams/PageViewRegionLambdaExample.java}, master at
 * 7b8c252054ce5de7d2d545cc2b2c944e0e0789f6), rewritten here: page views per region in hopping windows, with
 * generic Avro records.
 *
 * <p>The same as the example: topics {@code PageViews} (values {@code PageView}, {@code pageview.avsc}) and
 * {@code UserProfiles} (a table of {@code UserProfile}, {@code userprofile.avsc}) → {@code PageViewsByRegion};
 * {@code Serdes.StringSerde} as the default key serde and the Avro serde as the default value serde, by class in the
 * streams properties with the registry's settings in the same {@code Properties}; generic records throughout; the
 * topology, built by {@code builder.build()} without properties: the views re-keyed by their {@code user}, the
 * profiles' table mapped to its {@code region}, a left join building a {@code PageViewWithRegion} generic record from
 * {@code pageviewregion.avsc} (read from the classpath where the example reads it), re-keyed by region,
 * {@code groupByKey()} (default serdes: a repartition topic of PageViewWithRegion records), 5-minute windows
 * advancing by 1 minute without grace, {@code count()}, and {@code Windowed#toString()} keys with Long counts to
 * {@code PageViewsByRegion}. As in the example, a view whose user has no profile yet fails the app (the region is
 * null, and {@code region.toString()} throws).
 *
 * <p>Deviations, and nothing else:
 * <ul>
 *   <li>the value serde is Apicurio's {@link AvroSerde} (Confluent's {@code GenericAvroSerde} is not on Maven
 *       Central) and the registry settings are Apicurio's ({@link RegistrySerdes#appSettings}: the registry's v3
 *       URL instead of {@code schema.registry.url}, auto-register, TopicNameStrategy, generic reader, the whole
 *       schema registered under one subject, basic auth when given);</li>
 *   <li>the run protocol of {@code avro-app} ({@link AvroAppRunner}): the application id and state directory from
 *       the command line (the example's id is {@code pageview-region-lambda-example}), no {@code client.id}, 100 ms
 *       commits instead of 10 s, no record cache, one thread, {@code max.task.idle.ms} 2 s, and no
 *       {@code cleanUp()} before the start.</li>
 * </ul>
 */
final class PageViewRegionApp {
    static final String PAGE_VIEWS = "PageViews";
    static final String USER_PROFILES = "UserProfiles";
    static final String PAGE_VIEWS_BY_REGION = "PageViewsByRegion";
    /** Where the example keeps its schemas on the classpath (the POM copies {@code examples/kafka_streams_examples/avro} there). */
    static final String PAGE_VIEW_REGION_SCHEMA = "avro/io/confluent/examples/streams/pageviewregion.avsc";

    private PageViewRegionApp() {
    }

    /** The example's default serdes and registry settings, into the app's streams properties. */
    static void configure(final Properties props, final String registry, final String user, final String password) {
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, AvroSerde.class);
        props.putAll(RegistrySerdes.appSettings(registry, user, password, false));
    }

    static Topology topology() {
        final Serde<String> stringSerde = Serdes.String();
        final Serde<Long> longSerde = Serdes.Long();
        final StreamsBuilder builder = new StreamsBuilder();

        final KStream<String, GenericRecord> views = builder.stream(PAGE_VIEWS);
        final KStream<String, GenericRecord> viewsByUser = views
            .map((ignored, view) -> new KeyValue<>(view.get("user").toString(), view));
        final KTable<String, GenericRecord> userProfiles = builder.table(USER_PROFILES);
        final KTable<String, String> userRegions = userProfiles.mapValues(profile -> profile.get("region").toString());

        final Schema schema = pageViewRegionSchema();
        final KTable<Windowed<String>, Long> viewsByRegion = viewsByUser
            .leftJoin(userRegions, (view, region) -> {
                final GenericRecord viewRegion = new GenericData.Record(schema);
                viewRegion.put("user", view.get("user"));
                viewRegion.put("page", view.get("page"));
                viewRegion.put("region", region);
                return viewRegion;
            })
            .map((user, viewRegion) -> new KeyValue<>(viewRegion.get("region").toString(), viewRegion))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(5)).advanceBy(Duration.ofMinutes(1)))
            .count();
        viewsByRegion.toStream((windowedRegion, count) -> windowedRegion.toString())
            .to(PAGE_VIEWS_BY_REGION, Produced.with(stringSerde, longSerde));
        return builder.build();
    }

    private static Schema pageViewRegionSchema() {
        try (InputStream in = PageViewRegionApp.class.getClassLoader().getResourceAsStream(PAGE_VIEW_REGION_SCHEMA)) {
            if (in == null) {
                throw new IllegalStateException(PAGE_VIEW_REGION_SCHEMA + " is not on the classpath");
            }
            return new Schema.Parser().parse(in);
        } catch (final IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
