"""A ``streamproc run`` killed, then the same command run again, then the final state checked on its own: the
trial that ``test_run_takeover.py`` (chosen kills), ``test_run_broker_kill.py`` and ``test_run_chaos.py`` (kills drawn
at random) share. The kill is the run's (its whole session, or its own kill point) or the broker's: a dedicated
broker (``dedicated_broker``) SIGKILLed while the run is held at a hand-off point, restarted after an outage."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.handoff.kill_points import KILL_AT_ENV, PAUSE_AT_ENV, PAUSE_DIR_ENV
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import answer_list_offsets, read_all
from tests.integration.spark.conftest import wait_for_leaders

STREAMPROC = str(Path(sys.executable).parent / "streamproc")
PARTITIONS = 2
RECORDS = 400
KEYS = 23


def _produce(bootstrap: str, topic: str, seed: int) -> dict[str, int]:
    """The input, keyed at random: how many records each key has (its outputs must be exactly 1..n)."""
    rng = random.Random(seed)
    keys = [f"k{rng.randrange(KEYS)}" for _ in range(RECORDS)]
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})  # quiet while a trial's broker is down
    for i, key in enumerate(keys):
        # one partition per key: its count is one task's, whose outputs are then exactly 1..n
        producer.produce(topic, key=key.encode(), value=b"x", partition=int(key[1:]) % PARTITIONS, timestamp=1_000 + i)
    assert producer.flush(60) == 0
    return dict(Counter(keys))


def _environment(kill_at: str | None = None, pause: tuple[str, Path] | None = None) -> dict[str, str]:
    """The test's environment, the repository importable (the topology is a test module), a kill point or none, a
    pause point (and its directory) or none."""
    env = {k: v for k, v in os.environ.items() if k not in (KILL_AT_ENV, PAUSE_AT_ENV, PAUSE_DIR_ENV)}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    if kill_at is not None:
        env[KILL_AT_ENV] = kill_at
    if pause is not None:
        env[PAUSE_AT_ENV], env[PAUSE_DIR_ENV] = pause[0], str(pause[1])
    return env


def _streamproc(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the project's own entry point
        [STREAMPROC, *args], capture_output=True, text=True, timeout=600, env=_environment(), check=False
    )


def _session(
    args: list[str], log: Path, kill_at: str | None, pause: tuple[str, Path] | None = None
) -> subprocess.Popen[bytes]:
    env = _environment(kill_at, pause)
    with log.open("ab") as output:
        return subprocess.Popen(  # noqa: S603 - the project's own entry point
            [STREAMPROC, *args], stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _kill_session_in_stage(
    process: subprocess.Popen[bytes], ledger_file: Path, stage: str, delay_s: float, log: Path
) -> bool:
    """SIGKILL the run's whole session ``delay_s`` after its ledger says it is in ``stage``; False when the run
    ended first (a chaos trial whose kill came too late is a clean run, checked all the same)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.returncode == 0, log.read_text()
            return False
        if ledger_file.exists():
            with Ledger(ledger_file) as ledger:
                runs = ledger.runs()
            if runs and runs[0].stage == stage:
                time.sleep(delay_s)
                if process.poll() is not None:
                    return False
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return True
        time.sleep(0.05)
    pytest.fail(f"the run never reached its {stage} step")


@dataclass(frozen=True)
class Kill:
    """Where a trial kills the run: the whole session from outside once the ledger shows ``stage`` (after
    ``delay_s``), or the hand-off's own kill point ``point`` (``in-transaction:0_1``, ``publish:0_0``, …).

    With ``broker``, the BROKER is killed instead: the run is held at the hand-off's pause point ``point``, the broker
    SIGKILLed, the run let go on, and the broker restarted on its data ``outage_s`` later (a short outage the run
    may ride out), or, when ``outage_s`` is ``None``, only once the run gave up (an outage longer than its client
    timeouts)."""

    stage: str | None = None
    delay_s: float = 0.0
    point: str | None = None
    guarantee: str = "exactly_once_v2"
    broker: bool = False
    outage_s: float | None = None

    def __str__(self) -> str:
        if self.broker:
            outage = "until the run gave up" if self.outage_s is None else f"for {self.outage_s:.1f} s"
            return f"broker at {self.point}, down {outage} ({self.guarantee})"
        where = self.point or f"session {self.delay_s:.2f} s into {self.stage}"
        return f"{where} ({self.guarantee})"


@dataclass(frozen=True)
class DedicatedBroker:
    """A broker of the trial's own (its address, an Admin client on it, its work directory): one a trial may kill
    and restart, unlike the session's, which other tests share."""

    address: str
    admin: AdminClient
    workdir: Path


@contextmanager
def dedicated_broker(tmp_path: Path) -> Iterator[DedicatedBroker]:
    from streamproc_dev import broker

    workdir = tmp_path / "kafka"
    handle = broker.start(workdir)
    try:
        yield DedicatedBroker(handle.address, AdminClient({"bootstrap.servers": handle.address}), workdir)
    finally:
        broker.stop(workdir)


def _kill_broker_at_pause(
    process: subprocess.Popen[bytes], pause: Path, workdir: Path, outage_s: float | None, log: Path
) -> bool:
    """SIGKILL the broker while the run waits at its pause point, let the run go on, and restart the broker on its
    data after ``outage_s`` (or once the run ended); False when the run ended before reaching the point."""
    from streamproc_dev import broker
    from streamproc_dev.service_process import ServiceHandle, is_alive

    while not (pause / "paused").exists():
        if process.poll() is not None:
            assert process.returncode == 0, log.read_text()
            return False
        time.sleep(0.05)
    handle = ServiceHandle.load(workdir)
    assert handle is not None
    os.killpg(handle.pid, signal.SIGKILL)  # the broker crashes: no controlled shutdown
    while is_alive(handle.pid):
        time.sleep(0.05)
    (pause / "resume").touch()
    if outage_s is not None:
        time.sleep(outage_s)
    else:
        process.wait(timeout=600)
    broker.start(workdir)
    process.wait(timeout=600)
    return True


def _check_one_error_line(log: Path, run_id: str) -> None:
    """A run that gave up in its hand-off says so in one line (the step, the cause, the one command that resumes it),
    with no traceback and none of librdkafka's own log."""
    lines = log.read_text(errors="replace").splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    [error] = errors
    assert error.startswith(f"error: run {run_id} failed in its hand-off step: "), error
    assert "run this same `streamproc run` command again" in error and f"ledger finish {run_id}" in error, error
    assert "val=-" not in error and "KafkaError{" not in error, error  # librdkafka's text, not its internal codes
    assert not any(line.startswith("Traceback") or line.startswith("%") for line in lines), lines


def killed_and_run_again(
    kill: Kill,
    kafka_broker: str,
    admin: AdminClient,
    app_id: str,
    tmp_path: Path,
    *,
    seed: int,
    broker_workdir: Path | None = None,
) -> bool:
    """One trial: the run (or, with ``kill.broker``, the broker started from ``broker_workdir``) killed at ``kill``,
    then the same command again, then the final state checked independently of the ledger's word. Returns whether
    the kill happened before the run ended."""
    source, sink, changelog = f"{app_id}-in", f"{app_id}-out", f"{app_id}-counts-changelog"
    for topic in (source, sink):
        create_topic(admin, topic, partitions=PARTITIONS)
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, source, sink, changelog)
    answer_list_offsets(kafka_broker, [changelog, source], PARTITIONS)
    per_key = _produce(kafka_broker, source, seed=seed)
    work, state = tmp_path / "work", tmp_path / "state"
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id,
            "--topology", "tests.integration.ledger.topologies:count_on",
            "--streams-setting", f"test.input={source}", "--streams-setting", f"test.output={sink}",
            "--store", str(tmp_path / "staging"), "--work-dir", str(work), "--state-dir", str(state),
            "--processing-guarantee", kill.guarantee, "--yes"]  # fmt: skip
    if kill.stage == "process":  # a run killed while Spark processes: its driver, JVM and workers die with it
        args += ["--master", "local[1]"]  # elsewhere the small window runs inline (run's default), in less time
    ledger_file, log = work / "ledger.sqlite", tmp_path / "run.log"

    if kill.broker:
        assert broker_workdir is not None and kill.point is not None, "a broker kill needs a dedicated broker"
        pause = tmp_path / "pause"
        pause.mkdir()
        process = _session(args, log, None, (kill.point, pause))
        killed = _kill_broker_at_pause(process, pause, broker_workdir, kill.outage_s, log)
        assert process.returncode in (0, 1), log.read_text()
    elif kill.stage is not None:
        killed = _kill_session_in_stage(_session(args, log, None), ledger_file, kill.stage, kill.delay_s, log)
    else:
        process = _session(args, log, kill.point)
        code = process.wait(timeout=600)
        assert code in (0, -signal.SIGKILL), log.read_text()
        killed = code == -signal.SIGKILL
    with Ledger(ledger_file) as ledger:
        [first] = ledger.runs(app_id)
    if killed and first.status == "succeeded" and not kill.broker:
        killed = False  # the kill landed after the run had ended (its process was still exiting): a clean run
    stopped = killed and first.status != "succeeded"  # a broker outage the run rode out needs no second command
    if stopped and kill.broker:
        # the run gave up on the broker: one line, and it keeps its lock (half handed off: never planned anew)
        assert (first.status, first.stage) == ("failed", "handoff"), first
        _check_one_error_line(log, first.run_id)
    elif stopped:
        assert first.status == "running", first
    if stopped:
        # a dry run does not take the run over: it says what happened and which command resumes it
        dry = _streamproc([*args, "--dry-run"])
        assert dry.returncode == 1, dry.stderr
        [error] = [line for line in dry.stderr.splitlines() if line.startswith("error: ")]
        happened = "failed" if kill.broker else "interrupted"
        assert f"run {first.run_id}" in error and f"{happened} in its {first.stage} step" in error, error
        assert "takes it over and resumes it" in error and "--dry-run" in error, error

        again = _streamproc(args)
        assert again.returncode == 0, again.stderr + again.stdout
        assert f"resuming interrupted run {first.run_id}" in again.stderr, again.stderr

    with Ledger(ledger_file) as ledger:
        runs = ledger.runs(app_id)
        detail = ledger.run(first.run_id)
    statuses = {r.run_id: r.status for r in runs}
    assert statuses.pop(first.run_id) == "succeeded", runs  # the same run, taken over, not a second one
    assert set(statuses.values()) <= {"failed"}, runs  # at most the refused dry run
    assert detail is not None
    ends = {f"{source}-{p}": n for p, n in _ends(kafka_broker, source).items()}
    lag_after = {lag.partition: (lag.committed_after, lag.lag_after) for lag in detail.lag}
    if killed and not stopped and kill.broker and kill.outage_s is None:
        # the run finished its hand-off with the broker still down (the kill point was its last task's checkpoint):
        # the lag after could not be read, and the run says so rather than fail a finished hand-off
        assert set(lag_after.values()) == {(None, None)}, lag_after
        assert "the lag after the hand-off could not be read" in log.read_text(errors="replace")
    else:
        assert lag_after == {name: (end, 0) for name, end in ends.items()}
    committed, unstable = read_committed_offsets(admin, app_id)
    assert not unstable
    assert {str(tp): c.offset for tp, c in committed.items()} == ends

    outputs: dict[str, list[int]] = defaultdict(list)
    for message in read_all(kafka_broker, sink, PARTITIONS):
        outputs[message.key().decode()].append(int.from_bytes(message.value(), "big", signed=True))
    expected = {key: list(range(1, n + 1)) for key, n in per_key.items()}
    if kill.guarantee == "exactly_once_v2":  # each count once, read_committed
        assert {key: sorted(values) for key, values in outputs.items()} == expected
    else:  # at least once: every count, none skipped, none past n
        assert {key: sorted(set(values)) for key, values in outputs.items()} == expected
    for p in range(PARTITIONS):
        assert (state / app_id / f"0_{p}" / ".checkpoint").is_file()
    return killed


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    from tests.integration.handoff.test_handoff import log_ends

    return log_ends(bootstrap, topic, PARTITIONS)
