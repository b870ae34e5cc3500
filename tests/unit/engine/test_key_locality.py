"""Issue #29's "know when not to": which sub-topologies may be split by key, why the others may not, and what the
shards need computed before the split. Topologies are built through the Python DSL and the Processor API."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from streamproc.dsl import (
    BufferConfig,
    JoinWindows,
    Materialized,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from streamproc.engine.key_locality import (
    SplitDecision,
    TaskWideKind,
    TaskWideValue,
    log_unsplit,
    punctuation_refusal,
    split_decisions,
    unsplit_message,
)
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record
from streamproc.engine.topology import StoreSpec, Topology
from streamproc.errors import TopologyError
from tests.unit.engine.builders import A0, make_task


def _decisions(topology: Topology) -> dict[int, SplitDecision]:
    return {d.subtopology: d for d in split_decisions(topology)}


def _only(topology: Topology) -> SplitDecision:
    (decision,) = split_decisions(topology)
    return decision


def _values(decision: SplitDecision) -> set[tuple[TaskWideKind, str, str | None, bool, tuple[str, ...]]]:
    return {(v.kind, v.processor, v.store, v.per_record, v.prefix) for v in decision.task_wide_values}


# ------------------------------------------------------------------------------------------------- the DSL: yes


def test_word_count_both_sub_topologies_split() -> None:
    builder = StreamsBuilder()
    words = builder.stream("lines").flat_map_values(lambda line: line.split())
    words.group_by(lambda _key, word: word).count().to_stream().to("counts")
    decisions = _decisions(builder.build())
    assert decisions[0] == SplitDecision(0, True, "key-local: no store and no processor state")
    assert decisions[1].splittable
    assert "KSTREAM-AGGREGATE-STATE-STORE-0000000003" in decisions[1].reason
    assert decisions[1].task_wide_values == ()


def test_a_windowed_count_needs_its_own_observed_stream_time_from_the_source_records() -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 5)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert decision.splittable
    agg, store = "KSTREAM-AGGREGATE-0000000002", "KSTREAM-AGGREGATE-STATE-STORE-0000000001"
    assert _values(decision) == {
        (TaskWideKind.PROCESSOR_STREAM_TIME, agg, None, True, ()),
        # the open windows are never below the store's bound: only the merged bundle's segments need it
        (TaskWideKind.STORE_STREAM_TIME, agg, store, False, ()),
    }


def test_a_filter_before_a_windowed_count_must_run_before_the_split() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in").filter(lambda _k, v: v != "skip").map_values(str.upper)
    stream.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert decision.splittable
    (per_record,) = [v for v in decision.task_wide_values if v.per_record]
    assert per_record.prefix == ("KSTREAM-FILTER-0000000001", "KSTREAM-MAPVALUES-0000000002")
    assert "run KSTREAM-FILTER-0000000001, KSTREAM-MAPVALUES-0000000002 before the split" in per_record.describe()


def test_session_windows_merge_sessions_of_the_same_key_only_and_need_both_stream_times() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 2)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert decision.splittable
    kinds = {(v.kind, v.per_record) for v in decision.task_wide_values}
    # find_sessions is bounded by the store's stream time, which a shard alone would not know
    assert kinds == {(TaskWideKind.PROCESSOR_STREAM_TIME, True), (TaskWideKind.STORE_STREAM_TIME, True)}


def test_a_stream_table_join_and_table_operations_split() -> None:
    builder = StreamsBuilder()
    table = builder.table("customers").filter(lambda _k, v: v is not None, materialized=Materialized.as_("live"))
    other = builder.table("regions").map_values(str.upper, materialized=Materialized.as_("upper"))
    joined = table.join(other, lambda a, b: a + b, materialized=Materialized.as_("joined"))
    builder.stream("orders").join(joined, lambda order, customer: (order, customer)).to("enriched")
    decision = _only(builder.build())
    assert decision.splittable, decision.reason
    assert {"live", "upper", "joined"} <= set(decision.reason.split("(")[1].split(")")[0].split(", "))
    assert decision.task_wide_values == ()


def test_a_global_table_join_reads_another_key_but_not_task_state() -> None:
    builder = StreamsBuilder()
    products = builder.global_table("products")
    builder.stream("orders").join(products, lambda _k, order: order, lambda order, product: product).to("out")
    decision = _only(builder.build())
    assert decision.splittable, decision.reason


def test_an_inner_stream_stream_join_needs_every_put_into_each_window_store() -> None:
    """Each window store's stream time and seqnums count every key's puts."""
    builder = StreamsBuilder()
    left, right = builder.stream("left"), builder.stream("right")
    left.join(right, lambda a, b: a + b, JoinWindows.of_time_difference_and_grace(10, 5)).to("joined")
    decision = _only(builder.build())
    assert decision.splittable, decision.reason
    assert _values(decision) == {
        (TaskWideKind.STORE_PUTS, "KSTREAM-WINDOWED-0000000002", "KSTREAM-JOINTHIS-0000000004-store", True, ()),
        (TaskWideKind.STORE_PUTS, "KSTREAM-WINDOWED-0000000003", "KSTREAM-JOINOTHER-0000000005-store", True, ()),
    }


def test_a_windowed_count_after_a_table_source_and_to_stream_still_precomputes_from_the_source() -> None:
    builder = StreamsBuilder()
    table = builder.table("t")
    table.to_stream().group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert decision.splittable, decision.reason
    assert all(v.prefix == () for v in decision.task_wide_values)


# ------------------------------------------------------------------------------------------------ the DSL: no


def test_suppress_runs_unsplit_and_says_why() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count()
    counts.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("o")
    decision = _only(builder.build())
    assert not decision.splittable
    assert decision.reason.startswith("KTABLE-SUPPRESS-0000000003: suppress: its buffer KTABLE-SUPPRESS-STATE-STORE-")
    assert "another key advances stream time" in decision.reason
    assert decision.task_wide_values == ()


def test_a_left_stream_stream_join_waits_on_every_keys_stream_time() -> None:
    builder = StreamsBuilder()
    left, right = builder.stream("left"), builder.stream("right")
    left.left_join(right, lambda a, b: (a, b), JoinWindows.of_time_difference_and_grace(10, 5)).to("joined")
    decision = _only(builder.build())
    assert not decision.splittable
    assert "KSTREAM-JOINTHIS-0000000004: left/outer stream-stream join" in decision.reason
    assert "KSTREAM-OUTERSHARED-0000000004-store" in decision.reason


def test_sliding_windows_are_not_split_their_fetches_depend_on_every_keys_windows() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by_key()
    grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(10)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert not decision.splittable
    assert decision.reason.startswith("KSTREAM-AGGREGATE-0000000002: sliding-window aggregate")


def test_a_windowed_count_behind_a_stateful_table_filter_cannot_be_precomputed() -> None:
    builder = StreamsBuilder()
    table = builder.table("t", materialized=Materialized.as_("t-store")).filter(lambda _k, v: v != "x")
    table.to_stream().group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)).count().to_stream().to("o")
    decision = _only(builder.build())
    assert not decision.splittable
    assert "cannot be computed before the split" in decision.reason
    assert "depends on the state of KTABLE-FILTER-0000000002" in decision.reason


def test_foreign_key_joins_never_reach_the_analysis_the_dsl_refuses_them() -> None:
    builder = StreamsBuilder()
    orders, customers = builder.table("orders"), builder.table("customers")
    with pytest.raises(TopologyError, match="foreign-key KTable joins"):
        orders.join(customers, lambda order: order, lambda o, c: (o, c))


# ---------------------------------------------------------------------------------------- the Processor API


class _Dedupe(Processor):
    """Forwards the first value per key: a store read and written at the record's key only."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen: Any = context.get_state_store("seen")

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


def _papi(*, key_local: bool) -> Topology:
    topology = Topology()
    topology.add_source("source", "in")
    topology.add_processor("dedupe", _Dedupe, "source", key_local=key_local)
    topology.add_state_store(StoreSpec("seen"), "dedupe")
    topology.add_sink("sink", "out", "dedupe")
    return topology


def test_a_processor_api_processor_runs_unsplit_unless_declared_key_local() -> None:
    decision = _only(_papi(key_local=False))
    assert not decision.splittable
    assert decision.reason.startswith("Processor API processor dedupe (")
    assert "_Dedupe): streamproc cannot see which keys its code reads and writes" in decision.reason
    assert "key_local=True" in decision.reason


def test_a_declared_processor_splits_and_gets_the_tasks_stream_time() -> None:
    decision = _only(_papi(key_local=True))
    assert decision.splittable, decision.reason
    assert decision.reason == "key-local: every store (seen) is read and written at the key of the record processed"
    assert [(v.kind, v.processor) for v in decision.task_wide_values] == [(TaskWideKind.TASK_STREAM_TIME, "dedupe")]


def test_the_dsl_process_call_carries_the_declaration() -> None:
    builder = StreamsBuilder()
    builder.add_state_store(StoreSpec("seen"))
    builder.stream("in").process(_Dedupe, "seen", key_local=True).to("out")
    assert _only(builder.build()).splittable
    builder = StreamsBuilder()
    builder.add_state_store(StoreSpec("seen"))
    builder.stream("in").process_values(_Dedupe, "seen").to("out")
    assert not _only(builder.build()).splittable


def test_a_key_change_before_a_declared_processor_in_the_same_sub_topology_is_refused() -> None:
    builder = StreamsBuilder()
    builder.add_state_store(StoreSpec("seen"))
    rekeyed = builder.stream("in").select_key(lambda _k, v: v)
    rekeyed.process(_Dedupe, "seen", key_local=True).to("out")
    decision = _only(builder.build())
    assert not decision.splittable
    assert "KSTREAM-KEY-SELECT-0000000001 may have changed" in decision.reason


class _Ticker(Processor):
    """Schedules a stream-time punctuation: a punctuator that runs over every key's state."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        context.schedule(10, PunctuationType.STREAM_TIME, lambda timestamp: None)

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


def test_a_punctuation_makes_a_processor_unsplittable_undeclared_and_refused_at_run_time_declared() -> None:
    topology = Topology()
    topology.add_source("source", "in")
    topology.add_processor("ticker", _Ticker, "source")
    assert "schedules punctuations" in _only(topology).reason
    # a declared processor that schedules anyway breaks the promise: the task sees it once initialised
    task, _ = make_task([A0], _Ticker())
    task.initialize_topology()
    refusal = punctuation_refusal(0, task)
    assert refusal is not None and not refusal.splittable
    assert refusal.reason.startswith("proc: scheduled a punctuation")
    quiet, _ = make_task([A0])
    quiet.initialize_topology()
    assert punctuation_refusal(0, quiet) is None


def test_a_supplier_that_fails_is_unknown_and_unknown_is_unsplit() -> None:
    calls: list[int] = []

    def broken() -> object:
        calls.append(1)
        if len(calls) > 2:  # add_processor calls it twice to check it makes a new processor each time
            raise RuntimeError("no processor here")
        return ProcessorNode(f"x{len(calls)}")

    topology = Topology()
    topology.add_source("source", "in")
    topology.add_processor("p", broken, "source")
    decision = _only(topology)
    assert not decision.splittable
    assert "its supplier failed (no processor here)" in decision.reason


def test_global_store_groups_make_no_decision() -> None:
    builder = StreamsBuilder()
    products = builder.global_table("products")
    builder.stream("orders").left_join(products, lambda _k, v: v, lambda a, b: (a, b)).to("out")
    topology = builder.build()
    assert topology.global_node_groups() == frozenset({0})
    assert [d.subtopology for d in split_decisions(topology)] == [1]


# ---------------------------------------------------------------------------------------------- the log line


def test_the_unsplit_line_is_logged_once_per_sub_topology(caplog: pytest.LogCaptureFixture) -> None:
    decisions = (SplitDecision(0, True, "key-local"), SplitDecision(3, False, "KTABLE-SUPPRESS-1: suppress"))
    assert unsplit_message(decisions[1]) == (
        "sub-topology 3 runs unsplit (one shard per task): KTABLE-SUPPRESS-1: suppress"
    )
    with caplog.at_level(logging.INFO, logger="streamproc.engine.key_locality"):
        log_unsplit(decisions)
    assert [r.getMessage() for r in caplog.records] == [unsplit_message(decisions[1])]


def test_a_task_wide_value_describes_itself() -> None:
    value = TaskWideValue(TaskWideKind.STORE_STREAM_TIME, "W", "max put", "s", per_record=False)
    assert value.describe() == "store stream time of s (at W): max put; needed at the merge only"
