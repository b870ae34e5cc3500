"""The scenarios ``kafka-streams-groups.sh --reset-offsets`` (Kafka 4.2's ``StreamsGroupCommand``) adds to the
classic reset tools': ``--to-current`` and the ``--input-topic TOPIC[:P,…]`` partition selection
(``OffsetsUtils#resetToCurrent``, ``#parseTopicPartitionsToReset``), planned from a snapshot."""

from __future__ import annotations

import pytest

from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    ClusterSnapshot,
    CommittedOffset,
    CommittedStart,
    FromFileStart,
    PartitionSelection,
    PartitionState,
    PlanRequest,
    ShiftByStart,
    StartSpec,
    ToCurrentStart,
    ToOffsetStart,
    TopicPartition,
    TopicState,
)
from streamproc.plan.positions import plan_ranges
from streamproc.plan.refusals import BadRequest, CommittedBeyondEnd
from streamproc.plan.reset_formats import parse_partition_selection
from streamproc.plan.resolved_ranges import ResolvedRanges

O0, O1, O2 = (TopicPartition("orders", p) for p in range(3))
R0 = TopicPartition("app-rekey-repartition", 0)


def part(log_start: int, high_watermark: int) -> PartitionState:
    return PartitionState(log_start, high_watermark, high_watermark, high_watermark)


def snapshot(committed: dict[TopicPartition, CommittedOffset]) -> ClusterSnapshot:
    return ClusterSnapshot(
        topics={
            "orders": TopicState({0: part(0, 100), 1: part(10, 50), 2: part(0, 30)}),
            "app-rekey-repartition": TopicState({0: part(5, 20)}),
        },
        committed=committed,
    )


APP = ApplicationSpec(
    "app", ("orders", "app-rekey-repartition"), internal_source_topics=frozenset({"app-rekey-repartition"})
)


def plan(
    committed: dict[TopicPartition, CommittedOffset], start: StartSpec, *selection: str, all_input_topics: bool = False
) -> ResolvedRanges:
    chosen = parse_partition_selection(selection) if selection else None
    if all_input_topics:
        chosen = PartitionSelection(committed=True)
    return plan_ranges(snapshot(committed), APP, PlanRequest(start=start, start_partitions=chosen))


def starts(result: ResolvedRanges) -> dict[TopicPartition, tuple[int, int]]:
    return {r.tp: (r.start, r.partition_time) for r in result.ranges}


def test_to_current_is_the_committed_offset_or_latest_without_partition_time() -> None:
    committed = {O0: CommittedOffset(40, "AgAAAYvP5WgA"), O1: CommittedOffset(20), R0: CommittedOffset(7)}
    result = plan(committed, ToCurrentStart())
    assert result.start_mode == "to_current"
    # the tool writes the committed offset alone (no metadata: no partition time); latest where none is committed,
    # where the committed mode would apply the reset policy (earliest: 0)
    assert starts(result) == {O0: (40, -1), O1: (20, -1), O2: (30, -1), R0: (7, -1)}
    (o2,) = (r for r in result.ranges if r.tp == O2)
    assert [n.to_dict() for n in o2.notes] == [
        {"code": "no_committed_offset_to_latest", "latest": 30},
        {"code": "empty"},
    ]
    assert starts(plan(committed, CommittedStart()))[O2] == (0, -1)


def test_to_current_refuses_a_committed_offset_beyond_the_log_as_the_committed_mode() -> None:
    with pytest.raises(CommittedBeyondEnd):
        plan({O0: CommittedOffset(101)}, ToCurrentStart())


def test_a_selection_applies_the_start_to_its_partitions_only() -> None:
    committed = {O0: CommittedOffset(40), O1: CommittedOffset(20), O2: CommittedOffset(25), R0: CommittedOffset(7)}
    assert starts(plan(committed, ShiftByStart(-5), "orders:0,2")) == {
        O0: (35, -1), O1: (20, -1), O2: (20, -1), R0: (7, -1)
    }  # fmt: skip
    assert starts(plan(committed, ToOffsetStart(offset=12), "orders")) == {
        O0: (12, -1), O1: (12, -1), O2: (12, -1), R0: (7, -1)
    }  # fmt: skip
    # an internal topic is reset only when named, as the tool resets any partition of the group it is given
    assert starts(plan(committed, ToOffsetStart(offset=12), "app-rekey-repartition:0"))[R0] == (12, -1)


def test_all_input_topics_is_the_committed_external_partitions() -> None:
    """The tool's ``--all-input-topics``: the group's committed partitions of source topics; an uncommitted one is
    not reset (the application's reset policy, ``earliest`` here, decides), nor a repartition topic."""
    committed = {O0: CommittedOffset(40), O1: CommittedOffset(20), R0: CommittedOffset(7)}
    assert starts(plan(committed, ToOffsetStart(offset=12), all_input_topics=True)) == {
        O0: (12, -1), O1: (12, -1), O2: (0, -1), R0: (7, -1)
    }  # fmt: skip
    assert starts(plan(committed, ToCurrentStart(), all_input_topics=True))[O2] == (0, -1)
    assert starts(plan(committed, ToCurrentStart()))[O2] == (30, -1)  # without a scope: every external partition
    assert starts(plan({}, ShiftByStart(-1), all_input_topics=True)) == {O0: (0, -1), O1: (10, -1), O2: (0, -1),
                                                                          R0: (5, -1)}  # fmt: skip


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (("orders:3",), "start partitions orders-3: not input partitions of application 'app'"),
        (("payments",), "start partitions topic payments: not input partitions"),
    ],
)
def test_a_selection_outside_the_application_is_refused(selection: tuple[str, ...], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        plan({}, ToOffsetStart(offset=1), *selection)


@pytest.mark.parametrize(
    "start",
    [CommittedStart(), FromFileStart("orders,0,1\n"), ToOffsetStart(offsets={O0: 1})],
)
def test_a_selection_needs_a_start_mode_that_does_not_name_its_partitions(start: StartSpec) -> None:
    with pytest.raises(BadRequest, match="start partitions select where a start mode applies"):
        plan({}, start, "orders:0")


def test_parse_partition_selection_reads_the_tools_topic_args() -> None:
    assert parse_partition_selection(["orders:0,2", "payments", "orders:1,"]) == PartitionSelection(
        frozenset({"payments"}), frozenset({O0, O1, O2})
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orders:", "Invalid topic arg 'orders:', expected topic name and partitions"),
        ("a:b:1", "Invalid topic arg 'a:b:1', expected topic name and partitions"),
        ("orders:x", "Invalid partition 'x' specified in topic arg 'orders:x'"),
        ("orders:,1", "Invalid partition '' specified in topic arg 'orders:,1'"),
        ("orders:-1", "Invalid partition '-1'"),
        ("", "an empty topic name"),
    ],
)
def test_parse_partition_selection_refuses_what_the_tool_refuses(text: str, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_partition_selection([text])
