"""The ledger's tables as SQLAlchemy Core objects: what the queries are written against.

The schema itself is made by the Alembic migrations in ``migrations/versions/`` (the one way a ledger database gets
its tables, on SQLite and PostgreSQL alike); this module describes the schema at the newest revision so that every
statement in ``queries.py`` is built from typed columns rather than SQL text. ``tests/unit/ledger`` proves the
two agree (Alembic's comparison of a migrated database with this metadata finds no difference).

Times are ISO-8601 UTC text (``2026-11-24T13:50:44.123+00:00``): the same on both databases, sortable as text,
and what the API hands out. Offsets and counts are 64-bit integers.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKeyConstraint,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

metadata = MetaData()

#: One row per hand-off step that finished (revision 1: the table the first ledger files have).
handoff_steps = Table(
    "handoff_steps",
    metadata,
    Column("plan_id", Text, nullable=False, comment="hash of the plan's JSON (the process step's plan id)"),
    Column("kind", Text, nullable=False, comment="'publish' | 'checkpoint' | 'purge'"),
    Column("subject", Text, nullable=False, comment="the task id (publish, checkpoint) or the topic-partition (purge)"),
    Column("detail", Text, nullable=False, comment="JSON: what the step did"),
    Column("finished_at", Text, nullable=False, comment="UTC, ISO 8601"),
    PrimaryKeyConstraint("plan_id", "kind", "subject"),
)

#: One row per run of an application (a ``streamproc run``, a scheduled or a manual DAG run).
runs = Table(
    "runs",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("application_id", Text, nullable=False, comment="the Kafka Streams application.id"),
    Column("trigger", Text, nullable=False, comment="'cli' | 'scheduled' | 'manual'"),
    Column("dag_id", Text, nullable=True),
    Column("dag_run_id", Text, nullable=True),
    Column("plan_id", Text, nullable=True, comment="the plan's id once planned (joins handoff_steps)"),
    Column("status", Text, nullable=False, comment="'running' | 'succeeded' | 'failed' | 'skipped' | ..."),
    Column("stage", Text, nullable=False, comment="'plan' | 'fetch' | 'verify' | 'process' | 'approval' | 'handoff'"),
    Column("error", Text, nullable=True, comment="why the run failed (the error's one line)"),
    Column("started_at", Text, nullable=False),
    Column("finished_at", Text, nullable=True),
    PrimaryKeyConstraint("run_id"),
    Index("runs_by_application", "application_id", "started_at"),
    Index("runs_by_dag_run", "dag_id", "dag_run_id"),
)

#: The per-application lock: a row exists while a run of the application is active. Taking it is an INSERT that
#: the primary key lets only one run win; finishing the run deletes it.
application_locks = Table(
    "application_locks",
    metadata,
    Column("application_id", Text, nullable=False),
    Column("run_id", Text, nullable=False, comment="the active run holding the lock"),
    Column("locked_at", Text, nullable=False),
    Column(
        "owner",
        Text,
        nullable=True,
        comment="the process holding the lock (host@pid:start); none for an Airflow DAG run",
    ),
    PrimaryKeyConstraint("application_id"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)

#: What the plan said to read: the input ranges and the changelog ranges restored before processing.
planned_ranges = Table(
    "planned_ranges",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("topic", Text, nullable=False),
    Column("partition", BigInteger, nullable=False),
    Column("kind", Text, nullable=False, comment="'input' | 'restore' (a store's changelog)"),
    Column("start_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False, comment="exclusive"),
    Column("records_planned", BigInteger, nullable=False, comment="end - start (an upper bound: gaps, markers)"),
    PrimaryKeyConstraint("run_id", "topic", "partition", "start_offset"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)

#: What fetch staged per range (upserted: a retried or re-mapped fetch task overwrites its range's row).
staged_ranges = Table(
    "staged_ranges",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("topic", Text, nullable=False),
    Column("partition", BigInteger, nullable=False),
    Column("start_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("records", BigInteger, nullable=False, comment="records copied by this fetch"),
    Column("bytes", BigInteger, nullable=False),
    Column("segments_written", BigInteger, nullable=False),
    Column("segments_already_staged", BigInteger, nullable=False, comment="found complete from an earlier fetch"),
    Column("seconds", Float, nullable=False),
    Column("staged_at", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "topic", "partition", "start_offset"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)

#: What the process step did per task (upserted from the task reports).
task_runs = Table(
    "task_runs",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("task_id", Text, nullable=False, comment="Kafka Streams task id, e.g. 0_3"),
    Column("records_processed", BigInteger, nullable=False),
    Column("stream_time", BigInteger, nullable=False, comment="ms; -1 when no record was processed"),
    Column("seconds", Float, nullable=False),
    Column("skipped", Boolean, nullable=False, comment="the task was already done by an earlier attempt"),
    Column("recorded_at", Text, nullable=False),
    PrimaryKeyConstraint("run_id", "task_id"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)

#: Records a task dropped, per reason (Kafka Streams' dropped-records sensor reasons).
task_drops = Table(
    "task_drops",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("records", BigInteger, nullable=False),
    PrimaryKeyConstraint("run_id", "task_id", "reason"),
    ForeignKeyConstraint(["run_id", "task_id"], ["task_runs.run_id", "task_runs.task_id"]),
)

#: Records a task sent to a dead letter queue, per DLQ topic.
task_dead_letters = Table(
    "task_dead_letters",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("topic", Text, nullable=False, comment="the dead letter queue topic"),
    Column("records", BigInteger, nullable=False),
    PrimaryKeyConstraint("run_id", "task_id", "topic"),
    ForeignKeyConstraint(["run_id", "task_id"], ["task_runs.run_id", "task_runs.task_id"]),
)

#: The group's lag per input partition: before the run (from the plan) and after the hand-off.
partition_lag = Table(
    "partition_lag",
    metadata,
    Column("run_id", Text, nullable=False),
    Column("topic", Text, nullable=False),
    Column("partition", BigInteger, nullable=False),
    Column("committed_before", BigInteger, nullable=True, comment="NULL: the group had no committed offset"),
    Column("end_offset_before", BigInteger, nullable=False),
    Column(
        "lag_before",
        BigInteger,
        nullable=False,
        comment="end - committed (end - planned start when nothing was committed)",
    ),
    Column("committed_after", BigInteger, nullable=True),
    Column("end_offset_after", BigInteger, nullable=True),
    Column("lag_after", BigInteger, nullable=True),
    PrimaryKeyConstraint("run_id", "topic", "partition"),
    ForeignKeyConstraint(["run_id"], ["runs.run_id"]),
)
