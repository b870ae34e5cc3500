"""Which run ledger Airflow's tasks write and its monitoring page reads: one rule, so both always agree.

The environment wins (a deployment sets ``STREAMPROC_LEDGER_URL`` on every component), then the Airflow Variable of
the same name (changeable in the UI), then a SQLite file in ``$AIRFLOW_HOME``. The Variable is read through a
function the caller passes, because a task reads it through the Task SDK and the API server from its metadata DB.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from streamproc.ledger import LEDGER_URL_ENV, ledger_url

#: The Airflow Variable naming the ledger when the environment does not (the same name as the variable).
LEDGER_URL_VARIABLE = LEDGER_URL_ENV
#: The default ledger file inside ``$AIRFLOW_HOME``.
DEFAULT_LEDGER_FILE = "streamproc-ledger.sqlite"


def airflow_home() -> Path:
    """``$AIRFLOW_HOME``, else Airflow's own default ``~/airflow``."""
    return Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow")


def ledger_location(read_variable: Callable[[str], str | None]) -> str:
    """The ledger URL: env ``STREAMPROC_LEDGER_URL``, else the Variable, else ``$AIRFLOW_HOME``'s SQLite file."""
    if not os.environ.get(LEDGER_URL_ENV, "").strip():
        configured = read_variable(LEDGER_URL_VARIABLE)
        if configured:
            return str(configured)
    return ledger_url(airflow_home() / DEFAULT_LEDGER_FILE)
