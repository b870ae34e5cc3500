package dev.streamproc.oracle;

import java.util.Properties;

import io.apicurio.registry.serde.avro.AvroSerde;
import io.confluent.examples.streams.avro.WikiFeed;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Confluent's {@code WikipediaFeedAvroLambdaExample} (github.com/confluentinc/kafka-streams-examples,
 * {@code src/main/java/io/confluent/examples/streams/WikipediaFeedAvroLambdaExample.java}, master at
 * 7b8c252054ce5de7d2d545cc2b2c944e0e0789f6), rewritten here: the number of new feeds per user.
 *
 * <p>The same as the example: topics {@code WikipediaFeed} → {@code WikipediaStats}; the generated SpecificRecord
 * {@link WikiFeed} from the example's {@code wikifeed.avsc} ({@code examples/kafka_streams_examples/avro}, compiled as the example's POM
 * does, {@code stringType} String); {@code Serdes.String()} as the default key serde and the Avro serde as the
 * default value serde, both by class in the streams properties with the registry's settings in the same
 * {@code Properties}, so that Kafka Streams configures the serde with them ({@code configure(originals, false)});
 * the topology, built by {@code builder.build()} without properties: keep the new feeds ({@code getIsNew()}),
 * re-key by {@code getUser()}, {@code groupByKey()} (the default serdes, so a repartition topic of WikiFeed records),
 * {@code count()}, and the counts to {@code WikipediaStats} with String keys and Long values.
 *
 * <p>Deviations, and nothing else:
 * <ul>
 *   <li>the value serde is Apicurio's {@link AvroSerde} (Confluent's {@code SpecificAvroSerde} is not on Maven
 *       Central) and the registry settings are Apicurio's ({@link RegistrySerdes#appSettings}: the registry's v3
 *       URL instead of {@code schema.registry.url}, auto-register, TopicNameStrategy,
 *       {@code apicurio.registry.use-specific-avro-reader=true} for what {@code SpecificAvroSerde} sets, the
 *       whole schema registered under one subject, basic auth when given);</li>
 *   <li>the run protocol of {@code avro-app} ({@link AvroAppRunner}): the application id and state directory
 *       from the command line (the example's are {@code wordcount-avro-lambda-example} and
 *       {@code /tmp/kafka-streams}), no {@code client.id}, 100 ms commits instead of 10 s, no record cache, one
 *       thread, {@code max.task.idle.ms} 2 s, and no {@code cleanUp()} before the start (a hand-off leaves the
 *       state the app must resume from).</li>
 * </ul>
 */
final class WikipediaFeedAvroApp {
    static final String WIKIPEDIA_FEED = "WikipediaFeed";
    static final String WIKIPEDIA_STATS = "WikipediaStats";

    private WikipediaFeedAvroApp() {
    }

    /** The example's default serdes and registry settings, into the app's streams properties. */
    static void configure(final Properties props, final String registry, final String user, final String password) {
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass().getName());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, AvroSerde.class);
        props.putAll(RegistrySerdes.appSettings(registry, user, password, true));
    }

    static Topology topology() {
        final Serde<String> stringSerde = Serdes.String();
        final Serde<Long> longSerde = Serdes.Long();
        final StreamsBuilder builder = new StreamsBuilder();

        final KStream<String, WikiFeed> feeds = builder.stream(WIKIPEDIA_FEED);
        final KTable<String, Long> newFeedsPerUser = feeds
            .filter((ignored, feed) -> feed.getIsNew())
            .map((ignored, feed) -> new KeyValue<>(feed.getUser(), feed))
            .groupByKey()
            .count();
        newFeedsPerUser.toStream().to(WIKIPEDIA_STATS, Produced.with(stringSerde, longSerde));
        return builder.build();
    }
}
