"""``fetch`` and ``verify`` never report a false success (issue 11), against the real broker and the real MinIO.

Each fault is caused for real: a directory that does not exist, an empty S3 prefix, a half-done store, deleted
objects, bytes flipped in a staged segment, a refused port, a TCP port that accepts and never answers, an HTTP
server that answers 404 without an S3 error code, and a parent ``fetch`` killed with ``kill -9``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.fetch import fetch_range, planned_ranges
from streamproc.plan.run_plan import RunPlan
from streamproc.storage import load_store
from tests.conftest import S3Server
from tests.integration.conftest import create_topic

STREAMPROC = str(Path(sys.executable).parent / "streamproc")


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the installed ``streamproc`` command as a user would: exit code, stdout, stderr."""
    done = subprocess.run([STREAMPROC, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=300, check=False)  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def one_error_line(stderr: str) -> str:
    """The whole of stderr is one ``error: …`` line (no traceback, no retry chatter)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def produce(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=p)
                    break
                except BufferError:
                    producer.poll(0.1)
    assert producer.flush(60) == 0


def make_plan(bootstrap: str, topic: str, path: Path, *extra: str) -> RunPlan:
    code, text = invoke("plan", "--bootstrap", bootstrap, "--application-id", f"{topic}-app", "--input-topic", topic,
                        "--to-earliest", "--out", str(path), *extra)  # fmt: skip
    assert code == 0, text
    return RunPlan.read(path)


def s3_env(s3_server: S3Server) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": s3_server.access_key,
        "AWS_SECRET_ACCESS_KEY": s3_server.secret_key,
        "AWS_REGION": s3_server.region,
    }


@pytest.fixture
def bucket(s3_server: S3Server, unique: Callable[[str], str]) -> str:
    name = unique("faults")
    s3_server.client().create_bucket(Bucket=name)
    return name


# ------------------------------------------------------------------------------------------- verify: what is absent
def test_verify_fails_on_a_directory_that_does_not_exist(tmp_path: Path) -> None:
    code, out, err = cli("verify", "--store", str(tmp_path / "no-such-dir"))

    assert code == 1
    assert "0 of 0 segment(s) verified" in out
    assert f"{(tmp_path / 'no-such-dir').as_uri()}/topics/: no staged segment here" in out


def test_verify_fails_on_an_empty_s3_prefix(s3_server: S3Server, bucket: str) -> None:
    code, out, err = cli("verify", "--store", f"s3://{bucket}/never-fetched", env=s3_env(s3_server))

    assert code == 1
    assert f"s3://{bucket}/never-fetched/topics/: no staged segment here" in out


def test_verify_with_the_plan_finds_a_half_done_store_and_a_partition_deleted_whole(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], s3_server: S3Server, bucket: str,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    topic = create_topic(admin, unique("cover"), partitions=3)
    produce(kafka_broker, topic, 3, 20)
    plan_file = tmp_path / "plan.json"
    plan = make_plan(kafka_broker, topic, plan_file)
    for key, value in s3_env(s3_server).items():
        monkeypatch.setenv(key, value)
    uri = f"s3://{bucket}/run"
    client = {"bootstrap.servers": kafka_broker}
    [first, second, third] = planned_ranges(plan)
    fetch_range(client, load_store(uri), first)  # a fetch that stopped after its first range: half done
    fetch_range(client, load_store(uri), second)

    code, out, err = cli("verify", "--store", uri)
    half_code, half_out, _ = cli("verify", "--store", uri, "--plan", str(plan_file))

    assert code == 0 and "2 of 2 segment(s) verified" in out, (code, out, err)  # nothing contradicts it without a plan
    assert half_code == 1
    assert "2 of 2 segment(s) verified; 2 of 3 planned range(s) staged" in half_out
    assert f"{topic}-2 [0, 20): planned offsets [0, 20) are not staged" in half_out

    fetch_range(client, load_store(uri), third)
    code, out, _ = cli("verify", "--store", uri, "--plan", str(plan_file))
    assert code == 0 and "3 of 3 segment(s) verified; 3 of 3 planned range(s) staged" in out

    objects = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=f"run/topics/{topic}/partition=1/")
    for item in objects["Contents"]:  # segment and manifest both gone: no object is left to contradict
        s3_server.client().delete_object(Bucket=bucket, Key=item["Key"])
    code, out, _ = cli("verify", "--store", uri)
    deleted_code, deleted_out, _ = cli("--output", "json", "verify", "--store", uri, "--plan", str(plan_file))

    assert code == 0 and "2 of 2 segment(s) verified" in out
    assert deleted_code == 1
    report = json.loads(deleted_out)
    assert (report["ranges_checked"], report["ranges_covered"]) == (3, 2)
    assert [p["object"] for p in report["problems"]] == [f"{topic}-1 [0, 20)"]


# ------------------------------------------------------------------------------------------- fetch: corrupt bytes
def test_fetch_refetches_a_segment_corrupted_in_place_to_identical_bytes(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], s3_server: S3Server, bucket: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    topic = create_topic(admin, unique("flip"), partitions=2)
    produce(kafka_broker, topic, 2, 50)
    plan_file = tmp_path / "plan.json"
    make_plan(kafka_broker, topic, plan_file)
    env = s3_env(s3_server)
    uri = f"s3://{bucket}/run"
    fetch = ("--output", "json", "fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", uri)
    code, _, err = cli(*fetch, env=env)
    assert code == 0, err
    s3 = s3_server.client()
    key = next(
        o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="run/topics/")["Contents"]
        if o["Key"].endswith(".parquet") and "partition=1" in o["Key"]
    )  # fmt: skip
    original = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    middle = len(original) // 2
    flipped = original[:middle] + bytes(b ^ 0xFF for b in original[middle : middle + 8]) + original[middle + 8 :]
    s3.put_object(Bucket=bucket, Key=key, Body=flipped)  # same size, other bytes

    bad_code, bad_out, _ = cli("verify", "--store", uri, "--plan", str(plan_file), env=env)
    code, out, err = cli(*fetch, env=env)
    rows = {row["partition"]: row for row in json.loads(out)["ranges"]}
    ok_code, ok_out, _ = cli("verify", "--store", uri, "--plan", str(plan_file), env=env)

    assert bad_code == 1 and "sha256" in bad_out
    assert code == 0, err
    assert (rows[f"{topic}-1"]["segments_written"], rows[f"{topic}-1"]["segments_already_complete"]) == (1, 0)
    assert (rows[f"{topic}-0"]["segments_written"], rows[f"{topic}-0"]["segments_already_complete"]) == (0, 1)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == original
    assert ok_code == 0 and "2 of 2 segment(s) verified; 2 of 2 planned range(s) staged" in ok_out


# --------------------------------------------------------------------------------------------- isolation level
def test_isolation_level_is_set_when_planning_and_refused_as_a_client_setting(
    kafka_broker: str, txn_topic: str, tmp_path: Path
) -> None:
    plan_args = ("plan", "--bootstrap", kafka_broker, "--application-id", f"{txn_topic}-app", "--input-topic",
                 txn_topic, "--to-earliest")  # fmt: skip
    code, _, err = cli(*plan_args, "-X", "isolation.level=read_committed", "--out", str(tmp_path / "p.json"))
    refused = one_error_line(err)
    eos_code, _, eos_err = cli(*plan_args, "--processing-guarantee", "exactly_once_v2", "--isolation-level",
                               "read_uncommitted", "--dry-run")  # fmt: skip
    contradiction = one_error_line(eos_err)

    assert code == 1 and "isolation.level=read_committed" in refused and "--processing-guarantee" in refused
    assert not (tmp_path / "p.json").exists()
    assert eos_code == 1 and "contradicts" in contradiction

    committed = tmp_path / "committed.json"
    plan = make_plan(kafka_broker, txn_topic, committed, "--isolation-level", "read_committed")
    code, _, err = cli("fetch", "--bootstrap", kafka_broker, "-X", "isolation.level=read_uncommitted", "--plan",
                       str(committed), "--store", str(tmp_path / "refused"))  # fmt: skip
    fetch_refused = one_error_line(err)
    code_ok, out, err_ok = cli("--output", "json", "fetch", "--bootstrap", kafka_broker, "--plan", str(committed),
                               "--store", str(tmp_path / "staged"))  # fmt: skip

    assert plan.isolation_level == "read_committed"
    assert [(r.start, r.end) for r in plan.ranges] == [(0, 9)]
    assert code == 1 and "this plan reads read_committed" in fetch_refused
    assert not (tmp_path / "refused").exists()
    assert code_ok == 0, err_ok
    assert [row["records"] for row in json.loads(out)["ranges"]] == [4]  # a b c d: the aborted x y are not data


# ------------------------------------------------------------------------------------------------ plan validation
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(isolation_level="read_maybe"), "'isolation_level' must be one of"),
        (lambda d: d["ranges"].append(dict(d["ranges"][0])), "is planned twice"),
        (lambda d: d["ranges"][0].update(topic_id=None), "topic_id is missing or null"),
    ],
    ids=["isolation-level", "duplicate-range", "null-topic-id"],
)
def test_fetch_refuses_a_hand_edited_plan_with_one_line(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path,
    edit: Callable[[dict[str, Any]], None], message: str,
) -> None:  # fmt: skip
    topic = create_topic(admin, unique("edited"))
    produce(kafka_broker, topic, 1, 5)
    plan_file = tmp_path / "plan.json"
    make_plan(kafka_broker, topic, plan_file)
    doc = json.loads(plan_file.read_text())
    edit(doc)
    plan_file.write_text(json.dumps(doc))

    code, _, err = cli("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(tmp_path / "s"))

    line = one_error_line(err)
    assert code == 1 and str(plan_file) in line and message in line
    assert not (tmp_path / "s").exists()


# ------------------------------------------------------------------------------------------------- S3 endpoints
@pytest.fixture
def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: connecting is refused


@pytest.fixture
def silent_endpoint() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP port that accepts connections and never answers; the accepted sockets are kept open."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join()
        listener.close()
        for s in accepted:
            s.close()


@pytest.fixture
def not_s3_endpoint() -> Iterator[str]:
    """A plain HTTP server that answers every request 404 with no body: no S3 error code, no S3 request id."""

    class NotFound(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = do_PUT = do_DELETE = do_POST = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


FAST = ("--s3-connect-timeout", "1", "--s3-read-timeout", "1", "--s3-max-attempts", "1")
KEYS = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}


def test_verify_on_a_refused_port_is_one_line(refused_port: int) -> None:
    code, _, err = cli(
        "verify", "--store", "s3://b/run", env={**KEYS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{refused_port}"}
    )

    line = one_error_line(err)
    assert code == 1 and "cannot connect to S3" in line and f"127.0.0.1:{refused_port}" in line


def test_verify_and_fetch_on_a_silent_endpoint_give_up_after_the_set_timeout_with_one_line(
    silent_endpoint: tuple[str, list[socket.socket]], kafka_broker: str, admin: AdminClient,
    unique: Callable[[str], str], tmp_path: Path,
) -> None:  # fmt: skip
    endpoint, accepted = silent_endpoint
    env = {**KEYS, "AWS_ENDPOINT_URL": endpoint}
    topic = create_topic(admin, unique("silent"))
    produce(kafka_broker, topic, 1, 5)
    plan_file = tmp_path / "plan.json"
    make_plan(kafka_broker, topic, plan_file)

    code, _, err = cli("verify", "--store", "s3://b/run", *FAST, env=env)
    verify_line = one_error_line(err)
    fetch_code, _, fetch_err = cli("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store",
                                   "s3://b/run", env={**env, "STREAMPROC_S3_READ_TIMEOUT": "1",
                                                      "STREAMPROC_S3_MAX_ATTEMPTS": "2"})  # fmt: skip

    assert code == 1 and "S3 did not answer" in verify_line and "read timeout 1s, 1 attempt(s)" in verify_line
    assert fetch_code == 1 and "read timeout 1s, 2 attempt(s)" in fetch_err.splitlines()[-1]
    assert len(accepted) >= 3  # the endpoint was reached: it accepted and stayed silent


def test_a_bare_http_404_is_named_as_a_wrong_endpoint_not_a_missing_object(not_s3_endpoint: str) -> None:
    code, _, err = cli("verify", "--store", "s3://b/run", env={**KEYS, "AWS_ENDPOINT_URL": not_s3_endpoint})

    line = one_error_line(err)
    assert code == 1 and "HTTP 404 without an S3 error code" in line and "not an S3 server" in line
    assert "fetch the range again" not in line


# ------------------------------------------------------------------------------------------------ orphaned workers
def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; only its (dead) parent would have reaped it


def test_fetch_workers_exit_when_their_parent_is_killed(
    silent_endpoint: tuple[str, list[socket.socket]], kafka_broker: str, admin: AdminClient,
    unique: Callable[[str], str], tmp_path: Path,
) -> None:  # fmt: skip
    endpoint, accepted = silent_endpoint
    topic = create_topic(admin, unique("orphans"), partitions=2)
    produce(kafka_broker, topic, 2, 10)
    plan_file = tmp_path / "plan.json"
    make_plan(kafka_broker, topic, plan_file)
    parent = subprocess.Popen(
        [STREAMPROC, "fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", "s3://b/run",
         "--processes", "2", "--s3-read-timeout", "600"],
        env={**os.environ, **KEYS, "AWS_ENDPOINT_URL": endpoint}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(accepted) < 2:  # both workers are inside an S3 call that will wait ten minutes
            assert parent.poll() is None and time.monotonic() < deadline, "the workers never reached the store"
            time.sleep(0.05)
        workers = {pid for pid in _children(parent.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()}
        assert len(workers) == 2
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()

    deadline = time.monotonic() + 60  # liveness: the workers must go, not hang until their S3 call times out
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers {sorted(p for p in workers if _alive(p))} outlived their parent"
        time.sleep(0.1)
