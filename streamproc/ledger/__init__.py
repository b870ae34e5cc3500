"""The run ledger: runs, their ranges, tasks, lag and hand-off steps in SQL (SQLite by default, PostgreSQL by URL).

The schema is made by the Alembic migrations in ``migrations/`` (upgraded on open); ``sql/`` in the repository
shows the DDL they run on each database. API contract: ``Ledger`` (one per process or task), the values below.
"""

from streamproc.errors import ApplicationBusy, LedgerError
from streamproc.ledger.ledger import Ledger
from streamproc.ledger.location import LEDGER_URL_ENV, handoff_ledger, ledger_url, run_ledger
from streamproc.ledger.values import InterruptedRun, LagRow, LedgerStep, RangeRow, RunDetail, RunSummary, TaskRow

__all__ = [
    "LEDGER_URL_ENV",
    "ApplicationBusy",
    "InterruptedRun",
    "LagRow",
    "Ledger",
    "LedgerError",
    "LedgerStep",
    "RangeRow",
    "RunDetail",
    "RunSummary",
    "TaskRow",
    "handoff_ledger",
    "ledger_url",
    "run_ledger",
]
