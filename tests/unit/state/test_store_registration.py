"""Store registration and the checkpoint map (``ProcessorStateManager.registerStore``/``checkpoint``)."""

from __future__ import annotations

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.engine.store_names import is_illegal_store_name
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import StoreSpec as TopologyStoreSpec
from streamproc.engine.topology import Topology
from streamproc.errors import TopologyError
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN
from streamproc.state.store_registration import (
    DuplicateStore,
    IllegalStoreName,
    StoreSpec,
    register_stores,
)


def test_changelog_partitions_and_checkpointed_stores() -> None:
    registered = register_stores(
        "app",
        TaskId(1, 3),
        [StoreSpec("counts"), StoreSpec("cache", logged=False), StoreSpec("mem", persistent=False)],
    )
    assert registered.changelog_partitions == {
        "counts": TopicPartition("app-counts-changelog", 3),
        "mem": TopicPartition("app-mem-changelog", 3),
    }
    assert registered.checkpointed_stores == ["counts"]


def test_named_topology_and_source_topic_changelog() -> None:
    registered = register_stores(
        "app", TaskId(0, 2, "topo"), [StoreSpec("a"), StoreSpec("orders-table", changelog_topic="orders")]
    )
    assert registered.changelog_partitions == {
        "a": TopicPartition("app-topo-a-changelog", 2),
        "orders-table": TopicPartition("orders", 2),
    }
    assert registered.stores[1].source_topic_changelog


def test_checkpoint_store_name_rejected() -> None:
    with pytest.raises(IllegalStoreName) as info:
        register_stores("app", TaskId(0, 0), [StoreSpec(".checkpoint")])
    assert "task [0_0] Illegal store name: .checkpoint, which collides with the pre-defined checkpoint file name" in (
        str(info.value)
    )
    assert info.value.kafka_exception == "java.lang.IllegalArgumentException"


def test_prefixes_of_checkpoint_only_rejected_in_4_3() -> None:
    assert not is_illegal_store_name(".check")
    assert is_illegal_store_name(".check", "4.3")
    assert not is_illegal_store_name(".checkpoints", "4.3")
    register_stores("app", TaskId(0, 0), [StoreSpec(".")])
    with pytest.raises(IllegalStoreName):
        register_stores("app", TaskId(0, 0), [StoreSpec(".")], ks_version="4.3")


def test_the_topology_and_the_state_manager_refuse_the_same_store_names() -> None:
    """One rule (``engine/store_names``): ``Topology#addStateStore`` and ``registerStore`` agree on 4.2."""
    for name in (".checkpoint", ".check", "counts", ".checkpoints"):
        try:
            Topology().add_state_store(TopologyStoreSpec(name))
            topology_refuses = False
        except TopologyError as exc:
            topology_refuses = "Illegal store name" in str(exc)
        try:
            register_stores("app", TaskId(0, 0), [StoreSpec(name)])
            registration_refuses = False
        except IllegalStoreName:
            registration_refuses = True
        assert topology_refuses == registration_refuses == is_illegal_store_name(name), name


def test_duplicate_store_rejected() -> None:
    with pytest.raises(DuplicateStore, match=r"task \[0_0\] Store counts has already been registered\."):
        register_stores("app", TaskId(0, 0), [StoreSpec("counts"), StoreSpec("counts", persistent=False)])


def test_checkpoint_offsets() -> None:
    registered = register_stores(
        "app",
        TaskId(0, 1),
        [
            StoreSpec("a"),
            StoreSpec("b"),
            StoreSpec("mem", persistent=False),
            StoreSpec("c"),
            StoreSpec("u", logged=False),
        ],
    )
    offsets = registered.checkpoint_offsets({"a": 41, "mem": 3, "c": 7}, corrupted=["c"])
    assert offsets == {TopicPartition("app-a-changelog", 1): 41, TopicPartition("app-b-changelog", 1): OFFSET_UNKNOWN}
    assert list(offsets) == [TopicPartition("app-a-changelog", 1), TopicPartition("app-b-changelog", 1)]
