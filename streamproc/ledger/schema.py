"""Opening a ledger database: its engine (SQLite or PostgreSQL by URL) and its schema, migrated to the newest
revision with the Alembic migrations shipped in ``streamproc/ledger/migrations``.

SQLite is opened as the hand-off needs it: WAL (readers never block the writer), ``synchronous=FULL`` (a recorded
step survives a power loss, as the step itself does), foreign keys on, and every transaction ``BEGIN IMMEDIATE``
so that two writers queue on the file's lock (with a busy timeout) instead of one failing when it upgrades a read
to a write. PostgreSQL needs nothing special; the migration takes a transaction-level advisory lock so that two
processes opening a new database at once do not both create the tables.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from streamproc.errors import ConfigError, LedgerError

#: The environment variable naming the ledger database (a URL), for the CLI and Airflow alike.
LEDGER_URL_ENV = "STREAMPROC_LEDGER_URL"

#: How long a SQLite writer waits for another writer's transaction before failing.
SQLITE_BUSY_TIMEOUT_S = 60.0

#: The advisory lock key the PostgreSQL migration holds (any constant; "streamproc ledger" in ASCII, truncated).
_PG_MIGRATION_LOCK = 0x73747265616D70

_MIGRATIONS = "streamproc.ledger:migrations"


def ledger_url(default: Path) -> str:
    """The ledger URL: ``STREAMPROC_LEDGER_URL`` when set, else a SQLite file at ``default``."""
    configured = os.environ.get(LEDGER_URL_ENV, "").strip()
    return configured or sqlite_url(default)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).expanduser().resolve()}"


def to_url(url_or_path: Path | str) -> URL:
    """A ``Path`` or a string without a scheme is a SQLite file; anything else must be a SQLAlchemy URL."""
    if isinstance(url_or_path, Path) or "://" not in url_or_path:
        return make_url(sqlite_url(Path(url_or_path)))
    try:
        url = make_url(url_or_path)
    except ArgumentError as exc:
        raise ConfigError(
            f"the ledger URL {url_or_path!r} is not a database URL ({exc}); use sqlite:////abs/path/ledger.sqlite "
            "or postgresql+psycopg://user@host:5432/db"
        ) from exc
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"the ledger URL {describe(url)} names a {url.get_backend_name()!r} database; the ledger runs on "
            "SQLite (sqlite:///…) or PostgreSQL (postgresql+psycopg://…)"
        )
    if url.get_backend_name() == "postgresql" and url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")  # the driver streamproc depends on, not psycopg2
    return url


def describe(url: URL) -> str:
    """The URL for messages and logs: never its password."""
    return url.render_as_string(hide_password=True)


def open_engine(url: URL) -> Engine:
    """An engine for the ledger at ``url``, its schema migrated to the newest revision."""
    try:
        if url.get_backend_name() == "sqlite":
            engine = _sqlite_engine(url)
        else:
            engine = create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 30})
    except (SQLAlchemyError, ImportError) as exc:
        raise LedgerError(f"cannot open the ledger at {describe(url)}: {exc}") from exc
    try:
        migrate(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise LedgerError(
            f"cannot open the ledger at {describe(url)}: {_first_line(exc)}; check the URL, that the database "
            "server is up and that the user may create tables there"
        ) from exc
    return engine


def _sqlite_engine(url: URL) -> Engine:
    if url.database and url.database != ":memory:":
        try:
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"cannot create the directory of the ledger {url.database}: {exc}") from exc
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the transactions are ours ("begin" below), not the driver's
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", _MIGRATIONS)
    return config


def migrate(engine: Engine) -> None:
    """Upgrade the database to the newest revision (a no-op when it is there). A ledger file made before the
    migrations existed has the first revision's table and no version: revision 1 creates its table only when
    missing, so such a file upgrades in place with its steps."""
    config = _config()
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def head_revision() -> str:
    """The newest revision the package ships."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:
        raise LedgerError("the ledger package ships no migration; reinstall streamproc")
    return head


def offline_ddl(dialect_name: str) -> str:
    """The SQL the migrations run on a new database of ``dialect_name`` (Alembic's offline mode), for ``sql/``."""
    buffer = io.StringIO()
    config = _config()
    config.attributes["dialect_name"] = dialect_name
    config.attributes["output_buffer"] = buffer
    command.upgrade(config, "head", sql=True)
    return buffer.getvalue()


def _first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
