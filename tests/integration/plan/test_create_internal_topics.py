"""A new application's first run: ``streamproc plan --create-internal-topics`` creates what Kafka Streams would.

The oracle is Kafka Streams 4.2.2 itself: ``InternalTopicsApp`` (DSL: re-key → repartition → a key-value, a window
and a session count) starts once on one application id and creates its internal topics; streamproc plans the same
``describe()`` text for another application id and creates them. Names (after the application id), partition
counts, replication and every config the creator set (describe_configs entries whose source is the topic's own
config, i.e. not a broker or static default) must be equal. The dry run shows them and creates nothing; without
the flag the plan refuses as before.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from streamproc.plan.run_plan import RunPlan
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import run
from tests.integration.spark.conftest import wait_for_leaders
from tests.integration.state.test_kafka_streams_opens_state import app_classpath, compile_beside

pytestmark = pytest.mark.integration
__all__ = ["app_classpath"]

SOURCE = Path(__file__).resolve().parent / "java" / "InternalTopicsApp.java"
APP = "dev.streamproc.oracle.InternalTopicsApp"
PARTITIONS = 3
#: ``InternalTopicsApp``'s stores and their kinds (retention as the Java app sets it)
STORE_KINDS = ("counts=key_value", "window-counts=window:7200000", "session-counts=session:5400000")


@pytest.fixture(scope="module")
def topics_classpath(app_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``InternalTopicsApp`` compiled beside ``StateResumeApp`` (same package: it reuses its start and close)."""
    classes = tmp_path_factory.mktemp("internal-topics-app")
    return compile_beside(app_classpath, [SOURCE], classes)


def java(classpath: str, *args: str) -> str:
    proc = subprocess.run(
        ["java", "-cp", classpath, APP, *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout


def internal_topics(admin: AdminClient, app_id: str) -> dict[str, dict[str, Any]]:
    """Each topic named ``<app_id>-…`` by its name after the prefix: partitions, replicas, the creator's configs."""
    names = sorted(t for t in admin.list_topics(timeout=30).topics if t.startswith(f"{app_id}-"))
    if not names:
        return {}
    described = admin.describe_topics(TopicCollection(names))
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
    configs = admin.describe_configs(resources)
    found = {}
    for name in names:
        description = described[name].result(timeout=30)
        [future] = [f for r, f in configs.items() if r.name == name]
        entries = future.result(timeout=30)
        found[name.removeprefix(f"{app_id}-")] = {
            "partitions": len(description.partitions),
            "replicas": sorted({len(p.replicas) for p in description.partitions}),
            "configs": {
                key: entry.value
                for key, entry in entries.items()
                if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
            },
        }
    return found


def test_plan_creates_internal_topics_as_kafka_streams_does(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path, topics_classpath: str
) -> None:
    source = create_topic(admin, unique("first-run-orders"), partitions=PARTITIONS)
    wait_for_leaders(admin, source)
    describe = tmp_path / "topology.txt"
    describe.write_text(java(topics_classpath, "describe", source))
    kafka_app, our_app = unique("first-run-ks"), unique("first-run-sp")
    plan_args = ["plan", "--bootstrap", kafka_broker, "--application-id", our_app, "--topology", str(describe)]

    refused = run(*plan_args, ok=False)
    assert refused.exit_code != 0 and "--create-internal-topics" in refused.output, refused.output

    first_run = [*plan_args, "--create-internal-topics", "--streams-setting", "replication.factor=1"]
    for kind in STORE_KINDS:
        first_run += ["--store-kind", kind]
    unknown = run(*first_run[: -2 * len(STORE_KINDS)], ok=False)
    assert "counts, session-counts, window-counts" in unknown.output and "--store-kind" in unknown.output

    member = Consumer({"bootstrap.servers": kafka_broker, "group.id": our_app, "enable.auto.commit": False})
    try:  # a running application: refused before anything is created
        member.subscribe([source])
        while not member.assignment():
            member.poll(0.5)
        active = run(*first_run, ok=False)
        assert f"group '{our_app}' is Stable with 1 member(s)" in active.output, active.output
        assert internal_topics(admin, our_app) == {}
    finally:
        member.close()

    dry = run(*first_run, "--dry-run")
    assert "Internal topics to create for the application's first run (dry run: none created yet)" in dry.output
    assert f"{our_app}-rekeyed-repartition (repartition, {PARTITIONS} partition(s)" in dry.output
    assert internal_topics(admin, our_app) == {}  # the dry run created nothing

    plan_file = tmp_path / "plan.json"
    out = run(*first_run, "--out", str(plan_file))
    assert "Internal topics created for the application's first run" in out.output
    plan = RunPlan.read(plan_file)
    assert plan.internal_topics_created and len(plan.internal_topics) == 4
    assert {r.topic for r in plan.ranges} == {source, f"{our_app}-rekeyed-repartition"}

    stdout = java(topics_classpath, "run", kafka_broker, kafka_app, str(tmp_path / "ks-state"), source)
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert any(e["event"] == "result" for e in events), events
    expected = internal_topics(admin, kafka_app)
    assert set(expected) == {
        "rekeyed-repartition",
        "counts-changelog",
        "window-counts-changelog",
        "session-counts-changelog",
    }, expected
    assert expected["window-counts-changelog"]["configs"]["retention.ms"] == str(7_200_000 + 86_400_000)
    assert internal_topics(admin, our_app) == expected

    again = run(*first_run)  # everything exists now: nothing more to create, a plain plan
    assert "Internal topics" not in again.output
