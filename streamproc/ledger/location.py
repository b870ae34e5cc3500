"""Which ledger a command uses when none is named: one rule for ``streamproc run``, ``streamproc handoff`` and
Airflow, so that a run continued with another command finds the steps the first one recorded."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable naming the ledger database (a URL), for the CLI and Airflow alike.
LEDGER_URL_ENV = "STREAMPROC_LEDGER_URL"

#: The ledger file ``streamproc run`` keeps in its work directory (beside ``plan.json``).
RUN_LEDGER_FILE = "ledger.sqlite"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).expanduser().resolve()}"


def ledger_url(default: Path) -> str:
    """The ledger URL: ``STREAMPROC_LEDGER_URL`` when set, else a SQLite file at ``default``."""
    configured = os.environ.get(LEDGER_URL_ENV, "").strip()
    return configured or sqlite_url(default)


def run_ledger(work_dir: Path) -> str:
    """``streamproc run``'s ledger: the environment's, else ``<work-dir>/ledger.sqlite``."""
    return ledger_url(work_dir / RUN_LEDGER_FILE)


def default_ledger_path(plan_file: Path) -> Path:
    """The ledger next to the plan file: ``<plan>.ledger.sqlite``."""
    return plan_file.with_name(f"{plan_file.stem}.ledger.sqlite")


def handoff_ledger(plan_file: Path) -> str:
    """``streamproc handoff``'s ledger: the environment's; else the ledger of the ``streamproc run`` that wrote the
    plan (``ledger.sqlite`` beside it), so that a stopped run continued by hand skips the steps it did; else
    ``<plan>.ledger.sqlite``."""
    beside = plan_file.with_name(RUN_LEDGER_FILE)
    return ledger_url(beside if beside.exists() else default_ledger_path(plan_file))
