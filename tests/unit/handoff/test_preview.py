"""The exact hand-off preview (issue 26, point 3): from the task reports, every commit, purge and task directory
with the offsets and paths the hand-off's own rules give. The preview from a plan alone is tested beside the plan
(``tests/unit/plan/test_run_plan.py``); both are compared with the ledger in
``tests/integration/handoff/test_handoff_preview.py``."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from streamproc.engine.task_id import TaskId
from streamproc.handoff.preview import handoff_actions, preview
from streamproc.handoff.procedure import purges
from streamproc.handoff.task_results import TaskResults
from streamproc.ledger import LedgerStep
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.task_output import TaskObjects
from streamproc.storage.object_store import LocalObjectStore
from tests.unit.plan.test_run_plan import CHANGELOG, REP, rekey_plan


def report(
    task_id: str, offsets: dict[str, int], outputs: dict[str, int], changelogs: dict[str, int]
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "offsets": {name: {"next_offset": o, "partition_time": 9} for name, o in offsets.items()},
        "outputs": outputs,
        "changelogs": changelogs,
        "objects": {},
    }


def results_of(plan: RunPlan, store: LocalObjectStore, reports: dict[str, dict[str, Any]]) -> list[TaskResults]:
    """Task results as ``load_results`` gives them; a task with stores gets a bundle with its store directory."""
    out = []
    for task in plan.tasks:
        objects = TaskObjects("p", TaskId.parse(task.task_id))
        data = reports[task.task_id]
        if task.stores:
            sink = io.BytesIO()
            with tarfile.open(fileobj=sink, mode="w") as tar:
                info = tarfile.TarInfo("rocksdb/counts")
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            store.put(objects.stores, sink.getvalue())
            data = {**data, "objects": {objects.stores: len(sink.getvalue())}}
        out.append(TaskResults(task, objects, data, store))
    return out


REPORTS = {
    # stage 0: 0_0 writes 30 records to rep-0 and 20 to rep-1; 0_1 writes 10 to rep-0 only
    "0_0": report("0_0", {"orders-0": 160}, {f"{REP}+0": 30, f"{REP}+1": 20}, {}),
    "0_1": report("0_1", {"orders-1": 90}, {f"{REP}+0": 10}, {}),
    # stage 1 read no backlog, then what stage 0 appended (its offsets count from the plan's end)
    "1_0": report("1_0", {f"{REP}-0": 85565 + 40}, {"totals+0": 12}, {f"{CHANGELOG}+0": 12}),
    "1_1": report("1_1", {f"{REP}-1": 700 + 20}, {"totals+1": 5}, {f"{CHANGELOG}+1": 5}),
}


def test_the_exact_preview_commits_each_repartition_partition_past_its_writers_records_and_markers(
    tmp_path: Path,
) -> None:
    plan = rekey_plan(rep_committed=(85565, 700))
    results = results_of(plan, LocalObjectStore(tmp_path), REPORTS)
    log_ends = {TopicPartition(REP, 0): 85565, TopicPartition(REP, 1): 700}

    actions = handoff_actions(plan, results, log_ends=log_ends, state_dir=Path("/state"))

    # rep-0: 85565 + 40 records + 2 markers (two transactions wrote to it); rep-1: 700 + 20 + 1
    assert actions.commits == {"orders-0": 160, "orders-1": 90, f"{REP}-0": 85607, f"{REP}-1": 721}
    assert [(p.partition, p.before_offset) for p in actions.purges] == [(f"{REP}-0", 85607), (f"{REP}-1", 721)]
    assert [(p.partition, p.before_offset) for p in actions.purges] == purges(plan, actions.commits)
    lines = preview(plan, "abc", Path("/state"), actions).splitlines()
    assert lines[1:] == [
        f"  publish task 0_0 in one transaction: 50 record(s) to {REP}; and commit:",
        "    commit orders-0: 100 -> 160",
        f"  publish task 0_1 in one transaction: 10 record(s) to {REP}; and commit:",
        "    commit orders-1: 40 -> 90",
        f"  publish task 1_0 in one transaction: 12 record(s) to totals, the last per key of 12 changelog record(s) to "
        f"{CHANGELOG}; and commit:",
        f"    commit {REP}-0: 85565 -> 85607 (its log end after this run's records: 85565 now + 40 record(s) of stage "
        "0 + 2 commit marker(s))",
        "  replace /state/app/1_0 with the process step's stores, then write /state/app/1_0/.checkpoint",
        f"  publish task 1_1 in one transaction: 5 record(s) to totals, the last per key of 5 changelog record(s) to "
        f"{CHANGELOG}; and commit:",
        f"    commit {REP}-1: 700 -> 721 (its log end after this run's records: 700 now + 20 record(s) of stage 0 + "
        "1 commit marker(s))",
        "  replace /state/app/1_1 with the process step's stores, then write /state/app/1_1/.checkpoint",
        f"  delete records of {REP}-0 before offset 85607",
        f"  delete records of {REP}-1 before offset 721",
    ]


def test_a_repartition_partition_no_record_reaches_is_neither_committed_nor_purged(tmp_path: Path) -> None:
    """As the hand-off: the plan's "+ appended" entry with nothing appended changes nothing."""
    plan = rekey_plan(rep_committed=(85565, 700))
    reports = {
        **REPORTS,
        "0_0": report("0_0", {"orders-0": 160}, {f"{REP}+0": 30}, {}),
        "1_1": report("1_1", {}, {}, {}),
    }
    log_ends = {TopicPartition(REP, 0): 85565, TopicPartition(REP, 1): 700}
    actions = handoff_actions(plan, results_of(plan, LocalObjectStore(tmp_path), reports), log_ends=log_ends)
    assert f"{REP}-1" not in actions.commits
    assert [p.partition for p in actions.purges] == [f"{REP}-0"]
    assert "publish task 1_1 in one transaction: no record; no offset to commit" in actions.lines()


def test_a_rerun_shows_what_the_ledger_holds_as_done_and_counts_only_the_writers_still_to_publish(
    tmp_path: Path,
) -> None:
    """0_0 was published before a crash: its records and marker are in the log end read now."""
    plan = rekey_plan(rep_committed=(85565, 700))
    results = results_of(plan, LocalObjectStore(tmp_path), REPORTS)
    done = [LedgerStep("p", "publish", "0_0", {"offsets": {"orders-0": 160}}, "t")]
    log_ends = {TopicPartition(REP, 0): 85565 + 31, TopicPartition(REP, 1): 700 + 21}

    actions = handoff_actions(plan, results, log_ends=log_ends, done=done, state_dir=Path("/state"))

    assert actions.lines()[0] == "already done (in the ledger; skipped): publish 0_0"
    assert [t.task_id for t in actions.tasks] == ["0_1", "1_0", "1_1"]
    assert actions.commits == {"orders-1": 90, f"{REP}-0": 85607, f"{REP}-1": 721}
    assert [p.partition for p in actions.purges] == [f"{REP}-0", f"{REP}-1"]


def test_a_task_kafka_streams_4_3_would_wipe_is_shown_as_removed(tmp_path: Path) -> None:
    """Under exactly_once_v2 with 4.3 a task whose store's changelog stays empty gets no state (its directory is
    removed); the other task's directory is replaced, as ``procedure.handoff`` does."""
    plan = rekey_plan(rep_committed=(85565, 700), eos=True)
    reports = {**REPORTS, "1_1": report("1_1", {}, {}, {})}  # nothing reached 1_1, its changelog-1 is empty
    log_ends = {TopicPartition(REP, 0): 85565, TopicPartition(REP, 1): 700}
    results = results_of(plan, LocalObjectStore(tmp_path), reports)

    actions = handoff_actions(plan, results, log_ends=log_ends, state_dir=Path("/s"), kafka_streams_version="4.3")
    states = {t.task_id: t.state for t in actions.tasks}
    assert states["1_0"] == ("replace /s/app/1_0 with the process step's stores, then write /s/app/1_0/.checkpoint",)
    [removed] = states["1_1"]
    assert removed.startswith("remove /s/app/1_1: a store's changelog is empty (checkpoint -4)")

    same_in_4_2 = handoff_actions(plan, results, log_ends=log_ends, state_dir=Path("/s"))
    assert {t.task_id: t.state for t in same_in_4_2.tasks}["1_1"][0].startswith("replace /s/app/1_1")


def test_without_the_log_end_of_an_appended_partition_the_preview_does_not_guess(tmp_path: Path) -> None:
    plan = rekey_plan(rep_committed=(85565, 700))
    with pytest.raises(KeyError, match="log end of repartition partition"):
        handoff_actions(plan, results_of(plan, LocalObjectStore(tmp_path), REPORTS), log_ends={})
