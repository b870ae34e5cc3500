"""The run's ledger: which hand-off steps are done (SQLite; schema in ``ledger.sql``, linked from ``sql/``)."""

from streamproc.ledger.ledger import Ledger, LedgerStep

__all__ = ["Ledger", "LedgerStep"]
