"""Runs: the run itself and its per-application lock, the planned and staged ranges, what each task processed and
dropped, and the lag per input partition before and after.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _run_fk() -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"])


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("application_id", sa.Text, nullable=False, comment="the Kafka Streams application.id"),
        sa.Column("trigger", sa.Text, nullable=False, comment="'cli' | 'scheduled' | 'manual'"),
        sa.Column("dag_id", sa.Text, nullable=True),
        sa.Column("dag_run_id", sa.Text, nullable=True),
        sa.Column("plan_id", sa.Text, nullable=True, comment="the plan's id once planned (joins handoff_steps)"),
        sa.Column("status", sa.Text, nullable=False, comment="'running' | 'succeeded' | 'failed' | 'skipped' | ..."),
        sa.Column(
            "stage",
            sa.Text,
            nullable=False,
            comment="'plan' | 'fetch' | 'verify' | 'process' | 'approval' | 'handoff'",
        ),
        sa.Column("error", sa.Text, nullable=True, comment="why the run failed (the error's one line)"),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("finished_at", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("runs_by_application", "runs", ["application_id", "started_at"])
    op.create_index("runs_by_dag_run", "runs", ["dag_id", "dag_run_id"])
    op.create_table(
        "application_locks",
        sa.Column("application_id", sa.Text, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False, comment="the active run holding the lock"),
        sa.Column("locked_at", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("application_id"),
        _run_fk(),
    )
    op.create_table(
        "planned_ranges",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("partition", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.Text, nullable=False, comment="'input' | 'restore' (a store's changelog)"),
        sa.Column("start_offset", sa.BigInteger, nullable=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False, comment="exclusive"),
        sa.Column(
            "records_planned",
            sa.BigInteger,
            nullable=False,
            comment="end - start (an upper bound: gaps, markers)",
        ),
        sa.PrimaryKeyConstraint("run_id", "topic", "partition", "start_offset"),
        _run_fk(),
    )
    op.create_table(
        "staged_ranges",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("partition", sa.BigInteger, nullable=False),
        sa.Column("start_offset", sa.BigInteger, nullable=False),
        sa.Column("end_offset", sa.BigInteger, nullable=False),
        sa.Column("records", sa.BigInteger, nullable=False, comment="records copied by this fetch"),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("segments_written", sa.BigInteger, nullable=False),
        sa.Column(
            "segments_already_staged",
            sa.BigInteger,
            nullable=False,
            comment="found complete from an earlier fetch",
        ),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("staged_at", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "topic", "partition", "start_offset"),
        _run_fk(),
    )
    op.create_table(
        "task_runs",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False, comment="Kafka Streams task id, e.g. 0_3"),
        sa.Column("records_processed", sa.BigInteger, nullable=False),
        sa.Column("stream_time", sa.BigInteger, nullable=False, comment="ms; -1 when no record was processed"),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("skipped", sa.Boolean, nullable=False, comment="the task was already done by an earlier attempt"),
        sa.Column("recorded_at", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "task_id"),
        _run_fk(),
    )
    for name, key, key_comment in (
        ("task_drops", "reason", None),
        ("task_dead_letters", "topic", "the dead letter queue topic"),
    ):
        op.create_table(
            name,
            sa.Column("run_id", sa.Text, nullable=False),
            sa.Column("task_id", sa.Text, nullable=False),
            sa.Column(key, sa.Text, nullable=False, comment=key_comment),
            sa.Column("records", sa.BigInteger, nullable=False),
            sa.PrimaryKeyConstraint("run_id", "task_id", key),
            sa.ForeignKeyConstraint(["run_id", "task_id"], ["task_runs.run_id", "task_runs.task_id"]),
        )
    op.create_table(
        "partition_lag",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("topic", sa.Text, nullable=False),
        sa.Column("partition", sa.BigInteger, nullable=False),
        sa.Column(
            "committed_before",
            sa.BigInteger,
            nullable=True,
            comment="NULL: the group had no committed offset",
        ),
        sa.Column("end_offset_before", sa.BigInteger, nullable=False),
        sa.Column(
            "lag_before",
            sa.BigInteger,
            nullable=False,
            comment="end - committed (end - planned start when nothing was committed)",
        ),
        sa.Column("committed_after", sa.BigInteger, nullable=True),
        sa.Column("end_offset_after", sa.BigInteger, nullable=True),
        sa.Column("lag_after", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("run_id", "topic", "partition"),
        _run_fk(),
    )


def downgrade() -> None:
    for name in (
        "partition_lag",
        "task_dead_letters",
        "task_drops",
        "task_runs",
        "staged_ranges",
        "planned_ranges",
        "application_locks",
    ):
        op.drop_table(name)
    op.drop_index("runs_by_dag_run", table_name="runs")
    op.drop_index("runs_by_application", table_name="runs")
    op.drop_table("runs")
