"""A KIP-1071 streams group (a real Kafka Streams 4.2.2 app with ``group.protocol=streams``): while the app runs the
plan and the hand-off refuse it naming its member and host (confluent-kafka's group calls do not show such a group:
the cluster reader finds it through ListGroups and reads its members from ``__consumer_offsets``); once the app has
left, a hand-off planned before it committed is refused (its offsets moved), and a new plan from the empty streams
group's committed offsets hands off, committing the group's offsets in the transaction (docs/streams-groups.md).
Kafka's own streams-group tool sees the offsets streamproc committed. The issue's bad input at hand-off time (members,
a group at another epoch, a group deleted since the plan) is refused in one line with nothing committed."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets, read_group
from streamproc.kafka.streams_protocol import ask_streams_protocol
from streamproc.plan.cluster_snapshot import GroupState
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.streams_group_topology import StreamsGroupSubtopology
from streamproc.spark.job import task_work
from streamproc.spark.task_runner import run_task
from streamproc.state.commit_metadata import handoff_mark
from streamproc_dev.broker import KAFKA_VERSION, libs_dir
from streamproc_dev.conformance.oracle import ORACLE_JAR, ensure_oracle_jar
from streamproc_dev.conformance.reset_tool import tools_jar
from tests.integration.conftest import create_topic, wait_for_leaders
from tests.integration.handoff import topologies
from tests.integration.handoff.conftest import PARTITIONS
from tests.integration.handoff.test_handoff import TOPOLOGY, answer_list_offsets, log_ends, processed, run

pytestmark = pytest.mark.integration

SOURCE = Path(__file__).resolve().parent / "java" / "StreamsGroupApp.java"


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("streams-group-app")
    jar = work / "oracle.jar"
    shutil.copyfile(ORACLE_JAR if ORACLE_JAR.is_file() else ensure_oracle_jar(), jar)
    proc = subprocess.run(["javac", "-cp", str(jar), "-d", str(work / "classes"), str(SOURCE)],
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return f"{work / 'classes'}:{jar}"


@pytest.fixture
def streams_app(classpath: str, kafka_broker: str, tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(app_id: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            ["java", "-cp", classpath, "StreamsGroupApp", kafka_broker, app_id, str(tmp_path / "ks"), topologies.INPUT,
             str(PARTITIONS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "running"
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_running_streams_group_is_refused_and_an_empty_one_is_handed_off_to(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    app_id = unique("handoff-streams-group")
    client_config = {"bootstrap.servers": kafka_broker}
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    app = streams_app(app_id)  # the application started between the plan and the hand-off
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and group.protocol == "streams" and len(group.members) == 1, group
    member = group.members[0]
    assert member.client_id.startswith(f"{app_id}-") and member.host == "127.0.0.1", member
    named = f"has 1 member(s) ({member.client_id} on 127.0.0.1): stop every instance and"
    planned = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--input-topic", input_topic,
                  "--dry-run", ok=False)  # fmt: skip
    assert planned.exit_code == 1
    assert f"streams group '{app_id}' at epoch" in planned.output and f"{named} plan again" in planned.output
    args = ["handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store", str(run_["store"]),
            "--yes"]  # fmt: skip
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert f"{named} run the hand-off again" in refused.output, refused.output
    assert_nothing_committed_by_streamproc(admin, app_id)

    close(app)  # the app leaves: an empty streams group, its offsets committed
    empty = read_group(admin, app_id, client_config=client_config)
    assert empty is not None and (empty.protocol, empty.state, empty.members) == ("streams", "Empty", ()), empty
    refused = run(*args, ok=False)  # planned before the app committed anything
    assert refused.exit_code == 1
    assert "moved" in refused.output.lower() or "no longer" in refused.output, refused.output

    committed, _ = read_committed_offsets(admin, app_id)
    produce(kafka_broker, input_topic, 2_000_000)  # what the batch processes after the app
    plan_file = tmp_path / "replanned.json"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(tmp_path / "topology.txt"),
        "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    assert plan.streams_group_epoch == empty.epoch is not None  # the guard checks it before each commit
    assert {(r.topic, r.partition): r.start for r in plan.ranges} == {
        (tp.topic, tp.partition): c.offset for tp, c in committed.items()
    }
    assert sum(r.end - r.start for r in plan.ranges) == 40, plan.ranges
    store = tmp_path / "restaged"
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    counts = {topologies.INPUT: 2, topologies.OUTPUT: 2}
    for work in task_work(plan, topology=TOPOLOGY, store_uri=str(store), counts=counts):
        run_task(work)
    run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store), "--yes")
    after, _ = read_committed_offsets(admin, app_id)
    assert {f"{tp.topic}-{tp.partition}": c.offset for tp, c in after.items()} == {
        c.partition: c.after for c in plan.commits
    }
    still = read_group(admin, app_id, client_config=client_config)
    assert still is not None and (still.protocol, still.state) == ("streams", "Empty"), still
    # Kafka's tool (its --describe --offsets lists nothing for a group without members): the offsets it would keep
    exported = streams_groups_tool(kafka_broker, "--reset-offsets", "--group", app_id, "--all-input-topics",
                                   "--to-current", "--dry-run", "--export")  # fmt: skip
    assert sorted(exported.split()) == sorted(f"{c.partition.rpartition('-')[0]},{c.partition.rpartition('-')[2]},"
                                              f"{c.after}" for c in plan.commits)  # fmt: skip


def test_a_plan_needs_the_groups_topology_and_a_hand_off_the_plans_epoch(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    """The topology the group holds is the app's (read from its record in ``__consumer_offsets``): a plan with another
    topology is refused naming the difference. Then the app runs and stops between the plan and the hand-off: its
    join and leave move the group's epoch, and the guard refuses before anything is committed, naming both epochs."""
    app_id = unique("handoff-sg-epoch")
    client_config = {"bootstrap.servers": kafka_broker}
    changelog = stopped_app(admin, streams_app, app_id)
    empty = empty_group(admin, kafka_broker, app_id)
    assert empty.topology is not None and empty.topology.subtopologies == (
        StreamsGroupSubtopology("0", frozenset({input_topic}), frozenset(), frozenset({changelog}), frozenset(),
                                frozenset()),
    ), empty.topology  # fmt: skip
    answer_list_offsets(kafka_broker, [changelog, topologies.INPUT], PARTITIONS)
    produce(kafka_broker, input_topic, 3_000_000)
    describe = str(topologies.count().describe())
    (tmp_path / "other.txt").write_text(describe.replace("stores: [counts]", "stores: [totals]"))
    other = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                str(tmp_path / "other.txt"), "--dry-run", ok=False)  # fmt: skip
    assert other.exit_code == 1
    assert (
        f"the topology of streams group '{app_id}' (topology epoch {empty.topology.epoch}) is not the Python "
        f"topology's: sub-topology 0: the application has changelog topics [{changelog}], the Python topology "
        f"[{app_id}-totals-changelog] (no store logs to [{changelog}])"
    ) in other.output, other.output
    (tmp_path / "topology.txt").write_text(describe)
    plan_file, store = tmp_path / "plan.json", tmp_path / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(tmp_path / "topology.txt"),
        "--streams-setting", "group.protocol=streams", "--out", str(plan_file))  # fmt: skip  # the broker offers it
    plan = RunPlan.read(plan_file)
    assert plan.streams_group_epoch == empty.epoch
    # what the plan asked: the broker describes the streams group, and knows no group of another id
    assert ask_streams_protocol(client_config, app_id).detail == "StreamsGroupDescribe answered error code 0"
    assert ask_streams_protocol(client_config, unique("nosuch")).detail == "StreamsGroupDescribe answered error code 69"
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    for work in task_work(plan, topology=TOPOLOGY, store_uri=str(store), counts={topologies.INPUT: 2,
                                                                                topologies.OUTPUT: 2}):  # fmt: skip
        run_task(work)

    close(streams_app(app_id))  # joins and leaves again: the epoch moves
    moved = read_group(admin, app_id, client_config=client_config)
    assert moved is not None and moved.state == "Empty" and moved.epoch is not None and moved.epoch > empty.epoch
    before, ends = read_committed_offsets(admin, app_id), log_ends(kafka_broker, changelog, PARTITIONS)
    refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store), "--yes",
                  ok=False)  # fmt: skip
    assert refused.exit_code == 1
    assert one_line(refused.output).startswith(
        f"streams group '{app_id}' is at epoch {moved.epoch}, the plan was made at epoch {empty.epoch}: members "
        "joined or left"
    ), refused.output
    assert read_committed_offsets(admin, app_id) == before and log_ends(kafka_broker, changelog, PARTITIONS) == ends
    assert_nothing_committed_by_streamproc(admin, app_id)


def test_a_streams_group_deleted_since_the_plan_is_refused_and_nothing_is_committed(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    """The issue's "unknown group" at hand-off time: the plan was made from an empty streams group, which Kafka's own
    ``kafka-streams-groups.sh --delete`` then removed (offsets and all). The hand-off's transactional offset commit
    would be accepted for the unknown group id and create a *classic* group holding the offsets, which the
    application's next streams heartbeat converts without a word; the guard refuses in one line instead, before any
    transaction: no group, no offset, no changelog record."""
    app_id = unique("handoff-sg-deleted")
    client_config = {"bootstrap.servers": kafka_broker}
    changelog = stopped_app(admin, streams_app, app_id)
    empty = empty_group(admin, kafka_broker, app_id)
    answer_list_offsets(kafka_broker, [changelog, topologies.INPUT], PARTITIONS)
    produce(kafka_broker, input_topic, 4_000_000)
    (tmp_path / "topology.txt").write_text(str(topologies.count().describe()))
    plan_file, store = tmp_path / "plan.json", tmp_path / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(tmp_path / "topology.txt"),
        "--streams-setting", "group.protocol=streams", "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    assert plan.streams_group_epoch == empty.epoch and plan.commits, plan
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    for work in task_work(plan, topology=TOPOLOGY, store_uri=str(store), counts={topologies.INPUT: 2,
                                                                                topologies.OUTPUT: 2}):  # fmt: skip
        run_task(work)

    deleted = streams_groups_tool(kafka_broker, "--delete", "--group", app_id)
    assert f"'{app_id}'" in deleted and "deleted" in deleted.lower(), deleted
    assert read_group(admin, app_id, client_config=client_config) is None
    ends = log_ends(kafka_broker, changelog, PARTITIONS)
    refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
                  "--state-dir", str(tmp_path / "state"), "--yes", ok=False)  # fmt: skip
    assert refused.exit_code == 1
    assert one_line(refused.output).startswith(
        f"streams group '{app_id}' no longer exists, the plan was made at epoch {empty.epoch}: "
    ), refused.output
    assert read_group(admin, app_id, client_config=client_config) is None
    assert read_committed_offsets(admin, app_id) == ({}, False)
    assert log_ends(kafka_broker, changelog, PARTITIONS) == ends
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").rglob(".checkpoint"))


def test_the_streams_group_tools_reset_scenarios_start_where_the_plan_starts(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    """Each ``kafka-streams-groups.sh --reset-offsets`` scenario, run with ``--dry-run --export`` on an empty streams
    group (it changes nothing), names the offsets where ``streamproc plan`` with the same scenario starts: the
    partitions it lists at its offsets, the others at the group's committed offsets. The tool's export, given back
    as ``--from-file``, plans the same starts."""
    app_id = unique("sg-reset")
    changelog = stopped_app(admin, streams_app, app_id)
    produce(kafka_broker, input_topic, 5_000_000)  # records after the group's commits
    answer_list_offsets(kafka_broker, [changelog, topologies.INPUT], PARTITIONS)
    offsets, _ = read_committed_offsets(admin, app_id)
    committed = {(tp.topic, tp.partition): c.offset for tp, c in offsets.items()}
    assert sorted(committed) == [(input_topic, p) for p in range(PARTITIONS)], committed
    (tmp_path / "topology.txt").write_text(str(topologies.count().describe()))
    scenarios = [
        (["--all-input-topics", "--to-current"], ["--to-current"]),
        (["--all-input-topics", "--to-current"], ["--all-input-topics", "--to-current"]),
        (["--all-input-topics", "--to-earliest"], ["--all-input-topics", "--to-earliest"]),
        (["--all-input-topics", "--to-latest"], ["--to-latest"]),
        (["--all-input-topics", "--to-offset", "3"], ["--all-input-topics", "--to-offset", "3"]),
        (["--all-input-topics", "--to-datetime", "1970-01-01T00:16:40.500"], ["--all-input-topics", "--to-datetime",
                                                                            "1970-01-01T00:16:40.500"]),
        (["--input-topic", f"{input_topic}:1", "--shift-by", "-7"],
         ["--start-partitions", f"{input_topic}:1", "--shift-by", "-7"]),
        (["--input-topic", input_topic, "--shift-by", "-2"], ["--start-partitions", input_topic, "--shift-by", "-2"]),
    ]  # fmt: skip
    for tool_args, plan_args in scenarios:
        export = streams_groups_tool(kafka_broker, "--reset-offsets", "--group", app_id, *tool_args, "--dry-run",
                                     "--export")  # fmt: skip
        tool = {(t, int(p)): int(o) for t, p, o in (line.split(",") for line in export.split())}
        assert tool, (tool_args, export)
        starts = planned_starts(kafka_broker, app_id, tmp_path, *plan_args)
        assert starts == {tp: tool.get(tp, committed[tp]) for tp in starts}, (tool_args, export, starts)
        assert set(tool) <= set(starts), (tool_args, export)
        (tmp_path / "export.csv").write_text(export)
    # the tool's export (the last scenario's: every partition) as the plan's reset file
    assert planned_starts(kafka_broker, app_id, tmp_path, "--from-file", str(tmp_path / "export.csv")) == tool
    scopes = ("--all-input-topics", "--start-partitions", input_topic)
    both = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--input-topic", input_topic,
               "--to-earliest", *scopes, "--dry-run", ok=False)  # fmt: skip
    assert both.exit_code == 1 and "give --start-partitions or --all-input-topics, not both" in both.output


def test_a_streams_groups_missing_changelog_is_created_only_as_the_application_declared_it(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    """The broker creates a streams group's internal topics from the topology record (partition count it decides,
    the declared replication factor and configs); the real app's changelog, as the broker created it, is what its
    record declares. Once that changelog is gone, a first run's ``--create-internal-topics`` that would create it
    otherwise (a window store's ``compact,delete``) is refused in one line before anything is created; with the
    application's store kind and replication factor it creates the topic as the broker had."""
    from confluent_kafka.admin import ConfigResource

    app_id = unique("handoff-sg-internal")
    client_config = {"bootstrap.servers": kafka_broker}
    changelog = f"{app_id}-counts-changelog"
    close(streams_app(app_id))  # the broker creates the changelog at the app's first heartbeat
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and group.topology is not None, group
    [declared] = group.topology.internal_topics
    assert (declared.name, declared.partitions, declared.replication_factor) == (changelog, 0, 1), declared

    def as_created() -> tuple[int, dict[str, str]]:
        metadata = admin.list_topics(changelog, timeout=10).topics[changelog]
        [configs] = [
            f.result(timeout=30) for f in admin.describe_configs([ConfigResource("topic", changelog)]).values()
        ]
        dynamic = {k: v.value for k, v in configs.items() if v.source == 1}  # DYNAMIC_TOPIC_CONFIG: set at creation
        return len(metadata.partitions), dynamic

    assert as_created() == (PARTITIONS, dict(declared.configs)), declared  # the broker created it as declared
    for future in admin.delete_topics([changelog]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while changelog in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    (tmp_path / "topology.txt").write_text(str(topologies.count().describe()))
    first_run = ["plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                 str(tmp_path / "topology.txt"), "--create-internal-topics", "--streams-setting",
                 "replication.factor=1", "--out", str(tmp_path / "plan.json")]  # fmt: skip
    refused = run(*first_run, "--store-kind", "counts=window:60000", ok=False)
    assert refused.exit_code == 1
    assert one_line(refused.output) == (
        f"streams group '{app_id}' (topology epoch 0) declares its internal topics otherwise than the plan: internal "
        f"topic {changelog}: the plan would create it with cleanup.policy=compact,delete, the application declares "
        "cleanup.policy=compact; plan with the application's settings and store kinds (--streams-setting, "
        "--store-kind), as the broker creates and checks the topics as the application declared them"
    ), refused.output
    assert changelog not in admin.list_topics(timeout=10).topics  # nothing created

    run(*first_run, "--store-kind", "counts=key_value")
    assert as_created() == (PARTITIONS, dict(declared.configs))
    assert [t.name for t in RunPlan.read(tmp_path / "plan.json").internal_topics] == [changelog]


def stopped_app(admin: AdminClient, streams_app: Callable[[str], subprocess.Popen[str]], app_id: str) -> str:
    """The count app's changelog created as the app declares it (compacted), then the app run once and stopped, so
    that its streams group holds its topology, its commits and no member; returns the changelog topic."""
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, changelog)
    close(streams_app(app_id))
    return changelog


def empty_group(admin: AdminClient, bootstrap: str, app_id: str) -> GroupState:
    """The app's streams group, checked ``Empty`` with an epoch (what a plan and a hand-off may start from)."""
    group = read_group(admin, app_id, client_config={"bootstrap.servers": bootstrap})
    assert group is not None and (group.protocol, group.state) == ("streams", "Empty") and group.epoch, group
    return group


def planned_starts(bootstrap: str, app_id: str, work: Path, *args: str) -> dict[tuple[str, int], int]:
    """Where ``streamproc plan --dry-run`` of the count topology starts each input partition."""
    run("plan", "--bootstrap", bootstrap, "--application-id", app_id, "--topology", str(work / "topology.txt"),
        "--dry-run", "--out", str(work / "plan.json"), *args)  # fmt: skip
    return {(r.topic, r.partition): r.start for r in RunPlan.read(work / "plan.json").ranges if not r.internal}


def one_line(output: str) -> str:
    """The refusal: the CLI's one ``error:`` line, without its prefix (nothing else may say ``error``)."""
    [line] = [line for line in output.splitlines() if line.startswith("error: ")]
    return line.removeprefix("error: ")


def assert_nothing_committed_by_streamproc(admin: AdminClient, app_id: str) -> None:
    """No committed offset of the group carries the hand-off's mark (``<plan id>/<task id>`` in its metadata): what
    the group holds is the application's own commits."""
    committed, _ = read_committed_offsets(admin, app_id)
    marked = {f"{tp}": c.metadata for tp, c in committed.items() if handoff_mark(c.metadata) is not None}
    assert not marked, marked


def close(app: subprocess.Popen[str]) -> None:
    """Close the app (it leaves its streams group) and wait for it."""
    assert app.stdin is not None and app.stdout is not None
    app.stdin.close()
    assert app.stdout.readline().strip() == "closed"
    app.wait(timeout=60)


def produce(bootstrap: str, topic: str, timestamp: int) -> None:
    """40 records over 7 keys (both partitions), from ``timestamp`` on."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for i in range(40):
        producer.produce(topic, key=f"k{i % 7}".encode(), value=b"x", timestamp=timestamp + i * 10)
    assert producer.flush(60) == 0


def streams_groups_tool(bootstrap: str, *args: str) -> str:
    """``kafka-streams-groups.sh`` (``StreamsGroupCommand`` of kafka-tools 4.2.0 on the broker's jars)."""
    classpath = f"{tools_jar()}:{libs_dir(KAFKA_VERSION)}/*"
    proc = subprocess.run(
        ["java", "-cp", classpath, "org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server",
         bootstrap, *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout
