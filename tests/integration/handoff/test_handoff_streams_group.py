"""A KIP-1071 streams group (a real Kafka Streams 4.2.2 app with ``group.protocol=streams``) is refused by the plan
and the hand-off, running or stopped: confluent-kafka's group calls do not show such a group, so the cluster reader
must find it another way. The refusal's steps are then followed for real with Kafka's own streams-group tool
(export the offsets, delete the group), and the batch plans from the exported offsets and hands off."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets, read_group
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import task_work
from streamproc.spark.task_runner import run_task
from streamproc_dev.broker import KAFKA_VERSION, libs_dir
from streamproc_dev.conformance.oracle import ORACLE_JAR, ensure_oracle_jar
from streamproc_dev.conformance.reset_tool import tools_jar
from tests.integration.handoff import topologies
from tests.integration.handoff.conftest import PARTITIONS
from tests.integration.handoff.test_handoff import TOPOLOGY, processed, run

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


def test_a_streams_group_is_refused_running_and_stopped(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    streams_app: Callable[[str], subprocess.Popen[str]],
) -> None:
    app_id = unique("handoff-streams-group")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    app = streams_app(app_id)  # the application started between the plan and the hand-off
    # DescribeConsumerGroups does not know a streams group; read_group finds it through ListGroups
    group = read_group(admin, app_id)
    assert group is not None and (group.protocol, group.members) == ("streams", ())
    planned = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--input-topic", input_topic,
                  "--dry-run", ok=False)  # fmt: skip
    assert planned.exit_code == 1
    steps = [
        f"group '{app_id}' is a KIP-1071 streams group (group.protocol=streams) whose members",
        f"`kafka-streams-groups.sh --bootstrap-server <bootstrap> --describe --group {app_id} --members` lists none",
        f"--reset-offsets --group {app_id} --all-input-topics --to-current --dry-run --export > {app_id}-offsets.csv",
        f"--delete --group {app_id}`; plan again with --from-file {app_id}-offsets.csv",
        "start the application with group.protocol=classic",
    ]
    assert all(step in planned.output for step in steps), planned.output
    args = ["handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store", str(run_["store"]),
            "--yes"]  # fmt: skip
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert all(step in refused.output for step in steps), refused.output

    assert app.stdin is not None and app.stdout is not None
    app.stdin.close()  # the app closes and leaves: an empty streams group
    assert app.stdout.readline().strip() == "closed"
    app.wait(timeout=60)
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert "KIP-1071 streams group" in refused.output

    # the refusal's steps, with Kafka's own tool: export the offsets, delete the group, plan from the export
    exported = streams_groups_tool(kafka_broker, "--reset-offsets", "--group", app_id, "--all-input-topics",
                                   "--to-current", "--dry-run", "--export")  # fmt: skip
    saved = {(topic, int(p)): int(o) for topic, p, o in (line.split(",") for line in exported.split())}
    assert set(saved) == {(input_topic, 0), (input_topic, 1)}, exported
    streams_groups_tool(kafka_broker, "--delete", "--group", app_id)
    assert read_group(admin, app_id) is None
    csv = tmp_path / f"{app_id}-offsets.csv"
    csv.write_text(exported)
    plan_file = tmp_path / "replanned.json"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(tmp_path / "topology.txt"),
        "--from-file", str(csv), "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    assert {(r.topic, r.partition): r.start for r in plan.ranges} == saved
    store = tmp_path / "restaged"
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    counts = {topologies.INPUT: 2, topologies.OUTPUT: 2}
    for work in task_work(plan, topology=TOPOLOGY, store_uri=str(store), counts=counts):
        run_task(work)
    run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store), "--yes")
    committed, _ = read_committed_offsets(admin, app_id)
    assert {f"{tp.topic}-{tp.partition}": c.offset for tp, c in committed.items()} == {
        c.partition: c.after for c in plan.commits
    }


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
