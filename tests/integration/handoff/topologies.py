"""The hand-off tests' topology: the Spark tests' count program on topics of its own (importable by name)."""

from __future__ import annotations

from streamproc import Stores, Topology, serde_for
from tests.integration.spark.topologies import CountPerKey

INPUT = "handoff-count-words"
OUTPUT = "handoff-count-totals"
STRING = serde_for("String")
LONG = serde_for("Long")


def count() -> Topology:
    """Source → count (persistent timestamped store ``counts``, logged) → sink."""
    t = Topology()
    t.add_source("words", INPUT, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", CountPerKey, "words")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
        ),
        "count",
    )
    t.add_sink("totals", OUTPUT, "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t
