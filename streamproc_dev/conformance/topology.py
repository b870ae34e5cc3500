"""Conformance runner for ``scenarios/topology/``: describe() text + cluster -> the scenario's ``expected`` shape.

Format: ``../shared/spec/scenarios/README.md`` (``topology/`` section). The result always carries the optional
extras (``repartition_count_derivation``, ``intermediate_user_topics``,
``changelog_topic_if_reuse_ktable_source_topics``); a comparison drops those the scenario does not list
(:func:`compare`), and treats ``copartition_groups`` as a set.
"""

from __future__ import annotations

from typing import Any

from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import parse_description
from streamproc.errors import MissingTopic, NotCopartitioned, PartitionCountChanged, TopologyError

#: Keys the README marks optional: present in a result, compared only when the scenario lists them.
OPTIONAL_TOP_LEVEL = ("repartition_count_derivation", "intermediate_user_topics")
OPTIONAL_STORE_KEYS = ("changelog_topic_if_reuse_ktable_source_topics",)


def _task_name(analysis: TopologyAnalysis, subtopology: int, partition: int) -> str:
    base = f"{subtopology}_{partition}"
    return base if analysis.topology_name is None else f"{analysis.topology_name}__{base}"


def to_expected_shape(analysis: TopologyAnalysis) -> dict[str, Any]:
    """The ``expected`` JSON shape of a topology scenario."""
    subtopologies = []
    for sub in analysis.subtopologies:
        stores = []
        for store in sub.stores:
            entry: dict[str, Any] = {
                "name": store.name,
                "changelog_topic": store.changelog_topic,
                "changelog_partitions": store.changelog_partitions,
            }
            if store.source_topic_changelog is not None:
                entry["changelog_topic_if_reuse_ktable_source_topics"] = store.source_topic_changelog
            stores.append(entry)
        subtopologies.append(
            {
                "id": sub.id,
                "source_topics": list(sub.source_topics),
                "source_patterns": list(sub.source_patterns),
                "sink_topics": list(sub.sink_topics),
                "dynamic_sinks": list(sub.dynamic_sinks),
                "repartition_source_topics": list(sub.repartition_source_topics),
                "repartition_sink_topics": list(sub.repartition_sink_topics),
                "stores": stores,
            }
        )
    return {
        "topology_name": analysis.topology_name,
        "subtopologies": subtopologies,
        "global_stores": [
            {
                "id": g.id,
                "source_node": g.source_node,
                "processor_node": g.processor_node,
                "topic": g.topic,
                "store": g.store,
                "changelog_topic": g.changelog_topic,
                "topic_partitions": g.topic_partitions,
            }
            for g in analysis.global_stores
        ],
        "copartition_groups": [list(g) for g in analysis.copartition_groups],
        "internal_topics": dict(analysis.internal_topics),
        "repartition_count_derivation": {
            topic: {
                "from_writers_max_source_count": d.from_writers_max_source_count,
                "after_copartition_enforcement": d.after_copartition_enforcement,
            }
            for topic, d in analysis.repartition_count_derivation.items()
        },
        "intermediate_user_topics": list(analysis.intermediate_user_topics),
        "tasks": {
            _task_name(analysis, task.subtopology, task.partition): [f"{t}-{p}" for t, p in partitions]
            for task, partitions in analysis.tasks.items()
        },
        "stages": [list(stage) for stage in analysis.stages],
    }


def _error_shape(exc: TopologyError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, (NotCopartitioned, PartitionCountChanged)):
        error["topics"] = exc.details["partition_counts"]
        error["kafka_exception"] = exc.kafka_exception
        error["kafka_message_contains"] = exc.kafka_message
    elif isinstance(exc, MissingTopic):
        error["topics"] = list(exc.topics)
        error["kafka_exception"] = exc.kafka_exception
        error["kafka_message_contains"] = exc.kafka_message
    return {"error": error}


def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """Run one ``topology`` scenario; refusals come back as ``{"error": {...}}``."""
    spec = scenario["input"]
    try:
        description = parse_description(spec["describe"])
        analysis = analyze(
            description,
            spec["application_id"],
            {str(k): int(v) for k, v in spec["partition_counts"].items()},
            {str(k): str(v) for k, v in (spec.get("config") or {}).items()},
        )
    except TopologyError as exc:
        return _error_shape(exc)
    return to_expected_shape(analysis)


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Differences between a scenario's ``expected`` and a result, as the README prescribes; empty when equal.

    Errors compare ``type``, ``topics`` and that the message quotes ``kafka_message_contains``. Results drop
    optional extras the scenario does not list and compare ``copartition_groups`` as a set of sorted lists.
    """
    if "error" in expected:
        if "error" not in actual:
            return [f"expected error {expected['error'].get('type')}, got a result"]
        want, got = expected["error"], actual["error"]
        problems = []
        if want.get("type") != got.get("type"):
            problems.append(f"error type: expected {want.get('type')}, got {got.get('type')}")
        if "topics" in want and want["topics"] != got.get("topics"):
            problems.append(f"error topics: expected {want['topics']}, got {got.get('topics')}")
        quoted = want.get("kafka_message_contains")
        if quoted and quoted not in got.get("message", ""):
            problems.append(f"message does not quote {quoted!r}: {got.get('message')!r}")
        if "kafka_exception" in want and want["kafka_exception"] != got.get("kafka_exception"):
            problems.append(f"kafka_exception: expected {want['kafka_exception']}, got {got.get('kafka_exception')}")
        return problems
    if "error" in actual:
        return [f"unexpected error: {actual['error']}"]
    got = dict(actual)
    for key in OPTIONAL_TOP_LEVEL:
        if key not in expected:
            got.pop(key, None)
    got["subtopologies"] = []
    for index, sub in enumerate(actual["subtopologies"]):
        sub = dict(sub)
        want_stores = (
            {s["name"]: s for s in expected["subtopologies"][index]["stores"]}
            if index < len(expected["subtopologies"])
            else {}
        )
        stores = []
        for store in sub["stores"]:
            store = dict(store)
            for key in OPTIONAL_STORE_KEYS:
                if key not in want_stores.get(store["name"], {}):
                    store.pop(key, None)
            stores.append(store)
        sub["stores"] = stores
        got["subtopologies"].append(sub)
    problems = []
    for key in sorted(set(expected) | set(got)):
        want_value, got_value = expected.get(key), got.get(key)
        if key == "copartition_groups":
            want_value = sorted(sorted(g) for g in want_value or [])
            got_value = sorted(sorted(g) for g in got_value or [])
        if want_value != got_value:
            problems.append(f"{key}: expected {want_value!r}, got {got_value!r}")
    return problems
