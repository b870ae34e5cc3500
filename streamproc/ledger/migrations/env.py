"""Alembic's environment for the ledger: always given its connection (or, offline, its dialect) by the caller.

There is no ``alembic.ini``: ``streamproc.ledger.schema`` builds the configuration in code and passes an open
connection in ``config.attributes["connection"]`` (online) or a dialect name in ``config.attributes["dialect_name"]``
(offline, to print the DDL into ``sql/``). Logging is left to the application.
"""

from __future__ import annotations

from alembic import context

from streamproc.ledger.tables import metadata

config = context.config

if context.is_offline_mode():
    context.configure(
        dialect_name=config.attributes["dialect_name"],
        target_metadata=metadata,
        literal_binds=True,
        output_buffer=config.attributes.get("output_buffer"),
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    context.configure(connection=config.attributes["connection"], target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
