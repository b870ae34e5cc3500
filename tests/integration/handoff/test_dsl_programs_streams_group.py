"""Side-by-side DSL programs handed off to their real Java twins in a KIP-1071 streams group (issue #31).

As ``test_dsl_programs_handoff``, but every Kafka Streams 4.2.2 app runs with ``group.protocol=streams`` (the oracle's
``STREAMPROC_ORACLE_GROUP_PROTOCOL``): the app processes the first part and leaves its streams group empty;
``streamproc run`` plans from the streams group's committed offsets (its members read from ``__consumer_offsets``),
processes the second part and hands off, committing the streams group's offsets in the outputs' transaction; the app
resumes on the third part, restores nothing, and its stores equal an app (in a streams group too) that processed
everything alone. A count, and a re-key → count/reduce through a repartition topic the broker created; at least once
and exactly once (``exactly_once_v2``: the app's and the hand-off's commits both transactional).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_group
from streamproc.plan.streams_group_topology import declared_topology, topology_difference
from tests.integration.conftest import delete_topics, recreate_topics
from tests.integration.handoff.test_dsl_programs_handoff import (
    PARTITIONS,
    _app,
    _parts,
    _produce,
    _topics,
    assert_resumed_stores_equal,
)
from tests.integration.handoff.test_dsl_programs_handoff import oracle_jar as oracle_jar
from tests.integration.handoff.test_handoff import run

pytestmark = pytest.mark.integration

PROGRAMS = ("bytes_count", "two_aggregates_one_repartition_optimized")


#: Each program under one guarantee (each case costs a minute of the suite): the count at least once, the re-key
#: through a repartition topic exactly once.
CASES = [("bytes_count", "at_least_once"), ("two_aggregates_one_repartition_optimized", "exactly_once_v2")]


@pytest.mark.parametrize(("factory", "guarantee"), CASES)
def test_real_app_in_a_streams_group_resumes_after_streamproc_run(
    factory: str,
    guarantee: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    oracle_jar: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.integration.handoff import dsl_handoff_programs

    monkeypatch.setenv("STREAMPROC_ORACLE_GROUP_PROTOCOL", "streams")
    monkeypatch.setenv("STREAMPROC_ORACLE_PROCESSING_GUARANTEE", guarantee)
    program = dsl_handoff_programs.NAMES[factory]
    inputs, outputs = _topics(factory)
    recreate_topics(admin, inputs + outputs, PARTITIONS)
    parts = _parts(factory, seed=31)
    app_id, state_dir = unique("sg-handoff"), tmp_path / "state"

    def app(application_id: str, state: Path) -> dict[str, Any]:
        return _app(oracle_jar, kafka_broker, application_id, state, program)

    _produce(kafka_broker, parts[0])
    first = app(app_id, state_dir)
    assert first["restored"] == 0
    group = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert group is not None and (group.protocol, group.state, group.members) == ("streams", "Empty", ()), group

    _produce(kafka_broker, parts[1])
    out = run("run", "--bootstrap", kafka_broker, "--application-id", app_id,
              "--topology", f"tests.integration.handoff.dsl_handoff_programs:{factory}",
              "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--master", "local[1]",
              "--state-dir", str(state_dir), "--processing-guarantee", guarantee,
              "--streams-setting", "group.protocol=streams", "--yes")  # fmt: skip  # the plan asks the broker for it
    assert "published" in out.output, out.output
    group = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert group is not None and (group.protocol, group.state) == ("streams", "Empty"), group

    _produce(kafka_broker, parts[2])
    resumed = app(app_id, state_dir)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the hand-off: {restores}"

    alone = app(unique("sg-alone"), tmp_path / "alone")
    delete_topics(admin, inputs + outputs)
    assert_resumed_stores_equal(resumed, alone)


@pytest.mark.parametrize("factory", PROGRAMS[1:])  # the re-key: its repartition topic created by streamproc too
def test_a_first_run_hands_off_to_an_app_that_creates_its_streams_group(
    factory: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    oracle_jar: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No group yet: ``streamproc run --create-internal-topics`` processes the first two parts and its transactional
    commit creates a classic group holding the offsets; the app's first streams heartbeat converts the empty classic
    group into a streams group, keeping them (state.md §13), and it resumes on the third part with 0 restored."""
    from tests.integration.handoff import dsl_handoff_programs

    monkeypatch.setenv("STREAMPROC_ORACLE_GROUP_PROTOCOL", "streams")
    program = dsl_handoff_programs.NAMES[factory]
    inputs, outputs = _topics(factory)
    recreate_topics(admin, inputs + outputs, PARTITIONS)
    parts = _parts(factory, seed=131)
    app_id, state_dir = unique("sg-first"), tmp_path / "state"
    client_config = {"bootstrap.servers": kafka_broker}

    _produce(kafka_broker, parts[0] + parts[1])
    out = run("run", "--bootstrap", kafka_broker, "--application-id", app_id,
              "--topology", f"tests.integration.handoff.dsl_handoff_programs:{factory}",
              "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--master", "local[1]",
              "--state-dir", str(state_dir), "--create-internal-topics", "--yes")  # fmt: skip
    assert "published" in out.output, out.output
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and group.protocol == "classic", group  # the commit's simple group

    _produce(kafka_broker, parts[2])
    resumed = _app(oracle_jar, kafka_broker, app_id, state_dir, program)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the hand-off: {restores}"
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and (group.protocol, group.state) == ("streams", "Empty"), group

    alone = _app(oracle_jar, kafka_broker, unique("sg-first-alone"), tmp_path / "alone", program)
    delete_topics(admin, inputs + outputs)
    assert_resumed_stores_equal(resumed, alone)


def test_a_joins_streams_group_holds_its_copartition_group_as_the_python_module_declares(
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    oracle_jar: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real app's topology record (a stream-table join: ``StreamThread`` sends the join's copartition group) is
    the Python twin's, compared exactly (its logged stores and copartition groups), and a plan from it passes."""
    from streamproc.engine.topology_analysis import analyze
    from tests.integration.handoff import dsl_handoff_programs

    factory = "stream_table_left_join_named"
    monkeypatch.setenv("STREAMPROC_ORACLE_GROUP_PROTOCOL", "streams")
    inputs, outputs = _topics(factory)
    recreate_topics(admin, inputs + outputs, PARTITIONS)
    app_id = unique("sg-join")
    _produce(kafka_broker, _parts(factory, seed=231)[0])
    _app(oracle_jar, kafka_broker, app_id, tmp_path / "state", dsl_handoff_programs.NAMES[factory])
    group = read_group(admin, app_id, client_config={"bootstrap.servers": kafka_broker})
    assert group is not None and group.topology is not None, group
    [sub] = group.topology.subtopologies
    assert sub.copartition_groups == {frozenset(inputs)}, sub
    python = getattr(dsl_handoff_programs, factory)()
    counts = dict.fromkeys(inputs + outputs, PARTITIONS)
    analysis = analyze(python.describe(), app_id, counts)
    assert topology_difference(group.topology, analysis, declared_topology(python, app_id)) is None
    out = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
              f"tests.integration.handoff.dsl_handoff_programs:{factory}", "--streams-setting",
              "group.protocol=streams", "--dry-run")  # fmt: skip
    assert out.exit_code == 0, out.output
    delete_topics(admin, inputs + outputs)
