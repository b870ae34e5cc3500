"""The schema: the migrations make exactly the tables the queries are written against; ``sql/`` shows what they
run; a ledger file made before the migrations existed upgrades in place and keeps its steps."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from streamproc.ledger import Ledger, ledger_url
from streamproc.ledger.ddl import DDL_FILES, render
from streamproc.ledger.location import LEDGER_URL_ENV
from streamproc.ledger.schema import head_revision
from streamproc.ledger.tables import metadata

REPO = Path(__file__).resolve().parents[3]

#: The schema ``streamproc handoff`` created before the ledger had migrations (commit e4fbdc3's ledger.sql).
PRE_MIGRATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_steps (
    plan_id     TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    detail      TEXT    NOT NULL,
    finished_at TEXT    NOT NULL,
    PRIMARY KEY (plan_id, kind, subject)
);
"""


def test_the_migrations_make_the_tables_the_queries_use(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    Ledger(url).close()
    engine = create_engine(url)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        version = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    engine.dispose()
    assert version == head_revision()


@pytest.mark.parametrize("dialect_name", sorted(DDL_FILES))
def test_the_ddl_in_sql_is_what_the_migrations_run(dialect_name: str) -> None:
    path = REPO / "sql" / DDL_FILES[dialect_name]
    assert path.read_text(encoding="utf-8") == render(dialect_name), (
        f"{path} is stale: regenerate it with `python -m streamproc.ledger.ddl sql`"
    )


def test_a_ledger_file_from_before_the_migrations_upgrades_with_its_steps(tmp_path: Path) -> None:
    path = tmp_path / "plan.ledger.sqlite"
    old = sqlite3.connect(path)
    old.executescript(PRE_MIGRATION_SCHEMA)
    old.execute(
        "INSERT INTO handoff_steps VALUES (?, ?, ?, ?, ?)",
        ("p1", "publish", "0_0", json.dumps({"offsets": {"in-0": 12}}), "2026-11-20T10:00:00.000+00:00"),
    )
    old.commit()
    old.close()
    with Ledger(path) as ledger:
        step = ledger.done("p1", "publish", "0_0")
        assert step is not None and step.detail == {"offsets": {"in-0": 12}}
        ledger.record("p1", "checkpoint", "0_0", {"offsets": {"c-0": 4}})
        run_id = ledger.begin_run(application_id="app", trigger="cli")
        assert ledger.run(run_id) is not None
    engine = create_engine(f"sqlite:///{path}")
    assert set(inspect(engine).get_table_names()) == {*metadata.tables, "alembic_version"}
    engine.dispose()
    with Ledger(path) as again:  # opening at head again changes nothing
        assert [(s.kind, s.subject) for s in again.steps("p1")] == [("publish", "0_0"), ("checkpoint", "0_0")]


def test_the_ledger_url_comes_from_the_environment_else_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LEDGER_URL_ENV, raising=False)
    assert ledger_url(tmp_path / "ledger.sqlite") == f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    monkeypatch.setenv(LEDGER_URL_ENV, "postgresql+psycopg://u@127.0.0.1:5432/db")
    assert ledger_url(tmp_path / "ledger.sqlite") == "postgresql+psycopg://u@127.0.0.1:5432/db"


def test_a_ledger_url_of_another_database_is_refused_without_its_password() -> None:
    from streamproc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"names a 'mysql' database") as refused:
        Ledger("mysql://user:hunter2@localhost/db")
    assert "hunter2" not in str(refused.value)


def test_a_database_that_cannot_be_reached_is_one_error_without_the_password() -> None:
    from streamproc.errors import LedgerError

    with pytest.raises(LedgerError, match=r"cannot open the ledger at postgresql\+psycopg://streamproc:\*\*\*@") as e:
        Ledger("postgresql+psycopg://streamproc:hunter2@127.0.0.1:1/ledger")
    assert "hunter2" not in str(e.value) and "\n" not in str(e.value)


def test_a_url_that_does_not_parse_is_refused_without_repeating_it() -> None:
    from streamproc.errors import ConfigError

    with pytest.raises(ConfigError, match=r"cannot be parsed as a database URL") as refused:
        Ledger("postgresql+psycopg://user:hunter2@host:notaport/db")
    assert "hunter2" not in str(refused.value)


def test_a_ledger_at_the_newest_revision_opens_without_running_alembic(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ledger.sqlite"
    with caplog.at_level("INFO", logger="alembic"):
        Ledger(path).close()
        assert any(r.name.startswith("alembic") for r in caplog.records)  # the first open migrates
        caplog.clear()
        Ledger(path).close()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []
