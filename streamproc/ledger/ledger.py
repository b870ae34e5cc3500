"""A SQLite file recording each finished hand-off step, so that a re-run after a crash skips what is done.

Why a ledger and not "look at Kafka": after a crash the cluster alone cannot say whether a task's transaction was
this run's (a committed offset equal to the plan's "after" offset could also come from the live app), nor whether a
``.checkpoint`` was written by this run. Each step is recorded right after it became durable and before the next
one starts; SQLite's own journal makes the record atomic. A step found here is never repeated.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from streamproc.errors import ConfigError

#: The schema, shipped inside the package (``package-data``) so that an installed wheel finds it; the repository's
#: ``sql/ledger.sql`` is a symbolic link to this one file.
SCHEMA_RESOURCE = resources.files("streamproc.ledger").joinpath("ledger.sql")

#: Step kinds, in the order a hand-off runs them.
STEP_KINDS = ("publish", "checkpoint", "purge")


@dataclass(frozen=True, slots=True)
class LedgerStep:
    """One finished step: its kind, what it concerned (a task id or a topic-partition) and what it did."""

    plan_id: str
    kind: str
    subject: str
    detail: dict[str, Any]
    finished_at: str


class Ledger:
    """The steps of every hand-off recorded in one SQLite file (created with its schema on first use)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            schema = SCHEMA_RESOURCE.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"the ledger schema {SCHEMA_RESOURCE} cannot be read ({exc}); reinstall streamproc"
            ) from exc
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # a recorded step survives a power loss, as the step itself
        self._db.executescript(schema)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def done(self, plan_id: str, kind: str, subject: str) -> LedgerStep | None:
        """The recorded step, or ``None`` when it has not finished."""
        row = self._db.execute(
            "SELECT plan_id, kind, subject, detail, finished_at FROM handoff_steps "
            "WHERE plan_id = ? AND kind = ? AND subject = ?",
            (plan_id, kind, subject),
        ).fetchone()
        return None if row is None else _step(row)

    def record(self, plan_id: str, kind: str, subject: str, detail: dict[str, Any]) -> LedgerStep:
        """Record a finished step (once: recording it again is a bug in the caller and refused)."""
        if kind not in STEP_KINDS:
            raise ValueError(f"unknown ledger step kind {kind!r}")
        finished_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        text = json.dumps(detail, sort_keys=True)
        self._db.execute(
            "INSERT INTO handoff_steps (plan_id, kind, subject, detail, finished_at) VALUES (?, ?, ?, ?, ?)",
            (plan_id, kind, subject, text, finished_at),
        )
        return LedgerStep(plan_id, kind, subject, detail, finished_at)

    def steps(self, plan_id: str | None = None) -> list[LedgerStep]:
        """Every recorded step (of one plan), in the order they finished."""
        query = "SELECT plan_id, kind, subject, detail, finished_at FROM handoff_steps"
        args: tuple[str, ...] = ()
        if plan_id is not None:
            query += " WHERE plan_id = ?"
            args = (plan_id,)
        return [_step(row) for row in self._db.execute(query + " ORDER BY finished_at, rowid", args)]


def _step(row: tuple[str, str, str, str, str]) -> LedgerStep:
    return LedgerStep(row[0], row[1], row[2], json.loads(row[3]), row[4])
