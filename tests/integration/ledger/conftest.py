"""The ledger's tests run every case on SQLite and on a real PostgreSQL server (the session's ``postgres_server``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# the takeover trials assert in a helper module: rewrite its asserts so a failure shows both sides
pytest.register_assert_rewrite("tests.integration.ledger.takeover")

from streamproc.ledger import Ledger  # noqa: E402 - after the rewrite hook, as pytest asks


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty ledger database: a SQLite file, or a new database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    server: Any = request.getfixturevalue("postgres_server")
    new_database: Callable[[str], str] = server.create_database
    return new_database(f"ledger_{request.node.name}")


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    with Ledger(ledger_url) as opened:
        yield opened
