"""Committed offsets + metadata and purge offsets (``StreamTask``, ``TaskManager``)."""

from __future__ import annotations

from streamproc.engine.records import TopicPartition
from streamproc.state.commit_metadata import ProcessorMetadata, TopicPartitionMetadata
from streamproc.state.committable_offsets import (
    OffsetAndMetadata,
    PartitionCommitState,
    TaskState,
    commit_offsets,
    purge_offsets,
)

P0 = TopicPartition("orders", 0)
P1 = TopicPartition("orders", 1)
P2 = TopicPartition("orders", 2)
R0 = TopicPartition("app-agg-repartition", 0)


def test_commit_head_buffered_else_next_fetch_position() -> None:
    partitions = {
        P0: PartitionCommitState(True, None, 45, 1700000000000),
        P1: PartitionCommitState(True, 43, 50, 1699999999000, head_leader_epoch=7),
        P2: PartitionCommitState(False, None, None, -1),
    }
    assert commit_offsets(partitions) == {
        P0: OffsetAndMetadata(45, "AgAAAYvP5WgA"),
        P1: OffsetAndMetadata(43, "AgAAAYvP5WQY", 7),
    }


def test_processor_metadata_commits_every_partition_with_a_position() -> None:
    metadata = ProcessorMetadata.of({"counts": 1699999940000})
    partitions = {
        P0: PartitionCommitState(True, None, 45, 1700000000000),
        P1: PartitionCommitState(False, 10, 12, 1699990000000),
        P2: PartitionCommitState(False, None, None, -1),
    }
    offsets = commit_offsets(partitions, metadata, processor_metadata_needs_commit=True)
    assert set(offsets) == {P0, P1}
    assert offsets[P1].offset == 10
    decoded = TopicPartitionMetadata.decode(offsets[P1].metadata)
    assert decoded.partition_time == 1699990000000
    assert decoded.processor_metadata.as_dict() == {"counts": 1699999940000}
    assert commit_offsets(partitions, metadata) == {P0: offsets[P0]}


def test_nothing_processed_since_creation_commits_nothing_even_with_metadata_to_commit() -> None:
    """``commitNeeded()`` is false, so ``prepareCommit`` is never asked (own scenario co10, Kafka Streams 4.2.2)."""
    metadata = ProcessorMetadata.of({"counts": 1699999940000})
    partitions = {
        P0: PartitionCommitState(False, 10, 12, 1699990000000),
        P1: PartitionCommitState(False, None, None, -1),
    }
    assert commit_offsets(partitions, metadata, processor_metadata_needs_commit=True) == {}
    # A caller that knows the task needs a commit (e.g. it punctuated) still gets every partition with a position.
    offsets = commit_offsets(partitions, metadata, processor_metadata_needs_commit=True, commit_needed=True)
    assert set(offsets) == {P0}
    assert offsets[P0].offset == 10


def test_no_commit_before_running() -> None:
    partitions = {P0: PartitionCommitState(True, None, 45, 1)}
    assert commit_offsets(partitions, task_state=TaskState.RESTORING) == {}
    assert commit_offsets(partitions, task_state=TaskState.SUSPENDED) != {}


def test_purge_only_committed_repartition_partitions_of_thread_owned_tasks() -> None:
    committed = {
        R0: 120,
        P0: 500,
        TopicPartition("app-agg-repartition", 1): -1,
        TopicPartition("app-agg-repartition", 2): 0,
    }
    assert purge_offsets(committed, ["app-agg-repartition"]) == {R0: 120, TopicPartition("app-agg-repartition", 2): 0}
    assert purge_offsets(committed, ["app-agg-repartition"], task_state=TaskState.RESTORING) == {}
    assert purge_offsets(committed, ["app-agg-repartition"], task_state=TaskState.SUSPENDED) == {
        R0: 120,
        TopicPartition("app-agg-repartition", 2): 0,
    }
