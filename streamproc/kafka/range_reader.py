"""Read one planned ``[start, end)`` range of one partition, and keep the evidence that the range was read whole.

A range is not ``end - start`` records: transaction markers, aborted records (under ``read_committed``) and
compacted-away offsets leave gaps (planning.md §8). The reader therefore never counts; it reads until the consumer
demonstrably reached ``end`` — a record at or past ``end`` arrived, or a partition-EOF event came at a fetch
position ``>= end`` — and records which offsets it delivered, so the completeness proof can classify the rest.
Offsets that retention deleted since planning surface as librdkafka's auto-offset-reset error (the reader sets
``auto.offset.reset=error``) and become a ``FetchError`` naming the lost offsets, never a silent jump.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamproc.engine.records import ConsumerRecord, TimestampType
from streamproc.errors import ConfigError, FetchError
from streamproc.kafka import clients as kafka_clients
from streamproc.kafka.message_kernel import SCAN_ALL, SCAN_ERROR, SCAN_LAST_OFFSET, SCAN_PAST_END, scan
from streamproc.kafka.native_consume import native_kernel, offsets_of, partition_queue

log = logging.getLogger(__name__)

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"

#: librdkafka postpones a partition's next fetch by ``fetch.queue.backoff.ms`` once its local queue holds
#: ``queued.min.messages`` (or ``queued.max.messages.kbytes``); its default is a whole second. A reader that does
#: work between batches (a fetch fills columns and writes a Parquet segment and its manifest every 200 000 records)
#: fills that queue, then waits the second out with the queue drained: one 400 000-record piece took 1.37 s wall
#: for 0.62 CPU-s. A twentieth of it keeps the queue fed at the same CPU (0.62 s); a client setting still wins.
FETCH_QUEUE_BACKOFF_MS = 50

#: The consumer setting the run's isolation level owns; a client setting of it is refused, never silently overridden.
ISOLATION_LEVEL_SETTING = "isolation.level"


def refuse_isolation_setting(client_config: Mapping[str, object], plan_isolation: str | None = None) -> None:
    """Refuse ``isolation.level`` among the client settings: the plan decides the isolation level of a run.

    Kafka Streams derives it from ``processing.guarantee`` (``exactly_once_v2`` forces ``read_committed``; under
    ``at_least_once`` the consumer's own setting applies), so streamproc takes it from the plan's
    ``--processing-guarantee`` / ``--isolation-level``; a client setting beside them would be ignored by one step
    and not another.
    """
    value = client_config.get(ISOLATION_LEVEL_SETTING)
    if value is None:
        return
    now = f"this plan reads {plan_isolation}; " if plan_isolation else ""
    raise ConfigError(
        f"client setting {ISOLATION_LEVEL_SETTING}={value} is not used: the plan decides the isolation level "
        f"({now}--processing-guarantee exactly_once_v2 reads read_committed, or `streamproc plan --isolation-level "
        f"{value}`); drop -X {ISOLATION_LEVEL_SETTING} and set it when planning"
    )


# librdkafka's codes for the events the reader must tell apart from real errors.
_PARTITION_EOF = -191
_AUTO_OFFSET_RESET = -140
_OFFSET_OUT_OF_RANGE = 1

# confluent-kafka's timestamp type ids (TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME).
_TIMESTAMP_TYPES = {0: TimestampType.NO_TIMESTAMP_TYPE, 1: TimestampType.CREATE_TIME, 2: TimestampType.LOG_APPEND_TIME}

RawRecord = ConsumerRecord[bytes | None, bytes | None]


@dataclass(slots=True)
class RangeEvidence:
    """What one reading of a range observed: delivered offsets as inclusive intervals, and how it ended."""

    topic: str
    partition: int
    start: int
    end: int
    isolation_level: str
    delivered: list[tuple[int, int]] = field(default_factory=list)
    delivered_count: int = 0
    dropped_past_end: int = 0
    reached_end_by: str | None = None  # "record_at_end", "last_offset", "eof_position", "empty"
    final_position: int | None = None

    def add_run(self, first: int, last: int) -> None:
        """Record the contiguous delivered offsets ``first..last``."""
        if self.delivered and self.delivered[-1][1] == first - 1:
            self.delivered[-1] = (self.delivered[-1][0], last)
        else:
            self.delivered.append((first, last))
        self.delivered_count += last - first + 1

    def add_runs(self, offsets: Sequence[int]) -> None:
        """Record ascending delivered ``offsets`` as their runs."""
        if not offsets:
            return
        run_start = previous = offsets[0]
        for offset in offsets[1:]:
            if offset != previous + 1:
                self.add_run(run_start, previous)
                run_start = offset
            previous = offset
        self.add_run(run_start, previous)

    def add(self, offset: int) -> None:
        if self.delivered and self.delivered[-1][1] == offset - 1:
            self.delivered[-1] = (self.delivered[-1][0], offset)
        else:
            self.delivered.append((offset, offset))
        self.delivered_count += 1


def to_record(message: Any) -> RawRecord:
    """A confluent-kafka ``Message`` as the raw ``ConsumerRecord`` the engine consumes."""
    ts_type, ts = message.timestamp()
    headers = tuple((key, value) for key, value in (message.headers() or ()))
    return ConsumerRecord.raw(
        message.topic(),
        message.partition(),
        message.offset(),
        ts,
        message.key(),
        message.value(),
        timestamp_type=_TIMESTAMP_TYPES.get(ts_type, TimestampType.NO_TIMESTAMP_TYPE),
        headers=headers,
        leader_epoch=message.leader_epoch(),
    )


class RangeReader:
    """Reads ``[start, end)`` of one partition with a dedicated consumer that never joins a group or commits.

    ``client_config`` holds the connection settings (``bootstrap.servers``, security); the reader sets the rest.
    ``stall_timeout_s`` bounds how long the broker may give neither records nor an end (a broker that went away
    and did not come back) before the read fails.
    """

    def __init__(
        self,
        client_config: Mapping[str, object],
        topic: str,
        partition: int,
        start: int,
        end: int,
        *,
        isolation_level: str = READ_COMMITTED,
        batch_size: int = 5_000,
        stall_timeout_s: float = 60.0,
    ) -> None:
        if end < start:
            raise FetchError(f"{topic}-{partition} [{start}, {end}): the end is before the start")
        if isolation_level not in (READ_COMMITTED, READ_UNCOMMITTED):
            raise FetchError(f"isolation level must be {READ_COMMITTED} or {READ_UNCOMMITTED}, not {isolation_level}")
        self._config = dict(client_config)
        self._batch_size = batch_size
        self._stall_timeout_s = stall_timeout_s
        self.evidence = RangeEvidence(topic, partition, start, end, isolation_level)

    def _consumer(self) -> Any:
        config = {
            "group.id": "streamproc-range-reader",  # required by the client; never joined: we assign(), never commit
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            **self._config,
        }
        return kafka_clients.consumer(
            config,
            topic=self.evidence.topic,
            **{
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "error",
                "isolation.level": self.evidence.isolation_level,
            },
        )

    def records(self) -> Iterator[RawRecord]:
        """Yield the range's records in offset order; on return, ``evidence`` says how ``end`` was reached."""
        for message in self.messages():
            yield to_record(message)

    def messages(self) -> Iterator[Any]:
        """The range's confluent-kafka ``Message`` objects in offset order, for readers that need no record object.

        On return, ``evidence`` says how ``end`` was reached.
        """
        for batch in self.batches():
            yield from batch

    def batches(self, *, native: bool = False) -> Iterator[Sequence[Any]]:
        """The range's messages as the consumer hands them out, a batch per fetch, in offset order.

        The cheapest way through a range: no per-message generator step. With ``native``, each batch is the compiled
        kernel's ``Batch`` of librdkafka's messages read in place (``kafka/native_consume.py``; confluent-kafka's
        ``Message`` objects where the kernel is not available): a batch is valid only until the next one is asked
        for, so the caller copies what it keeps. On return, ``evidence`` says how ``end`` was reached.
        """
        from confluent_kafka import TopicPartition

        ev = self.evidence
        if ev.start == ev.end:
            ev.reached_end_by = "empty"
            ev.final_position = ev.end
            return
        end = ev.end
        with contextlib.ExitStack() as scope:
            consumer = self._consumer()
            scope.callback(self._close, consumer)
            self._check_partition_exists(consumer)
            consume = self._consume_function(consumer, scope, native)
            consumer.assign([TopicPartition(ev.topic, ev.partition, ev.start)])
            last_progress = time.monotonic()
            while True:
                messages = consume()
                if not messages:
                    if time.monotonic() - last_progress > self._stall_timeout_s:
                        raise FetchError(
                            f"{ev.topic}-{ev.partition} [{ev.start}, {ev.end}): no record and no end of log for "
                            f"{self._stall_timeout_s:.0f}s after {ev.delivered_count} records; is the broker up? "
                            "Re-run the fetch: completed segments are kept"
                        )
                    continue
                last_progress = time.monotonic()
                count, ended = scan(messages, end)
                batch = messages if count == len(messages) else messages[:count]
                self._record(batch)  # the evidence holds what was delivered, even if the read fails below
                if ended == SCAN_ERROR:
                    self._raise_or_finish(consumer, messages[count].error())
                elif ended == SCAN_PAST_END:
                    ev.dropped_past_end += 1
                    ev.reached_end_by = "record_at_end"
                    ev.final_position = end
                elif ended == SCAN_LAST_OFFSET:
                    ev.reached_end_by = "last_offset"
                    ev.final_position = end
                if batch:
                    yield batch
                if ended != SCAN_ALL:
                    return

    def _consume_function(self, consumer: Any, scope: contextlib.ExitStack, native: bool) -> Callable[[], Any]:
        """The call that returns the next batch: confluent-kafka's ``consume``, or the kernel's consume of the
        partition's own queue (set up here, before the assignment, and torn down by ``scope`` before the consumer
        closes), which releases each batch when the next is asked for."""
        ev = self.evidence
        kernel = native_kernel() if native else None
        if kernel is None:
            return lambda: consumer.consume(self._batch_size, timeout=1.0)
        queue = scope.enter_context(partition_queue(consumer, ev.topic, ev.partition))
        held: list[Any] = []

        def release() -> None:
            while held:
                held.pop().release()

        def consume_native() -> Any:
            release()
            stray = consumer.poll(0)  # serves the consumer's own queue: its log lines and client errors
            if stray is not None:
                log.debug("%s-%d: the consumer's own queue held %s", ev.topic, ev.partition, stray.error())
            batch = kernel.consume(queue, 1000, self._batch_size)
            held.append(batch)
            return batch

        scope.callback(release)
        return consume_native

    def _close(self, consumer: Any) -> None:
        ev = self.evidence
        consumer.close()
        log.info(
            "Read %s-%d [%d, %d) %s: %d records delivered, end reached by %s",
            ev.topic, ev.partition, ev.start, ev.end, ev.isolation_level, ev.delivered_count, ev.reached_end_by,
        )  # fmt: skip

    def _record(self, batch: Sequence[Any]) -> None:
        if not batch:
            return
        first, last = batch[0].offset(), batch[-1].offset()
        if last - first + 1 == len(batch):
            self.evidence.add_run(first, last)
        else:  # gaps (a transactional log's markers, aborted or compacted records): its runs
            self.evidence.add_runs(offsets_of(batch))

    def _raise_or_finish(self, consumer: Any, error: Any) -> None:
        """Partition EOF at or past the end finishes the range; anything else is a ``FetchError``."""
        from confluent_kafka import TopicPartition

        ev = self.evidence
        if error.code() == _PARTITION_EOF:
            [position] = consumer.position([TopicPartition(ev.topic, ev.partition)])
            if position.offset >= ev.end:
                ev.reached_end_by = "eof_position"
                ev.final_position = position.offset
                return
            raise FetchError(self._ended_early(consumer, position.offset))
        if error.code() in (_AUTO_OFFSET_RESET, _OFFSET_OUT_OF_RANGE):
            raise self._lost_to_retention(consumer, error)
        raise FetchError(f"{ev.topic}-{ev.partition} [{ev.start}, {ev.end}): {error.str()}")

    def _ended_early(self, consumer: Any, position: int) -> str:
        """What is true when the log ended before the planned end, in Kafka's terms: from which offset nothing more
        was readable, and, asked of the broker, whether an open transaction holds the last stable offset back (its
        records are there, a read_committed reader may not pass them until it ends) or the log is shorter."""
        from confluent_kafka import TopicPartition

        ev = self.evidence
        # the consumer's position is "no offset" (librdkafka's -1001) when not one record was delivered
        readable_to = position if position >= 0 else ev.start
        prefix = f"{ev.topic}-{ev.partition} [{ev.start}, {ev.end}): no record is readable under {ev.isolation_level}"
        where = f" from offset {readable_to} on" if position < 0 else f" past offset {readable_to - 1}"
        try:
            _low, stable = consumer.get_watermark_offsets(TopicPartition(ev.topic, ev.partition), timeout=10)
            high = self._log_end()
        except Exception as exc:  # the broker could not say more: what is known
            log.info("could not read the offsets of %s-%d: %s", ev.topic, ev.partition, exc)
            return (
                f"{prefix}{where}, before the planned end: a transaction is still open on this partition, or the "
                "log was truncated; re-plan the range"
            )
        if ev.isolation_level == READ_COMMITTED and stable < high and stable < ev.end:
            return (
                f"{prefix}{where}, before the planned end: a transaction is still open on this partition (its last "
                f"stable offset is {stable}, its log end {high}); a streamproc hand-off killed mid-transaction is "
                "fenced by running its hand-off or the fetch again, any other producer's transaction ends when it "
                "commits, aborts or times out (transaction.timeout.ms); then fetch again"
            )
        return (
            f"{prefix}{where}, before the planned end: the log ends at {high} (truncated since the plan?); re-plan "
            "the range"
        )

    def _log_end(self) -> int:
        """The partition's high watermark, read_uncommitted (this reader's consumer may be read_committed)."""
        from confluent_kafka import TopicPartition

        ev = self.evidence
        settings: dict[str, object] = {"enable.auto.commit": False, "isolation.level": READ_UNCOMMITTED}
        config = {"group.id": "streamproc-range-reader", **self._config}
        reader = kafka_clients.consumer(config, topic=ev.topic, **settings)
        try:
            return int(reader.get_watermark_offsets(TopicPartition(ev.topic, ev.partition), timeout=10)[1])
        finally:
            reader.close()

    def _check_partition_exists(self, consumer: Any) -> None:
        """A topic deleted or shrunk since planning is named at once, instead of a read that never starts."""
        ev = self.evidence
        try:
            metadata = consumer.list_topics(ev.topic, timeout=30)
        except Exception as exc:
            raise FetchError(f"{ev.topic}-{ev.partition}: cannot read the topic's metadata: {exc}") from exc
        topic = metadata.topics.get(ev.topic)
        if topic is None or (topic.error is not None and topic.error.name() == "UNKNOWN_TOPIC_OR_PART"):
            raise FetchError(
                f"{ev.topic}-{ev.partition} [{ev.start}, {ev.end}): topic '{ev.topic}' does not exist (deleted since "
                "the plan was made?); re-plan"
            )
        if topic.error is not None:
            raise FetchError(f"{ev.topic}-{ev.partition}: topic metadata error: {topic.error.str()}")
        if ev.partition not in topic.partitions:
            raise FetchError(
                f"{ev.topic}-{ev.partition} [{ev.start}, {ev.end}): partition {ev.partition} does not exist; "
                f"'{ev.topic}' has {len(topic.partitions)} partition(s) (did its partition count change since the "
                "plan?); re-plan"
            )

    def _lost_to_retention(self, consumer: Any, error: Any) -> FetchError:
        from confluent_kafka import TopicPartition

        ev = self.evidence
        try:
            low, _high = consumer.get_watermark_offsets(TopicPartition(ev.topic, ev.partition), timeout=10)
        except Exception:  # noqa: BLE001 - the message still says what happened without the new log start
            low = None
        first = ev.delivered[-1][1] + 1 if ev.delivered else ev.start
        if low is not None and low > first:
            return FetchError(
                f"OffsetOutOfRange: {ev.topic}-{ev.partition} [{ev.start}, {ev.end}): offsets {first}..{low - 1} "
                f"were deleted by retention (log start is now {low}); re-plan with --on-data-loss=clamp or restore "
                "them from backup"
            )
        return FetchError(f"OffsetOutOfRange: {ev.topic}-{ev.partition} [{ev.start}, {ev.end}): {error.str()}")


def read_range(
    client_config: Mapping[str, object],
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    isolation_level: str = READ_COMMITTED,
) -> tuple[list[RawRecord], RangeEvidence]:
    """Read a whole (small) range into memory; fetch streams large ranges through ``RangeReader`` instead."""
    reader = RangeReader(client_config, topic, partition, start, end, isolation_level=isolation_level)
    records = list(reader.records())
    return records, reader.evidence
