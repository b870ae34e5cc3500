"""The issue's proof: a real Kafka Streams 4.2.2 app resumes after streamproc processed part of its input.

1. ``StateResumeApp`` (conformance/, per-key counts in a persistent timestamped store, logged) processes the first
   third of the input and stops (leaving the group);
2. streamproc plans from the group's committed offsets, fetches, processes the second third (the task runner, as a
   Spark executor runs it) and hands off into the app's own state directory;
3. the app restarts there and processes the last third: it restores 0 records and its store equals that of a second
   Kafka Streams app that processed the whole input alone.

Under at_least_once and exactly_once_v2; and with step 3 on Kafka Streams 4.3.1 (an upgraded application; the
hand-off run with ``--kafka-streams-version 4.3``), under both guarantees. And a 4.3 app in a streams group
(``group.protocol=streams``, issue #31) from its first run on, under both guarantees.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import task_work
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import run
from tests.integration.spark.conftest import wait_for_leaders
from tests.integration.state.test_kafka_streams_opens_state import (
    CASES,
    KEYS,
    app_classpath,
    app_classpath_43,
    expected_counts,
    produce,
    run_app,
)

pytestmark = pytest.mark.integration
__all__ = ["app_classpath", "app_classpath_43"]

ALOS_CASE, EOS_CASE = CASES[0], CASES[2]


def _input_in_thirds(admin: AdminClient, topic: str) -> list[list[tuple[str, int]]]:
    """Create ``topic`` and return its records in three parts (the app's, streamproc's, the resumed app's): keys and
    timestamps of the last hour, so that no record is older than the store's retention."""
    create_topic(admin, topic)
    wait_for_leaders(admin, topic)
    base = int(time.time() * 1000) - 3_600_000
    return [[(KEYS[(i + k) % 4], base + (k * 40 + i) * 7) for i in range(30 + k)] for k in range(3)]


@pytest.mark.parametrize(
    ("case", "topic", "factory", "resume_on_43", "bundle"),
    [
        (ALOS_CASE, topologies.RESUME_INPUT_ALOS, "state_resume_alos", False, False),
        (EOS_CASE, topologies.RESUME_INPUT_EOS, "state_resume_eos", False, False),
        (ALOS_CASE, topologies.RESUME_INPUT_43, "state_resume_43", True, False),
        (EOS_CASE, topologies.RESUME_INPUT_BUNDLE, "state_resume_bundle", False, True),
        (EOS_CASE, topologies.RESUME_INPUT_EOS_43, "state_resume_eos_43", True, False),
    ],
    ids=[
        "at_least_once",
        "exactly_once_v2",
        "at_least_once-resumed-on-ks4.3",
        "exactly_once_v2-bundle",
        "exactly_once_v2-resumed-on-ks4.3",
    ],
)
def test_kafka_streams_resumes_on_the_handed_off_state(
    case: object,
    topic: str,
    factory: str,
    resume_on_43: bool,
    bundle: bool,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    app_classpath: str,
    request: pytest.FixtureRequest,
) -> None:
    from tests.integration.state.test_kafka_streams_opens_state import Case

    assert isinstance(case, Case)
    guarantee = "exactly_once_v2" if case.guarantee.eos else "at_least_once"
    app_id = unique("resumed")
    thirds = _input_in_thirds(admin, topic)
    everything = [r for third in thirds for r in third]
    state_dir = tmp_path / "state"

    produce(kafka_broker, topic, thirds[0])
    first = run_app(app_classpath, kafka_broker, app_id, state_dir, topic, len(thirds[0]), case)
    assert first["store"] == expected_counts(thirds[0])

    produce(kafka_broker, topic, thirds[1])
    work = tmp_path / "work"
    work.mkdir()
    describe = work / "topology.txt"
    reference = f"tests.integration.handoff.topologies:{factory}"
    describe.write_text(str(getattr(topologies, factory)().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--processing-guarantee", guarantee, "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    [commit] = plan.commits
    assert (commit.before, commit.after) == (len(thirds[0]), len(thirds[0]) + len(thirds[1]))
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    [report] = [run_task(w) for w in task_work(plan, topology=reference, store_uri=str(store), counts={})]
    assert report["records_processed"] == len(thirds[1])
    if bundle:  # shipped as a bundle and installed in another directory (the host that will run the app)
        bundle_dir = tmp_path / "bundle"
        out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
                  "--state-bundle", str(bundle_dir), "--yes")  # fmt: skip
        state_dir = tmp_path / "other-host-state"
        installed = run("handoff", "install-state", "--bundle", str(bundle_dir), "--state-dir", str(state_dir))
        assert f"wrote {state_dir / app_id / '0_0'}" in installed.output
    else:
        version = ("--kafka-streams-version", "4.3") if resume_on_43 else ()
        out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
                  "--state-dir", str(state_dir), *version, "--yes")  # fmt: skip
    assert "published 1 task(s), wrote 1 checkpoint(s)" in out.output

    produce(kafka_broker, topic, thirds[2])
    # An application upgraded to 4.3 meets the 4.2 layout the hand-off wrote (state.md §15: 4.3 migrates the
    # legacy .checkpoint into each store's offsets column family on its first start).
    resume_classpath = request.getfixturevalue("app_classpath_43") if resume_on_43 else app_classpath
    resumed = run_app(resume_classpath, kafka_broker, app_id, state_dir, topic, len(everything), case)
    restore_ends = [e for e in resumed["events"] if e["event"] == "restore_end"]
    assert resumed["restored"] == 0 and all(e["total"] == 0 for e in restore_ends), resumed["events"]

    alone = run_app(resume_classpath, kafka_broker, unique("alone"), tmp_path / "alone", topic, len(everything), case)
    assert resumed["store"] == alone["store"] == expected_counts(everything)


@pytest.mark.parametrize(
    ("case", "topic", "factory"),
    [
        (ALOS_CASE, topologies.RESUME_INPUT_STREAMS_GROUP_43, "state_resume_streams_group_43"),
        (EOS_CASE, topologies.RESUME_INPUT_STREAMS_GROUP_EOS_43, "state_resume_streams_group_eos_43"),
    ],
    ids=["at_least_once", "exactly_once_v2"],
)
def test_a_kafka_streams_43_app_in_a_streams_group_resumes_after_the_handoff(
    case: object,
    topic: str,
    factory: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    app_classpath_43: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #31's proof with a Kafka Streams 4.3.1 app on the streams rebalance protocol, from its first run on: the
    group the broker keeps for a 4.3 client is planned from and handed off to as a 4.2 one's, and the app resumes on
    the 4.3 layout the hand-off wrote with 0 records restored, equal to an app that processed everything. Under
    exactly_once_v2 the app's own transactions (the first run) and the hand-off's (outputs, changelog and the streams
    group's offsets in one) meet on the same group, and the app reads its changelog and input read_committed."""
    from streamproc.kafka.cluster import read_group
    from tests.integration.state.test_kafka_streams_opens_state import Case

    assert isinstance(case, Case)
    guarantee = "exactly_once_v2" if case.guarantee.eos else "at_least_once"
    monkeypatch.setenv("STREAMPROC_ORACLE_GROUP_PROTOCOL", "streams")
    app_id = unique("resumed-sg-43")
    thirds = _input_in_thirds(admin, topic)
    everything = [r for third in thirds for r in third]
    state_dir = tmp_path / "state"

    produce(kafka_broker, topic, thirds[0])
    first = run_app(app_classpath_43, kafka_broker, app_id, state_dir, topic, len(thirds[0]), case)
    assert first["store"] == expected_counts(thirds[0])
    group = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert group is not None and (group.protocol, group.state) == ("streams", "Empty"), group

    produce(kafka_broker, topic, thirds[1])
    work = tmp_path / "work"
    work.mkdir()
    describe = work / "topology.txt"
    describe.write_text(str(getattr(topologies, factory)().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--streams-setting", "group.protocol=streams", "--processing-guarantee", guarantee,
        "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    [commit] = plan.commits
    assert (commit.before, commit.after) == (len(thirds[0]), len(thirds[0]) + len(thirds[1]))
    assert plan.streams_group_epoch == group.epoch is not None
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    reference = f"tests.integration.handoff.topologies:{factory}"
    [report] = [run_task(w) for w in task_work(plan, topology=reference, store_uri=str(store), counts={})]
    assert report["records_processed"] == len(thirds[1])
    out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
              "--state-dir", str(state_dir), "--kafka-streams-version", "4.3", "--yes")  # fmt: skip
    assert "published 1 task(s), wrote 1 checkpoint(s)" in out.output
    handed_off = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert handed_off is not None and (handed_off.protocol, handed_off.state) == ("streams", "Empty"), handed_off
    assert handed_off.epoch == group.epoch, "the hand-off's transactional commit moved the streams group's epoch"

    produce(kafka_broker, topic, thirds[2])
    resumed = run_app(app_classpath_43, kafka_broker, app_id, state_dir, topic, len(everything), case)
    restore_ends = [e for e in resumed["events"] if e["event"] == "restore_end"]
    assert resumed["restored"] == 0 and all(e["total"] == 0 for e in restore_ends), resumed["events"]
    after = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert after is not None and after.protocol == "streams", after

    alone = run_app(app_classpath_43, kafka_broker, unique("alone-sg-43"), tmp_path / "alone", topic,
                    len(everything), case)  # fmt: skip
    assert resumed["store"] == alone["store"] == expected_counts(everything)
