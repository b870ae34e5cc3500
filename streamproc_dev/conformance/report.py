"""The conformance results table: every scenario through streamproc and, where it can, through Kafka Streams itself.

``python -m streamproc_dev.conformance.report`` runs every scenario under ``../shared/spec/scenarios/`` (all kinds) and
``conformance/scenarios/`` (the project's own, generated from Kafka Streams) through streamproc's runners
(:func:`streamproc_dev.conformance.run_scenario`) and, for the kinds and operations it covers, through the task-level
Kafka Streams 4.2.2 oracle (``conformance/``, one JVM for all scenarios: ``java -jar … batch``). It writes
``conformance/results/latest.json`` (one row per scenario) and ``conformance/results/latest.md`` (a table and
totals).

With ``--bootstrap HOST:PORT`` (or ``--app``, which starts a throw-away broker with ``streamproc_dev.broker``) the
ordering scenarios also run through the application-level oracle (``java -jar … app``: a real ``KafkaStreams``
instance, several runs with different ``max.poll.records`` and fetch sizes). Its column holds the *set* of distinct
live results; streamproc's result must be one of them (observable keys only, never more than the set), except
where the live app reads the real wall clock (``WallclockTimestampExtractor``), which the set shows but does not
judge. The default run starts no broker and stays fast.

With a broker (``--bootstrap``, or ``--broker``, which starts a private one like ``--app``) the ``restore_plan``
state scenarios also run live (``java -jar … restore``, :func:`run_restore_oracle`): a real ``KafkaStreams`` app per
scenario on a changelog built with the scenario's offsets, in the Kafka Streams 4.3.1 jar for ``ks_version`` 4.3),
and so do the ``topology`` scenarios (``java -jar … topology``, :func:`run_topology_oracle`: the scenario's program
as a real app on topics with its partition counts; ``stages`` is streamproc's own and not compared). Their results
fill the Kafka Streams column of those rows, which the task-level oracle cannot answer. ``planning`` scenarios whose
start is one of the reset tool's scenarios get Kafka's reset tool as their oracle (:func:`run_reset_tool_oracle`,
``streamproc_dev.conformance.reset_tool``): the range starts must be the offsets ``StreamsResetter --dry-run``
prints, and a refusal must be where the tool refuses too or would skip unprocessed offsets. Those that start from
committed offsets get a real ``KafkaStreams`` app (:func:`run_start_position_oracle`,
``streamproc_dev.conformance.start_positions``): the ranges must start where the app starts, and a refusal must be
where the app dies or silently loses data.

A row's ``status`` is ``pass`` only when streamproc's result equals Kafka Streams' on the whole scenario. Where
Kafka Streams answered only part of it (the reset tool: a plan's starts; a live topology: everything but
``stages``; :mod:`streamproc_dev.conformance.coverage`) the row is ``partial``: equal to Kafka on what Kafka answered,
equal to ``expected`` on the rest, and the row lists both. Where Kafka Streams did not run (no oracle mode for the
kind, an uncovered state operation, no application-level runner yet) the row is ``pending`` with a reason, never
``pass``, even when streamproc agrees with the scenario's ``expected``. Any disagreement anywhere is a ``fail``.
Scenarios whose ``expected`` holds parts written from streamproc's own output (``expected_source``) are labelled
``snapshot``. The totals count partial and snapshot rows apart. The exit status is 1 when any row failed, 2 when
the oracle itself could not run, 0 otherwise.

The comparison rules for Kafka Streams' results (prefix and simple-class-name rules of ``error`` blocks) live with
the oracle wrapper, ``streamproc_dev/conformance/oracle.py``:
the report is a development tool run from the repository root, like the oracle it drives.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from streamproc.errors import ConfigError
from streamproc_dev.conformance import reset_tool, start_positions
from streamproc_dev.conformance import run_scenario as run_streamproc_scenario
from streamproc_dev.conformance.coverage import (
    PLANNING_INFORMATIONAL,
    Snapshot,
    kafka_answered,
    only_expected_differences,
    result_parts,
    snapshot_of,
)
from streamproc_dev.conformance.oracle import JVM_OPTIONS, READS_WALL_CLOCK
from streamproc_dev.conformance.topology import compare as compare_topology

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHARED_SCENARIOS_DIR = PROJECT_ROOT.parent / "shared" / "spec" / "scenarios"
OWN_SCENARIOS_DIR = PROJECT_ROOT / "conformance" / "scenarios"
RESULTS_DIR = PROJECT_ROOT / "conformance" / "results"
ORACLE_MODULE = "streamproc_dev.conformance.oracle"

# Runner outcomes (one cell of a row).
RAN = "ran"
PENDING = "pending"
ERROR = "error"
# Row statuses.
STATUS_PASS = "pass"
STATUS_PARTIAL = "partial"
STATUS_FAIL = "fail"
STATUS_PENDING = "pending"

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_ORACLE_UNAVAILABLE = 2

APP_RUNNER_PENDING = "the application-level oracle was not run (pass --bootstrap HOST:PORT or --app)"
APP_KINDS = frozenset({"ordering"})
APP_WALL_CLOCK = READS_WALL_CLOCK
DEFAULT_APP_WORKERS = 4
# Kinds the task-level oracle answers (``Main#commandForKind`` in conformance/).
ORACLE_KINDS = frozenset({"ordering", "state"})
# Informational fields of planning expectations (not compared; see tests/unit/conformance/test_planning_scenarios).
_PLANNING_INFORMATIONAL = PLANNING_INFORMATIONAL
_ORACLE_TIMEOUT_S = 1800


class OracleUnavailable(RuntimeError):
    """The Kafka Streams oracle could not be built or started (not a scenario's own failure)."""


@dataclass(frozen=True, slots=True)
class RunnerOutcome:
    """What one runner did with one scenario: ``ran`` (with its result), ``pending`` or ``error`` (with a reason)."""

    status: str
    result: dict[str, Any] | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.result is not None:
            out["result"] = self.result
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class Row:
    """One scenario's line in the results table."""

    scenario: str
    kind: str
    path: str
    kafka_streams_task: RunnerOutcome
    kafka_streams_app: RunnerOutcome
    streamproc: RunnerOutcome
    spec_expected: dict[str, Any] | None
    streamproc_matches_kafka_streams: bool | None
    spec_matches_kafka_streams: bool | None
    streamproc_matches_spec: bool | None
    status: str
    differences: tuple[str, ...]
    #: streamproc's result is one of the application-level results (``None``: not run or not comparable)
    streamproc_in_kafka_streams_app_set: bool | None = None
    #: the parts of ``expected`` Kafka Streams answered (and streamproc was compared with Kafka on)
    answered_by_kafka_streams: tuple[str, ...] = ()
    #: the parts of ``expected`` no oracle answered: streamproc was compared with ``expected`` there
    only_expected: tuple[str, ...] = ()
    #: the parts of ``expected`` written from streamproc's own output (``expected_source``), if any
    snapshot: Snapshot | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "kind": self.kind,
            "path": self.path,
            "kafka_streams_task": self.kafka_streams_task.to_json(),
            "kafka_streams_app": self.kafka_streams_app.to_json(),
            "streamproc": self.streamproc.to_json(),
            "spec_expected": self.spec_expected,
            "streamproc_matches_kafka_streams": self.streamproc_matches_kafka_streams,
            "spec_matches_kafka_streams": self.spec_matches_kafka_streams,
            "streamproc_matches_spec": self.streamproc_matches_spec,
            "status": self.status,
            "differences": list(self.differences),
            "streamproc_in_kafka_streams_app_set": self.streamproc_in_kafka_streams_app_set,
            "answered_by_kafka_streams": list(self.answered_by_kafka_streams),
            "only_expected": list(self.only_expected),
            "snapshot": None if self.snapshot is None else self.snapshot.to_json(),
        }


# ------------------------------------------------------------------------------------------------- comparisons


def _oracle_module() -> ModuleType:
    """``streamproc_dev.conformance.oracle`` (jar build, Kafka-result comparison)."""
    return importlib.import_module(ORACLE_MODULE)


def _simple_class_name(name: object) -> str:
    return str(name).rsplit(".", 1)[-1]


def compare_to_kafka_streams(kind: str, reference: dict[str, Any], kafka: dict[str, Any]) -> list[str]:
    """Differences between a result in the scenario format (``reference``) and Kafka Streams' (oracle) result.

    ``reference`` is a scenario's ``expected`` or streamproc's result. Ordering results and non-error state results
    follow the oracle's rules (``compare_to_expected``: message prefixes, simple class names). A state error agrees
    when the type and exception class agree and the reference quotes Kafka's message.
    """
    if kind == "state" and "error" in reference and "error" in kafka:
        return _compare_state_errors(reference["error"], kafka["error"])
    if kind == "topology":
        return _compare_topology(reference, kafka)
    if kind == "planning" and ("reset_tool_starts" in kafka or "reset_tool_failure" in kafka):
        return reset_tool.compare(reference, kafka)
    if kind == "planning" and "live_starts" in kafka:
        return start_positions.compare(reference, kafka)
    diffs: list[str] = _oracle_module().compare_to_expected(reference, kafka)
    return diffs


def _compare_topology(reference: dict[str, Any], kafka: dict[str, Any]) -> list[str]:
    """A topology result against the live app's: what Kafka Streams shows (not ``stages``), by the README's rules.

    A Kafka Streams failure agrees with a refusal of the same exception class whose ``kafka_message_contains``
    occurs in Kafka's message.
    """
    if "error" in kafka:
        if "error" not in reference:
            return [f"Kafka Streams failed ({kafka['error']}), the reference has a result"]
        want, got = reference["error"], kafka["error"]
        diffs = []
        if want.get("kafka_exception") != got.get("kafka_exception"):
            diffs.append(f"error.kafka_exception: {want.get('kafka_exception')!r} vs {got.get('kafka_exception')!r}")
        quoted = want.get("kafka_message_contains")
        if not (isinstance(quoted, str) and quoted in str(got.get("kafka_message"))):
            diffs.append(f"error: {quoted!r} does not occur in Kafka Streams' message {got.get('kafka_message')!r}")
        return diffs
    hidden = [*kafka.get("not_observable", []), "not_observable"]
    shown = {k: v for k, v in kafka.items() if k not in hidden}
    return compare_topology(shown, {k: v for k, v in reference.items() if k not in hidden})


def _compare_state_errors(reference: dict[str, Any], kafka: dict[str, Any]) -> list[str]:
    diffs = []
    if reference.get("type") != kafka.get("type"):
        diffs.append(f"error.type: {reference.get('type')!r} vs Kafka Streams {kafka.get('type')!r}")
    if "kafka_exception" in reference and _simple_class_name(reference["kafka_exception"]) != _simple_class_name(
        kafka.get("kafka_exception")
    ):
        diffs.append(f"error.kafka_exception: {reference['kafka_exception']!r} vs {kafka.get('kafka_exception')!r}")
    quoted = kafka.get("kafka_message_contains")
    if isinstance(quoted, str):
        texts = [str(reference.get(k, "")) for k in ("message", "kafka_message", "kafka_message_contains")]
        if not any(quoted in text for text in texts):
            diffs.append(f"error: Kafka Streams' message {quoted!r} is not quoted")
    return diffs


def compare_to_spec(kind: str, expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Differences between streamproc's result and a scenario's ``expected``, by the kind's comparison rules.

    The rules are those of the unit tests in ``tests/unit/conformance/`` (scenarios README): ordering results are
    equal; topology results by :func:`streamproc_dev.conformance.topology.compare`; state and planning errors by type
    and quoted texts, other planning results on the expected keys that are not informational.
    """
    if kind == "topology":
        return compare_topology(expected, actual)
    if "error" in expected and isinstance(expected["error"], dict) and kind in {"state", "planning"}:
        return _compare_spec_error(kind, expected["error"], actual)
    if kind == "planning":
        if actual.get("error") is not None:
            return [f"unexpected error {actual['error']!r}"]
        keys = [k for k in expected if k not in _PLANNING_INFORMATIONAL and k != "error"]
        return [f"{k}: expected {expected[k]!r}, got {actual.get(k)!r}" for k in keys if actual.get(k) != expected[k]]
    return _compare_equal(expected, actual)


def _compare_equal(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    diffs = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            diffs.append(f"missing key {key!r}")
        elif key not in expected:
            diffs.append(f"unexpected key {key!r}: {actual[key]!r}")
        elif expected[key] != actual[key]:
            diffs.append(f"{key}: expected {expected[key]!r}, got {actual[key]!r}")
    return diffs


def _compare_spec_error(kind: str, expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    error = actual.get("error")
    if not isinstance(error, dict):
        return [f"expected a {expected.get('type')} error, got {actual!r}"]
    diffs = []
    if error.get("type") != expected.get("type"):
        diffs.append(f"error.type: expected {expected.get('type')!r}, got {error.get('type')!r}")
    message = str(error.get("message", ""))
    for piece in expected.get("message_contains", []):
        if piece not in message:
            diffs.append(f"error.message lacks {piece!r}")
    quoted = expected.get("kafka_message_contains")
    if isinstance(quoted, str) and quoted not in message:
        diffs.append(f"error.message does not quote {quoted!r}")
    if (
        kind == "state"
        and "kafka_exception" in expected
        and error.get("kafka_exception") != expected["kafka_exception"]
    ):
        diffs.append(
            f"error.kafka_exception: expected {expected['kafka_exception']!r}, got {error.get('kafka_exception')!r}"
        )
    if kind == "planning":
        skip = {"type", "message_contains", "kafka_message_contains"} | _PLANNING_INFORMATIONAL
        for key, value in expected.items():
            if key not in skip and error.get(key) != value:
                diffs.append(f"error.{key}: expected {value!r}, got {error.get(key)!r}")
    return diffs


# --------------------------------------------------------------------------------------------------------- rows


def build_row(
    scenario: dict[str, Any],
    path: str,
    streamproc: RunnerOutcome,
    kafka_streams_task: RunnerOutcome,
    kafka_streams_app: RunnerOutcome,
    *,
    compare_kafka: Callable[[str, dict[str, Any], dict[str, Any]], list[str]] = compare_to_kafka_streams,
    compare_spec: Callable[[str, dict[str, Any], dict[str, Any]], list[str]] = compare_to_spec,
) -> Row:
    """Decide one row: ``pass`` only when streamproc ran and equals Kafka Streams on the whole result.

    - streamproc failed to run, or the oracle failed on a scenario it covers: ``fail`` (nothing was compared);
    - Kafka Streams ran: ``fail`` when streamproc differs from it; where it answered only part of the result
      (:mod:`streamproc_dev.conformance.coverage`), the other parts are compared with ``expected``: ``fail`` on a
      difference there, else ``partial``; ``pass`` when Kafka answered everything and streamproc equals it;
    - Kafka Streams did not run (pending): ``fail`` when streamproc differs from ``expected``, else ``pending``.

    ``spec_matches_kafka_streams`` is informational (a difference there is a finding for FINDINGS.md, not a
    failure of streamproc). When the application-level oracle ran (and the scenario does not read the real wall
    clock), streamproc's result must also be a member of its set of results, else the row fails. A scenario's
    ``expected_source`` labels the row ``snapshot`` (its status is decided the same way).
    """
    kind = str(scenario.get("kind"))
    expected = scenario.get("expected") if isinstance(scenario.get("expected"), dict) else None
    differences: list[str] = []
    sp_ks: bool | None = None
    spec_ks: bool | None = None
    sp_spec: bool | None = None
    snapshot: Snapshot | None = None
    try:
        snapshot = snapshot_of(scenario)
    except ConfigError as exc:
        differences.append(str(exc))
    kafka = kafka_streams_task.result if kafka_streams_task.status == RAN else None
    expected_parts = result_parts(kind, expected)
    answered: tuple[str, ...] = ()
    only_expected: tuple[str, ...] = ()
    if kafka is not None:
        answered = kafka_answered(kind, kafka, expected_parts)
        only_expected = tuple(p for p in expected_parts if p not in answered)
    if streamproc.status == RAN and streamproc.result is not None:
        spec_diffs: list[str] = []
        if expected is not None:
            spec_diffs = compare_spec(kind, expected, streamproc.result)
            sp_spec = not spec_diffs
            if kafka is None:
                differences.extend(f"streamproc vs expected: {d}" for d in spec_diffs)
        if kafka is not None:
            ks_diffs = compare_kafka(kind, streamproc.result, kafka)
            sp_ks = not ks_diffs
            differences.extend(f"streamproc vs Kafka Streams: {d}" for d in ks_diffs)
            if expected is not None and only_expected:
                rest = (
                    spec_diffs
                    if not answered
                    else only_expected_differences(kind, expected, streamproc.result, only_expected)
                )
                differences.extend(f"streamproc vs expected (Kafka Streams did not answer it): {d}" for d in rest)
    if kafka is not None and expected is not None:
        spec_ks = not compare_kafka(kind, expected, kafka)
    in_app_set: bool | None = None
    app_answer = kafka_streams_app.result if kafka_streams_app.status == RAN else None
    oracle = _oracle_module() if app_answer is not None else None
    if oracle is not None and app_answer is not None and streamproc.result is not None:
        if oracle.not_judged_live(scenario) is None:
            app_diffs: list[str] = oracle.differences_from_app_set(streamproc.result, app_answer)
            in_app_set = not app_diffs
            differences.extend(f"streamproc not in the Kafka Streams app-level set: {d}" for d in app_diffs)

    if streamproc.status != RAN:
        status = STATUS_FAIL
        differences.insert(0, f"streamproc did not produce a result: {streamproc.reason}")
    elif kafka_streams_task.status == ERROR:
        status = STATUS_FAIL
        differences.insert(0, f"the Kafka Streams oracle failed: {kafka_streams_task.reason}")
    elif kafka_streams_app.status == ERROR:
        status = STATUS_FAIL
        differences.insert(0, f"the application-level Kafka Streams oracle failed: {kafka_streams_app.reason}")
    elif differences:
        status = STATUS_FAIL
    elif sp_ks is not None:
        status = STATUS_PARTIAL if only_expected else STATUS_PASS
    else:
        status = STATUS_PENDING
    return Row(
        scenario=str(scenario.get("id", Path(path).stem)),
        kind=kind,
        path=path,
        kafka_streams_task=kafka_streams_task,
        kafka_streams_app=kafka_streams_app,
        streamproc=streamproc,
        spec_expected=expected,
        streamproc_matches_kafka_streams=sp_ks,
        spec_matches_kafka_streams=spec_ks,
        streamproc_matches_spec=sp_spec,
        status=status,
        differences=tuple(differences),
        streamproc_in_kafka_streams_app_set=in_app_set,
        answered_by_kafka_streams=answered,
        only_expected=only_expected,
        snapshot=snapshot,
    )


def exit_code(rows: Iterable[Row]) -> int:
    """1 when any row failed (streamproc differs from Kafka Streams, or from ``expected`` where it did not run)."""
    return EXIT_MISMATCH if any(row.status == STATUS_FAIL for row in rows) else EXIT_OK


def totals(rows: Sequence[Row]) -> dict[str, int]:
    """Counts for the summary: statuses (partial apart from pass), snapshot rows, what each runner really covered."""
    by_status = Counter(row.status for row in rows)
    return {
        "scenarios": len(rows),
        "pass": by_status[STATUS_PASS],
        "partial": by_status[STATUS_PARTIAL],
        "fail": by_status[STATUS_FAIL],
        "pending": by_status[STATUS_PENDING],
        "snapshot": sum(row.snapshot is not None for row in rows),
        "kafka_streams_task_ran": sum(row.kafka_streams_task.status == RAN for row in rows),
        "kafka_streams_app_ran": sum(row.kafka_streams_app.status == RAN for row in rows),
        "streamproc_in_app_set": sum(row.streamproc_in_kafka_streams_app_set is True for row in rows),
        "app_set_sizes_above_one": sum(
            row.kafka_streams_app.status == RAN
            and row.kafka_streams_app.result is not None
            and len(row.kafka_streams_app.result.get("results", [])) > 1
            for row in rows
        ),
        "streamproc_ran": sum(row.streamproc.status == RAN for row in rows),
        "streamproc_matches_spec": sum(row.streamproc_matches_spec is True for row in rows),
        "spec_differs_from_kafka_streams": sum(row.spec_matches_kafka_streams is False for row in rows),
    }


# ------------------------------------------------------------------------------------------------------ runners


def discover(directories: Iterable[Path]) -> list[Path]:
    """Every ``*.json`` scenario under the directories (recursively), in a stable order."""
    paths: list[Path] = []
    for directory in directories:
        if not directory.is_dir():
            raise FileNotFoundError(f"scenario directory {directory} does not exist; pass --scenarios DIR")
        paths.extend(sorted(p for p in directory.rglob("*.json") if p.is_file()))
    return paths


def run_streamproc(scenario: dict[str, Any]) -> RunnerOutcome:
    """streamproc's runner for the scenario's kind; an exception is an ``error`` outcome, not a crash of the report."""
    try:
        return RunnerOutcome(RAN, result=run_streamproc_scenario(scenario))
    except Exception as exc:  # noqa: BLE001 - any failure of the runner is that scenario's result
        logger.exception("streamproc failed on scenario %s", scenario.get("id"))
        return RunnerOutcome(ERROR, reason=f"{type(exc).__name__}: {exc}")


def run_oracle_batch(paths: Sequence[Path]) -> dict[Path, RunnerOutcome]:
    """Run the Kafka Streams oracle once (one JVM) over the scenarios it covers; the others are ``pending``.

    Builds the jar first when it is missing or stale (``ensure_oracle_jar``). State scenarios of ``ks_version`` 4.3
    whose operation only Kafka Streams 4.3 has (``answers_with_ks43``) go to the 4.3.1 oracle instead, in a second
    JVM (``ensure_ks43_oracle_jar``). Raises :class:`OracleUnavailable` when Java or a needed jar is not there.
    """
    outcomes: dict[Path, RunnerOutcome] = {}
    covered: list[Path] = []
    covered_ks43: list[Path] = []
    module = _oracle_module()
    for path in paths:
        scenario = json.loads(path.read_text(encoding="utf-8"))
        kind = scenario.get("kind")
        if module.answers_with_ks43(scenario):
            covered_ks43.append(path)
        elif kind in ORACLE_KINDS:
            covered.append(path)
        else:
            outcomes[path] = RunnerOutcome(PENDING, reason=f"the oracle has no mode for kind '{kind}' yet")
    if not covered and not covered_ks43:
        return outcomes
    java = shutil.which("java")
    if java is None:
        raise OracleUnavailable("java is not on PATH; install a JDK 17+ to run the Kafka Streams oracle")
    for batch, ensure_jar in ((covered, module.ensure_oracle_jar), (covered_ks43, module.ensure_ks43_oracle_jar)):
        if not batch:
            continue
        try:
            jar = ensure_jar()
        except Exception as exc:  # noqa: BLE001 - OracleError or a Maven/JDK failure: the oracle is unavailable
            raise OracleUnavailable(f"cannot build the Kafka Streams oracle: {exc}") from exc
        outcomes.update(_run_batch_jar(java, jar, batch))
    return outcomes


def _run_batch_jar(java: str, jar: Path, covered: Sequence[Path]) -> dict[Path, RunnerOutcome]:
    """One ``java -jar JAR batch FILE…`` run: one outcome per file, in argument order."""
    outcomes: dict[Path, RunnerOutcome] = {}
    proc = subprocess.run(
        [java, *JVM_OPTIONS, "-jar", str(jar), "batch", *(str(p) for p in covered)],
        capture_output=True,
        text=True,
        timeout=_ORACLE_TIMEOUT_S,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or len(lines) != len(covered):
        raise OracleUnavailable(
            f"oracle batch run of {jar.name} failed (exit {proc.returncode}, {len(lines)} of {len(covered)} "
            f"results):\n{proc.stderr[-4000:]}"
        )
    for path, line in zip(covered, lines, strict=True):
        answer = json.loads(line)
        if answer.get("file") != str(path):
            raise OracleUnavailable(f"oracle batch answered {answer.get('file')!r} where {path} was expected")
        if "result" in answer:
            outcomes[path] = RunnerOutcome(RAN, result=answer["result"])
        elif "unsupported" in answer:
            outcomes[path] = RunnerOutcome(PENDING, reason=str(answer["unsupported"]))
        else:
            outcomes[path] = RunnerOutcome(ERROR, reason=str(answer.get("oracle_error")))
    return outcomes


def run_app_oracle(
    paths: Sequence[Path],
    scenarios: dict[Path, dict[str, Any]],
    bootstrap: str,
    *,
    runs: int,
    workers: int = DEFAULT_APP_WORKERS,
) -> dict[Path, RunnerOutcome]:
    """The application-level oracle (one JVM per scenario, ``workers`` at a time) on every ordering scenario.

    Other kinds are ``pending``. A failed run is that scenario's ``error`` outcome (the row then fails).
    """
    module = _oracle_module()
    outcomes: dict[Path, RunnerOutcome] = {}
    covered = [p for p in paths if scenarios[p].get("kind") in APP_KINDS]
    for path in paths:
        if path not in covered:
            outcomes[path] = RunnerOutcome(
                PENDING, reason=f"no application-level mode for kind {scenarios[path].get('kind')!r}"
            )

    def one(path: Path) -> RunnerOutcome:
        try:
            answer: dict[str, Any] = module.run_oracle_app(bootstrap, path, runs)
        except Exception as exc:  # noqa: BLE001 - OracleError or a timeout: that scenario's outcome
            logger.warning("application-level oracle failed on %s: %s", path, exc)
            return RunnerOutcome(ERROR, reason=f"{type(exc).__name__}: {str(exc)[:2000]}")
        return RunnerOutcome(RAN, result=answer, reason=module.not_judged_live(scenarios[path]))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for path, outcome in zip(covered, pool.map(one, covered), strict=True):
            outcomes[path] = outcome
    return outcomes


def run_restore_oracle(
    paths: Sequence[Path], scenarios: dict[Path, dict[str, Any]], bootstrap: str
) -> dict[Path, RunnerOutcome]:
    """Kafka Streams' answer to every ``restore_plan`` scenario: real ``KafkaStreams`` apps on ``bootstrap``.

    One JVM per Kafka Streams version (``run_oracle_restore``, ``RestorePlanRunner``; ``ks_version`` 4.3 scenarios
    run in the 4.3.1 jar). Only the ``restore_plan`` paths get an outcome (the task-level oracle has no answer for
    them): ``ran`` with the live result, ``pending`` when the live mode cannot reproduce the scenario (a layout it
    refuses to approximate), ``error`` when it failed on it or could not run.
    """
    module = _oracle_module()
    return _live_outcomes(paths, scenarios, bootstrap, module.is_restore_plan, module.run_oracle_restore, "restore")


def run_topology_oracle(
    paths: Sequence[Path], scenarios: dict[Path, dict[str, Any]], bootstrap: str
) -> dict[Path, RunnerOutcome]:
    """Kafka Streams' answer to every ``topology`` scenario: its program as a real ``KafkaStreams`` app.

    One JVM (``run_oracle_topology``, ``TopologyRunner``); outcomes as :func:`run_restore_oracle`'s (``pending``
    when the oracle has no Java program for the scenario).
    """
    module = _oracle_module()
    return _live_outcomes(paths, scenarios, bootstrap, module.is_topology, module.run_oracle_topology, "topology")


def run_reset_tool_oracle(
    paths: Sequence[Path], scenarios: dict[Path, dict[str, Any]], bootstrap: str
) -> dict[Path, RunnerOutcome]:
    """Kafka's reset tool's answer to the start positions of the ``planning`` scenarios it can rebuild.

    ``streamproc_dev.conformance.reset_tool``: the scenario's topics, log starts and committed offsets on the broker,
    then ``StreamsResetter --dry-run``. The others are ``pending`` with the reason (a refusal, no reset mode, a log
    layout it cannot build).
    """
    from streamproc_dev.conformance import reset_tool

    return _live_outcomes(
        paths, scenarios, bootstrap, lambda s: s.get("kind") == "planning", reset_tool.run_reset_tool, "reset tool"
    )


def run_start_position_oracle(
    paths: Sequence[Path], scenarios: dict[Path, dict[str, Any]], bootstrap: str
) -> dict[Path, RunnerOutcome]:
    """A real ``KafkaStreams`` app's start positions for the ``planning`` scenarios that start from committed offsets.

    ``streamproc_dev.conformance.start_positions`` (the jar's ``startpos`` mode): the scenario's topics, logs and
    commits on the broker, then the app; where it starts per partition, or how it fails. Refusals of a requested end
    stay ``pending`` with the app's starts in the reason.
    """
    return _live_outcomes(
        paths, scenarios, bootstrap, start_positions.covers, start_positions.run_start_positions, "startpos"
    )


def _live_outcomes(
    paths: Sequence[Path],
    scenarios: dict[Path, dict[str, Any]],
    bootstrap: str,
    covers: Callable[[dict[str, Any]], bool],
    run: Callable[[str, list[Path]], dict[Path, dict[str, Any]]],
    mode: str,
) -> dict[Path, RunnerOutcome]:
    """One live oracle mode's answers as outcomes of the paths it ``covers``; a failed JVM fails all of them."""
    covered = [p for p in paths if covers(scenarios[p])]
    if not covered:
        return {}
    try:
        answers = run(bootstrap, covered)
    except Exception as exc:  # noqa: BLE001 - OracleError or a timeout: every row of this mode fails
        logger.warning("live %s oracle failed: %s", mode, exc)
        failed = RunnerOutcome(ERROR, reason=f"live {mode} oracle: {type(exc).__name__}: {str(exc)[:2000]}")
        return dict.fromkeys(covered, failed)
    outcomes: dict[Path, RunnerOutcome] = {}
    for path in covered:
        answer = answers[path]
        if "result" in answer:
            outcomes[path] = RunnerOutcome(RAN, result=answer["result"], reason="live KafkaStreams app")
        elif "unsupported" in answer:
            outcomes[path] = RunnerOutcome(PENDING, reason=f"live {mode} mode: {answer['unsupported']}")
        else:
            outcomes[path] = RunnerOutcome(ERROR, reason=f"live {mode} mode: {answer.get('oracle_error')}")
    return outcomes


# ------------------------------------------------------------------------------------------------------ writing


def _relative(path: Path) -> str:
    for base in (PROJECT_ROOT, PROJECT_ROOT.parent):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return str(path)


def _app_cell(outcome: RunnerOutcome) -> str:
    if outcome.status == RAN and outcome.result is not None:
        count = len(outcome.result.get("results", []))
        text = f"ran: {count} distinct result{'s' if count != 1 else ''}"
        if outcome.reason == APP_WALL_CLOCK:
            return text + " (wall clock, not judged)"
        return text + (" (no leader epoch, not judged)" if outcome.reason is not None else "")
    return "pending" if outcome.status == PENDING else _cell(outcome)


def _cell(outcome: RunnerOutcome) -> str:
    return outcome.status if outcome.reason is None or outcome.status == RAN else f"{outcome.status}: {outcome.reason}"


def summary_line(counts: dict[str, int]) -> str:
    """``238 scenarios: 200 pass, 21 partial, 0 fail, 17 pending; 9 snapshot`` (``latest.md`` and the console)."""
    return (
        f"{counts['scenarios']} scenarios: {counts['pass']} pass, {counts['partial']} partial, {counts['fail']} fail, "
        f"{counts['pending']} pending; {counts['snapshot']} snapshot"
    )


def _status_cell(row: Row) -> str:
    status = f"**{row.status}**" if row.status == STATUS_FAIL else row.status
    return status + (" (snapshot)" if row.snapshot is not None else "")


def _compared_cell(row: Row) -> str:
    """What streamproc was compared with: Kafka's parts, and the parts only ``expected`` answered."""
    if row.kafka_streams_task.status != RAN:
        return "expected" if row.streamproc_matches_spec is not None else "—"
    if not row.only_expected:
        return "Kafka Streams: all"
    kafka = ", ".join(row.answered_by_kafka_streams) or "nothing"
    return f"Kafka Streams: {kafka}; expected only: {', '.join(row.only_expected)}"


def _flag(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "**no**")


def _behaviour_text(row: Row) -> str:
    """What Kafka did (a planning oracle's ``kafka_behaviour``) next to streamproc's plan or refusal."""
    kafka = row.kafka_streams_task.result or {}
    behaviour = kafka.get("kafka_behaviour")
    if not behaviour:
        return ""
    mine = row.streamproc.result or {}
    refusal = mine.get("error") if isinstance(mine.get("error"), dict) else None
    where = ", ".join(refusal.get("partitions") or refusal.get("topics") or []) if refusal else ""
    said = (
        f"streamproc refuses ({refusal.get('type')}{' on ' + where if where else ''})"
        if refusal
        else "streamproc plans"
    )
    return f"Kafka: {behaviour}; {said}"


def render_markdown(rows: Sequence[Row], summary: dict[str, Any]) -> str:
    """``latest.md``: the totals, then one table line per scenario."""
    counts = summary["totals"]
    lines = [
        "# Conformance results",
        "",
        f"Generated {summary['generated_at']} by `python -m streamproc_dev.conformance.report` in "
        f"{summary['duration_s']:.1f} s (Kafka Streams oracle {summary['oracle_duration_s']:.1f} s, one JVM; "
        f"streamproc {summary['streamproc_duration_s']:.1f} s).",
        "",
        f"**{summary_line(counts)}**",
        "",
        "- pass: streamproc = Kafka Streams on the whole result. partial: Kafka Streams answered only some parts "
        "(streamproc = Kafka there); streamproc = `expected` on the others (column *compared*). pending: Kafka "
        "Streams did not run; streamproc = `expected`, not counted as passing. fail: any difference anywhere.",
        "- snapshot: parts of the scenario's `expected` were written from streamproc's own output "
        "(`expected_source`); they pin streamproc's behaviour, no oracle checked them.",
        f"- Kafka Streams task-level oracle ran {counts['kafka_streams_task_ran']}; application-level runner ran "
        f"{counts['kafka_streams_app_ran']}; streamproc ran {counts['streamproc_ran']}.",
        f"- streamproc = `expected`: {counts['streamproc_matches_spec']}; `expected` ≠ Kafka Streams: "
        f"{counts['spec_differs_from_kafka_streams']} (see conformance/FINDINGS.md).",
        "",
        "| scenario | kind | Kafka Streams (task) | Kafka Streams (app) | streamproc | streamproc = KS | spec = KS "
        "| compared | status |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        cells = [
            f"`{row.scenario}`",
            row.kind,
            _cell(row.kafka_streams_task),
            _app_cell(row.kafka_streams_app),
            _cell(row.streamproc),
            _flag(row.streamproc_matches_kafka_streams),
            _flag(row.spec_matches_kafka_streams),
            _compared_cell(row),
            _status_cell(row),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    failures = [row for row in rows if row.status == STATUS_FAIL]
    if failures:
        lines += ["", "## Failures", ""]
        for row in failures:
            lines.append(f"- `{row.scenario}`:")
            lines.extend(f"  - {d}".replace("\n", " ") for d in row.differences[:20])
    partial = [row for row in rows if row.status == STATUS_PARTIAL]
    if partial:
        lines += ["", "## Partial rows", ""]
        for row in partial:
            lines.append(
                f"- `{row.scenario}`: Kafka Streams answered {', '.join(row.answered_by_kafka_streams) or 'nothing'}; "
                f"only `expected` answered {', '.join(row.only_expected)}"
                + ("" if row.snapshot is None else f" (snapshot of streamproc: {', '.join(row.snapshot.parts)})")
            )
    behaviours = [(row, _behaviour_text(row)) for row in rows if _behaviour_text(row)]
    if behaviours:
        lines += ["", "## What Kafka did (planning rows)", ""]
        lines.extend(f"- `{row.scenario}` ({row.status}): {text}" for row, text in behaviours)
    snapshots = [row for row in rows if row.snapshot is not None]
    if snapshots:
        lines += ["", "## Snapshot scenarios", ""]
        lines.extend(
            f"- `{row.scenario}` ({row.status}): `expected` {', '.join(row.snapshot.parts)} from streamproc"
            for row in snapshots
            if row.snapshot is not None
        )
    if counts["kafka_streams_app_ran"]:
        lines += [
            "",
            f"Application-level column: a real KafkaStreams app, {summary.get('app_runs')} runs per ordering scenario "
            "with different max.poll.records and fetch sizes; the cell counts the distinct results. streamproc was in "
            f"the set for {counts['streamproc_in_app_set']} scenarios; {counts['app_set_sizes_above_one']} sets have "
            "more than one result.",
            "",
        ]
    else:
        lines += ["", f"Application-level column: {APP_RUNNER_PENDING}.", ""]
    return "\n".join(lines)


def run_report(
    directories: Sequence[Path],
    results_dir: Path,
    *,
    use_oracle: bool = True,
    bootstrap: str | None = None,
    app_runs: int = 4,
) -> tuple[list[Row], int]:
    """Run everything, write ``latest.json`` and ``latest.md`` into ``results_dir``, return the rows and exit code.

    With ``bootstrap`` the ordering scenarios also run through the application-level oracle, ``app_runs`` times each.
    """
    started = time.monotonic()
    paths = discover(directories)
    scenarios = {path: json.loads(path.read_text(encoding="utf-8")) for path in paths}

    oracle_started = time.monotonic()
    if use_oracle:
        task = run_oracle_batch(paths)
        if bootstrap is not None:
            task.update(run_restore_oracle(paths, scenarios, bootstrap))
            task.update(run_topology_oracle(paths, scenarios, bootstrap))
            task.update(run_reset_tool_oracle(paths, scenarios, bootstrap))
            task.update(run_start_position_oracle(paths, scenarios, bootstrap))
    else:
        task = {path: RunnerOutcome(PENDING, reason="the oracle was not run (--no-oracle)") for path in paths}
    oracle_s = time.monotonic() - oracle_started

    streamproc_started = time.monotonic()
    streamproc = {path: run_streamproc(scenarios[path]) for path in paths}
    streamproc_s = time.monotonic() - streamproc_started

    app_started = time.monotonic()
    if bootstrap is not None:
        app = run_app_oracle(paths, scenarios, bootstrap, runs=app_runs)
    else:
        app = {path: RunnerOutcome(PENDING, reason=APP_RUNNER_PENDING) for path in paths}
    app_s = time.monotonic() - app_started
    rows = [build_row(scenarios[p], _relative(p), streamproc[p], task[p], app[p]) for p in paths]
    summary: dict[str, Any] = {
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "scenario_directories": [_relative(d) for d in directories],
        "duration_s": round(time.monotonic() - started, 3),
        "oracle_duration_s": round(oracle_s, 3),
        "streamproc_duration_s": round(streamproc_s, 3),
        "app_duration_s": round(app_s, 3),
        "app_runs": app_runs if bootstrap is not None else 0,
        "totals": totals(rows),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    document = {**summary, "rows": [row.to_json() for row in rows]}
    (results_dir / "latest.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    (results_dir / "latest.md").write_text(render_markdown(rows, summary), "utf-8")
    logger.info("conformance report: %s in %.1f s", summary["totals"], summary["duration_s"])
    return rows, exit_code(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m streamproc_dev.conformance.report``."""
    parser = argparse.ArgumentParser(
        prog="python -m streamproc_dev.conformance.report", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--scenarios",
        type=Path,
        action="append",
        help=f"scenario directory (repeatable; default {SHARED_SCENARIOS_DIR} and {OWN_SCENARIOS_DIR})",
    )
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="output directory for latest.json/.md")
    parser.add_argument("--no-oracle", action="store_true", help="do not run Kafka Streams (every row pending/fail)")
    parser.add_argument("--bootstrap", help="a Kafka broker for the application-level oracle (ordering scenarios)")
    parser.add_argument(
        "--app", action="store_true", help="start a throw-away broker (streamproc_dev.broker) for the application level"
    )
    parser.add_argument(
        "--broker",
        action="store_true",
        help="start a private broker (streamproc_dev.broker) for every live mode (restore_plan scenarios through real "
        "KafkaStreams apps, the application level) and stop it afterwards; --bootstrap uses a running one instead",
    )
    parser.add_argument("--app-runs", type=int, default=4, help="live runs per scenario (default 4)")
    parser.add_argument(
        "--log-level",
        default="CRITICAL",
        help="logging level on stderr (default CRITICAL: the "
        "runners log every drop and failure the scenarios provoke at WARN/ERROR)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    directories = args.scenarios or [SHARED_SCENARIOS_DIR, OWN_SCENARIOS_DIR]
    broker_dir: Path | None = None
    bootstrap: str | None = args.bootstrap
    try:
        if bootstrap is None and (args.app or args.broker):
            from streamproc_dev import broker

            broker_dir = Path(tempfile.mkdtemp(prefix="streamproc-conformance-broker-"))
            bootstrap = broker.start(broker_dir).address
        rows, code = run_report(
            directories, args.results, use_oracle=not args.no_oracle, bootstrap=bootstrap, app_runs=args.app_runs
        )
    except OracleUnavailable as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return EXIT_ORACLE_UNAVAILABLE
    finally:
        if broker_dir is not None:
            from streamproc_dev import broker

            broker.stop(broker_dir)
            shutil.rmtree(broker_dir, ignore_errors=True)
    counts = totals(rows)
    print(f"{summary_line(counts)}; results in {args.results / 'latest.md'}")
    for row in rows:
        if row.status == STATUS_FAIL:
            print(f"FAIL {row.scenario}: " + "; ".join(row.differences[:3]), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
