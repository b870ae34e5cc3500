"""A real Apache Kafka broker (KRaft, one combined broker+controller on 127.0.0.1) from Maven Central's jars.

``fetch`` copies ``org.apache.kafka:kafka_2.13`` and its runtime dependencies into
``~/.cache/streamproc/kafka-<version>/libs`` with the Maven project in ``tools/kafka``; a later ``start`` finds them
there and never calls Maven again. ``start`` formats KRaft storage in a work directory, launches ``kafka.Kafka`` on
free loopback ports, and returns once the broker answers metadata requests. A work directory that already holds a
formatted log is restarted on the same ports with its data, which is how tests take a broker away and bring it back.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle
from streamproc_dev.versions import KAFKA_VERSION, cache_dir

log = logging.getLogger(__name__)

NAME = "kafka-broker"
POM = Path(__file__).resolve().parents[1] / "tools" / "kafka" / "pom.xml"
_COMPLETE = ".complete"

# Single-node settings: replication factor 1 for every internal topic, few partitions for the internal topics so
# that the first group or transaction operation does not wait for 50 partitions to be created, no rebalance delay,
# and no topic auto-creation, so that a missing topic is an error exactly as on a production cluster. Retention is
# unlimited by default: test and demo data carry fixed, old timestamps, which time-based retention would delete
# within seconds; a test that needs retention sets it on its topic (or uses DeleteRecords).
_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={log_dir}
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
log.retention.check.interval.ms=1000
"""

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_dir() / f"kafka-{version}" / "libs"


def fetch(version: str = KAFKA_VERSION) -> Path:
    """Copy the broker jars into the cache once; a complete cache is reused without calling Maven."""
    target = libs_dir(version)
    if (target / _COMPLETE).exists():
        log.info("Kafka %s jars already cached in %s", version, target)
        return target
    if shutil.which("mvn") is None:
        raise DevServiceError("Maven ('mvn') is not on PATH; install it (Debian: apt-get install maven) and retry")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=target.parent))
    log.info("Fetching Kafka %s broker jars from Maven Central into %s", version, target)
    cmd = [
        "mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
        f"-Dkafka.version={version}", f"-DoutputDirectory={staging}",
    ]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise DevServiceError(f"Maven could not fetch Kafka {version}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
    (staging / _COMPLETE).write_text(version, encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    log.info("Cached %d jars for Kafka %s", len(list(target.glob("*.jar"))), version)
    return target


def _cluster_id() -> str:
    """A Kafka ``Uuid`` in its text form: URL-safe base64 of 16 random bytes without padding.

    Like ``Uuid.randomUuid``, never one that starts with ``-``: command-line parsers take that for an option.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    if not java:
        raise DevServiceError("Java is not on PATH; install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")
    return java


def _classpath(version: str) -> str:
    libs = libs_dir(version)
    if not (libs / _COMPLETE).exists():
        fetch(version)
    return str(libs / "*")


#: The line the broker logs once every listener accepts and the controller quorum has it registered.
_STARTED_LINE = b"Kafka Server started"


def _logged_started(log_path: Path, since: int) -> bool:
    """The broker logged :data:`_STARTED_LINE` after byte ``since`` of its log (a restart appends to it)."""
    try:
        with open(log_path, "rb") as log_file:
            log_file.seek(since)
            return _STARTED_LINE in log_file.read()
    except OSError:
        return False


def _metadata_answers(bootstrap: str, log_path: Path, since: int) -> bool:
    """The broker says it started, then answers a metadata request (asked in a child process, :func:`_in_child`)."""
    host, port = bootstrap.rsplit(":", 1)
    if not _logged_started(log_path, since) or not service_process.port_open(host, int(port)):
        return False
    return _in_child("metadata", bootstrap)


def _in_child(check: str, bootstrap: str) -> bool:
    """One readiness probe through librdkafka, in a child process that answers by its exit code.

    librdkafka 2.16 can abort the whole process (``Fatal Python error: Aborted``) on the answers of a broker that is
    still starting or loading its group coordinator: it did so twice in a ``make test`` run, in ``list_topics`` and
    in ``describe_consumer_groups`` against a broker restarted on its data, and took the test worker down with it.
    A probe that aborts in a child is only "not ready yet".
    """
    code = (
        f"import sys; from streamproc_dev import broker; sys.exit(0 if broker._probe({check!r}, {bootstrap!r}) else 1)"
    )
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-c", code], capture_output=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        return False
    if done.returncode < 0:
        log.debug("broker probe %s aborted (signal %d): not ready yet", check, -done.returncode)
    return done.returncode == 0


def _probe(check: str, bootstrap: str) -> bool:
    """The probe :func:`_in_child` runs: ``metadata`` (brokers listed) or ``coordinator`` (DescribeGroups answers
    without a coordinator error)."""
    from confluent_kafka.admin import AdminClient

    if check == "metadata":
        admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 0})
        return bool(admin.list_topics(timeout=2).brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    [future] = admin.describe_consumer_groups(["streamproc-broker-warmup"], request_timeout=5).values()
    future.result(timeout=10)
    return True


def _group_coordinator_answers(bootstrap: str) -> bool:
    """DescribeGroups answers without a coordinator error, i.e. ``__consumer_offsets`` exists and is loaded.

    A fresh broker creates that topic on the first FindCoordinator, and until its partitions are loaded group
    operations fail per partition (``NOT_COORDINATOR``, ``COORDINATOR_LOAD_IN_PROGRESS``) rather than as errors a
    caller notices, so a broker is not "ready" before this answers cleanly (in a child process, :func:`_in_child`).
    (OffsetFetch for a group without partitions is not used here: librdkafka 2.16 crashes on it while the
    coordinator is still loading.)
    """
    return _in_child("coordinator", bootstrap)


def start(
    workdir: Path | None = None,
    *,
    version: str = KAFKA_VERSION,
    heap: str = "768m",
    timeout_s: float = 120,
    await_group_coordinator: bool = True,
    overrides: Mapping[str, str] | None = None,
) -> ServiceHandle:
    """Start a broker in ``workdir`` (a new temp dir if None) and wait until it answers metadata requests and (unless
    ``await_group_coordinator`` is false: a test of a coordinator still loading) group requests. ``overrides`` are
    broker settings over the project's (e.g. a cluster without the streams group protocol)."""
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-kafka-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(f"a broker is already running from {workdir} (pid {previous.pid}, {previous.address})")
    config = workdir / "server.properties"
    log_dir = workdir / "kraft-logs"
    java = _java()
    classpath = _classpath(version)
    formatted = (log_dir / "meta.properties").exists()
    if previous is not None and formatted:
        port = int(previous.extra["port"])
        controller_port = int(previous.extra["controller_port"])
        log.info("Restarting Kafka broker from %s on 127.0.0.1:%d", workdir, port)
    else:
        port, controller_port = service_process.free_port(), service_process.free_port()
    # Always the current settings, so that a restart of an old work directory picks up changes.
    extra = "".join(f"{key}={value}\n" for key, value in (overrides or {}).items())
    config.write_text(
        _SERVER_PROPERTIES.format(port=port, controller_port=controller_port, log_dir=log_dir) + extra,
        encoding="utf-8",
    )
    if not formatted:
        fmt = subprocess.run(  # noqa: S603
            [java, "-cp", classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}",
             "--config", str(config)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if fmt.returncode != 0:
            raise DevServiceError(f"formatting KRaft storage in {log_dir} failed:\n{fmt.stdout}{fmt.stderr}")
    (workdir / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
    log_path = workdir / "broker.log"
    log_start = log_path.stat().st_size if log_path.exists() else 0
    args = [
        java, "-Xms256m", f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={workdir}", "-cp", classpath, "kafka.Kafka", str(config),
    ]  # fmt: skip
    pid = service_process.spawn(args, log_path=log_path, cwd=workdir)
    bootstrap = f"127.0.0.1:{port}"
    log.info("Started Kafka %s broker (pid %d) on %s; log: %s", version, pid, bootstrap, log_path)
    service_process.wait_until(
        lambda: _metadata_answers(bootstrap, log_path, log_start),
        pid=pid,
        name=NAME,
        log_path=log_path,
        timeout_s=timeout_s,
    )
    if await_group_coordinator:
        service_process.wait_until(
            lambda: _group_coordinator_answers(bootstrap), pid=pid, name=NAME, log_path=log_path, timeout_s=timeout_s
        )
    handle = ServiceHandle(
        name=NAME,
        pid=pid,
        address=bootstrap,
        workdir=str(workdir),
        log_path=str(log_path),
        extra={"port": str(port), "controller_port": str(controller_port), "version": version},
    )
    handle.save()
    log.info("Kafka broker ready at %s", bootstrap)
    return handle


def stop(workdir: Path) -> bool:
    """Stop the broker started from ``workdir`` by its recorded PID; False when none was running."""
    return service_process.stop_recorded(workdir, name=NAME)


def status(workdir: Path) -> str:
    return service_process.recorded_status(workdir, what="broker", running=_running)


def _running(handle: ServiceHandle) -> str:
    answering = service_process.answers(lambda: _metadata_answers(handle.address, Path(handle.log_path), 0))
    return f"running: pid {handle.pid}, bootstrap {handle.address}, {'answering' if answering else 'not answering'}"
