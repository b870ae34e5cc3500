"""The hand-off's steps: the table every ledger file made before the migrations has (``CREATE TABLE IF NOT EXISTS``
so that such a file upgrades in place).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "handoff_steps",
        sa.Column("plan_id", sa.Text, nullable=False, comment="hash of the plan's JSON (the process step's plan id)"),
        sa.Column("kind", sa.Text, nullable=False, comment="'publish' | 'checkpoint' | 'purge'"),
        sa.Column(
            "subject",
            sa.Text,
            nullable=False,
            comment="the task id (publish, checkpoint) or the topic-partition (purge)",
        ),
        sa.Column("detail", sa.Text, nullable=False, comment="JSON: what the step did"),
        sa.Column("finished_at", sa.Text, nullable=False, comment="UTC, ISO 8601"),
        sa.PrimaryKeyConstraint("plan_id", "kind", "subject"),
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_table("handoff_steps")
