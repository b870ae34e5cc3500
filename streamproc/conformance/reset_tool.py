"""Kafka's own reset tool as the oracle of a plan's start positions (``planning`` scenarios, live).

A planning scenario whose start is one of the reset tool's scenarios (``to_offset``, ``to_datetime``,
``by_duration``, ``shift_by``, ``from_file``, ``earliest``, ``latest``) and whose ``expected`` is a plan (not a
refusal) is rebuilt on a real broker: every topic under a unique prefix with the scenario's partitions, each
partition filled to its log end and cut at its log start with ``DeleteRecords`` (records at their timestamps where
the scenario lists them), the group's committed offsets set. Then ``kafka-streams-application-reset``
(``org.apache.kafka.tools.StreamsResetter``) runs with ``--dry-run`` on the external input topics and prints the
offset it would reset each partition to: that is Kafka's answer to the ``start`` of each range.

Only starts are compared (``reset_tool_starts``): ends, notes, stages and partition times are streamproc's own.
Refusals are streamproc's decisions (planning.md §5): where the tool would go ahead (``shift_by`` with no committed
offset shifts from the log end), the scenario's notes say so, and the oracle does not answer them. ``by_duration``
is asked as ``--to-datetime`` of the plan's ``now_ms`` minus the duration, because the tool reads the real clock;
the duration parsing itself was checked against Kafka's (FINDINGS.md). Log layouts the broker cannot be made to
hold here (transactions, compacted-away offsets) are unsupported.

The tool comes from ``org.apache.kafka:kafka-tools`` **4.2.0**: Maven Central has no 4.2.2 build of that artifact.
It runs on the broker's 4.2.2 jars (``streamproc.dev.broker``), with ``-Duser.timezone=UTC``.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from streamproc.conformance.oracle import JVM_OPTIONS, OracleError
from streamproc.dev.versions import KAFKA_VERSION, cache_dir
from streamproc.plan.reset_formats import instant_minus, parse_duration

logger = logging.getLogger(__name__)

KAFKA_TOOLS_VERSION = "4.2.0"
STREAMS_RESETTER = "org.apache.kafka.tools.StreamsResetter"
#: Start modes the reset tool implements, and the tool's option for each (``None``: built per scenario).
RESET_MODES = {
    "to_offset": None,
    "to_datetime": "--to-datetime",
    "by_duration": "--to-datetime",
    "shift_by": "--shift-by",
    "from_file": "--from-file",
    "earliest": "--to-earliest",
    "latest": "--to-latest",
}
NOT_OBSERVABLE = ("ranges", "resolved_timestamp_ms", "partition_times", "manifest", "stages", "max_records_total")
_TOOL_LINE = re.compile(r"^Topic: (?P<topic>\S+) Partition: (?P<partition>\d+) Offset: (?P<offset>-?\d+)$")
_TIMEOUT_S = 120


def tools_jar() -> Path:
    """``kafka-tools`` 4.2.0, copied once from Maven Central into the cache (the jar alone: it runs on the broker's)."""
    directory = cache_dir() / f"kafka-tools-{KAFKA_TOOLS_VERSION}"
    jar = directory / f"kafka-tools-{KAFKA_TOOLS_VERSION}.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise OracleError("Maven (mvn) is not on PATH; it fetches org.apache.kafka:kafka-tools for the planning oracle")
    directory.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            mvn, "-q", "-B", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
            f"-Dartifact=org.apache.kafka:kafka-tools:{KAFKA_TOOLS_VERSION}:jar", f"-DoutputDirectory={directory}",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if proc.returncode != 0 or not jar.is_file():
        raise OracleError(
            f"cannot fetch kafka-tools {KAFKA_TOOLS_VERSION}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    return jar


def unsupported_reason(scenario: Mapping[str, Any]) -> str | None:
    """Why the reset tool cannot answer this planning scenario, or ``None`` when it can."""
    spec = scenario["input"]
    expected = scenario.get("expected") or {}
    mode = spec["request"]["start"]["mode"]
    if mode not in RESET_MODES:
        return f"start mode {mode!r} is not one of the reset tool's scenarios"
    if expected.get("error") is not None:
        return "a refusal is streamproc's decision (planning.md §5); the reset tool is asked for positions only"
    for name, topic in spec["topics"].items():
        for p, part in topic["partitions"].items():
            where = f"{name}-{p}"
            if not part["log_end"] == part["high_watermark"] == part["last_stable_offset"]:
                return f"{where}: a log with open transactions cannot be built here"
            records = part.get("records")
            if records is not None:
                if any(kind != "data" for _, _, kind in records):
                    return f"{where}: transactional records are not built by this oracle"
                if [o for o, _, _ in records] != list(range(part["log_start"], part["log_end"])):
                    return f"{where}: compacted-away offsets cannot be built"
            elif mode in ("to_datetime", "by_duration"):
                return f"{where}: a timestamp look-up needs the scenario's records"
    return None


def run_reset_tool(
    bootstrap: str, paths: list[Path] | tuple[Path, ...], *, parallelism: int = 2
) -> dict[Path, dict[str, Any]]:
    """Each path's answer: ``{"result": {"reset_tool_starts": …, "not_observable": …}, "observations": …}``,
    ``{"unsupported": reason}`` or ``{"oracle_error": …}``; ``parallelism`` scenarios at a time (unique prefixes)."""
    if not paths:
        return {}
    classpath = f"{cache_dir() / f'kafka-{KAFKA_VERSION}' / 'libs'}/*:{tools_jar()}"

    def answer(path: Path) -> dict[str, Any]:
        scenario = json.loads(path.read_text(encoding="utf-8"))
        reason = unsupported_reason(scenario)
        if reason is not None:
            return {"unsupported": reason}
        try:
            return _Run(bootstrap, scenario, classpath).answer()
        except Exception as exc:  # noqa: BLE001 - one scenario's failure is its row's, not the report's
            logger.warning("reset tool oracle failed on %s: %s", path, exc)
            return {"oracle_error": f"{type(exc).__name__}: {exc}"}

    with ThreadPoolExecutor(max_workers=parallelism) as pool:
        return dict(zip((Path(p) for p in paths), pool.map(answer, (Path(p) for p in paths)), strict=True))


class _Run:
    """One scenario on the broker under a unique prefix, then the tool's dry run."""

    def __init__(self, bootstrap: str, scenario: Mapping[str, Any], classpath: str) -> None:
        self.bootstrap = bootstrap
        self.spec = scenario["input"]
        self.classpath = classpath
        self.prefix = f"rt-{uuid.uuid4().hex[:12]}-"

    def answer(self) -> dict[str, Any]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = [self.prefix + name for name in self.spec["topics"]]
        try:
            self._build(admin)
            output = self._dry_run()
        finally:
            for future in admin.delete_topics(topics).values():
                try:
                    future.result(timeout=30)
                except Exception:  # noqa: BLE001 - best effort: the topics have unique names
                    logger.debug("could not delete a topic of %s", self.prefix)
        starts = {}
        for line in output.splitlines():
            match = _TOOL_LINE.match(line.strip())
            if match:
                topic = match["topic"].removeprefix(self.prefix)
                starts[f"{topic}-{match['partition']}"] = int(match["offset"])
        if not starts:
            raise OracleError(f"the reset tool printed no offsets:\n{output[-3000:]}")
        return {
            "result": {"reset_tool_starts": dict(sorted(starts.items())), "not_observable": list(NOT_OBSERVABLE)},
            "observations": {"tool_output": output},
        }

    def _build(self, admin: Any) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
        from confluent_kafka.admin import NewTopic

        new = [NewTopic(self.prefix + n, len(t["partitions"]), 1) for n, t in self.spec["topics"].items()]
        for future in admin.create_topics(new).values():
            future.result(timeout=30)
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        cuts = []
        for name, topic in self.spec["topics"].items():
            for p, part in topic["partitions"].items():
                stamps = {o: ts for o, ts, _ in part.get("records") or []}
                for offset in range(part["log_end"]):
                    # 1 ms, not 0: librdkafka stamps a record with timestamp 0 with the current time
                    producer.produce(self.prefix + name, value=b"x", partition=int(p), timestamp=stamps.get(offset, 1))
                if part["log_start"] > 0:
                    cuts.append(TopicPartition(self.prefix + name, int(p), part["log_start"]))
        if producer.flush(60) != 0:
            raise OracleError("records not delivered in 60 s")
        if cuts:
            for future in admin.delete_records(cuts).values():
                future.result(timeout=30)
        committed = [
            TopicPartition(self.prefix + tp.rpartition("-")[0], int(tp.rpartition("-")[2]), c["offset"], c["metadata"])
            for tp, c in (self.spec.get("committed") or {}).items()
        ]
        if committed:
            group = self.prefix + self.spec["application_id"]
            for future in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, committed)]).values():
                future.result(timeout=30)

    def _mode_args(self, workdir: Path) -> list[str]:
        start = self.spec["request"]["start"]
        mode = start["mode"]
        if mode == "to_offset" and "offset" in start:
            return ["--to-offset", str(start["offset"])]
        if mode in ("to_offset", "from_file"):
            if mode == "to_offset":
                lines = [f"{tp.rpartition('-')[0]},{tp.rpartition('-')[2]},{o}" for tp, o in start["offsets"].items()]
            else:
                lines = start["csv"].splitlines()
            csv = "".join(f"{self.prefix}{line}\n" if line.strip() else "\n" for line in lines)
            (workdir / "reset.csv").write_text(csv, encoding="utf-8")
            return ["--from-file", str(workdir / "reset.csv")]
        if mode == "to_datetime":
            return ["--to-datetime", str(start["datetime"])]
        if mode == "by_duration":
            at = instant_minus(int(self.spec["now_ms"]), parse_duration(start["duration"]))
            text = datetime.datetime.fromtimestamp(at / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            return ["--to-datetime", text]
        if mode == "shift_by":
            return ["--shift-by", str(start["shift"])]
        option = RESET_MODES[mode]
        assert option is not None
        return [option]

    def _dry_run(self) -> str:
        internal = set(self.spec.get("internal_source_topics") or ())
        inputs = [self.prefix + t for t in self.spec["source_topics"] if t not in internal]
        with tempfile.TemporaryDirectory(prefix="streamproc-reset-") as tmp:
            command = [
                "java", *JVM_OPTIONS, "-Duser.timezone=UTC", "-cp", self.classpath, STREAMS_RESETTER,
                "--bootstrap-server", self.bootstrap,
                "--application-id", self.prefix + self.spec["application_id"],
                "--input-topics", ",".join(inputs), "--dry-run", *self._mode_args(Path(tmp)),
            ]  # fmt: skip
            proc = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise OracleError(
                f"the reset tool failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
        return proc.stdout
