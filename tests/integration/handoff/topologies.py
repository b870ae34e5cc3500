"""The hand-off tests' topology: the Spark tests' count program on topics of its own (importable by name)."""

from __future__ import annotations

from streamproc import Stores, Topology, serde_for
from tests.integration.spark.topologies import count_topology, rekey_count_topology

INPUT = "handoff-count-words"
OUTPUT = "handoff-count-totals"
STRING = serde_for("String")
LONG = serde_for("Long")


def count() -> Topology:
    """Source → count (persistent timestamped store ``counts``, logged) → sink."""
    return count_topology(INPUT, OUTPUT)


#: ``StateResumeApp``'s input topics for the end-to-end proof, one per processing guarantee.
RESUME_INPUT_ALOS = "handoff-resume-words-alos"
RESUME_INPUT_EOS = "handoff-resume-words-eos"
RESUME_INPUT_43 = "handoff-resume-words-43"
RESUME_INPUT_BUNDLE = "handoff-resume-words-bundle"
RESUME_INPUT_EOS_43 = "handoff-resume-words-eos-43"
RESUME_INPUT_STREAMS_GROUP_43 = "handoff-resume-words-streams-group-43"
RESUME_INPUT_STREAMS_GROUP_EOS_43 = "handoff-resume-words-streams-group-eos-43"


def _state_resume(topic: str) -> Topology:
    """The Python twin of ``conformance/.../StateResumeApp`` (kv mode): source → count in ``counts``, no sink."""
    from tests.integration.state.test_kafka_streams_opens_state import Counter

    t = Topology()
    t.add_source("source", topic, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", Counter, "source")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
        ),
        "count",
    )
    return t


def state_resume_alos() -> Topology:
    return _state_resume(RESUME_INPUT_ALOS)


def state_resume_eos() -> Topology:
    return _state_resume(RESUME_INPUT_EOS)


REKEY_INPUT = "handoff-rekey-orders"
REKEY_OUTPUT = "handoff-rekey-totals"
REKEYED = "rekeyed-repartition"


def rekey_count() -> Topology:
    """Re-key → repartition → count (two stages), on the hand-off tests' own topics."""
    return rekey_count_topology(REKEY_INPUT, REKEY_OUTPUT)


#: The preview test's own topics: re-key → count, handed off twice.
PREVIEW_INPUT = "handoff-preview-orders"
PREVIEW_OUTPUT = "handoff-preview-totals"


def preview_rekey_count() -> Topology:
    """Re-key → repartition → count (two stages), on the preview test's topics."""
    return rekey_count_topology(PREVIEW_INPUT, PREVIEW_OUTPUT)


def state_resume_43() -> Topology:
    return _state_resume(RESUME_INPUT_43)


def state_resume_bundle() -> Topology:
    return _state_resume(RESUME_INPUT_BUNDLE)


def state_resume_eos_43() -> Topology:
    return _state_resume(RESUME_INPUT_EOS_43)


def state_resume_streams_group_43() -> Topology:
    return _state_resume(RESUME_INPUT_STREAMS_GROUP_43)


def state_resume_streams_group_eos_43() -> Topology:
    return _state_resume(RESUME_INPUT_STREAMS_GROUP_EOS_43)


#: The live re-key proof's topics (``REKEY_RESUME_PARTITIONS`` partitions each), per guarantee.
REKEY_RESUME_PARTITIONS = 2
REKEY_RESUME_INPUT = {"alos": "handoff-rekey-resume-in-alos", "eos": "handoff-rekey-resume-in-eos"}
REKEY_RESUME_OUTPUT = {"alos": "handoff-rekey-resume-out-alos", "eos": "handoff-rekey-resume-out-eos"}


def _rekey_resume(guarantee: str) -> Topology:
    """The Python twin of ``tests/integration/handoff/java/RekeyResumeApp.java``: the value becomes the key, through
    ``<app>-rekeyed-repartition``, counted per key in ``counts``, each count to the output."""
    return rekey_count_topology(REKEY_RESUME_INPUT[guarantee], REKEY_RESUME_OUTPUT[guarantee])


def rekey_resume_alos() -> Topology:
    return _rekey_resume("alos")


def rekey_resume_eos() -> Topology:
    return _rekey_resume("eos")


#: The first-run proof's topics (``REKEY_RESUME_PARTITIONS`` partitions each): the app never ran before streamproc.
FIRST_RUN_INPUT = {"alos": "handoff-first-run-in-alos", "eos": "handoff-first-run-in-eos"}
FIRST_RUN_OUTPUT = {"alos": "handoff-first-run-out-alos", "eos": "handoff-first-run-out-eos"}


def first_run_alos() -> Topology:
    return rekey_count_topology(FIRST_RUN_INPUT["alos"], FIRST_RUN_OUTPUT["alos"])


def first_run_eos() -> Topology:
    return rekey_count_topology(FIRST_RUN_INPUT["eos"], FIRST_RUN_OUTPUT["eos"])


#: The stream–global-table join proof's topics (``GLOBAL_JOIN_PARTITIONS`` partitions each).
GLOBAL_JOIN_PARTITIONS = 2
GLOBAL_JOIN_ORDERS = "handoff-global-orders"
GLOBAL_JOIN_PRODUCTS = "handoff-global-products"
GLOBAL_JOIN_OUTPUT = "handoff-global-priced"


def global_join() -> Topology:
    """The Python twin of ``tests/integration/handoff/java/GlobalJoinResumeApp.java``: each order joined by its value
    with the global table ``products-store``; ``order|product`` to the output."""
    from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder

    b = StreamsBuilder()
    products = b.global_table(GLOBAL_JOIN_PRODUCTS, Consumed.with_(STRING, STRING), Materialized.as_("products-store"))
    b.stream(GLOBAL_JOIN_ORDERS, Consumed.with_(STRING, STRING)).join(
        products, lambda _key, value: value, lambda order, product: f"{order}|{product}"
    ).to(GLOBAL_JOIN_OUTPUT, Produced.with_(STRING, STRING))
    return b.build()
