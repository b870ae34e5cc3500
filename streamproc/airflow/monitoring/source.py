"""Where the monitoring page finds the run ledger: the same URL the DAGs and the CLI write to."""

from __future__ import annotations

from streamproc.airflow.ledger_location import ledger_location as shared_ledger_location


def ledger_location() -> str:
    """The ledger URL (``streamproc.airflow.ledger_location``), the Variable read from the metadata DB.

    Read on every request, so a Variable changed in the UI takes effect without restarting the API server.
    """
    return shared_ledger_location(_airflow_variable)


def _airflow_variable(key: str) -> str | None:
    """An Airflow Variable from the metadata DB (the API server's view); ``None`` when unset or Airflow is absent."""
    try:
        from airflow.models.variable import Variable
    except ImportError:
        return None
    value = Variable.get(key, default_var=None)
    return None if value is None else str(value)
