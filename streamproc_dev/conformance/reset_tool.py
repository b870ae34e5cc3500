"""Kafka's own reset tool as the oracle of a plan's start positions (``planning`` scenarios, live).

A planning scenario whose start is one of the reset tool's scenarios (``to_offset``, ``to_datetime``,
``by_duration``, ``shift_by``, ``from_file``, ``earliest``, ``latest``), or whose group still has members, is
rebuilt on a real broker: every topic under a unique prefix with the scenario's partitions, each partition filled to
its log end and cut at its log start with ``DeleteRecords`` (records at their timestamps where the scenario lists
them), the group's committed offsets set, and, for an active group, that many real consumers holding the group.
Then ``kafka-streams-application-reset`` (``org.apache.kafka.tools.StreamsResetter``) runs with ``--dry-run`` on
the external input topics and prints the offset it would reset each partition to: that is Kafka's answer to the
``start`` of each range; or it fails (``reset_tool_failure``: exit code and error lines).

Only starts are compared (``reset_tool_starts``, ``answered: ["starts"]``): ends, notes, stages and partition times
are streamproc's own. A refusal (planning.md §5) agrees with the tool (:func:`compare`) when the tool fails too, or
when it goes ahead past offsets the application has not processed (``skips_unprocessed``: from the committed
offset, or without one from where the application's reset policy would start) on exactly the refused partitions:
``shift_by`` with no committed offset shifts from the log end. Refusals of a plan's end or of its completeness
proof are not the tool's question. ``by_duration`` is asked as ``--to-datetime`` of the plan's ``now_ms`` minus the
duration, because the tool reads the real clock; a duration streamproc cannot read goes to the tool's own
``--by-duration`` as written. Log layouts the broker cannot be made to hold here (transactions, compacted-away
offsets) are unsupported.

The tool comes from ``org.apache.kafka:kafka-tools`` **4.2.0**: Maven Central has no 4.2.2 build of that artifact.
It runs on the broker's 4.2.2 jars (``streamproc_dev.broker``), with ``-Duser.timezone=UTC``.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from streamproc.errors import StreamprocError
from streamproc.plan.reset_formats import instant_minus, parse_duration
from streamproc_dev.conformance.oracle import JVM_OPTIONS, OracleError
from streamproc_dev.versions import KAFKA_VERSION, cache_dir

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
#: Refusals of a plan's end or of its completeness proof: the reset tool only positions starts.
NOT_THE_TOOLS_REFUSALS = frozenset({"EndBeyondHighWatermark", "EndBeforeStart", "IncompleteRange"})
_TOOL_ERROR = re.compile(r"ERROR|Error|Exception|not following|Cannot|still active")
_TOOL_LINE = re.compile(r"^Topic: (?P<topic>\S+) Partition: (?P<partition>\d+) Offset: (?P<offset>-?\d+)$")
_TIMEOUT_S = 120
#: The tool's admin client gave up reaching the broker (a loaded machine: CI saw "Timed out waiting for a node
#: assignment" from ``describeConsumerGroups``): no answer about the scenario, so it is asked again.
_CLIENT_TIMED_OUT = re.compile(r"TimeoutException: Timed out waiting for a node assignment")
#: How many times the dry run is asked when the tool's client timed out, and the pause between.
_ATTEMPTS, _PAUSE_S = 3, 5.0


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
    if mode not in RESET_MODES and not group_is_active(scenario):
        return f"start mode {mode!r} is not one of the reset tool's scenarios"
    if expected.get("error") is not None and expected["error"].get("type") in NOT_THE_TOOLS_REFUSALS:
        return f"{expected['error']['type']} is not a reset tool question"
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
            elif mode == "to_datetime" or (mode == "by_duration" and _duration_parses(spec)):
                return f"{where}: a timestamp look-up needs the scenario's records"
    return None


def _duration_parses(spec: Mapping[str, Any]) -> bool:
    """streamproc reads the duration (planning.md §3); one it refuses goes to the tool's own ``--by-duration``."""
    try:
        parse_duration(str(spec["request"]["start"]["duration"]))
    except StreamprocError:
        return False
    return True


def compare(reference: Mapping[str, Any], kafka: Mapping[str, Any]) -> list[str]:
    """A plan's starts, or a refusal, against what the reset tool does on the same cluster.

    A plan agrees when its range starts are the tool's offsets. A refusal agrees when the tool refuses too, or
    when it goes ahead past offsets the application has not processed (``skips_unprocessed``) on exactly the refused
    partitions: streamproc refuses where Kafka's tool would lose data.
    """
    failure = kafka.get("reset_tool_failure")
    starts: Mapping[str, int] = kafka.get("reset_tool_starts") or {}
    refusal = reference.get("error")
    if refusal is not None:
        if failure is not None:
            return []
        skips = sorted(kafka.get("skips_unprocessed") or {})
        refused = sorted(refusal.get("partitions") or [])
        if skips and skips == refused:
            return []
        return [f"the reference refuses ({refusal.get('type')} on {refused}); the reset tool resets to {dict(starts)}"
                f" and skips unprocessed offsets on {skips}"]  # fmt: skip
    if failure is not None:
        return [f"the reference plans; the reset tool refuses: {failure.get('message')}"]
    ranges = reference.get("ranges") or {}
    return [
        f"{tp}: start {ranges.get(tp, {}).get('start')!r}, the reset tool {offset}"
        for tp, offset in starts.items()
        if ranges.get(tp, {}).get("start") != offset
    ]


def group_is_active(scenario: Mapping[str, Any]) -> bool:
    """The scenario's group has members: a running application that the tool is asked to reset under."""
    return bool((scenario["input"].get("group") or {}).get("members"))


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
        from streamproc.kafka import clients

        admin = clients.admin({"bootstrap.servers": self.bootstrap})
        topics = [self.prefix + name for name in self.spec["topics"]]
        members: list[Any] = []
        try:
            self._build(admin)
            if self.spec.get("group", {}).get("members"):
                members = self._hold_group(admin, len(self.spec["group"]["members"]))
            returncode, output = self._answered_dry_run()
        finally:
            for member in members:
                member.close()
            for future in admin.delete_topics(topics).values():
                try:
                    future.result(timeout=30)
                except Exception:  # noqa: BLE001 - best effort: the topics have unique names
                    logger.debug("could not delete a topic of %s", self.prefix)
        output = output.replace(self.prefix, "")
        if returncode != 0:
            message = [line.strip()[:300] for line in output.splitlines() if _TOOL_ERROR.search(line)]
            failure = {"exit": returncode, "message": " / ".join(message[:3]) or output.strip()[-500:]}
            return {
                "result": {
                    "reset_tool_failure": failure,
                    "kafka_behaviour": f"the reset tool refuses (exit {returncode}): {failure['message']}",
                    "answered": ["refusal"],
                    "not_observable": list(NOT_OBSERVABLE),
                },
                "observations": {"tool_output": output},
            }
        starts = {}
        for line in output.splitlines():
            match = _TOOL_LINE.match(line.strip())
            if match:
                starts[f"{match['topic']}-{match['partition']}"] = int(match["offset"])
        if not starts:
            raise OracleError(f"the reset tool printed no offsets:\n{output[-3000:]}")
        skips = self._skips(starts)
        result: dict[str, Any] = {
            "reset_tool_starts": dict(sorted(starts.items())),
            "answered": ["starts"],
            "not_observable": list(NOT_OBSERVABLE),
        }
        result["kafka_behaviour"] = f"the reset tool resets to {result['reset_tool_starts']}"
        if skips:
            result["skips_unprocessed"] = skips
            result["kafka_behaviour"] += ", past offsets not processed yet: " + "; ".join(
                f"{tp} [{lo}, {hi})" for tp, (lo, hi) in skips.items()
            )
        return {"result": result, "observations": {"tool_output": output}}

    def _skips(self, starts: Mapping[str, int]) -> dict[str, list[int]]:
        """Partitions the tool moves past offsets the app has not processed: ``[first unprocessed, tool's offset)``.

        The first unprocessed offset is the committed one, or, without a commit, where the app's reset policy
        would start (the log start for ``earliest``, the log end for ``latest``)."""
        skips: dict[str, list[int]] = {}
        committed = self.spec.get("committed") or {}
        policies = self.spec.get("reset_policies") or {}
        for tp, offset in starts.items():
            topic, _, partition = tp.rpartition("-")
            part = self.spec["topics"][topic]["partitions"][partition]
            if tp in committed:
                first = int(committed[tp]["offset"])
            elif policies.get(topic, self.spec.get("auto_offset_reset", "earliest")) == "latest":
                first = int(part["log_end"])
            else:
                first = int(part["log_start"])
            if offset > first:
                skips[tp] = [first, offset]
        return skips

    def _hold_group(self, admin: Any, count: int) -> list[Any]:
        """``count`` real consumers in the application's group, subscribed to its inputs: a running application."""
        from confluent_kafka import Consumer

        group = self.prefix + self.spec["application_id"]
        inputs = [self.prefix + t for t in self.spec["source_topics"] if t in self.spec["topics"]]
        members = []
        for i in range(count):
            member = Consumer({
                "bootstrap.servers": self.bootstrap, "group.id": group, "client.id": f"{group}-member-{i}",
                "enable.auto.commit": False, "session.timeout.ms": 10000,
            })  # fmt: skip
            member.subscribe(inputs)
            members.append(member)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for member in members:
                member.poll(0.1)
            described = admin.describe_consumer_groups([group])[group].result(timeout=30)
            if str(described.state).endswith("STABLE") and len(described.members) == count:
                return members
        for member in members:
            member.close()
        raise OracleError(f"the group {group} did not become Stable with {count} members in 60 s")

    def _build(self, admin: Any) -> None:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import NewTopic

        from streamproc.kafka import clients
        from streamproc.kafka.librdkafka import alter_committed_offsets

        new = [NewTopic(self.prefix + n, len(t["partitions"]), 1) for n, t in self.spec["topics"].items()]
        for future in admin.create_topics(new).values():
            future.result(timeout=30)
        producer = clients.producer({"bootstrap.servers": self.bootstrap}, **{"enable.idempotence": True})
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
            (self.prefix + tp.rpartition("-")[0], int(tp.rpartition("-")[2]), c["offset"], c["metadata"] or "")
            for tp, c in (self.spec.get("committed") or {}).items()
        ]
        if committed:
            # through librdkafka with exact sizes: confluent-kafka's alter_consumer_group_offsets appends a NUL to
            # every metadata string, which the group would store (and Kafka Streams could not decode)
            group = self.prefix + self.spec["application_id"]
            for answer in alter_committed_offsets(admin, group, committed, timeout_s=30):
                if answer.error:
                    raise OracleError(
                        f"committing {answer.topic}-{answer.partition} for group {group}: {answer.error_name}"
                    )

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
        if mode == "by_duration" and not _duration_parses(self.spec):
            return ["--by-duration", str(start["duration"])]
        if mode == "by_duration":
            at = instant_minus(int(self.spec["now_ms"]), parse_duration(start["duration"]))
            text = datetime.datetime.fromtimestamp(at / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            return ["--to-datetime", text]
        if mode == "shift_by":
            return ["--shift-by", str(start["shift"])]
        if mode not in RESET_MODES:  # a committed start under an active group: the tool's default scenario
            return []
        option = RESET_MODES[mode]
        assert option is not None
        return [option]

    def _answered_dry_run(self) -> tuple[int, str]:
        """:meth:`_dry_run`, asked again while the tool's client timed out reaching the broker (the last try's
        outcome is the answer, a timeout included, which then reads as a refusal naming it)."""
        for attempt in range(1, _ATTEMPTS + 1):
            returncode, output = self._dry_run()
            if returncode == 0 or attempt == _ATTEMPTS or not _CLIENT_TIMED_OUT.search(output):
                return returncode, output
            logger.warning("the reset tool's client timed out reaching the broker (try %d of %d): asking again",
                           attempt, _ATTEMPTS)  # fmt: skip
            time.sleep(_PAUSE_S)
        raise AssertionError("unreachable")

    def _dry_run(self) -> tuple[int, str]:
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
        return proc.returncode, proc.stdout + ("" if proc.returncode == 0 else proc.stderr)
