"""A KIP-1071 streams group (a real Kafka Streams 4.2.2 app with ``group.protocol=streams``) is refused by the plan
and the hand-off, running or stopped: confluent-kafka's group calls do not show such a group, so the cluster reader
must find it another way."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.conformance.oracle import ORACLE_JAR, ensure_oracle_jar
from streamproc.kafka.cluster import read_group
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import processed, run

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
            ["java", "-cp", classpath, "StreamsGroupApp", kafka_broker, app_id, str(tmp_path / "ks"), topologies.INPUT],
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
    assert f"group '{app_id}' is a KIP-1071 streams group (group.protocol=streams) whose members" in planned.output
    args = ["handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store", str(run_["store"]),
            "--yes"]  # fmt: skip
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert f"group '{app_id}' is a KIP-1071 streams group (group.protocol=streams); streamproc cannot yet hand off" in (
        refused.output
    )

    assert app.stdin is not None and app.stdout is not None
    app.stdin.close()  # the app closes and leaves: an empty streams group
    assert app.stdout.readline().strip() == "closed"
    app.wait(timeout=60)
    refused = run(*args, ok=False)
    assert refused.exit_code == 1
    assert "KIP-1071 streams group" in refused.output
