"""Run the Kafka Streams oracle (``conformance/``, real Kafka Streams 4.2.2 classes) on a scenario file.

The oracle is a Java jar built by Maven from ``conformance/pom.xml``. :func:`ensure_oracle_jar` builds it when it
is missing or older than any of its sources; :func:`run_oracle` runs it on one scenario and returns its JSON
result, which has the shape of the scenario's ``expected``; :func:`compare_to_expected` lists the differences
between such a result and an ``expected`` block, with the scenario format's rules for ``error`` blocks
(``../shared/spec/scenarios/README.md``). Later code uses the same functions to compare streamproc with Kafka
Streams.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = PROJECT_ROOT / "conformance"
POM = CONFORMANCE_DIR / "pom.xml"
ORACLE_JAR = CONFORMANCE_DIR / "target" / "streamproc-oracle.jar"
FINDINGS = CONFORMANCE_DIR / "FINDINGS.md"
FINDINGS_RESULTS_DIR = CONFORMANCE_DIR / "findings"

# The jar's sub-commands, and the scenario kinds each one answers.
ORACLE_KINDS = {"task": "task", "ordering": "task", "state": "state"}
# Fields of an ``error`` block that are compared by rule rather than by equality.
ERROR_MESSAGE_PREFIX = "kafka_message_prefix"
ERROR_EXCEPTION = "kafka_exception"
ERROR_MESSAGE_CONTAINS = "kafka_message_contains"

_BUILD_TIMEOUT_S = 1800
_RUN_TIMEOUT_S = 300
# Each run is a short-lived JVM: C1 only and the serial GC start faster; they do not change any result.
_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class OracleError(RuntimeError):
    """The oracle could not be built or did not produce a result (not a scenario's expected ``error``)."""


def _sources() -> list[Path]:
    return [POM, *sorted(p for p in (CONFORMANCE_DIR / "src").rglob("*") if p.is_file())]


def oracle_jar_is_fresh() -> bool:
    """True when the jar exists and is newer than the POM and every source file."""
    if not ORACLE_JAR.is_file():
        return False
    built = ORACLE_JAR.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in _sources())


def ensure_oracle_jar() -> Path:
    """Build the oracle jar with Maven unless it is already newer than all its sources; return its path.

    Maven's downloads go to ``~/.m2``; the build output to ``conformance/target/`` (git-ignored).
    """
    if oracle_jar_is_fresh():
        logger.info("oracle jar %s is up to date, skipping Maven", ORACLE_JAR)
        return ORACLE_JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        raise OracleError("Maven (mvn) is not on PATH; install it (apt-get install maven) to build the oracle")
    logger.info("building the Kafka Streams oracle with %s", mvn)
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(POM), "package", "-DskipTests"],
        capture_output=True,
        text=True,
        timeout=_BUILD_TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0 or not ORACLE_JAR.is_file():
        raise OracleError(
            f"mvn package failed for {POM} (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    # Maven keeps the jar's mtime when nothing was recompiled; touch it so the freshness check holds.
    os.utime(ORACLE_JAR)
    return ORACLE_JAR


def run_oracle(kind: str, scenario_path: Path | str) -> dict[str, Any]:
    """Run the oracle on one scenario file and return its result (the scenario's ``expected`` shape).

    ``kind`` is the jar's sub-command (``task`` or ``state``) or the scenario kind it answers (``ordering``).
    A Kafka Streams failure that the scenario expects comes back as ``{"error": {...}}`` inside the result; an
    oracle failure (bad scenario, unsupported operation, crash) raises :class:`OracleError`.
    """
    command = ORACLE_KINDS.get(kind)
    if command is None:
        raise OracleError(f"unknown oracle kind {kind!r}; use one of {sorted(ORACLE_KINDS)}")
    jar = ensure_oracle_jar()
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; install a JDK 17+ to run the oracle")
    proc = subprocess.run(
        [java, *_JVM_OPTIONS, "-jar", str(jar), command, str(scenario_path)],
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT_S,
        check=False,
    )
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise OracleError(
            f"oracle {command} {scenario_path}: no JSON on stdout (exit {proc.returncode}): {exc}\n"
            f"{proc.stderr[-4000:]}"
        ) from exc
    if not isinstance(result, dict):
        raise OracleError(f"oracle {command} {scenario_path}: expected a JSON object, got {type(result).__name__}")
    if proc.returncode != 0 or "oracle_error" in result:
        raise OracleError(
            f"oracle {command} {scenario_path} failed (exit {proc.returncode}): "
            f"{result.get('oracle_error')}\n{proc.stderr[-4000:]}"
        )
    return result


def _simple_class_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def compare_to_expected(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """List every difference between an ``expected`` block and an oracle result (empty = they agree).

    Keys must match exactly and values must be equal, except in ``error``: ``kafka_message_prefix`` must be a
    prefix of the actual message; a string ``kafka_message_contains`` (state scenarios) must occur in the actual
    message; and ``kafka_exception`` is compared by simple class name (scenarios give the fully qualified name,
    the oracle prints the simple one).
    """
    diffs: list[str] = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            diffs.append(f"missing key {key!r}")
        elif key not in expected:
            diffs.append(f"unexpected key {key!r}: {actual[key]!r}")
        elif key == "error" and isinstance(expected[key], dict) and isinstance(actual[key], dict):
            diffs.extend(_compare_error(expected[key], actual[key]))
        elif expected[key] != actual[key]:
            diffs.append(f"{key}: expected {expected[key]!r}, got {actual[key]!r}")
    return diffs


def _compare_error(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    diffs: list[str] = []
    for key in sorted(set(expected) | set(actual)):
        exp, act = expected.get(key), actual.get(key)
        if key not in actual:
            diffs.append(f"error: missing key {key!r}")
        elif key not in expected:
            diffs.append(f"error: unexpected key {key!r}: {act!r}")
        elif key == ERROR_MESSAGE_PREFIX:
            if not (isinstance(act, str) and isinstance(exp, str) and act.startswith(exp)):
                diffs.append(f"error.{key}: expected a message starting {exp!r}, got {act!r}")
        elif key == ERROR_MESSAGE_CONTAINS and isinstance(exp, str):
            # state scenarios give one substring of Kafka's message; the oracle prints the whole message
            if not (isinstance(act, str) and exp in act):
                diffs.append(f"error.{key}: expected a message containing {exp!r}, got {act!r}")
        elif key == ERROR_EXCEPTION:
            if not (isinstance(act, str) and isinstance(exp, str) and _simple_class_name(exp) == act):
                diffs.append(f"error.{key}: expected {exp!r}, got {act!r}")
        elif exp != act:
            diffs.append(f"error.{key}: expected {exp!r}, got {act!r}")
    return diffs


def documented_findings() -> dict[str, Path]:
    """Scenario id -> file holding Kafka Streams' documented result, for each row of ``conformance/FINDINGS.md``.

    A row is a Markdown table line whose first cell is a back-quoted scenario id; its Kafka Streams result is
    ``conformance/findings/<id>.json``.
    """
    findings: dict[str, Path] = {}
    if not FINDINGS.is_file():
        return findings
    for line in FINDINGS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells and cells[0].startswith("`") and cells[0].endswith("`"):
            scenario_id = cells[0].strip("`")
            findings[scenario_id] = FINDINGS_RESULTS_DIR / f"{scenario_id}.json"
    return findings
