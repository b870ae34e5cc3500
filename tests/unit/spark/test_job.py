"""The process driver's checks before Spark starts: topology vs plan, restores it can run, stages, counts."""

from __future__ import annotations

import pytest

from streamproc import Topology, serde_for
from streamproc.errors import ConfigError, ProcessingError
from streamproc.plan.run_plan import PlannedRange, PlannedRestore, PlannedTask, RunPlan
from streamproc.spark.job import (
    Stage,
    check_sink_counts,
    check_topology,
    partition_counts,
    record_upstream,
    run_stages,
    stages,
    task_work,
    unwaited_cores,
    with_upstream,
)

STRING = serde_for("String")


def topology(sink: str = "sink") -> Topology:
    t = Topology()
    t.add_source("src", "in", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_sink(sink, "out", "src", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def plan(**changes: object) -> RunPlan:
    fields: dict[str, object] = {
        "application_id": "app",
        "isolation_level": "read_uncommitted",
        "start_mode": "earliest",
        "end_mode": "latest",
        "start_policy": "strict",
        "ranges": tuple(PlannedRange("in", p, 0, 10, False, False, None, -1) for p in range(2)),
        "tasks": tuple(PlannedTask(f"0_{p}", 0, p, (f"in-{p}",)) for p in range(2)),
        "stages": ((0,),),
        "commits": (),
        "checkpoint_files": (),
        "purges": (),
        "topology": str(topology().describe()),
    }
    fields.update(changes)
    return RunPlan(**fields)  # type: ignore[arg-type]


def test_the_plans_own_topology_passes_and_another_is_refused_at_its_first_differing_line() -> None:
    check_topology(plan(), topology(), "m:f")
    with pytest.raises(ConfigError, match=r"line 4 of describe\(\) is '--> other' where the plan has '--> sink'"):
        check_topology(plan(), topology("other"), "m:f")
    with pytest.raises(ConfigError, match="made without a topology"):
        check_topology(plan(topology=None), topology(), "m:f")
    longer = str(topology().describe()) + "\n  Sub-topology: 1\n"
    with pytest.raises(ConfigError, match=r"line 8 of describe\(\) is '\(end\)' where the plan has 'Sub-topology: 1'"):
        check_topology(plan(topology=longer), topology(), "m:f")


def test_work_per_task_and_refusals() -> None:
    work = task_work(plan(), topology="m:f", store_uri="/s", counts={"in": 2, "out": 3})
    assert [(w.task_id, [(r.topic, r.partition, r.start, r.end) for r in w.inputs]) for w in work] == [
        ("0_0", [("in", 0, 0, 10)]),
        ("0_1", [("in", 1, 0, 10)]),
    ]
    assert len({w.plan_id for w in work}) == 1
    restore = PlannedRestore("0_0", "counts", "app-counts-changelog", 0, 5, 9, checkpoint_offset=4)
    with pytest.raises(ConfigError, match=r"task \[0_0\] store counts: the plan restores from checkpoint offset 4"):
        task_work(plan(restores=(restore,)), topology="m:f", store_uri="/s", counts={})
    missing = plan(tasks=(PlannedTask("0_0", 0, 0, ("in-7",)),))
    with pytest.raises(ConfigError, match=r"task \[0_0\] reads in-7, which the plan has no range for"):
        task_work(missing, topology="m:f", store_uri="/s", counts={})


def test_partition_counts_come_from_the_plan_and_the_options() -> None:
    assert partition_counts(plan(), {"out": 6}) == {"in": 2, "out": 6}
    with pytest.raises(ConfigError, match="at least one partition"):
        partition_counts(plan(), {"out": 0})


def test_stages_and_upstream_outputs() -> None:
    two = plan(
        ranges=(PlannedRange("in", 0, 0, 3, False, False, None, -1), PlannedRange("app-r", 0, 4, 4, True, False, 4, 9)),
        tasks=(PlannedTask("0_0", 0, 0, ("in-0",)), PlannedTask("1_0", 1, 0, ("app-r-0",))),
        stages=((0,), (1,)),
    )
    work = task_work(two, topology="m:f", store_uri="/s", counts={})
    split = stages(two, work)
    assert [[w.task_id for w in s] for s in split] == [["0_0"], ["1_0"]]
    upstream: dict[tuple[str, int], list[str]] = {}
    reports = [{"plan_id": "p", "task_id": "0_0", "outputs": {"app-r+0": 3, "out+1": 2}}]
    record_upstream(reports, upstream, {"in", "app-r"})
    assert upstream == {("app-r", 0): ["process/p/tasks/0_0/outputs/app-r+0.parquet"]}
    [downstream] = split[1]
    assert with_upstream(downstream, upstream).inputs[0].appended == ("process/p/tasks/0_0/outputs/app-r+0.parquet",)
    with pytest.raises(ProcessingError, match=r"task \[0_0\] sent records with a null key to app-r"):
        record_upstream([{"plan_id": "p", "task_id": "0_0", "outputs": {"app-r+-1": 1}}], {}, {"app-r"})


def test_run_stages_hands_each_stage_the_outputs_of_the_earlier_ones() -> None:
    """The one stage hand-over (``streamproc run`` on Spark, ``bench/engine_only.py`` in one process): stage 2's
    tasks get stage 1's output objects for their partition, in stage order, whatever runs the tasks."""
    two = plan(
        ranges=(PlannedRange("in", 0, 0, 3, False, False, None, -1), PlannedRange("app-r", 0, 4, 4, True, False, 4, 9)),
        tasks=(PlannedTask("1_0", 1, 0, ("app-r-0",)), PlannedTask("0_0", 0, 0, ("in-0",))),
        stages=((0,), (1,)),
    )
    seen: list[Stage] = []

    def run_stage(stage: Stage) -> list[dict[str, object]]:
        seen.append(stage)
        return [{"plan_id": "p", "task_id": w.task_id, "outputs": {"app-r+0": 3}} for w in stage.tasks]

    reports = run_stages(two, task_work(two, topology="m:f", store_uri="/s", counts={}), run_stage)
    assert [r["task_id"] for r in reports] == ["0_0", "1_0"]
    assert [(s.number, s.count, s.tasks_before, [w.task_id for w in s.tasks]) for s in seen] == [
        (1, 2, 0, ["0_0"]),
        (2, 2, 1, ["1_0"]),
    ]
    assert seen[0].tasks[0].inputs[0].appended == ()
    assert seen[1].tasks[0].inputs[0].appended == ("process/p/tasks/0_0/outputs/app-r+0.parquet",)


def test_output_topics_without_a_partition_count_are_refused_before_anything_runs() -> None:
    check_sink_counts(plan(), topology(), {"in": 2, "out": 3})
    with pytest.raises(ConfigError, match=r"output topics \['out'\] are not known .* pass --partitions out=N"):
        check_sink_counts(plan(), topology(), {"in": 2})


@pytest.mark.parametrize(
    ("master", "cores_max", "split", "warns"),
    [
        ("spark://127.0.0.1:7077", None, "auto", True),
        ("spark://127.0.0.1:7077", None, "2", True),
        ("spark://127.0.0.1:7077", "4", "auto", False),  # Spark waits for 4 cores' executors
        ("spark://127.0.0.1:7077", None, "off", False),  # nothing is split: nothing to count
        ("local[2]", None, "auto", False),  # local executors exist as the context starts
        ("yarn", None, "auto", False),  # YARN and Kubernetes know the executors they asked for: the ratio waits
    ],
)
def test_a_standalone_master_that_does_not_wait_for_its_executors_is_warned_of(
    master: str, cores_max: str | None, split: str, warns: bool
) -> None:
    warning = unwaited_cores(master, cores_max, split, 1)  # type: ignore[arg-type]
    assert (warning is not None) is warns
    if warning:
        assert "spark.cores.max" in warning and master in warning and "1 core(s)" in warning
