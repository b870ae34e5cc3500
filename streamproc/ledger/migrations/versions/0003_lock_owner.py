"""The lock's owner: the process holding an application's lock (``host@pid:start``), so that a re-run can tell a
killed run from a live one and take it over (``ledger/owner.py``).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "application_locks",
        sa.Column(
            "owner",
            sa.Text,
            nullable=True,
            comment="the process holding the lock (host@pid:start); none for an Airflow DAG run",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("application_locks") as batch:
        batch.drop_column("owner")
