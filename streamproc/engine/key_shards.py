"""One task's records processed as K key shards (issue #29, docs/split.md): which shard owns a record, the gate a
shard puts in front of its source nodes, and the stamp everything a record causes carries for the merge.

How a shard gets the task's order
    A shard runs the *whole* task's input through the task's own ``PartitionGroup`` (the same queues, deserializers,
    timestamp extractors and bulk loop as the unsplit task) and lets only the records it owns reach its processors.
    ``PartitionGroup``'s order is not a function of any key's records alone: which queue goes next depends on every
    partition's head timestamp, on which records fail to deserialize or carry a negative timestamp (they are dropped
    while a head is chosen, RQ-6), and ties break by the shape of ``java.util.PriorityQueue``'s heap; reproducing it
    elsewhere would be a second implementation of ordering.md to keep equal to the first. Running it in every shard
    is correct by construction, and makes everything the task's order decides identical in every shard: the
    positions, ``records_processed`` at every step (a gated record still counts as processed, so every drop carries
    the unsplit task's count), stream time, committable offsets and partition times. The price is that every shard
    reads and deserializes every record (docs/split.md says what that costs and what would remove it).

Positions and phases
    A record's position is its step in the task's order: ``records_processed + len(skip_steps)`` while it is polled
    and processed. A step has two phases: the *poll* (the next head of the record's queue is deserialized and
    timestamped, RQ-9, which may drop records and send dead-letter records, identically in every shard) and the
    *processing* (only in the shard that owns the record). Everything is stamped ``(position, phase)`` and a
    shard-local sequence (an output's or changelog record's is its collector's production sequence, a drop's the
    gate's own); a shard keeps poll-phase events only when it is shard 0, so each ``(position, phase)``
    belongs to exactly one shard and the task's streams are the shards' streams merged on
    ``(position, phase, sequence)``.

Which shard owns a record
    ``partition_for_key(shard_key(key), K)`` (Kafka's murmur2 rule) where ``shard_key`` serializes the deserialized
    key as the sub-topology's stores address it (so two byte strings that deserialize to equal keys, which touch one
    store entry, go to one shard); a null key, a key that serializes to null, or a sub-topology without stores (no
    state: any record may go anywhere) goes round-robin by position. A shard that reads only its own records
    (``spark/owned_input.py``) has every key before it processes a record, and balances the same bytes' buckets over
    the shards instead (``owned_input.balanced_owners``); every shard of a task reads its input the same way, so they
    all apply one rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from streamproc.engine.bulk_replay import inlines_source_forward
from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.partitioner import partition_for_key

if TYPE_CHECKING:
    from streamproc.engine.processor_topology import SourceNode
    from streamproc.engine.records import Record
    from streamproc.engine.stream_task import StreamTask
    from streamproc.engine.task_wide_times import SourceTimes, TaskStreamTimes

#: The phase of a step in which the next head of the polled queue is deserialized (every shard sees it).
POLL = 0
#: The phase of a step in which the record is processed (only its owner shard sees it).
PROCESS = 1

#: The most keys a gate remembers the owner of (a task of many millions of distinct keys stays within memory).
OWNER_CACHE_KEYS = 1 << 20

#: A key as the bytes its shard is chosen from (``None``: a key that serializes to null goes round-robin).
ShardKey = Callable[[Any], bytes | None]


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """Shard ``index`` of ``count`` (0-based) of one task."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}: a shard is 0 <= index < count, count >= 1")

    def __str__(self) -> str:
        return f"{self.index}-of-{self.count}"


@dataclass(frozen=True, slots=True)
class Stamp:
    """Where in the task's order an event happened: its record's position, the phase, and the shard's sequence."""

    position: int
    phase: int
    sequence: int


class ShardGate:
    """A shard's view of the task's order: installed on a :class:`StreamTask`'s source nodes (:meth:`install`).

    Collectors ask :meth:`keeps` and :meth:`stamp` for every event; the task's drop sensor is observed so that its
    counts and events are the shard's own, and :attr:`drop_stamps` says where each kept drop happened.
    """

    __slots__ = (
        "_owners",
        "_position",
        "_sequence",
        "_shard_key",
        "_task",
        "drop_stamps",
        "positions",
        "processing",
        "shard",
    )

    def __init__(self, shard: ShardSpec) -> None:
        self.shard = shard
        self._shard_key: ShardKey | None = None
        self._task: StreamTask | None = None
        #: True while a record this shard owns is being processed (its events are the processing phase's).
        self.processing = False
        self._sequence = 0
        #: The position of the record being processed (set by the gate: every event it causes is there).
        self._position = 0
        #: The owner of each ``bytes`` or ``str`` key met so far: a task's keys repeat, and the serializer and
        #: murmur2 per record were a tenth of a shard's time.
        self._owners: dict[bytes | str, int] = {}
        #: One stamp per drop the shard kept, in the order of the task's sensor's events.
        self.drop_stamps: list[Stamp] = []
        #: When the shard reads only its own records (``spark/owned_input.py``): the position in the whole task of
        #: each record it processes, by its own step count; ``None``: its steps are the task's.
        self.positions: Sequence[int] | None = None

    def owner(self, key: object, position: int) -> int:
        """The shard that processes the record at ``position`` with deserialized key ``key``."""
        count = self.shard.count
        if count == 1:
            return 0
        if key is None or self._shard_key is None:
            return position % count
        kind = type(key)
        if kind is bytes or kind is str:  # exactly these: a subclass may hash or compare otherwise
            plain = cast("bytes | str", key)
            owners = self._owners
            owner = owners.get(plain)
            if owner is None:
                owner = self._owner_of(plain, position)
                if len(owners) < OWNER_CACHE_KEYS:
                    owners[plain] = owner
        else:
            owner = self._owner_of(key, position)
        return owner if owner >= 0 else position % count

    def _owner_of(self, key: object, position: int) -> int:
        """The owner from the key's serialized bytes; -1 for a key that goes round-robin (no bytes to hash)."""
        count = self.shard.count
        assert self._shard_key is not None
        try:
            data = self._shard_key(key)
        except Exception:  # noqa: BLE001 - the store could not address it either: it touches no entry
            return -1
        if data is None:
            return -1
        return partition_for_key(data, count)

    def position(self) -> int:
        """The position of the record being polled or processed."""
        task = self._task
        assert task is not None, "the gate is not installed"
        return self._in_task(task.records_processed + len(task.skip_steps))

    def _in_task(self, step: int) -> int:
        """The position in the whole task of the shard's step ``step``."""
        positions = self.positions
        if positions is None:
            return step
        return int(positions[step]) if step < len(positions) else (int(positions[-1]) + 1 if len(positions) else 0)

    @property
    def keeps(self) -> bool:
        """Whether an event happening now is this shard's to publish (processing: always; poll: shard 0's; every
        event of a shard that reads only its own records)."""
        return self.processing or self.shard.index == 0 or self.positions is not None

    def stamp(self) -> Stamp:
        """The stamp of a drop this shard keeps, happening now (drops are ordered by their sequence too)."""
        sequence = self._sequence
        self._sequence = sequence + 1
        return Stamp(*self.tag(), sequence)

    def tag(self) -> tuple[int, int]:
        """The ``(position, phase)`` of an output or changelog record this shard keeps, happening now: its order
        among the records of one ``(position, phase)`` is the collector's own sequence."""
        if self.processing:
            return self._position, PROCESS
        if self.positions is not None:  # no poll drops its records (spark/owned_input.py): one being processed
            return self.position(), PROCESS
        return self.position(), POLL

    def stamp_now(self) -> tuple[int, int] | None:
        """What the collectors call once per output and changelog record: :meth:`tag` when the shard keeps the
        event, else ``None`` (one call where :attr:`keeps` and :meth:`tag` are two; a shard that reads only its own
        records stamps its rows by step instead, ``spark/task_shards.py``)."""
        return self.tag() if self.keeps else None

    def install(
        self,
        task: StreamTask,
        shard_key: ShardKey | None,
        positions: Sequence[int] | None = None,
        stream_times: TaskStreamTimes | None = None,
        keyed_times: tuple[Sequence[int], Sequence[int]] | None = None,
        others_times: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        """Gate every source node of ``task`` and observe its drop sensor (before the task starts); ``shard_key``:
        the bytes a key's shard is chosen from (``None``: round-robin, for a sub-topology without stores).

        With ``positions`` the task is given only the records this shard owns (``spark/owned_input.py``), and these
        are their positions in the whole task, by the shard's step count: nothing is gated (the source nodes and the
        compiled loop run as in the unsplit task), only the events are stamped, each at its record's position.

        ``stream_times``: the processors that read a task-wide stream time (``engine/task_wide_times.py``); with
        ``positions``, ``keyed_times`` gives it per owned record (with it, and before it) and ``others_times`` the
        other shards' part of it for a processor behind a prefix, else the gate keeps it from every record."""
        self._task = task
        self._shard_key = shard_key
        task.dropped.observer = self._observe_drop
        if positions is not None:
            self.positions = positions
            if stream_times is not None:
                assert keyed_times is not None, "a shard reading only its records is given their stream times"
                stream_times.at_positions(task, *keyed_times, others_times)
            return
        times = {} if stream_times is None else stream_times.track()
        if not times:
            # the compiled loop skips a record whose key's owner the gate already knows to be another shard, and
            # does the step's bookkeeping only, as the gate's early return leaves it (bulk_replay; the Python loops
            # ask the gate every time, with the same result); a gate keeping stream times sees every record
            task.shard_skip = (self._owners, self.shard.index)
        for source in task.topology.sources:
            gated = self._gated(task, source, times.get(source.name))
            source.process = gated  # type: ignore[method-assign,assignment]

    def _observe_drop(self, _event: DroppedRecord) -> bool:
        if not self.keeps:
            return False
        self.drop_stamps.append(self.stamp())
        return True

    def _gated(
        self, task: StreamTask, source: SourceNode, stream_times: SourceTimes | None = None
    ) -> Callable[[Record[Any, Any]], None]:
        """``source.process`` for the records this shard owns; the others return at once. ``stream_times``: the
        cells of the processors the source feeds whose stream time is task-wide (``TaskStreamTimes.track``),
        advanced by every keyed record that reaches them.

        An owned record goes on exactly as in the unsplit task: where the compiled bulk loop would hand it to the
        source's children itself (``bulk_replay.inlines_source_forward``, known once the task runs, for the heads
        the loop decoded), the gate does the same, without a frame of its own in a child's exception's traceback
        (the DLQ's stack trace header); otherwise through the source's own ``process``.
        """
        index = self.shard.index
        process = source.process
        inline: list[bool] = []

        def gated(record: Record[Any, Any]) -> None:
            position = self._in_task(task.records_processed + len(task.skip_steps))
            owned = self.owner(record.key, position) == index
            if stream_times is not None and record.key is not None:
                stream_times.advance(record.key, record.value, record.timestamp, owned)
            if not owned:
                return
            if not inline:
                inline.append(inlines_source_forward(task, source))
            self._position = position
            self.processing = True
            try:
                # a head the bulk loop decoded itself goes to the children from the loop (compiled: no forward
                # frame); a head RecordQueue decoded (the first of a queue, the one after a dropped record) through
                # StreamTask._do_process and the source's own process, which installs it as _lazy_stamped
                if inline[0] and source._context is not None and source._context._lazy_stamped is None:
                    _forward_to_children(source, record)
                else:
                    process(record)
            finally:
                self.processing = False

        return gated


def _forward_to_children(source: SourceNode, record: Record[Any, Any]) -> None:
    """``_bulk_kernel.c``'s ``forward_to_children``: each child processes the record, a failure goes to the child's
    ``failed`` with this frame cut from its traceback (the compiled loop has none); then the record context is lazy
    again and, after a failure, the source is the current node."""
    context = source._context
    assert context is not None
    try:
        for child in source.children:
            context.current_node = child
            try:
                child.run(record)
            except Exception as exception:
                traceback = exception.__traceback__
                if traceback is not None:
                    exception.__traceback__ = traceback.tb_next
                child.failed(record, exception)
    except BaseException:
        context.current_node = source
        raise
    finally:
        context._record_context = None


def processing_stamps(drops: Sequence[DroppedRecord]) -> list[Stamp]:
    """The stamps of a columnar shard's drops (``spark/columnar/shard_rows.py``): each happened while its record was
    processed, at the record's position, which is the drop's ``records_processed`` (the columnar path takes only
    input without skip steps)."""
    return [Stamp(drop.records_processed, PROCESS, sequence) for sequence, drop in enumerate(drops)]


def store_shard_key(store: Any) -> ShardKey:
    """A typed store's key serializer with its serde topic: the bytes the store addresses a key by."""
    serialize = store.key_serde.serializer.serialize
    topic = store.serde_topic

    def shard_key(key: object) -> bytes | None:
        data: bytes | None = serialize(topic, key)
        return data

    return shard_key
