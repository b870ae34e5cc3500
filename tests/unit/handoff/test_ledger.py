"""The ledger records each finished step once and lists them in order; it survives reopening the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from streamproc.ledger import Ledger


def test_steps_are_recorded_durably_and_listed_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run" / "plan.ledger.sqlite"
    with Ledger(path) as ledger:
        assert ledger.done("p1", "publish", "0_0") is None
        ledger.record("p1", "publish", "0_0", {"offsets": {"in-0": 12}})
        ledger.record("p1", "checkpoint", "0_0", {"offsets": {"c-0": 4}})
        ledger.record("p2", "purge", "app-r-repartition-0", {"before_offset": 3})
    with Ledger(path) as again:
        step = again.done("p1", "publish", "0_0")
        assert step is not None and step.detail == {"offsets": {"in-0": 12}}
        assert [(s.kind, s.subject) for s in again.steps("p1")] == [("publish", "0_0"), ("checkpoint", "0_0")]
        assert len(again.steps()) == 3
        with pytest.raises(sqlite3.IntegrityError):
            again.record("p1", "publish", "0_0", {})
        with pytest.raises(ValueError, match="unknown ledger step kind"):
            again.record("p1", "commit", "0_0", {})
