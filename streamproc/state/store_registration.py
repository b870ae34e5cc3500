"""Store registration and the checkpoint map of a task (``PI/ProcessorStateManager.java``, 4.2.0; 4.3.0 where noted).

``registerStore`` rejects a store named ``.checkpoint`` (4.3: any prefix of it) and a second store with the same
name; every logged store gets the changelog partition ``<changelog topic>-<task partition>`` (``getStorePartition``),
and ``checkpoint()`` writes one entry per logged, persistent, non-corrupted store, ``OFFSET_UNKNOWN`` when its offset
is unknown, in store registration order (the order ``OffsetCheckpoint.write`` receives them in its ``HashMap``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamproc.engine.internal_topics import store_changelog_topic
from streamproc.engine.records import TopicPartition
from streamproc.engine.store_names import KS_VERSION_4_2 as KS_VERSION_4_2
from streamproc.engine.store_names import KS_VERSION_4_3 as KS_VERSION_4_3
from streamproc.engine.store_names import is_illegal_store_name
from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN


class IllegalStoreName(StateError):
    """A store name collides with the ``.checkpoint`` file (``IllegalArgumentException`` in ``registerStore``)."""

    kafka_exception = "java.lang.IllegalArgumentException"

    def __init__(self, task_id: TaskId, store_name: str) -> None:
        self.task_id = task_id
        self.store_name = store_name
        self.kafka_message = (
            f"Illegal store name: {store_name}, which collides with the pre-defined checkpoint file name"
        )
        super().__init__(
            f"task [{task_id}] {self.kafka_message}; rename the store (Kafka Streams would fail the task's "
            "initialisation)"
        )


class DuplicateStore(StateError):
    """Two stores of one task share a name (``IllegalArgumentException`` in ``registerStore``)."""

    kafka_exception = "java.lang.IllegalArgumentException"

    def __init__(self, task_id: TaskId, store_name: str) -> None:
        self.task_id = task_id
        self.store_name = store_name
        self.kafka_message = f"Store {store_name} has already been registered."
        super().__init__(
            f"task [{task_id}] {self.kafka_message} Give every store of the topology a distinct name (Kafka Streams "
            "would fail the task's initialisation)"
        )


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """A store as the topology defines it.

    ``changelog_topic`` overrides the changelog (a KTable source topic reused as changelog under
    ``topology.optimization``); ``None`` means ``<prefix>-[<topology>-]<store>-changelog``. A store with a source
    topic as changelog is registered as logged whatever ``logged`` says: its builder has logging disabled (it writes
    no changelog), yet Kafka Streams' ``storeToChangelogTopic`` names the topic it restores from and checkpoints.
    """

    name: str
    logged: bool = True
    persistent: bool = True
    changelog_topic: str | None = None


@dataclass(frozen=True, slots=True)
class StateStoreMetadata:
    """``ProcessorStateManager.StateStoreMetadata`` without the live store: what registration decided."""

    name: str
    persistent: bool
    changelog_partition: TopicPartition | None
    source_topic_changelog: bool = False

    @property
    def logged(self) -> bool:
        return self.changelog_partition is not None

    @property
    def checkpointed(self) -> bool:
        """Has an entry in ``.checkpoint`` (logged and persistent)."""
        return self.changelog_partition is not None and self.persistent


@dataclass(frozen=True, slots=True)
class RegisteredStores:
    """The stores of one task after ``registerStore`` ran for each, in registration order."""

    task_id: TaskId
    stores: tuple[StateStoreMetadata, ...]

    @property
    def changelog_partitions(self) -> dict[str, TopicPartition]:
        """Store name → changelog partition, for every logged store (persistent or in-memory)."""
        return {s.name: s.changelog_partition for s in self.stores if s.changelog_partition is not None}

    @property
    def checkpointed_stores(self) -> list[str]:
        """Names of the stores that get a ``.checkpoint`` entry (logged and persistent)."""
        return [s.name for s in self.stores if s.checkpointed]

    def checkpoint_offsets(
        self,
        offsets: Mapping[str, int | None],
        corrupted: Iterable[str] = (),
    ) -> dict[TopicPartition, int]:
        """``ProcessorStateManager.checkpoint``'s map: L per logged persistent store, ``OFFSET_UNKNOWN`` if unknown.

        ``offsets`` maps store name → offset of the last changelog record in the store (``None``/absent =
        unknown); ``corrupted`` stores are left out. The dict's order is the ``HashMap`` insertion order.
        """
        skip = set(corrupted)
        result: dict[TopicPartition, int] = {}
        for store in self.stores:
            if store.checkpointed and store.name not in skip and store.changelog_partition is not None:
                offset = offsets.get(store.name)
                result[store.changelog_partition] = OFFSET_UNKNOWN if offset is None else offset
        return result


def register_stores(
    application_id: str,
    task_id: TaskId,
    stores: Iterable[StoreSpec],
    *,
    topic_prefix: str | None = None,
    ks_version: str = KS_VERSION_4_2,
) -> RegisteredStores:
    """Register ``stores`` in order as ``ProcessorStateManager.registerStore`` does, or raise its errors."""
    prefix = application_id if topic_prefix is None else topic_prefix
    registered: dict[str, StateStoreMetadata] = {}
    for spec in stores:
        if is_illegal_store_name(spec.name, ks_version):
            raise IllegalStoreName(task_id, spec.name)
        if spec.name in registered:
            raise DuplicateStore(task_id, spec.name)
        changelog: TopicPartition | None = None
        if spec.logged or spec.changelog_topic is not None:
            topic = spec.changelog_topic or store_changelog_topic(prefix, spec.name, task_id.topology_name)
            changelog = TopicPartition(topic, task_id.partition)
        registered[spec.name] = StateStoreMetadata(
            spec.name, spec.persistent, changelog, source_topic_changelog=spec.changelog_topic is not None
        )
    return RegisteredStores(task_id, tuple(registered.values()))
