"""The driver's choices for issue #29's key shards (``spark/task_split.py``): ``--split``'s values, which
sub-topologies this executor splits and the one line saying why the others run unsplit, how many shards ``auto``
gives a task."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from streamproc import Stores
from streamproc.dsl import Consumed, JoinWindows, Materialized, Produced, StreamsBuilder, TimeWindows
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology_builder import build_processor_topology
from streamproc.errors import ConfigError
from streamproc.plan.run_plan import PlannedRange, PlannedTask
from streamproc.spark import task_split
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.job import Stage
from streamproc.spark.stream_time_prefix import watched_nodes
from streamproc.spark.task_runner import InputRange, TaskWork
from streamproc.spark.task_split import (
    AUTO_RECORDS_PER_SHARD,
    StageSplit,
    auto_refusals,
    log_refusals,
    parallelism_lines,
    parse_split,
    plan_shards,
    shard_count,
    split_refusals,
    task_wide_values,
)
from streamproc_dev.conformance.dsl_programs import PROGRAMS

_STRING = serde_for("String")
#: A stream-stream join's windows: 1 s either way, no grace.
_JOIN = JoinWindows.of_time_difference_with_no_grace(1_000)
_PAIRS = Produced.with_(_STRING, _STRING)


def test_split_values_are_auto_off_or_a_count() -> None:
    assert [parse_split(v) for v in ("auto", "off", "1", "4")] == ["auto", "off", 1, 4]
    for bad in ("0", "-2", "two", ""):
        with pytest.raises(ConfigError, match="--split"):
            parse_split(bad)


def test_auto_splits_tasks_with_stores_and_not_yet_stateless_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured on two cores (docs/split.md, ``bench.split_curve``): the shards of a task that reads and writes a
    store pay (a count, an aggregate, a time- or session-windowed aggregate) per record, a stateless chain's do not
    yet. A String count runs whole: the columnar path reads String serdes too, and runs it faster whole than its
    shards per record would; forced per record, it splits."""
    assert not task_split.AUTO_SPLITS_STATELESS
    config = TaskConfig()
    [whole] = auto_refusals(_string_count().build(), config).values()
    assert whole is not None and "the columnar path may take its tasks" in whole
    monkeypatch.setenv(PER_RECORD_ENV, "1")
    assert auto_refusals(PROGRAMS["windowed-aggregate-materialized"](), config) == {0: None}
    assert auto_refusals(PROGRAMS["session-aggregate"](), config) == {0: None}
    assert auto_refusals(_string_count().build(), config) == {0: None}
    rekey, count = auto_refusals(PROGRAMS["group-by-count"](), config).values()  # the re-key, then the count
    assert count is None
    for refusal in (rekey, *auto_refusals(PROGRAMS["stateless-chain"](), config).values()):
        assert refusal is not None and "it holds no store, and a stateless task's shards do not pay yet" in refusal
    assert split_refusals(PROGRAMS["stateless-chain"]()) == {0: None}  # --split N splits it
    refused = {0: "sub-topology 0 runs unsplit under --split auto (one shard per task): no window"}
    assert StageSplit(refused, "auto", 8).widest([[_work("0_0", 0, 100 * AUTO_RECORDS_PER_SHARD)]]) == 1


def test_auto_splits_only_tasks_large_enough_where_cores_would_idle() -> None:
    big = 4 * AUTO_RECORDS_PER_SHARD
    assert shard_count("off", big, 1, 8) == 1
    assert shard_count(3, 10, 1, 1) == 3
    assert shard_count("auto", big, 1, 2) == 2  # one task, two cores
    assert shard_count("auto", big, 1, 1) == 1  # inline: one core
    assert shard_count("auto", big, 2, 2) == 1  # the tasks already use the cores
    assert shard_count("auto", AUTO_RECORDS_PER_SHARD, 1, 8) == 1  # too small to pay
    assert shard_count("auto", big, 1, 16) == 4  # no shard below AUTO_RECORDS_PER_SHARD


class _PartitionTime:
    """A timestamp extractor of the user's: it may fail or drop at the poll, which only the whole input shows."""

    def extract(self, record: Any, partition_time: int) -> int:
        return partition_time


def _string_count(
    key: Any = _STRING, value: Any = _STRING, store_key: Any = _STRING, extractor: Any = None
) -> StreamsBuilder:
    b = StreamsBuilder()
    consumed = Consumed.with_(key, value)
    if extractor is not None:
        consumed = consumed.with_timestamp_extractor(extractor)
    stored = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts")).with_key_serde(store_key)
    b.stream("in", consumed).group_by_key().count(materialized=stored).to_stream().to("out")
    return b


def test_auto_splits_where_each_shard_reads_only_its_own_records_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decided from the topology and config alone: per record (not what the columnar path may take), one input
    topic, a poll that cannot drop a record (serdes that cannot fail, or the default handler, which fails the task)
    and record-metadata timestamps (here for stateless chains too, as once their shards pay). The String programs
    are forced per record past the columnar paths' shapes (``STREAMPROC_PER_RECORD_COUNT``)."""
    monkeypatch.setattr(task_split, "AUTO_SPLITS_STATELESS", True)
    config = TaskConfig()

    def why(topology: Any, config: TaskConfig = config, subtopology: int = 0) -> str:
        refusal = auto_refusals(topology, config)[subtopology]
        assert refusal is not None
        assert refusal.startswith(f"sub-topology {subtopology} runs unsplit under --split auto (one shard per task): ")
        assert refusal.endswith("; --split N splits anyway")
        return refusal

    assert "the columnar path may take its tasks" in why(PROGRAMS["bytes-count"]())
    assert "the columnar path may take its tasks" in why(PROGRAMS["bytes-window-count"]())
    assert "the columnar path may take its tasks" in why(_string_count().build())
    monkeypatch.setenv(PER_RECORD_ENV, "1")
    assert auto_refusals(_string_count().build(), config) == {0: None}
    assert auto_refusals(PROGRAMS["group-by-count"](), config) == {0: None, 1: None}
    assert auto_refusals(PROGRAMS["stateless-chain"](), config) == {0: None}  # no store: round-robin shards
    raw, json = serde_for("ByteArray"), serde_for("Json")
    assert "its tasks read 2 topics" in why(PROGRAMS["table-table-joins"]())
    # serdes that may fail: a record that does not deserialize fails the task under the default handler, split or
    # not; a handler that drops it at the poll needs every record in every shard
    assert auto_refusals(_string_count(value=json).build(), config) == {0: None}
    assert auto_refusals(_string_count(key=json, store_key=json).build(), config) == {0: None}
    continuing = TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler())
    assert "a deserialization exception handler is configured" in why(_string_count(value=json).build(), continuing)
    assert auto_refusals(_string_count().build(), continuing) == {0: None}  # String never fails
    # a store keyed otherwise than the source's bytes: owners from each key as the store serializes it
    assert auto_refusals(_string_count(value=raw, store_key=raw).build(), config) == {0: None}
    custom = TaskConfig(default_timestamp_extractor=_PartitionTime())
    assert "not a record-metadata one" in why(_string_count().build(), custom)
    assert "not a record-metadata one" in why(_string_count(extractor=_PartitionTime()).build())
    # a windowed aggregate per record splits
    assert auto_refusals(PROGRAMS["windowed-aggregate-materialized"](), config) == {0: None}
    # what split_refusals refuses stays refused, with its own reason
    [joins] = auto_refusals(PROGRAMS["stream-stream-left-join"](), config).values()
    assert joins is not None and "runs unsplit (one shard per task)" in joins and "left/outer stream-stream" in joins


def _work(task: str, subtopology: int, records: int) -> TaskWork:
    return TaskWork("0" * 16, "app", task, subtopology, "m:f", "/s", (InputRange("t", 0, 0, records, -1),))


def test_plan_shards_names_only_split_tasks_of_splittable_subtopologies() -> None:
    big = 4 * AUTO_RECORDS_PER_SHARD
    stages = [[_work("0_0", 0, big), _work("1_0", 1, big)], [_work("2_0", 2, 10)]]
    refusals = {0: None, 1: "sub-topology 1 runs unsplit (one shard per task): no", 2: None}
    assert plan_shards(stages, refusals, "auto", 4) == {"0_0": 2}
    assert plan_shards(stages, refusals, 3, 1) == {"0_0": 3, "2_0": 3}
    assert plan_shards(stages, refusals, "off", 4) == {}


def test_a_stage_reading_a_repartition_topic_counts_what_the_earlier_stages_appended() -> None:
    """Planned, a repartition partition holds only what was there before the run; ``auto`` decides each stage as
    it starts, with the records the earlier stages' reports say they wrote to its input partitions."""
    split = StageSplit({0: None, 1: None}, "auto", 2)
    upstream = [_work("0_0", 0, 10)]
    downstream = [TaskWork("0" * 16, "app", "1_0", 1, "m:f", "/s", (InputRange("app-rep", 0, 0, 0, -1),))]
    assert split.shards(upstream) == {}
    assert split.widest([upstream, downstream]) == 2  # a later stage may split, up to the cores
    split.saw([{"task_id": "0_0", "outputs": {"app-rep+0": AUTO_RECORDS_PER_SHARD, "out+0": 7}}])
    assert split.shards(downstream) == {}
    split.saw([{"task_id": "0_1", "outputs": {"app-rep+0": AUTO_RECORDS_PER_SHARD}}])
    assert split.shards(downstream) == {"1_0": 2}
    assert StageSplit({0: None}, 3, 2).widest([upstream]) == 3
    assert StageSplit({0: "no"}, "auto", 8).widest([upstream, upstream]) == 1


@pytest.mark.parametrize(("tasks", "cores", "threads"), [(1, 2, 2), (1, 8, 8), (2, 2, 1), (3, 8, 2), (4, 2, 1)])
def test_a_merge_is_given_the_cores_its_wave_leaves_idle(tasks: int, cores: int, threads: int) -> None:
    """The merge wave runs one merge per split task; each may keep the wave's cores over its merges busy (its parts
    side by side), and one where there are as many merges as cores (its parts in turn)."""
    waves: list[tuple[Any, ...]] = []

    def run_stage(stage: Any) -> list[dict[str, Any]]:
        waves.append(stage.tasks)
        return [{"task_id": w.task_id, **({"shard": str(w.shard)} if getattr(w, "shard", None) else {})}
                for w in stage.tasks]  # fmt: skip

    work = [_work(f"0_{p}", 0, 10) for p in range(tasks)]
    run = task_split.split_stage(run_stage, StageSplit({0: None}, 2, cores))
    reports = run(Stage(1, 1, 0, tuple(work)))
    assert sorted(r["task_id"] for r in reports) == [w.task_id for w in work]
    shards, merges = waves
    assert len(shards) == 2 * tasks
    assert [(m.task_id, m.shards, m.threads) for m in merges] == [(w.task_id, 2, threads) for w in work]


def _to_then(stream: Any) -> Any:
    """``stream`` sent to a sink first (its first child), then returned for more."""
    stream.to("copy", Produced.with_(_STRING, _STRING))
    return stream


def test_what_the_first_slice_splits_and_why_not() -> None:
    assert split_refusals(PROGRAMS["group-by-count"]()) == {0: None, 1: None}
    assert split_refusals(PROGRAMS["table-table-joins"]()) == {0: None}
    # a time-windowed aggregate right after its source: its stream time is computed before the split, its store's
    # expired segments at the merge
    assert split_refusals(PROGRAMS["windowed-aggregate-materialized"]()) == {0: None}
    # a session aggregate: its processor's and its store's stream times given per record (task_wide_times)
    assert split_refusals(PROGRAMS["session-aggregate"]()) == {0: None}
    # a declared Processor-API processor reads the task's stream time: split, each shard reading every record
    from tests.unit.spark.test_split_task import stamped_count

    assert split_refusals(stamped_count(False)) == {0: None}
    [declared] = auto_refusals(stamped_count(False), TaskConfig()).values()
    assert declared is not None and "reads the task's stream time, so each shard would read every record" in declared
    # a stream-stream inner join: a shard counts the puts the others make into its window stores at its gate
    assert split_refusals(PROGRAMS["named-sources-and-joins"]()) == {0: None}
    # ... behind a stateless prefix too, which a shard runs over those records for what they put; not behind a table
    b = StreamsBuilder()
    mapped = b.stream("in", Consumed.with_(_STRING, _STRING)).map_values(lambda v: v or None)
    mapped.join(b.stream("in-2", Consumed.with_(_STRING, _STRING)), lambda a, c: a + c, _JOIN).to("out", _PAIRS)
    assert split_refusals(b.build()) == {0: None}
    b = StreamsBuilder()
    table = b.table("t", Consumed.with_(_STRING, _STRING)).to_stream()
    table.join(b.stream("in-2", Consumed.with_(_STRING, _STRING)), lambda a, c: a + c, _JOIN).to("out", _PAIRS)
    [behind] = split_refusals(b.build()).values()
    assert behind is not None and "store puts of KSTREAM-JOINTHIS-0000000007-store" in behind
    assert "only behind a stateless prefix: KTABLE-SOURCE-0000000002 is not a filter" in behind
    # filters and value mappers before it decide which records reach it: every shard runs them over the records
    # it does not own (stream_time_prefix), and auto splits it as any windowed aggregate
    assert split_refusals(PROGRAMS["filtered-windowed-aggregate"]()) == {0: None}
    assert split_refusals(PROGRAMS["filtered-session-count"]()) == {0: None}
    assert auto_refusals(PROGRAMS["filtered-session-count"](), TaskConfig()) == {0: None}
    # ... and a flatMapValues, a split's branches and a merge of them
    assert split_refusals(PROGRAMS["branched-windowed-count"]()) == {0: None}
    assert auto_refusals(PROGRAMS["branched-windowed-count"](), TaskConfig()) == {0: None}
    # ... and a peek, whose action a shard that does not own the record skips, and a sink ahead of the aggregate's
    # path: under a processing exception handler that continues, an exception there may stop the record in its owner
    # alone, so the shards watch those nodes and the task runs whole after one handled there (watched_nodes)
    continuing = TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler())
    for prefix, watched in [
        (lambda s: s.peek(lambda k, v: None), {"KSTREAM-PEEK-0000000001"}),
        (lambda s: s.filter(lambda k, v: True).peek(lambda k, v: None),
         {"KSTREAM-FILTER-0000000001", "KSTREAM-PEEK-0000000002"}),  # a ClassCastException from the action: its parent
        (lambda s: _to_then(s.filter(lambda k, v: True)), {"KSTREAM-FILTER-0000000001"}),
        # a source's may: an exception that reaches the source fails the task
        (lambda s: _to_then(s).filter(lambda k, v: True), set()),
    ]:  # fmt: skip
        b = StreamsBuilder()
        stream = prefix(b.stream("in", Consumed.with_(_STRING, _STRING)))
        stream.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(1000)).count()
        topology = b.build()
        assert split_refusals(topology) == {0: None}
        assert auto_refusals(topology, continuing) == {0: None}
        graph = build_processor_topology(topology, 0, application_id="app")
        behind = [v.processor for v in task_wide_values(topology, 0) if v.prefix]
        assert watched_nodes(graph, behind, handler_fails=False) == watched
        assert watched_nodes(graph, behind, handler_fails=True) == set()
    b = StreamsBuilder()
    one, two = (b.stream(topic, Consumed.with_(_STRING, _STRING)).filter(lambda k, v: True) for topic in ("a", "b"))
    one.merge(two).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(1000)).count()
    # two topics merged, each through its own prefix: each source's records reach the aggregate by theirs
    assert split_refusals(b.build()) == {0: None}
    [suppress] = split_refusals(PROGRAMS["suppress-window-close"]()).values()
    assert suppress is not None and "runs unsplit" in suppress
    [optimized] = split_refusals(PROGRAMS["table-source-optimized"]()).values()
    assert optimized is not None and "reuses its source topic" in optimized

    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts")).with_logging_disabled()
    b.stream("in", Consumed.with_(_STRING, _STRING)).group_by_key().count(materialized=materialized)
    [unlogged] = split_refusals(b.build()).values()
    assert unlogged == (
        "sub-topology 0 runs unsplit (one shard per task): store counts has logging disabled, so the merge could not "
        "rebuild it from the shards' changelog records"
    )


def test_the_unsplit_line_is_logged_once_per_subtopology_and_not_with_split_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusals = split_refusals(PROGRAMS["rekey-join-optimized"]())
    with caplog.at_level(logging.INFO, logger="streamproc.spark.task_split"):
        log_refusals(refusals, "off")
        assert caplog.messages == []
        log_refusals(refusals, "auto")
    assert caplog.messages == [refusals[0]]
    assert caplog.messages[0].startswith("sub-topology 0 runs unsplit (one shard per task): ")


def _range(topic: str, partition: int, records: int, *, internal: bool = False) -> PlannedRange:
    return PlannedRange(topic, partition, 100, 100 + records, internal, False, 100, -1)


def test_the_plan_shows_each_subtopologys_parallelism_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """``streamproc run``'s plan and the Airflow plan step show, per sub-topology, its tasks, the most planned
    records one reads (a repartition partition's count is only what is there before the run) and how it runs."""
    topology = PROGRAMS["rekey-join-optimized"]()
    repartition = "app-KSTREAM-KEY-SELECT-0000000004-repartition"
    plan = SimpleNamespace(
        ranges=[_range("clicks", 0, 700), _range("clicks", 1, 300), _range("users", 0, 50), _range("users", 1, 9),
                _range(repartition, 0, 0, internal=True), _range(repartition, 1, 4, internal=True)],
        tasks=[PlannedTask("0_0", 0, 0, ("users-0", f"{repartition}-0")),
               PlannedTask("0_1", 0, 1, ("users-1", f"{repartition}-1")),
               PlannedTask("1_0", 1, 0, ("clicks-0",)), PlannedTask("1_1", 1, 1, ("clicks-1",))],
    )  # fmt: skip
    refusal = split_refusals(topology)[0]
    assert refusal is not None
    why = refusal.removeprefix("sub-topology 0 runs unsplit (one shard per task): ")
    first = "  sub-topology 0: 2 task(s), at most 50 planned records each (plus what earlier stages append); "
    second = "  sub-topology 1: 2 task(s), at most 700 planned records each; "
    assert parallelism_lines(topology, plan, 3, TaskConfig()) == [
        "Parallelism (--split 3):",
        f"{first}one core per task: {why}",
        f"{second}each task as 3 key shards, then a merge",
    ]
    assert parallelism_lines(topology, plan, "off", TaskConfig())[2] == (
        f"{second}one core per task (key shards possible; --split off)"
    )
    assert parallelism_lines(topology, plan, "auto", TaskConfig())[2] == (
        f"{second}one core per task: the columnar path may take its tasks, which run faster whole than as shards and "
        "a merge; --split N splits anyway"
    )
    monkeypatch.setenv(PER_RECORD_ENV, "1")  # the re-key per record: no store, so round-robin shards
    assert parallelism_lines(topology, plan, "auto", TaskConfig())[2] == (
        f"{second}one core per task: it holds no store, and a stateless task's shards do not pay yet on two cores "
        "(docs/split.md); --split N splits anyway"
    )
    monkeypatch.setattr(task_split, "AUTO_SPLITS_STATELESS", True)
    assert parallelism_lines(topology, plan, "auto", TaskConfig())[2] == (
        f"{second}key shards where cores would idle and a task has {AUTO_RECORDS_PER_SHARD} planned records per shard "
        "(each shard reads only its own records), then a merge"
    )
    monkeypatch.delenv(PER_RECORD_ENV)
    auto_first = parallelism_lines(PROGRAMS["bytes-count"](), plan, "auto", TaskConfig())[1]
    assert "one core per task: the columnar path may take its tasks" in auto_first


def test_auto_splits_a_string_count_the_columnar_path_cannot_take_for_its_config() -> None:
    """No task runs over columns under a configured exception handler or dead letter queue, or beside global stores
    (``columnar.handlers_refusal``, ``common_eligibility``): a String count then runs per record, so ``auto`` splits
    it, each shard reading only its own records, rather than leave it whole for a columnar path that will not take
    it."""
    count = _string_count().build()
    [whole] = auto_refusals(count, TaskConfig()).values()
    assert whole is not None and "the columnar path may take its tasks" in whole
    for config in (
        TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler()),
        TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler()),
        TaskConfig(dead_letter_queue_topic="dead-letters"),
    ):
        assert auto_refusals(count, config) == {0: None}, config
    with_global = _string_count()
    with_global.global_table("g", Consumed.with_(_STRING, _STRING))
    assert auto_refusals(with_global.build(), TaskConfig()) == {0: None}
