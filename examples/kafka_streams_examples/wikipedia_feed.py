"""``WikipediaFeedAvroLambdaExample``: how many new Wikipedia feeds each user wrote, from SpecificAvro records.

Java (Confluent's example, abridged)::

    props.put(DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass().getName());
    props.put(DEFAULT_VALUE_SERDE_CLASS_CONFIG, SpecificAvroSerde.class);   // with schema.registry.url in props
    KStream<String, WikiFeed> feeds = builder.stream("WikipediaFeed");
    feeds.filter((dummy, value) -> value.getIsNew())
         .map((key, value) -> new KeyValue<>(value.getUser(), value))
         .groupByKey()
         .count()
         .toStream().to("WikipediaStats", Produced.with(stringSerde, longSerde));

``WikiFeed`` is the class Avro's Java compiler generates from ``wikifeed.avsc`` with ``stringType`` ``String`` (as the
example's POM sets it): :func:`~streamproc.schema_registry.specific_record` makes its twin, with the same schema
(``avro.java.string`` marks included), so the repartition topic's subject gets the Java application's schema, not a
second version.
"""

from __future__ import annotations

from collections.abc import Mapping

from examples.kafka_streams_examples import avro_schema
from streamproc import Topology, serde_for
from streamproc.dsl import Produced, StreamsBuilder
from streamproc.schema_registry import SpecificAvroSerde, specific_record

WIKIPEDIA_FEED = "WikipediaFeed"
WIKIPEDIA_STATS = "WikipediaStats"

WikiFeed = specific_record(avro_schema("wikifeed"), string_type="String")


def build(settings: Mapping[str, str]) -> Topology:
    """The example's topology; ``settings`` are the application's (``schema.registry.url`` among them)."""
    builder = StreamsBuilder()
    feeds = builder.stream(WIKIPEDIA_FEED)
    (
        feeds.filter(lambda _dummy, feed: feed.is_new)
        .map(lambda _key, feed: (feed.user, feed))
        .group_by_key()
        .count()
        .to_stream()
        .to(WIKIPEDIA_STATS, Produced.with_(serde_for("String"), serde_for("Long")))
    )
    # the Java application's defaults: Kafka Streams configures the value serde with the application's settings
    defaults = {"default.key.serde": "String", "default.value.serde": SpecificAvroSerde(WikiFeed)}
    return builder.build({**settings, **defaults})
