"""``PageViewRegionLambdaExample``: page views per region in 5-minute windows advancing by a minute, from
GenericAvro records, through a stream-table join.

Java (Confluent's example, abridged)::

    props.put(DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass().getName());
    props.put(DEFAULT_VALUE_SERDE_CLASS_CONFIG, GenericAvroSerde.class);    // with schema.registry.url in props
    KStream<String, GenericRecord> views = builder.stream("PageViews");
    KStream<String, GenericRecord> viewsByUser = views.map((dummy, record) ->
        new KeyValue<>(record.get("user").toString(), record));
    KTable<String, GenericRecord> userProfiles = builder.table("UserProfiles");
    KTable<String, String> userRegions = userProfiles.mapValues(record -> record.get("region").toString());
    Schema schema = new Schema.Parser().parse(... "pageviewregion.avsc");
    KTable<Windowed<String>, Long> viewsByRegion = viewsByUser
        .leftJoin(userRegions, (view, region) -> {
            GenericRecord viewRegion = new GenericData.Record(schema);
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
        .to("PageViewsByRegion", Produced.with(stringSerde, longSerde));

A ``GenericRecord`` is a dict of its fields that carries its schema (``GenericRecord(schema, {...})``, as
``new GenericData.Record(schema)``). Java's ``toString()`` throws on ``null`` where Python's ``str`` does not: a view
whose user has no profile fails the Java application there, and :func:`_to_string` fails the port the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from examples.kafka_streams_examples import avro_schema
from streamproc import Topology, serde_for
from streamproc.dsl import Produced, StreamsBuilder, TimeWindows
from streamproc.schema_registry import GenericAvroSerde, GenericRecord

PAGE_VIEWS = "PageViews"
USER_PROFILES = "UserProfiles"
PAGE_VIEWS_BY_REGION = "PageViewsByRegion"

PAGE_VIEW_REGION = avro_schema("pageviewregion")
MINUTE = 60_000


def _to_string(value: Any) -> str:
    """Java's ``value.toString()``: ``null`` throws (a ``NullPointerException`` fails the Java task)."""
    if value is None:
        raise TypeError('Cannot invoke "Object.toString()" because the value is null')
    return str(value)


def _view_region(view: GenericRecord, region: str | None) -> GenericRecord:
    return GenericRecord(PAGE_VIEW_REGION, user=view["user"], page=view["page"], region=region)


def build(settings: Mapping[str, str]) -> Topology:
    """The example's topology; ``settings`` are the application's (``schema.registry.url`` among them)."""
    builder = StreamsBuilder()
    views = builder.stream(PAGE_VIEWS)
    views_by_user = views.map(lambda _dummy, record: (_to_string(record["user"]), record))
    user_profiles = builder.table(USER_PROFILES)
    user_regions = user_profiles.map_values(lambda record: _to_string(record["region"]))
    views_by_region = (
        views_by_user.left_join(user_regions, _view_region)
        .map(lambda _user, view_region: (_to_string(view_region["region"]), view_region))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(5 * MINUTE).advance_by(MINUTE))
        .count()
    )
    views_by_region.to_stream(lambda windowed_region, _count: str(windowed_region)).to(
        PAGE_VIEWS_BY_REGION, Produced.with_(serde_for("String"), serde_for("Long"))
    )
    # the Java application's defaults: Kafka Streams configures the value serde with the application's settings
    return builder.build({**settings, "default.key.serde": "String", "default.value.serde": GenericAvroSerde})
