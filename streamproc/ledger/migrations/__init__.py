"""The ledger's Alembic migrations (``env.py``, ``versions/``), run by ``streamproc.ledger.schema`` on open."""
