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
import sqlite3
import time
from functools import cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from streamproc import extras
from streamproc.errors import ConfigError, LedgerError
from streamproc.ledger.location import sqlite_url

#: How long a SQLite writer waits for another writer's transaction before failing.
SQLITE_BUSY_TIMEOUT_S = 60.0

#: The advisory lock key the PostgreSQL migration holds (any constant; "streamproc ledger" in ASCII, truncated).
_PG_MIGRATION_LOCK = 0x73747265616D70

_MIGRATIONS = "streamproc.ledger:migrations"


def to_url(url_or_path: Path | str) -> URL:
    """A ``Path`` or a string without a scheme is a SQLite file; anything else must be a SQLAlchemy URL."""
    if isinstance(url_or_path, Path) or "://" not in url_or_path:
        return make_url(sqlite_url(Path(url_or_path)))
    try:
        url = make_url(url_or_path)
    except (ArgumentError, ValueError):  # its message may quote the URL, password and all: not repeated here
        scheme = url_or_path.split("://", 1)[0]
        raise ConfigError(
            f"the ledger URL ({scheme}://…) cannot be parsed as a database URL; use sqlite:////abs/path/ledger.sqlite "
            "or postgresql+psycopg://user:password@host:5432/db (a password with @, : or / must be %-encoded)"
        ) from None
    if url.drivername in ("postgres", "postgresql"):  # Heroku-style postgres:// too; psycopg is the driver we ship
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"the ledger URL {describe(url)} names a {url.get_backend_name()!r} database; the ledger runs on "
            "SQLite (sqlite:///…) or PostgreSQL (postgresql+psycopg://…)"
        )
    return url


def describe(url: URL) -> str:
    """The URL for messages and logs: never its password."""
    return url.render_as_string(hide_password=True)


def open_engine(url: URL) -> Engine:
    """An engine for the ledger at ``url``, its schema migrated to the newest revision."""
    if url.get_backend_name() == "postgresql" and url.get_driver_name() == "psycopg":
        extras.require(extras.POSTGRES, "a PostgreSQL ledger")
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
        check = (
            "check that the path is a SQLite file (or a new one) this user may write"
            if url.get_backend_name() == "sqlite"
            else "check the URL, that the database server is up and that the user may create tables there"
        )
        raise LedgerError(f"cannot open the ledger at {describe(url)}: {_first_line(exc)}; {check}") from exc
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
        _enable_wal(cursor)
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL (a no-op once it is). SQLite answers "database is locked" at once, without its busy
    handler, when two connections convert a new file at the same moment (Airflow's mapped tasks opening a ledger
    nobody has opened yet), so the switch is retried here for as long as a writer would wait."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            primary_code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # SQLITE_BUSY_RECOVERY etc. are SQLITE_BUSY
            if primary_code not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", _MIGRATIONS)
    return config


def migrate(engine: Engine) -> None:
    """Upgrade the database to the newest revision (a no-op when it is there). A ledger file made before the
    migrations existed has the first revision's table and no version: revision 1 creates its table only when
    missing, so such a file upgrades in place with its steps. A database at the newest revision is only read
    (every Airflow task opens the ledger; Alembic would log its context each time)."""
    if current_revision(engine) == head_revision():
        return
    config = _config()
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at; ``None`` when Alembic never ran on it."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        version: str | None = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        return version


@cache
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
