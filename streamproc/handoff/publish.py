"""Publish one task's results in one Kafka transaction together with its input offsets (state.md §10 steps 1–2).

One transaction per task holds the records its sinks sent, its stores' changelog records and the group offsets of
its input partitions (``send_offsets_to_transaction`` with the metadata of a consumer of group ``application.id``
that never joins, generation -1, which the broker accepts for an empty group, §8.4), each offset with Kafka
Streams' commit metadata (the partition time, §8.2). Either all of it is visible to a read_committed reader, with
the offsets committed, or none of it.

The transactional id is ``<application.id>-streamproc-<task id>`` (``streamproc.kafka.transactions``, the one rule):
a re-run of the hand-off after a crash, or a later plan's fetch or hand-off, uses the same id, so
``init_transactions`` fences the crashed attempt and aborts its open transaction before anything new is written.
Each committed offset's metadata carries, after Kafka Streams' own fields, the mark of this plan and task
(:func:`commit_mark`): after a crash between the commit and the ledger's record, the re-run recognises the commit
as its own (``handoff/reconcile.py``). The hand-off itself never aborts: under at_least_once the application reads
uncommitted records (its restore and main consumers are read_uncommitted), so a failed transaction is reported
loudly and left for the re-run to fence, with what that means for the application.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamproc.errors import HandoffError
from streamproc.handoff.kill_points import kill_point
from streamproc.handoff.task_results import (
    Row,
    TaskResults,
    batch_rows,
    epoch_timestamps,
    has_headers,
    table_batches,
    task_commits,
)
from streamproc.handoff.txn_offsets import send_offsets_to_transaction
from streamproc.kafka import clients as kafka_clients
from streamproc.kafka.native_produce import ColumnProducer, column_producer
from streamproc.kafka.transactions import transactional_id
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.state.changelog_reduction import last_write_per_key
from streamproc.state.commit_metadata import TopicPartitionMetadata

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: How long one transaction call (init, send offsets, commit) may take.
TRANSACTION_TIMEOUT_S = 60.0
#: A delivery report callback: (error or None, message).
DeliveryReport = Callable[[Any, Any], None]


def commit_mark(plan_id: str, task_id: str) -> str:
    """What the task's committed offsets carry in their metadata (``state/commit_metadata.HANDOFF_MARK``): this
    plan's hand-off of this task committed them."""
    return f"{plan_id}/{task_id}"


@dataclass(frozen=True, slots=True)
class PublishedTask:
    """What a task's committed transaction did: offsets committed, last changelog offset per partition, counts."""

    task_id: str
    offsets: dict[str, int]
    changelog_last: dict[str, int]
    output_records: int
    changelog_records: int

    def detail(self) -> dict[str, Any]:
        return {
            "offsets": self.offsets,
            "changelog_last": self.changelog_last,
            "output_records": self.output_records,
            "changelog_records": self.changelog_records,
        }


#: The reports of records librdkafka dropped unsent because the transaction had already failed (an output record the
#: broker refused): not a cause of their own.
_PURGED = frozenset({"_PURGE_QUEUE", "_PURGE_INFLIGHT"})


class _Deliveries:
    """Delivery reports of one transaction's last changelog record per partition: its offset and any error.

    Every other record is produced without a report: nothing is read back from it, and a record that fails makes
    the transaction abortable, so that ``commit_transaction`` fails naming the partition and the broker's error
    (checked: a record over the topic's ``max.message.bytes``), or, when the refusal comes while records are still
    being produced, the next ``produce`` fails and :func:`_transaction_error` reads the same error. A report per
    record cost a Python call each, a fifth of the publish's CPU for a count's outputs (:func:`_produce_batches`).
    """

    def __init__(self) -> None:
        self.last: dict[tuple[str, int], int] = {}
        self.errors: list[str] = []

    def changelog(self, error: Any, message: Any) -> None:
        """A changelog record's report: its offset (the highest is the store's checkpoint), or its error."""
        if error is not None:
            if error.name() in _PURGED:
                return  # the transaction failed elsewhere (abortable): its commit raises that error, the cause
            if len(self.errors) < 5:
                self.errors.append(f"{message.topic()}-{message.partition()}: {error.str()}")
            return
        key = (message.topic(), message.partition())
        offset = message.offset()
        if offset > self.last.get(key, -1):
            self.last[key] = offset


class _EpochStamps:
    """Records stamped 0, the epoch, per partition: librdkafka's producer (confluent-kafka's ``produce`` and
    ``rd_kafka_producev`` alike) gives a record of timestamp 0 the current time, where Kafka Streams' producer keeps
    0, so such records reach Kafka with the hand-off's time, and the hand-off says so."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def counted(self, partition: str, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            zero = epoch_timestamps(batch)
            if zero:
                self.counts[partition] += zero
            yield batch

    def warn(self, task_id: str) -> None:
        if self.counts:
            where = ", ".join(f"{count} to {partition}" for partition, count in sorted(self.counts.items()))
            log.warning(
                "task [%s] published %d record(s) of timestamp 0 (%s) with the time they were produced instead: "
                "librdkafka's producer takes timestamp 0 for \"now\", where Kafka Streams' producer keeps 0",
                task_id, sum(self.counts.values()), where,
            )  # fmt: skip


def _produce(producer: Any, topic: str, partition: int, rows: Iterable[Row], on_delivery: DeliveryReport | None) -> int:
    """Produce ``rows`` to ``topic``/``partition`` (-1: the producer chooses); returns how many.

    Positional arguments (topic, value, key, partition, on_delivery, callback, timestamp, headers): keywords cost
    a dict per call, half of ``produce``'s own time for a small record.
    """
    produce, count = producer.produce, 0
    for timestamp, key, value, headers in rows:
        while True:
            try:
                produce(topic, value, key, partition, on_delivery, None, timestamp, list(headers) if headers else None)
                break
            except BufferError:
                producer.poll(0.05)  # the local queue is full: serve delivery reports, then retry
        count += 1
    return count


def _produce_batch(
    producer: Any, columns: ColumnProducer | None, topic: str, partition: int, batch: pa.RecordBatch
) -> int:
    """One batch without delivery reports: through the compiled loop (``kafka/native_produce.py``) where it is built
    and the batch has no header, else row by row (:func:`_produce`); returns how many."""
    if columns is not None and not has_headers(batch.column("headers")):
        return columns.produce(topic, partition, batch)
    return _produce(producer, topic, partition, batch_rows(batch), None)


def _produce_batches(
    producer: Any,
    columns: ColumnProducer | None,
    topic: str,
    partition: int,
    batches: Iterable[pa.RecordBatch],
    last_report: DeliveryReport | None = None,
) -> int:
    """Produce an object's batches in order; returns how many rows.

    With ``last_report``, the last row alone is produced with that delivery report (a changelog's: its checkpoint
    is its last record's offset, which only a report gives; the idempotent producer keeps a partition's records in
    order, so the last row's offset is the partition's last). Every other row goes without one, as outputs do: a
    record the broker refuses fails the transaction, and its commit says so.
    """
    count, held = 0, None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if held is not None:
            count += _produce_batch(producer, columns, topic, partition, held)
        held = batch
    if held is None:
        return count
    if last_report is None:
        return count + _produce_batch(producer, columns, topic, partition, held)
    last = held.num_rows - 1
    if last:
        count += _produce_batch(producer, columns, topic, partition, held.slice(0, last))
    return count + _produce(producer, topic, partition, batch_rows(held.slice(last)), last_report)


def _kafka_error(exc: BaseException) -> Any:
    return exc.args[0] if exc.args and hasattr(exc.args[0], "name") else None


def _transaction_error(producer: Any, exc: BaseException) -> BaseException:
    """The error that failed the transaction when ``produce`` raised ``exc``: ``produce`` says only "Erroneous
    state" (``_STATE``) once the transaction has failed (an output record the broker refused while later ones were
    still being produced: outputs have no delivery report each), and the cause is the transaction's own error.

    librdkafka gives that error to any transactional call made in a failed transaction's state
    (``rd_kafka_txn_require_state``); ``begin_transaction`` is the one that cannot do anything else: valid only in
    the READY state, which produce's error rules out here, it returns the error and changes nothing (no commit, no
    abort, no request to the broker). ``exc`` itself when it is not that state error, or none is learnt."""
    from confluent_kafka import KafkaException

    error = _kafka_error(exc)
    if error is None or error.name() != "_STATE":
        return exc
    try:
        producer.begin_transaction()
    except KafkaException as raised:
        cause: BaseException = raised
        found = _kafka_error(cause)
        if found is not None and found.name() != "_STATE":
            return cause
    return exc


def _fail(task_id: str, txn_id: str, what: str, exc: BaseException) -> HandoffError:
    error = _kafka_error(exc)
    name = error.name() if error is not None else type(exc).__name__
    if name in ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        return HandoffError(
            f"task [{task_id}] transactional id {txn_id} was fenced while it {what} ({name}): another hand-off (or "
            "fetch) of the application took the id over; let it finish (streamproc handoff --status shows its steps)"
        )
    return HandoffError(
        f"task [{task_id}] {what} failed: {kafka_clients.error_text(exc)}; the transaction is left open, "
        f"not aborted (an at_least_once application would read its records): run the hand-off again, which fences "
        f"transactional id {txn_id} and publishes the task anew"
    )


def publish_task(
    client_config: Mapping[str, object],
    application_id: str,
    plan_id: str,
    results: TaskResults,
    *,
    reduce_changelogs: bool = True,
    resolve_offset: Callable[[TopicPartition, int], int] | None = None,
    planned_commits: Mapping[str, tuple[int, int]] | None = None,
) -> PublishedTask:
    """Produce the task's outputs and changelog records and commit its input offsets in one transaction.

    ``resolve_offset(partition, next_offset)`` may replace an input partition's offset (a repartition partition
    whose records earlier tasks of this hand-off published: the log end, past their transaction markers).
    ``planned_commits``: the plan's commits (offset, partition time) for input partitions the report does not name.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    task_id = results.task_id
    txn_id = transactional_id(application_id, task_id)
    mark = commit_mark(plan_id, task_id)
    changelog_partitions = frozenset(results.changelog_partitions())
    deliveries = _Deliveries()
    epoch = _EpochStamps()
    producer = kafka_clients.producer(
        client_config,
        **{"transactional.id": txn_id, "enable.idempotence": True, "linger.ms": 20, "compression.type": "lz4"},
    )
    group_settings: dict[str, object] = {"group.id": application_id, "enable.auto.commit": False}
    group = kafka_clients.consumer(client_config, topic=None, **group_settings)
    outputs = changelog_records = 0
    try:
        try:
            producer.init_transactions(TRANSACTION_TIMEOUT_S)  # fences an earlier attempt with this id
            producer.begin_transaction()
        except KafkaException as exc:
            raise _fail(task_id, txn_id, "began its transaction", exc) from exc
        batches: Iterable[pa.RecordBatch]
        try:
            columns = column_producer(producer)
            for topic, partition in results.output_partitions():
                batches = epoch.counted(f"{topic}-{partition}", results.output_batches(topic, partition))
                outputs += _produce_batches(producer, columns, topic, partition, batches)
                producer.poll(0)
            for topic, partition in sorted(changelog_partitions):
                if reduce_changelogs:
                    batches = table_batches(last_write_per_key(results.changelog_table(topic, partition)))
                else:
                    batches = results.changelog_batches(topic, partition)
                batches = epoch.counted(f"{topic}-{partition}", batches)
                changelog_records += _produce_batches(
                    producer, columns, topic, partition, batches, deliveries.changelog
                )
                producer.poll(0)
            remaining = producer.flush(TRANSACTION_TIMEOUT_S)
        except KafkaException as exc:
            raise _fail(task_id, txn_id, "produced its records", _transaction_error(producer, exc)) from exc
        kill_point(f"in-transaction:{task_id}")  # records written, transaction open: the crash tests' mid-point
        if deliveries.errors or remaining:
            cause = "; ".join(deliveries.errors) or f"{remaining} records undelivered"
            raise HandoffError(
                f"task [{task_id}] could not publish every record ({cause}); the transaction is left open, not "
                "aborted (an at_least_once application would read its records): fix the cause and run the hand-off "
                f"again, which fences {txn_id}"
            )
        offsets: dict[str, int] = {}
        positions = []
        for commit in task_commits(results, planned_commits or {}, resolve_offset):
            offset = commit.next_offset
            metadata = TopicPartitionMetadata(commit.partition_time).encode(handoff_mark=mark)
            positions.append(
                KafkaTopicPartition(commit.partition.topic, commit.partition.partition, offset, metadata=metadata)
            )
            offsets[str(commit.partition)] = offset
        try:
            if positions:
                # not producer.send_offsets_to_transaction: it appends a NUL that Kafka Streams cannot decode
                send_offsets_to_transaction(producer, positions, group.consumer_group_metadata(), TRANSACTION_TIMEOUT_S)
            producer.commit_transaction(TRANSACTION_TIMEOUT_S)
        except KafkaException as exc:
            raise _fail(task_id, txn_id, "committed its transaction", exc) from exc
        kill_point(f"committed:{task_id}")  # committed in Kafka, not yet in the ledger: the reconciling re-run's case
    finally:
        group.close()
        try:
            producer.flush(0)
        except KafkaException:  # a fenced (fatal) producer raises here too: the error above is the one to report
            log.debug("task [%s] producer flush after the transaction failed", task_id, exc_info=True)
    missing = sorted(f"{t}-{p}" for t, p in changelog_partitions if (t, p) not in deliveries.last)
    if missing:  # a changelog file without records: never written by the process step
        raise HandoffError(f"task [{task_id}] published no record to changelog partition(s) {', '.join(missing)}")
    log.info("task [%s] published %d output and %d changelog records; committed %s", task_id, outputs,
             changelog_records, offsets)  # fmt: skip
    epoch.warn(task_id)
    return PublishedTask(
        task_id,
        offsets,
        {f"{t}-{p}": last for (t, p), last in sorted(deliveries.last.items())},
        outputs,
        changelog_records,
    )


#: How long the group's offsets may take to show after the commit (the coordinator applies the commit marker
#: to the group asynchronously: right after ``commit_transaction`` returns, OffsetFetch may not list them yet).
VERIFY_TIMEOUT_S = 30.0


def verify_committed(admin: Any, application_id: str, offsets: Mapping[str, int]) -> None:
    """Read the group's offsets back (require_stable) until every partition shows its offset, or fail.

    librdkafka reports some commit failures per partition without raising; this is where they surface. The wait
    is needed because the broker completes ``EndTxn`` before the group coordinator has applied the transaction's
    offsets (seen on 4.2.2: the first OffsetFetch after the commit lists none, the next ones list them all).
    """
    from streamproc.handoff.guard import parse_partition
    from streamproc.kafka.cluster import read_committed_offsets

    deadline = time.monotonic() + VERIFY_TIMEOUT_S
    while True:
        committed, unstable = read_committed_offsets(admin, application_id)
        wrong = []
        for name, offset in sorted(offsets.items()):
            got = committed.get(parse_partition(name))
            if got is None or got.offset != offset:
                wrong.append(f"{name}: expected {offset}, found {'none' if got is None else got.offset}")
        if not wrong and not unstable:
            return
        if time.monotonic() >= deadline:
            pending = "; a transactional commit is still pending" if unstable else ""
            raise HandoffError(
                f"group '{application_id}' offsets {VERIFY_TIMEOUT_S:.0f} s after the commit differ: "
                f"{'; '.join(wrong)}{pending}; check the group with kafka-consumer-groups.sh --describe before "
                "running the hand-off again"
            )
        time.sleep(0.1)
