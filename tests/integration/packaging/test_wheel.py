"""The product wheel, installed where the repository cannot help: a fresh venv in a temp dir, cwd there, no PYTHONPATH.

The wheel is built from a copy of the repository's files (tracked and new, as git sees them) with the build backend
pinned by requirements.lock, so the build never writes into the checkout. The base install (no extra) must run
``--version``, ``--help``, a Processor-API replay through ``TopologyTestDriver`` and ``plan`` → ``fetch`` →
``verify`` against the real broker; a command that needs an extra must name it; and ``[spark]``, installed from
the same pins, must run ``streamproc process`` on what the base install staged (local Spark, one core), whose
outputs the base install hands off to Kafka: the topic then holds the program's output.
Every install comes from requirements.lock through uv's cache (``uv pip install --constraint requirements.lock``).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from streamproc.target import KAFKA_STREAMS_VERSION
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import create_topic

UV = Path(sys.executable).parent / "uv"
LOCK = PROJECT_ROOT / "requirements.lock"

#: A user's program, written into the temp dir: words counted per word in a RocksDB store (Processor API).
WORDS_APP = '''
"""Counts words: one record per word with its running count (a persistent key-value store)."""

from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, TaskConfig, Topology, serde_for

STRING = serde_for("String")
LONG = serde_for("Long")


class WordCount(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.counts = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        for word in record.value.split():
            count = (self.counts.get(word) or 0) + 1
            self.counts.put(word, count)
            self.context.forward(Record(word, count, record.timestamp))


def topology() -> Topology:
    t = Topology()
    t.add_source("lines", "{source}", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", WordCount, "lines")
    store = Stores.key_value_store_builder(Stores.persistent_key_value_store("counts"), STRING, LONG)
    t.add_state_store(store, "count")
    t.add_sink("out", "{sink}", "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t
'''

#: Replays lines given as arguments through ``TopologyTestDriver`` and prints the output topic as JSON.
REPLAY = """
import json
import sys

import streamproc
from streamproc import TaskConfig, TopologyTestDriver

from words_app import LONG, STRING, topology

with TopologyTestDriver(topology(), TaskConfig(application_id="words")) as driver:
    lines = driver.create_input_topic("text", STRING, STRING)
    for offset, line in enumerate(sys.argv[1:]):
        lines.pipe_input(None, line, 1000 + offset)
    output = driver.create_output_topic("word-counts", STRING, LONG)
    print(json.dumps({"streamproc": streamproc.__file__, "output": output.read_key_values_to_list()}))
"""

#: A program that validates its source's values: without pandera, building it names the extra to install.
VALIDATING_SOURCE = """
from streamproc import Topology
Topology().add_source("lines", "text", value_schema=object())
"""

LINES = ["to be or not to be", "that is the question", "to be is to do"]


@dataclass(frozen=True)
class Install:
    """A venv holding the wheel, and a directory outside the repository to run it from."""

    venv: Path
    workdir: Path

    def run(self, *args: str, user_path: bool = False, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A command from the venv's bin, cwd the work dir, nothing of the repository on the path (``user_path``:
        the work dir on ``PYTHONPATH``, as a user puts their program's directory for ``--topology MODULE:FUNC``)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        if user_path:
            env["PYTHONPATH"] = str(self.workdir)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        command = [str(self.venv / "bin" / args[0]), *args[1:]]
        return subprocess.run(command, cwd=self.workdir, env=env, capture_output=True, text=True, timeout=timeout)


def _repository_copy(target: Path) -> Path:
    """The repository's files as git sees them (tracked and new, not ignored): what a fresh clone would build."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _install(venv: Path, requirement: str) -> None:
    subprocess.run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "--constraint", str(LOCK),
         requirement],
        check=True,
        timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _repository_copy(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [str(UV), "build", "--quiet", "--wheel", "--build-constraint", str(LOCK), "--out-dir", str(dist)],
        cwd=source,
        check=True,
        timeout=600,
    )
    [built] = dist.glob("streamproc-*.whl")
    return built


@pytest.fixture(scope="module")
def base(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Install:
    """The wheel with no extra, and the user's program beside where it runs."""
    root = tmp_path_factory.mktemp("base")
    _install(root / "venv", str(wheel))
    workdir = root / "work"
    workdir.mkdir()
    (workdir / "replay.py").write_text(REPLAY)
    (workdir / "words_app.py").write_text(WORDS_APP.replace("{source}", "text").replace("{sink}", "word-counts"))
    return Install(root / "venv", workdir)


def _running_counts(lines: list[str]) -> list[list[object]]:
    """What the program must output: each word with its count so far, in input order."""
    seen: Counter[str] = Counter()
    expected: list[list[object]] = []
    for line in lines:
        for word in line.split():
            seen[word] += 1
            expected.append([word, seen[word]])
    return expected


def test_the_wheel_holds_the_product_and_not_the_repositorys_tooling(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    version = metadata.version("streamproc")
    assert {name.split("/")[0] for name in names} == {"streamproc", f"streamproc-{version}.dist-info"}
    packages = {str(Path(name).parent) for name in names if name.endswith(".py")}
    assert {"streamproc", "streamproc/engine", "streamproc/state", "streamproc/spark", "streamproc/airflow"} <= packages
    assert not [p for p in packages if p.startswith(("streamproc/dev", "streamproc/conformance", "streamproc/tests"))]
    assert any(name.startswith("streamproc/engine/_bulk_kernel") and name.endswith(".so") for name in names)
    for data in ("streamproc/py.typed", "streamproc/ledger/migrations/script.py.mako"):
        assert data in names
    entry_points = zipfile.ZipFile(wheel).read(f"streamproc-{version}.dist-info/entry_points.txt").decode()
    assert "streamproc = streamproc.cli:main" in entry_points


def test_the_base_install_prints_its_version_and_help(base: Install) -> None:
    version = base.run("streamproc", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith(
        f"streamproc {metadata.version('streamproc')} for Kafka Streams {KAFKA_STREAMS_VERSION} (confluent-kafka "
    )
    usage = base.run("streamproc", "--help")
    assert usage.returncode == 0, usage.stderr
    commands = usage.stdout.split("Commands:")[1].split()
    assert {"plan", "fetch", "verify", "process", "handoff", "run", "ledger"} <= set(commands)
    assert "dev" not in commands and "conformance" not in commands


def test_the_base_install_replays_a_processor_api_program(base: Install) -> None:
    replay = base.run("python", "replay.py", *LINES)
    assert replay.returncode == 0, replay.stderr
    result = json.loads(replay.stdout)
    assert Path(result["streamproc"]).is_relative_to(base.venv)  # the wheel's streamproc, not the repository's
    assert result["output"] == _running_counts(LINES)


def test_a_command_that_needs_an_extra_names_it(base: Install, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    process = base.run("streamproc", "process", "--plan", str(plan), "--store", str(tmp_path), "--topology", "a:b")
    assert (process.returncode, process.stdout) == (1, "")
    assert process.stderr.splitlines() == [
        "error: streamproc process needs Spark (pyspark, rich, pandera, polars not installed): "
        "pip install 'streamproc[spark]'"
    ]
    s3 = base.run("streamproc", "verify", "--store", "s3://bucket/prefix")
    assert (s3.returncode, s3.stderr) == (
        1,
        "error: an s3:// store needs boto3 (boto3 not installed): pip install 'streamproc[s3]'\n",
    )
    postgres = base.run("streamproc", "ledger", "runs", "--ledger", "postgresql+psycopg://user@127.0.0.1:1/ledger")
    assert (postgres.returncode, postgres.stderr) == (
        1,
        "error: a PostgreSQL ledger needs psycopg (psycopg not installed): pip install 'streamproc[postgres]'\n",
    )
    validating = base.run("python", "-c", VALIDATING_SOURCE)
    assert validating.returncode == 1
    assert validating.stderr.splitlines()[-1] == (
        "streamproc.errors.MissingExtra: source lines: value_schema needs pandera (pandera, polars not installed): "
        "pip install 'streamproc[validation]'"
    )


def _produce(bootstrap: str, topic: str, lines: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for offset, line in enumerate(lines):
        producer.produce(topic, value=line.encode(), partition=0, timestamp=1_000 + offset)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def spark(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    """The wheel with ``[spark]`` (about 20 s from uv's cache, 0.9 GB): removed again after the module."""
    root = tmp_path_factory.mktemp("spark")
    _install(root / "venv", f"{wheel}[spark]")
    workdir = root / "work"
    workdir.mkdir()
    yield Install(root / "venv", workdir)
    shutil.rmtree(root / "venv")


def test_the_base_install_stages_a_topic_and_spark_processes_it(
    base: Install, spark: Install, kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic, sink, app = create_topic(admin, unique("text")), create_topic(admin, unique("counts")), unique("words")
    create_topic(admin, f"{app}-counts-changelog", config={"cleanup.policy": "compact"})
    _produce(kafka_broker, topic, LINES)
    for install in (base, spark):
        (install.workdir / "words_app.py").write_text(WORDS_APP.replace("{source}", topic).replace("{sink}", sink))
    describe = base.run("python", "-c", "import words_app; print(words_app.topology().describe())")
    assert describe.returncode == 0, describe.stderr
    (base.workdir / "describe.txt").write_text(describe.stdout)
    plan, store = base.workdir / "plan.json", base.workdir / "staging"

    planned = base.run("streamproc", "plan", "--bootstrap", kafka_broker, "--application-id", app,
                       "--topology", "describe.txt", "--to-earliest", "--out", str(plan))  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    fetched = base.run("streamproc", "--output", "json", "fetch", "--bootstrap", kafka_broker, "--plan", str(plan),
                       "--store", str(store))  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    [staged] = json.loads(fetched.stdout)["ranges"]
    assert (staged["partition"], staged["start"], staged["end"], staged["records"]) == (f"{topic}-0", 0, 3, 3)
    verified = base.run("streamproc", "verify", "--store", str(store), "--plan", str(plan))
    assert verified.returncode == 0, verified.stderr

    processed = spark.run("streamproc", "--output", "json", "process", "--plan", str(plan), "--store", str(store),
                          "--topology", "words_app:topology", "--master", "local[1]", "--partitions", f"{sink}=1",
                          user_path=True)  # fmt: skip
    assert processed.returncode == 0, processed.stderr
    [task] = json.loads(processed.stdout)["tasks"]
    words = sum(len(line.split()) for line in LINES)
    assert (task["task_id"], task["records_processed"], task["dropped"]) == ("0_0", len(LINES), {})
    assert task["outputs"] == {f"{sink}+0": words}

    handed_off = base.run("streamproc", "handoff", "--bootstrap", kafka_broker, "--plan", str(plan), "--store",
                          str(store), "--yes")  # fmt: skip
    assert handed_off.returncode == 0, handed_off.stderr
    assert _read(kafka_broker, sink, words) == [(word, count) for word, count in _running_counts(LINES)]


def _read(bootstrap: str, topic: str, count: int) -> list[tuple[str, int]]:
    """The first ``count`` records of the topic, as (String key, Long value)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.subscribe([topic])
    records: list[tuple[str, int]] = []
    try:
        while len(records) < count:
            message = consumer.poll(30)
            assert message is not None, f"{topic}: {len(records)} of {count} records after 30 s"
            assert message.error() is None, message.error()
            records.append((message.key().decode(), struct.unpack(">q", message.value())[0]))
    finally:
        consumer.close()
    return records
