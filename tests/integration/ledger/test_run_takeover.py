"""A killed ``streamproc run`` is recovered by running the same command again (issue 27, point 1).

The run is killed with SIGKILL of its whole process session (the CLI, Spark's JVM and its Python workers) in its
process step, or by the hand-off's own kill points inside a task's transaction, after a task's transaction was
committed and recorded, and after a task's checkpoint. Then the very command that was killed runs again, with no
``ledger finish`` and no ``handoff --plan``: it takes the interrupted run over (its process is gone), resumes it
at the step it died in with its plan, and ends in the state a clean run ends in: the group's offsets at the input's
ends, every key's read_committed outputs exactly 1..n, a ``.checkpoint`` per task, and one run in the ledger,
succeeded, with its lag after the hand-off.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.handoff.kill_points import KILL_AT_ENV
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import answer_list_offsets, read_all
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

STREAMPROC = str(Path(sys.executable).parent / "streamproc")
PARTITIONS = 2
RECORDS = 400
KEYS = 23


def _produce(bootstrap: str, topic: str, seed: int) -> dict[str, int]:
    """The input, keyed at random: how many records each key has (its outputs must be exactly 1..n)."""
    rng = random.Random(seed)
    keys = [f"k{rng.randrange(KEYS)}" for _ in range(RECORDS)]
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, key in enumerate(keys):
        # one partition per key: its count is one task's, whose outputs are then exactly 1..n
        producer.produce(topic, key=key.encode(), value=b"x", partition=int(key[1:]) % PARTITIONS, timestamp=1_000 + i)
    assert producer.flush(60) == 0
    return dict(Counter(keys))


def _environment(kill_at: str | None = None) -> dict[str, str]:
    """The test's environment, the repository importable (the topology is a test module), a kill point or none."""
    env = {k: v for k, v in os.environ.items() if k != KILL_AT_ENV}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    if kill_at is not None:
        env[KILL_AT_ENV] = kill_at
    return env


def _streamproc(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the project's own entry point
        [STREAMPROC, *args], capture_output=True, text=True, timeout=600, env=_environment(), check=False
    )


def _session(args: list[str], log: Path, kill_at: str | None) -> subprocess.Popen[bytes]:
    env = _environment(kill_at)
    if kill_at is not None:
        env[KILL_AT_ENV] = kill_at
    with log.open("ab") as output:
        return subprocess.Popen(  # noqa: S603 - the project's own entry point
            [STREAMPROC, *args], stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _kill_session_in_stage(process: subprocess.Popen[bytes], ledger_file: Path, stage: str, log: Path) -> None:
    """SIGKILL the run's whole session as soon as its ledger says it is in ``stage``."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the run ended before its {stage} step:\n{log.read_text()}"
        if ledger_file.exists():
            with Ledger(ledger_file) as ledger:
                runs = ledger.runs()
            if runs and runs[0].stage == stage:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return
        time.sleep(0.05)
    pytest.fail(f"the run never reached its {stage} step")


@pytest.mark.parametrize(
    "kill_at",
    ["session-in-process", "in-transaction:0_1", "publish:0_0", "checkpoint:0_1"],
)
def test_the_same_command_run_again_finishes_a_killed_run_exactly_once(
    kill_at: str, kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("takeover")
    source, sink, changelog = f"{app_id}-in", f"{app_id}-out", f"{app_id}-counts-changelog"
    for topic in (source, sink):
        create_topic(admin, topic, partitions=PARTITIONS)
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, source, sink, changelog)
    answer_list_offsets(kafka_broker, [changelog, source], PARTITIONS)
    per_key = _produce(kafka_broker, source, seed=len(kill_at))
    work, state = tmp_path / "work", tmp_path / "state"
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id,
            "--topology", "tests.integration.ledger.topologies:count_on",
            "--streams-setting", f"test.input={source}", "--streams-setting", f"test.output={sink}",
            "--store", str(tmp_path / "staging"), "--work-dir", str(work), "--state-dir", str(state),
            "--master", "local[1]", "--processing-guarantee", "exactly_once_v2", "--yes"]  # fmt: skip
    ledger_file, log = work / "ledger.sqlite", tmp_path / "run.log"

    if kill_at == "session-in-process":
        _kill_session_in_stage(_session(args, log, None), ledger_file, "process", log)
    else:
        killed = _session(args, log, kill_at)
        assert killed.wait(timeout=600) == -signal.SIGKILL, log.read_text()
    with Ledger(ledger_file) as ledger:
        [dead] = ledger.runs(app_id)
    assert dead.status == "running", dead

    # a dry run does not take the run over: it says what happened and which command resumes it
    dry = _streamproc([*args, "--dry-run"])
    assert dry.returncode == 1, dry.stderr
    [error] = [line for line in dry.stderr.splitlines() if line.startswith("error: ")]
    assert f"run {dead.run_id}" in error and f"interrupted in its {dead.stage} step" in error, error
    assert "takes it over and resumes it" in error and "--dry-run" in error, error

    again = _streamproc(args)
    assert again.returncode == 0, again.stderr + again.stdout
    assert f"resuming interrupted run {dead.run_id}" in again.stderr, again.stderr

    with Ledger(ledger_file) as ledger:
        runs = ledger.runs(app_id)
        detail = ledger.run(dead.run_id)
    statuses = {r.run_id: r.status for r in runs}
    assert statuses.pop(dead.run_id) == "succeeded", runs  # the same run, taken over, not a second one
    assert set(statuses.values()) <= {"failed"}, runs  # at most the refused dry run
    assert detail is not None
    ends = {f"{source}-{p}": n for p, n in _ends(kafka_broker, source).items()}
    assert {lag.partition: (lag.committed_after, lag.lag_after) for lag in detail.lag} == {
        name: (end, 0) for name, end in ends.items()
    }
    committed, unstable = read_committed_offsets(admin, app_id)
    assert not unstable
    assert {str(tp): c.offset for tp, c in committed.items()} == ends

    outputs: dict[str, list[int]] = defaultdict(list)
    for message in read_all(kafka_broker, sink, PARTITIONS):
        outputs[message.key().decode()].append(int.from_bytes(message.value(), "big", signed=True))
    assert {key: sorted(values) for key, values in outputs.items()} == {
        key: list(range(1, n + 1)) for key, n in per_key.items()
    }
    for p in range(PARTITIONS):
        assert (state / app_id / f"0_{p}" / ".checkpoint").is_file()


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    from tests.integration.handoff.test_handoff import log_ends

    return log_ends(bootstrap, topic, PARTITIONS)
