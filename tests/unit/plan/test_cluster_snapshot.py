"""``streamproc.plan.cluster_snapshot``: the value types of the plan's inputs."""

from __future__ import annotations

import pytest

from streamproc.plan.cluster_snapshot import (
    CommittedStart,
    IsolationLevel,
    LatestEnd,
    PartitionState,
    PlanRequest,
    RecordKind,
    StartPolicy,
    TopicPartition,
    TopicState,
)


def test_topic_partition_prints_and_parses_at_the_last_dash() -> None:
    tp = TopicPartition.parse("app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition-3")
    assert tp == TopicPartition("app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition", 3)
    assert str(tp) == "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition-3"


@pytest.mark.parametrize("text", ["orders", "orders-", "-1", "orders-x"])
def test_topic_partition_parse_refuses_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="<topic>-<partition>"):
        TopicPartition.parse(text)


def test_topic_partitions_sort_by_topic_then_partition() -> None:
    tps = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]
    assert sorted(tps) == [TopicPartition("a", 2), TopicPartition("a", 10), TopicPartition("b", 0)]


@pytest.mark.parametrize(
    ("kind", "committed", "uncommitted"),
    [
        (RecordKind.DATA, True, True),
        (RecordKind.DATA_TXN_COMMITTED, True, True),
        (RecordKind.DATA_TXN_ABORTED, False, True),
        (RecordKind.DATA_TXN_OPEN, False, True),
        (RecordKind.MARKER_COMMIT, False, False),
        (RecordKind.MARKER_ABORT, False, False),
    ],
)
def test_record_visibility(kind: RecordKind, committed: bool, uncommitted: bool) -> None:
    assert kind.visible_to(IsolationLevel.READ_COMMITTED) is committed
    assert kind.visible_to(IsolationLevel.READ_UNCOMMITTED) is uncommitted


def test_latest_depends_on_isolation() -> None:
    state = PartitionState(log_start=0, high_watermark=120, last_stable_offset=110, log_end=125)
    assert state.latest(IsolationLevel.READ_UNCOMMITTED) == 120
    assert state.latest(IsolationLevel.READ_COMMITTED) == 110


@pytest.mark.parametrize(("policy", "compacted"), [("delete", False), ("compact", True), ("compact,delete", True)])
def test_topic_compacted(policy: str, compacted: bool) -> None:
    assert TopicState(partitions={}, cleanup_policy=policy).compacted is compacted


def test_request_defaults_are_the_reset_tools_default_run() -> None:
    request = PlanRequest()
    assert request.start == CommittedStart()
    assert request.end == LatestEnd()
    assert request.start_policy is StartPolicy.DEFAULT
