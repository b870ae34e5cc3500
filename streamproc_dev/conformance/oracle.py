"""Run the Kafka Streams oracle (``conformance/``, real Kafka Streams 4.2.2 classes) on a scenario file.

The oracle is a Java jar built by Maven from ``conformance/pom.xml``. :func:`ensure_oracle_jar` builds it when it
is missing or older than any of its sources; :func:`run_oracle` runs it on one scenario and returns its JSON
result, which has the shape of the scenario's ``expected``; :func:`compare_to_expected` lists the differences
between such a result and an ``expected`` block, with the scenario format's rules for ``error`` blocks
(``../shared/spec/scenarios/README.md``). Later code uses the same functions to compare streamproc with Kafka
Streams.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
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
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class OracleError(RuntimeError):
    """The oracle could not be built or did not produce a result (not a scenario's expected ``error``)."""


#: The live restore runner's sources: the 4.3 oracle's POM compiles these files of the 4.2.2 oracle too.
KS43_BORROWED_SOURCES = tuple(
    CONFORMANCE_DIR / "src" / "main" / "java" / "dev" / "streamproc" / "oracle" / name
    for name in ("RestorePlanRunner.java", "LiveBatch.java", "BrokerTopics.java")
)


#: The example applications' Avro schemas, which the 4.2.2 oracle compiles and carries (``examples/``).
EXAMPLE_SCHEMAS_DIR = CONFORMANCE_DIR.parent / "examples" / "kafka_streams_examples" / "avro"


def _sources_of(pom: Path) -> list[Path]:
    """The POM, every file under its ``src/`` and the sources it borrows: what a jar must be newer than."""
    own = sorted(p for p in (pom.parent / "src").rglob("*") if p.is_file())
    if pom.parent == KS43_RUNNER_DIR:
        borrowed = list(KS43_BORROWED_SOURCES)
    else:
        borrowed = sorted(EXAMPLE_SCHEMAS_DIR.glob("*.avsc"))
    return [pom, *own, *borrowed]


def _jar_is_fresh(jar: Path, pom: Path) -> bool:
    if not jar.is_file():
        return False
    built = jar.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in _sources_of(pom))


def oracle_jar_is_fresh() -> bool:
    """True when the jar exists and is newer than the POM and every source file."""
    return _jar_is_fresh(ORACLE_JAR, POM)


def _build_jar(pom: Path, jar: Path) -> Path:
    """``mvn package`` for ``pom`` unless ``jar`` is newer than its sources; ``jar``'s path.

    Callers in parallel (the report's application-level workers, pytest-xdist workers) would otherwise run Maven
    at once on one ``target/``, and the shade step of one replaces the jar under another ("Could not replace
    original artifact with shaded artifact"): an exclusive lock on ``target/.build.lock`` lets the first build and
    the others find the jar fresh. Maven's downloads go to ``~/.m2``; the output to ``target/`` (git-ignored).
    """
    lock_path = pom.parent / "target" / ".build.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _jar_is_fresh(jar, pom):
            logger.info("oracle jar %s is up to date, skipping Maven", jar)
            return jar
        mvn = shutil.which("mvn")
        if mvn is None:
            raise OracleError(f"Maven (mvn) is not on PATH; install it (apt-get install maven) to build {jar.name}")
        logger.info("building %s with %s", jar.name, mvn)
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(pom), "package", "-DskipTests"],
            capture_output=True,
            text=True,
            timeout=_BUILD_TIMEOUT_S,
            check=False,
        )
        if proc.returncode != 0 or not jar.is_file():
            raise OracleError(
                f"mvn package failed for {pom} (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            )
        # Maven keeps the jar's mtime when nothing was recompiled; touch it so the freshness check holds.
        os.utime(jar)
        return jar


def ensure_oracle_jar() -> Path:
    """The Kafka Streams 4.2.2 oracle jar, built with Maven unless newer than all its sources (:func:`_build_jar`)."""
    return _build_jar(POM, ORACLE_JAR)


#: The Kafka Streams 4.3.1 oracle (``conformance/ks43/runner``, ``Ks43Main``): the state operations only 4.3 has.
KS43_RUNNER_DIR = CONFORMANCE_DIR / "ks43" / "runner"
KS43_POM = KS43_RUNNER_DIR / "pom.xml"
KS43_ORACLE_JAR = KS43_RUNNER_DIR / "target" / "streamproc-oracle-ks43.jar"
#: State operations of ``ks_version`` 4.3 scenarios that the 4.3 oracle answers (the 4.2.2 jar cannot).
KS43_STATE_OPERATIONS = frozenset({"offsets_cf_entry", "register_stores"})


def answers_with_ks43(scenario: dict[str, Any]) -> bool:
    """True when the scenario belongs to the Kafka Streams 4.3 oracle (a 4.3-only state operation)."""
    return (
        scenario.get("kind") == "state"
        and str(scenario.get("ks_version")) == "4.3"
        and scenario.get("operation") in KS43_STATE_OPERATIONS
    )


def ensure_ks43_oracle_jar() -> Path:
    """The Kafka Streams 4.3.1 oracle jar, built with Maven unless newer than its POM and sources."""
    return _build_jar(KS43_POM, KS43_ORACLE_JAR)


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
        [java, *JVM_OPTIONS, "-jar", str(jar), command, str(scenario_path)],
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


# --------------------------------------------------------------------------------------------- application level

#: The jar's application-level sub-command (``AppRunner``): a real ``KafkaStreams`` instance against a broker.
APP_COMMAND = "app"
#: Runs per scenario by default: Kafka Streams' defaults, one record per poll, one batch per fetch, three per poll.
DEFAULT_APP_RUNS = 4
_APP_TIMEOUT_S = 600
#: Scenario settings under which a live run reads the real wall clock, so its results cannot equal a replay's.
WALL_CLOCK_EXTRACTOR = "WallclockTimestampExtractor"
WALL_CLOCK_TIME = "WALL_CLOCK_TIME"


def run_oracle_app(
    bootstrap: str,
    scenario_path: Path | str,
    runs: int = DEFAULT_APP_RUNS,
    *,
    max_poll_records: int | None = None,
    fetch_max_bytes: int | None = None,
) -> dict[str, Any]:
    """Run an ordering scenario ``runs`` times through a real ``KafkaStreams`` app on ``bootstrap``.

    Returns the jar's answer: ``results`` (the distinct results, each in the scenario's ``expected`` shape without
    the keys in ``not_observable``), ``runs`` (per run: ``max_poll_records``, ``fetch_max_bytes``, ``result`` =
    index into ``results``, ``elapsed_ms``) and ``not_observable`` (keys a live app cannot show, ``skip_steps``).
    Without ``max_poll_records``/``fetch_max_bytes`` the runs cycle through Kafka Streams' defaults and small
    polls and fetches (``AppRunner``), so the set shows what fetch boundaries and timing change.
    """
    jar = ensure_oracle_jar()
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; install a JDK 17+ to run the oracle")
    command = [java, *JVM_OPTIONS, "-jar", str(jar), APP_COMMAND, bootstrap, str(scenario_path), "--repeat", str(runs)]
    if max_poll_records is not None:
        command += ["--max-poll-records", str(max_poll_records)]
    if fetch_max_bytes is not None:
        command += ["--fetch-max-bytes", str(fetch_max_bytes)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=_APP_TIMEOUT_S, check=False)
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise OracleError(
            f"oracle app {scenario_path}: no JSON on stdout (exit {proc.returncode}): {exc}\n{proc.stderr[-4000:]}"
        ) from exc
    if not isinstance(answer, dict) or proc.returncode != 0 or "oracle_error" in answer:
        error = answer.get("oracle_error") if isinstance(answer, dict) else answer
        raise OracleError(f"oracle app {scenario_path} failed (exit {proc.returncode}): {error}\n{proc.stderr[-4000:]}")
    return answer


def observable(result: dict[str, Any], not_observable: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``result`` without the keys a live app cannot show (``AppRunner``'s ``not_observable``)."""
    return {k: v for k, v in result.items() if k not in not_observable}


def differences_from_app_set(result: dict[str, Any], app_answer: dict[str, Any]) -> list[str]:
    """Empty when ``result`` (streamproc's or a scenario's) equals one member of the app-level set, else why not.

    Only the observable keys are compared, with :func:`compare_to_expected`'s rules for ``error`` blocks; nothing
    outside the set is accepted. The explanation lists the differences from each member.
    """
    hidden = list(app_answer.get("not_observable", []))
    mine = observable(result, hidden)
    members: list[dict[str, Any]] = list(app_answer.get("results", []))
    explanations: list[str] = []
    for index, member in enumerate(members):
        diffs = compare_to_expected(mine, observable(member, hidden))
        if not diffs:
            return []
        explanations.append(f"app result {index}: " + "; ".join(diffs[:5]))
    return explanations or ["the application-level oracle produced no result"]


#: Why a live run's results cannot judge a replay of a scenario whose records carry no leader epoch.
NO_LEADER_EPOCH = (
    "the expected result quotes records without a leader epoch (leaderEpoch = null), where a live broker always "
    "assigns one: its results are shown, streamproc is not judged by them (the leader_epoch variants are)"
)

#: Why a live run's results cannot judge a replay that depends on the wall clock (D-4).
READS_WALL_CLOCK = (
    "the live app reads the real wall clock (D-4): its results are shown, streamproc is not judged by them"
)


def not_judged_live(scenario: dict[str, Any]) -> str | None:
    """Why the application-level set cannot judge streamproc on ``scenario`` (``None``: it judges).

    A live run differs from any replay, by construction, when it reads the real wall clock
    (:func:`depends_on_wall_clock`), or when the scenario's expectation quotes a ``ConsumerRecord`` without a leader
    epoch (an error message with ``leaderEpoch = null``): every record a broker returns has one, so only the
    scenario's ``leader_epoch`` variant can be compared live.
    """
    if depends_on_wall_clock(scenario):
        return READS_WALL_CLOCK
    if "leaderEpoch = null" in json.dumps(scenario.get("expected", {})):
        return NO_LEADER_EPOCH
    return None


def depends_on_wall_clock(scenario: dict[str, Any]) -> bool:
    """True when a live run reads the real wall clock in a way a replay's virtual clock cannot reproduce (D-4).

    ``WallclockTimestampExtractor`` stamps records with the real time, and a ``WALL_CLOCK_TIME`` schedule fires
    live whenever real time passes its interval (even before the first record), where the replay never fires it.
    The app-level set then need not hold the replay's result; the report shows the set without judging streamproc
    by it.
    """
    config = scenario.get("config")
    if isinstance(config, dict) and config.get("timestamp_extractor") == WALL_CLOCK_EXTRACTOR:
        return True
    punctuations = scenario.get("punctuations")
    return isinstance(punctuations, list) and any(
        isinstance(p, dict) and p.get("type") == WALL_CLOCK_TIME for p in punctuations
    )


# ---------------------------------------------------------------------------------------------- live restore plans

#: The jar's live restore sub-command (``RestorePlanRunner``): a real ``KafkaStreams`` app per ``restore_plan``.
RESTORE_COMMAND = "restore"
#: Scenario operation the live restore mode answers.
RESTORE_PLAN_OPERATION = "restore_plan"
#: Apps started at a time by one ``restore`` JVM (each is a real ``KafkaStreams`` with four Kafka clients).
DEFAULT_RESTORE_PARALLELISM = 2
_RESTORE_TIMEOUT_S = 1800


#: The jar's live topology sub-command (``TopologyRunner``): the scenario's program as a real ``KafkaStreams`` app.
TOPOLOGY_COMMAND = "topology"


def is_topology(scenario: dict[str, Any]) -> bool:
    """True for the scenarios the live topology mode answers."""
    return scenario.get("kind") == "topology"


def is_restore_plan(scenario: dict[str, Any]) -> bool:
    """True for the scenarios the live restore mode answers (``state``/``restore_plan``)."""
    return scenario.get("kind") == "state" and scenario.get("operation") == RESTORE_PLAN_OPERATION


def run_oracle_restore(
    bootstrap: str,
    paths: list[Path] | tuple[Path, ...],
    *,
    parallelism: int = DEFAULT_RESTORE_PARALLELISM,
    poll_ms: int | None = None,
) -> dict[Path, dict[str, Any]]:
    """Run ``restore_plan`` scenarios through real Kafka Streams apps on ``bootstrap``: one JVM per version.

    Per scenario the jar (``RestorePlanRunner``) builds the changelog with exactly the scenario's offsets, writes the
    task directory and ``.checkpoint``, starts a ``KafkaStreams`` until the task is RUNNING and reads what happened
    from Kafka Streams' log lines and a ``StateRestoreListener``. Scenarios of ``ks_version`` 4.3 run in the 4.3.1
    jar, the others in the 4.2.2 jar. Returns each path's answer: ``{"result": …, "observations": …}`` (``result``
    in the scenario's ``expected`` shape, ``observations`` the evidence: restore callbacks, events, whether a
    sentinel key planted in the store survived), ``{"unsupported": reason}`` or ``{"oracle_error": …}``. Raises
    :class:`OracleError` when a JVM itself fails. ``poll_ms`` sets the apps' ``poll.ms`` (default: Kafka's); a
    scenario whose answer shows the restore-poll race (:func:`_restore_poll_raced`) is asked again.
    """
    by_jar: dict[bool, list[Path]] = {False: [], True: []}
    for path in paths:
        scenario = json.loads(Path(path).read_text(encoding="utf-8"))
        by_jar[str(scenario.get("ks_version", "4.2")) == "4.3"].append(Path(path))
    answers: dict[Path, dict[str, Any]] = {}
    for ks43, batch in by_jar.items():
        if batch:
            jar = ensure_ks43_oracle_jar() if ks43 else ensure_oracle_jar()
            extra = () if poll_ms is None else ("--poll-ms", str(poll_ms))
            answers.update(_run_live_jar(jar, RESTORE_COMMAND, bootstrap, batch, parallelism, extra))
            raced = [path for path in batch if _restore_poll_raced(answers[path])]
            if raced:  # asked again one at a time, with time for the broker's answer (FINDINGS: rp10)
                logger.warning(
                    "oracle restore: %d scenario(s) declared restored past the log end before the broker's "
                    "OffsetOutOfRange answer arrived (the first poll timed out on a loaded machine): asking again "
                    "one at a time with poll.ms %d ms: %s",
                    len(raced),
                    RACE_RETRY_POLL_MS,
                    ", ".join(p.stem for p in raced),
                )
                again = _run_live_jar(
                    jar, RESTORE_COMMAND, bootstrap, raced, 1, extra=("--poll-ms", str(RACE_RETRY_POLL_MS))
                )
                for path in raced:
                    answers[path] = {**again[path], "first_answer_raced": answers[path].get("observations")}
    return {Path(path): answers[Path(path)] for path in paths}


#: ``poll.ms`` of the second ask of a scenario whose first answer raced (below): long enough for a loaded broker.
RACE_RETRY_POLL_MS = 2_000


def _restore_poll_raced(answer: Mapping[str, Any]) -> bool:
    """Whether Kafka Streams' answer is the restore-poll race of a checkpoint past the log end (``rp10``, ``rp31``,
    ``rp32``; FINDINGS): the first restore poll returned before the broker's ``OffsetOutOfRange`` answer, and
    ``StoreChangelogReader.hasRestoredToEnd`` (position ≥ end) declared the changelog restored with 0 records and
    no corruption. With Kafka's default ``poll.ms`` on an unloaded local broker the answer arrives first (the task
    is corrupted and restored from the log start); on a loaded machine it may not, so such an answer says more
    about the machine's load than about Kafka Streams' rules."""
    restores = answer.get("observations", {}).get("restores") or []
    return (
        len(restores) == 1
        and restores[0][0] > restores[0][1]
        and restores[0][2] == 0
        and not answer.get("result", {}).get("task_corrupted", True)
    )


def run_oracle_topology(
    bootstrap: str, paths: list[Path] | tuple[Path, ...], *, parallelism: int = DEFAULT_RESTORE_PARALLELISM
) -> dict[Path, dict[str, Any]]:
    """Run ``topology`` scenarios through real Kafka Streams 4.2.2 apps on ``bootstrap``, in one JVM.

    Per scenario the jar (``TopologyRunner``) builds the scenario's program (``TopologyPrograms``, the Java its
    ``program`` prose stands for), compares its ``describe()`` with the scenario's text, creates the scenario's
    topics with its partition counts under a unique prefix and runs the app until its task assignment is stable.
    Returns each path's answer: ``{"result": …, "observations": …}`` (``result`` in the ``expected`` shape read
    from Kafka Streams, with ``not_observable`` listing what Kafka Streams has no notion of, such as ``stages``;
    ``observations``: ``describe_identical``, ``describe_same_lines`` and, when the lines differ, Kafka's text),
    ``{"unsupported": reason}`` (no Java program for the scenario) or ``{"oracle_error": …}``.
    """
    paths = [Path(p) for p in paths]
    return _run_live_jar(ensure_oracle_jar(), TOPOLOGY_COMMAND, bootstrap, paths, parallelism) if paths else {}


def _run_live_jar(
    jar: Path, command_name: str, bootstrap: str, paths: list[Path], parallelism: int, extra: Sequence[str] = ()
) -> dict[Path, dict[str, Any]]:
    """One live JVM (``restore`` or ``topology``) of ``jar`` over ``paths``; each path's answer."""
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; install a JDK 17+ to run the oracle")
    command = [java, *JVM_OPTIONS, "-jar", str(jar), command_name, bootstrap, *(str(p) for p in paths)]
    command += ["--parallel", str(parallelism), *extra]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=_RESTORE_TIMEOUT_S, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or len(lines) != len(paths):
        raise OracleError(
            f"oracle {command_name} run failed (exit {proc.returncode}, {len(lines)} of {len(paths)} results):\n"
            f"{proc.stderr[-4000:]}"
        )
    answers: dict[Path, dict[str, Any]] = {}
    for path, line in zip(paths, lines, strict=True):
        answer = json.loads(line)
        if not isinstance(answer, dict) or answer.get("file") != str(path):
            raise OracleError(f"oracle {command_name} answered {line[:200]!r} where {path} was expected")
        if "oracle_error" in answer:
            logger.warning("oracle %s failed on %s: %s", command_name, path, answer["oracle_error"])
        answers[path] = answer
    return answers
