"""Where the monitoring page finds the run ledger: the same URL the DAGs and the CLI write to."""

from __future__ import annotations

import os
from pathlib import Path

from streamproc.ledger import LEDGER_URL_ENV, ledger_url

#: The Airflow Variable naming the ledger when the environment does not (the same name as the variable).
LEDGER_URL_VARIABLE = LEDGER_URL_ENV
#: The default ledger file inside ``$AIRFLOW_HOME``.
DEFAULT_LEDGER_FILE = "streamproc-ledger.sqlite"


def airflow_home() -> Path:
    """``$AIRFLOW_HOME``, else Airflow's own default ``~/airflow``."""
    return Path(os.environ.get("AIRFLOW_HOME") or Path.home() / "airflow")


def ledger_location() -> str:
    """The ledger URL: env ``STREAMPROC_LEDGER_URL``, else the Airflow Variable, else the file in ``$AIRFLOW_HOME``.

    Read on every request, so a Variable changed in the UI takes effect without restarting the API server.
    """
    if not os.environ.get(LEDGER_URL_ENV, "").strip():
        configured = _airflow_variable(LEDGER_URL_VARIABLE)
        if configured:
            return configured
    return ledger_url(airflow_home() / DEFAULT_LEDGER_FILE)


def _airflow_variable(key: str) -> str | None:
    """An Airflow Variable from the metadata DB (the API server's view); ``None`` when unset or Airflow is absent."""
    try:
        from airflow.models.variable import Variable
    except ImportError:
        return None
    value = Variable.get(key, default_var=None)
    return None if value is None else str(value)
