"""Shared pytest configuration: paths to the shared spec, real-service fixtures, unique names per test.

Services are real and session-scoped: one Kafka broker (KRaft, from Maven Central's jars), one MinIO server and one
Schema Registry per test session, started on free loopback ports when a test first needs them and stopped by PID at
the end. Each test isolates itself with unique topic, group, bucket and subject names from ``unique``. Everything
under ``tests/integration`` is marked ``integration``.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = PROJECT_ROOT.parent / "shared"
SPEC_DIR = SHARED_DIR / "spec"
SCENARIOS_DIR = SPEC_DIR / "scenarios"

# Everything the tests start talks over loopback only; Spark would otherwise bind to the machine's other address.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Airflow reads its config and metadata DB from AIRFLOW_HOME: tests get their own, never the developer's ~/airflow.
os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="streamproc-airflow-home-")
# ... and read the repository's DAGs, without Airflow's examples (set before anything imports airflow).
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(PROJECT_ROOT / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration = PROJECT_ROOT / "tests" / "integration"
    for item in items:
        if integration in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def scenarios_dir() -> Path:
    """``../shared/spec/scenarios`` beside the project root, as CI lays it out."""
    assert SCENARIOS_DIR.is_dir(), f"shared scenarios not found at {SCENARIOS_DIR}"
    return SCENARIOS_DIR


# ----------------------------------------------------------------------------------------------------- services
@pytest.fixture(scope="session")
def kafka_broker_handle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's real broker; tests that must stop and restart it use ``streamproc_dev.broker`` on its workdir."""
    from streamproc_dev import broker

    workdir = tmp_path_factory.mktemp("kafka")
    handle = broker.start(workdir)
    try:
        yield handle
    finally:
        broker.stop(workdir)


@pytest.fixture(scope="session")
def kafka_broker(kafka_broker_handle: Any) -> str:
    """Bootstrap servers of the session's real Kafka broker, e.g. ``127.0.0.1:40123``."""
    address: str = kafka_broker_handle.address
    return address


@pytest.fixture(scope="session")
def admin(kafka_broker: str) -> Any:
    """A confluent-kafka ``AdminClient`` on the session's broker.

    Its librdkafka log goes to a Python logger, not stderr: the client outlives the broker by the session's end, and
    on stderr its reconnect attempts to the stopped broker filled the tests' output with ``Connection refused``.
    """
    import logging

    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_broker, "logger": logging.getLogger("tests.librdkafka.admin")})


@dataclass(frozen=True, slots=True)
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str
    region: str

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The session's real MinIO server: endpoint and keys."""
    from streamproc_dev import s3

    workdir = tmp_path_factory.mktemp("minio")
    handle = s3.start(workdir)
    try:
        yield S3Server(handle.address, handle.extra["access_key"], handle.extra["secret_key"], handle.extra["region"])
    finally:
        s3.stop(workdir)


@dataclass(frozen=True, slots=True)
class SchemaRegistry:
    """A running Schema Registry: the Confluent-compatible base URL and its basic-auth credentials."""

    url: str
    user: str
    password: str
    workdir: Path
    log_path: Path

    def config(self) -> dict[str, str]:
        """``SchemaRegistryClient``'s configuration (``url``, ``basic.auth.user.info``), as a serde would pass it."""
        return {"url": self.url, "basic.auth.user.info": f"{self.user}:{self.password}"}

    def client(self) -> Any:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return SchemaRegistryClient(self.config())

    def serde_configs(self) -> dict[str, str]:
        """A serde's configuration as a Java application gives it (Confluent's names)."""
        return {
            "schema.registry.url": self.url,
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": f"{self.user}:{self.password}",
        }


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaRegistry]:
    """The session's real Schema Registry (``streamproc_dev.schema_registry``: Apicurio Registry serving Confluent's
    API) with basic auth, started by the first test that asks for it; each test registers under ``unique`` subjects."""
    from streamproc_dev import schema_registry as registry

    workdir = tmp_path_factory.mktemp("schema-registry")
    handle = registry.start(workdir, auth=True)
    try:
        yield SchemaRegistry(
            handle.address, handle.extra["user"], handle.extra["password"], workdir, Path(handle.log_path)
        )
    finally:
        registry.stop(workdir)


# -------------------------------------------------------------------------------------------------------- names
_counter = itertools.count()


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique("orders")`` → a topic/group/bucket name no other test (or earlier session) uses.

    Names are lowercase with dashes only, so that they are valid Kafka topic and group names and S3 bucket names.
    """
    test = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:30]
    session = uuid.uuid4().hex[:6]

    def make(prefix: str) -> str:
        return f"{prefix}-{test}-{session}-{next(_counter)}"[:63].rstrip("-")

    return make


#: the levels of the loggers the CLI sets, as the test session started (before any fixture ran the CLI)
_SESSION_LOG_LEVELS = {name: logging.getLogger(name).level for name in ("streamproc", "streamproc.librdkafka")}


@pytest.fixture(autouse=True)
def _restore_streamproc_log_levels() -> Iterator[None]:
    """``streamproc``'s CLI sets its loggers' levels for the process (``-v``); a test or a module fixture that runs it
    through ``CliRunner`` must not change what later tests' ``caplog`` sees."""
    for name, level in _SESSION_LOG_LEVELS.items():
        logging.getLogger(name).setLevel(level)
    yield
    for name, level in _SESSION_LOG_LEVELS.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's real PostgreSQL server (``streamproc_dev.postgres``); ``create_database(name)`` gives a new
    empty database's URL, so that each test has its own."""
    from streamproc_dev import postgres

    workdir = tmp_path_factory.mktemp("postgres")
    handle = postgres.start(workdir)
    try:
        yield PostgresServer(handle)
    finally:
        postgres.stop(workdir)


class PostgresServer:
    """The running server: its handle, the URL of a database on it, a new database."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def url(self, database: str = "postgres") -> str:
        from streamproc_dev import postgres

        return postgres.url(self.handle, database)

    def create_database(self, name: str) -> str:
        from streamproc_dev import postgres

        return postgres.create_database(self.handle, name)
