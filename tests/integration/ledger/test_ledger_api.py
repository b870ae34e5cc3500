"""Every method of the ledger's API, on SQLite and on a real PostgreSQL server (``ledger_url`` is parametrised)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import ConfigError, LedgerError, RunEnded
from streamproc.ledger import ApplicationBusy, LagRow, Ledger, RangeRow, RunDetail, TaskRow
from tests.integration.ledger.sample_run import sample_fetch, sample_plan, sample_reports


def test_hand_off_steps_are_recorded_once_and_listed_in_order(ledger: Ledger, ledger_url: str) -> None:
    assert ledger.done("p1", "publish", "0_0") is None
    ledger.record("p1", "publish", "0_0", {"offsets": {"in-0": 12}})
    ledger.record("p1", "checkpoint", "0_0", {"offsets": {"c-0": 4}})
    ledger.record("p2", "purge", "app-r-repartition-0", {"before_offset": 3})
    with Ledger(ledger_url) as again:
        step = again.done("p1", "publish", "0_0")
        assert step is not None and step.detail == {"offsets": {"in-0": 12}}
        assert [(s.kind, s.subject) for s in again.steps("p1")] == [("publish", "0_0"), ("checkpoint", "0_0")]
        assert len(again.steps()) == 3
        with pytest.raises(LedgerError, match="publish 0_0 of plan p1 is already recorded"):
            again.record("p1", "publish", "0_0", {})
        with pytest.raises(ValueError, match="unknown ledger step kind"):
            again.record("p1", "commit", "0_0", {})


def test_a_run_records_its_plan_fetch_tasks_lag_and_steps(ledger: Ledger) -> None:
    plan = sample_plan()
    run_id = ledger.begin_run(application_id=plan.application_id, trigger="manual", dag_id="backfill",
                              dag_run_id="manual__1")  # fmt: skip
    ledger.record_plan(run_id, plan, "plan-abc")
    ledger.set_stage(run_id, "fetch")
    fetched = sample_fetch(plan)
    ledger.record_fetch(run_id, fetched[:1])
    # fetched again (a retry that found the range staged): nothing copied now, the range's staged total recorded
    again = replace(fetched[0], segments_written=0, segments_already_complete=3, records=0)
    ledger.record_fetch(run_id, [again, *fetched[1:]])
    ledger.set_stage(run_id, "process")
    ledger.record_tasks(run_id, sample_reports())
    ledger.set_stage(run_id, "handoff")
    ledger.record("plan-abc", "publish", "0_0", {"offsets": {"orders-0": 5000}})
    ledger.record("other-plan", "publish", "0_0", {})
    ledger.record_lag_after(run_id, {"orders-0": 5000, "orders-1": 300}, {"orders-0": 5010, "orders-1": 300,
                                                                            "unplanned-0": 9})  # fmt: skip
    ledger.finish_run(run_id, "succeeded")

    detail = ledger.run(run_id)
    assert detail is not None
    summary = detail.summary
    assert (summary.application_id, summary.trigger, summary.dag_id, summary.dag_run_id, summary.plan_id) == (
        "orders-app", "manual", "backfill", "manual__1", "plan-abc")  # fmt: skip
    assert (summary.status, summary.stage, summary.error) == ("succeeded", "handoff", None)
    assert summary.finished_at is not None and summary.finished_at >= summary.started_at
    # planned: the input ranges only (the changelog restore is not processed input)
    assert summary.records_planned == (5000 - 1200) + (300 - 0)
    assert summary.records_processed == 3790 + 300
    assert summary.records_dropped == 3 + 7
    changelog = plan.restores[0].changelog_topic
    assert detail.ranges == [
        RangeRow("orders", 0, 1200, 5000, 3800, 3790, 412_000, 0, 3, 1.25, "input"),
        RangeRow("orders", 1, 0, 300, 300, 300, 31_000, 0, 1, 0.5, "input"),
        RangeRow(changelog, 1, 40, 90, 50, 50, 2_000, 1, 0, 0.125, "restore"),
    ]
    assert detail.lag == [
        LagRow("orders-0", 1200, 5000, 3800, 5000, 10, 5010),
        LagRow("orders-1", None, 300, 300, 300, 0, 300),
    ]
    assert detail.tasks == [
        TaskRow("0_0", 3790, {"deserialization-error": 3, "expired-window-record": 7}, {"orders-dlq": 3},
                1_700_000_000_000, 2.5, False),
        TaskRow("0_1", 300, {}, {}, 1_700_000_000_500, 0.75, True),
    ]  # fmt: skip
    assert [(s.plan_id, s.kind, s.subject) for s in detail.steps] == [("plan-abc", "publish", "0_0")]
    assert ledger.run_for_dag_run("backfill", "manual__1") == detail
    assert ledger.run_for_dag_run("backfill", "manual__2") is None
    assert ledger.run("no-such-run") is None


def test_a_task_reported_again_replaces_its_figures(ledger: Ledger) -> None:
    run_id = ledger.begin_run(application_id="app", trigger="cli")
    first = {"task_id": "1_10", "records_processed": 5, "dropped": {"a": 1, "b": 2}, "dead_letter_queue": {"d": 1},
             "stream_time": 9, "seconds": 1.0}  # fmt: skip
    ledger.record_tasks(run_id, [first, {**first, "task_id": "1_9"}])
    ledger.record_tasks(run_id, [{**first, "records_processed": 6, "dropped": {"b": 4}, "dead_letter_queue": {}}])
    detail = ledger.run(run_id)
    assert detail is not None
    assert [(t.task_id, t.records_processed, t.dropped, t.dead_letter_queue) for t in detail.tasks] == [
        ("1_9", 5, {"a": 1, "b": 2}, {"d": 1}),
        ("1_10", 6, {"b": 4}, {}),
    ]
    assert detail.summary.records_dropped == 3 + 4


def test_the_global_bootstraps_drops_are_the_global_tasks_and_counted_once(ledger: Ledger) -> None:
    run_id = ledger.begin_run(application_id="app", trigger="cli")
    chosen = {"task_id": "0_0", "records_processed": 5, "dropped": {"a": 1}, "stream_time": 9,
              "global_dropped": {"deserialization-error": 2}}  # fmt: skip
    other = {**chosen, "task_id": "0_1", "global_dropped": {}}
    ledger.record_tasks(run_id, [other, chosen])
    ledger.record_tasks(run_id, [{**chosen, "skipped": True, "global_dropped": {}}])  # a retry: already done
    detail = ledger.run(run_id)
    assert detail is not None
    assert [(t.task_id, t.records_processed, t.dropped) for t in detail.tasks] == [
        ("-1_-1", 0, {"deserialization-error": 2}),
        ("0_0", 5, {"a": 1}),
        ("0_1", 5, {"a": 1}),
    ]
    assert (detail.summary.records_processed, detail.summary.records_dropped) == (10, 4)


def test_one_active_run_per_application(ledger: Ledger) -> None:
    first = ledger.begin_run(application_id="app", trigger="scheduled", dag_id="incremental", dag_run_id="s__1")
    with pytest.raises(ApplicationBusy) as busy:
        ledger.begin_run(application_id="app", trigger="manual", dag_id="backfill", dag_run_id="m__1")
    assert busy.value.run_id == first
    message = str(busy.value)
    assert f"run {first} (DAG incremental, DAG run s__1)" in message and "is still active" in message
    assert ledger.runs("app")[0].run_id == first and len(ledger.runs("app")) == 1  # the refused run left no row
    other = ledger.begin_run(application_id="other-app", trigger="cli")  # another application is not blocked
    assert ledger.begin_run(application_id="app", trigger="scheduled", run_id=first) == first  # an Airflow retry
    ledger.finish_run(first, "failed", error="fetch: offsets lost to retention")
    assert ledger.begin_run(application_id="app", trigger="scheduled", run_id=first) == first  # a retry after failure
    running = ledger.run(first)
    assert running is not None and (running.summary.status, running.summary.error) == ("running", None)
    ledger.finish_run(first, "skipped")
    second = ledger.begin_run(application_id="app", trigger="manual")
    assert second != first
    ledger.finish_run(second, "dry_run")
    ledger.finish_run(other, "rejected")
    assert [r.status for r in ledger.runs()] == ["dry_run", "rejected", "skipped"]
    with pytest.raises(ConfigError, match="is a run of application 'app', not 'other-app'"):
        ledger.begin_run(application_id="other-app", trigger="cli", run_id=first)


def test_a_retried_step_resumes_its_run_unless_it_ended_or_another_holds_the_application(ledger: Ledger) -> None:
    run = ledger.begin_run(application_id="app", trigger="manual", dag_id="backfill", dag_run_id="m__1")
    ledger.resume_run(run)  # a retry while the run is running: nothing changes
    ledger.finish_run(run, "failed", error="handoff: KafkaUnavailableError: the broker did not answer")
    ledger.resume_run(run)  # the failed task cleared: the run carries on, holding the application again
    running = ledger.run(run)
    assert running is not None and (running.summary.status, running.summary.error) == ("running", None)
    with pytest.raises(ApplicationBusy):
        ledger.begin_run(application_id="app", trigger="cli")

    ledger.finish_run(run, "failed", error="process: the worker was lost")
    other = ledger.begin_run(application_id="app", trigger="scheduled")  # the application was free meanwhile
    with pytest.raises(ApplicationBusy) as busy:
        ledger.resume_run(run)
    assert busy.value.run_id == other
    ledger.finish_run(other, "succeeded")

    for ended in ("succeeded", "rejected", "dry_run", "skipped"):
        ledger.resume_run(run)
        ledger.finish_run(run, ended)
        with pytest.raises(RunEnded, match=f"run {run} of application 'app' ended as {ended}.*trigger a new run"):
            ledger.resume_run(run)
        ledger.run(run)
        ledger.record_refused_run(application_id="app", trigger="manual", error="reset", run_id=run)  # failed again
    with pytest.raises(LedgerError, match="has no run nope"):
        ledger.resume_run("nope")


def test_two_runs_beginning_at_once_one_wins(ledger_url: str) -> None:
    contenders = 6
    ledgers = [Ledger(ledger_url) for _ in range(contenders)]
    barrier = threading.Barrier(contenders)
    won: list[str] = []
    refused: list[ApplicationBusy] = []
    failed: list[BaseException] = []

    def contend(ledger: Ledger, index: int) -> None:
        barrier.wait()
        try:
            won.append(ledger.begin_run(application_id="app", trigger="manual", dag_run_id=f"m__{index}",
                                        dag_id="backfill"))  # fmt: skip
        except ApplicationBusy as exc:
            refused.append(exc)
        except BaseException as exc:  # noqa: BLE001 - any other outcome fails the test below
            failed.append(exc)

    threads = [threading.Thread(target=contend, args=(ledger, i)) for i, ledger in enumerate(ledgers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for ledger in ledgers:
        ledger.close()
    assert failed == []
    assert len(won) == 1 and len(refused) == contenders - 1
    assert {exc.run_id for exc in refused} == set(won)
    with Ledger(ledger_url) as ledger:
        assert [(r.run_id, r.status) for r in ledger.runs("app")] == [(won[0], "running")]


def test_runs_are_listed_newest_first_per_application(ledger: Ledger) -> None:
    ids = []
    for n in range(3):
        run_id = ledger.begin_run(application_id="a", trigger="cli", run_id=f"run-{n}")
        ledger.finish_run(run_id, "succeeded")
        ids.append(run_id)
    ledger.begin_run(application_id="b", trigger="cli", run_id="run-b")
    assert [r.run_id for r in ledger.runs("a")] == ids[::-1]
    assert [r.run_id for r in ledger.runs("a", limit=2)] == ids[:0:-1]
    assert {r.run_id for r in ledger.runs()} == {*ids, "run-b"}
    assert ledger.runs("c") == []


def test_bad_calls_are_refused_with_clear_errors(ledger: Ledger) -> None:
    with pytest.raises(LedgerError, match="has no run nope; begin_run first"):
        ledger.set_stage("nope", "fetch")
    with pytest.raises(LedgerError, match="has no run nope"):
        ledger.finish_run("nope", "failed")
    run_id = ledger.begin_run(application_id="app", trigger="cli")
    with pytest.raises(ValueError, match="unknown run stage 'cook'"):
        ledger.set_stage(run_id, "cook")
    with pytest.raises(ValueError, match="unknown final run status 'running'"):
        ledger.finish_run(run_id, "running")
    with pytest.raises(ConfigError, match="unknown run trigger 'cron'"):
        ledger.begin_run(application_id="app2", trigger="cron")


def test_sql_in_an_application_id_is_stored_verbatim(ledger: Ledger) -> None:
    hostile = "x'); DROP TABLE runs; --"
    run_id = ledger.begin_run(application_id=hostile, trigger="cli", dag_id="d'\"; DELETE FROM runs", dag_run_id="%s")
    ledger.record_plan(run_id, sample_plan(hostile), "p' OR '1'='1")
    ledger.finish_run(run_id, "failed", error="'; DROP TABLE handoff_steps; --")
    [summary] = ledger.runs(hostile)
    assert (summary.application_id, summary.dag_id, summary.dag_run_id, summary.plan_id, summary.error) == (
        hostile, "d'\"; DELETE FROM runs", "%s", "p' OR '1'='1", "'; DROP TABLE handoff_steps; --")  # fmt: skip
    assert ledger.run_for_dag_run("d'\"; DELETE FROM runs", "%s") is not None
    assert ledger.steps() == []  # the table is still there


def _recorded(url: str) -> RunDetail:
    """The sample run recorded start to end, as a run's steps record it."""
    plan = sample_plan()
    with Ledger(url) as ledger:
        run_id = ledger.begin_run(application_id=plan.application_id, trigger="cli", run_id="the-run")
        ledger.record_plan(run_id, plan, "plan-1")
        ledger.set_stage(run_id, "fetch")
        ledger.record_fetch(run_id, sample_fetch(plan))
        ledger.set_stage(run_id, "process")
        ledger.record_tasks(run_id, sample_reports())
        ledger.set_stage(run_id, "handoff")
        ledger.record("plan-1", "publish", "0_0", {"offsets": {"orders-0": 5000}, "records": 3790})
        ledger.record_lag_after(run_id, {"orders-0": 5000, "orders-1": None}, {"orders-0": 5000, "orders-1": 301})
        ledger.finish_run(run_id, "failed", error="hand-off: task 0_1 was fenced")
        detail = ledger.run(run_id)
    assert detail is not None
    return detail


def _without_times(detail: RunDetail) -> RunDetail:
    return replace(
        detail,
        summary=replace(detail.summary, started_at="", finished_at=""),
        steps=[replace(s, finished_at="") for s in detail.steps],
    )


def test_the_ledger_holds_the_same_figures_on_sqlite_and_postgresql(tmp_path: Path, postgres_server: Any) -> None:
    on_sqlite = _recorded(f"sqlite:///{tmp_path / 'ledger.sqlite'}")
    on_postgresql = _recorded(postgres_server.create_database("same_figures"))
    assert _without_times(on_sqlite) == _without_times(on_postgresql)
    assert on_sqlite.summary.records_planned == 4100 and on_sqlite.summary.records_dropped == 10
    assert [(lag.partition, lag.lag_after) for lag in on_postgresql.lag] == [("orders-0", 0), ("orders-1", None)]


#: How many connections open a new ledger at the same moment (Airflow's mapped tasks).
OPENERS = 6


def _open_at_once(ledger_url: str, openers: int = OPENERS) -> list[BaseException]:
    barrier = threading.Barrier(openers)
    failed: list[BaseException] = []

    def open_and_record(index: int) -> None:
        barrier.wait()
        try:
            with Ledger(ledger_url) as ledger:
                ledger.record("p", "publish", f"0_{index}", {})
        except BaseException as exc:  # noqa: BLE001 - any failure fails the test below
            failed.append(exc)

    threads = [threading.Thread(target=open_and_record, args=(i,)) for i in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failed


def test_a_new_database_opened_by_many_at_once_is_migrated_once(ledger_url: str) -> None:
    """Airflow's mapped tasks may open a ledger nobody has opened yet at the same moment."""
    assert _open_at_once(ledger_url) == []
    with Ledger(ledger_url) as ledger:
        assert sorted(s.subject for s in ledger.steps("p")) == [f"0_{i}" for i in range(OPENERS)]


def test_new_sqlite_files_opened_by_many_at_once_all_open(tmp_path: Path) -> None:
    """SQLite refuses a second connection's switch of a new file to WAL at once, without waiting: the race is
    narrow (one round in about ten lost it before the switch was retried), so it is run on many new files."""
    for round_ in range(40):
        url = f"sqlite:///{tmp_path / f'ledger-{round_}.sqlite'}"
        assert _open_at_once(url) == [], f"round {round_}"
        with Ledger(url) as ledger:
            assert len(ledger.steps("p")) == OPENERS


def test_a_refused_run_is_recorded_failed_without_the_lock(tmp_path: Any) -> None:
    from streamproc.ledger import ApplicationBusy, Ledger

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        holder = ledger.begin_run(application_id="app", trigger="cli")
        with pytest.raises(ApplicationBusy) as refused:
            ledger.begin_run(application_id="app", trigger="manual", dag_id="d", dag_run_id="r", run_id="d:r")
        ledger.record_refused_run(application_id="app", trigger="manual", error=str(refused.value), dag_id="d",
                                  dag_run_id="r", run_id="d:r")  # fmt: skip
        detail = ledger.run_for_dag_run("d", "r")
        assert detail is not None
        assert (detail.summary.status, detail.summary.error) == ("failed", str(refused.value))
        assert detail.summary.finished_at is not None
        ledger.finish_run(holder, "succeeded")  # the lock was never the refused run's
        assert ledger.begin_run(application_id="app", trigger="cli") != holder


def test_a_run_that_failed_in_its_handoff_keeps_the_lock_until_resumed_or_abandoned(ledger: Ledger) -> None:
    """Issue 27: a run that fails (not killed) in its hand-off may have handed off part of its window; a new run must
    not plan anew over it. It keeps the lock, a re-run takes it over (its plan, its run id), ``ledger finish``
    abandons it; a run that fails before its hand-off releases the lock as before."""
    from streamproc.ledger.owner import ProcessOwner
    from streamproc.plan.run_plan import plan_id

    me = ProcessOwner.current()
    early = ledger.begin_run(application_id="app", trigger="cli", owner=me)
    ledger.record_plan(early, sample_plan("app"), "plan-early")
    ledger.set_stage(early, "process")
    assert ledger.fail_run(early, "process: a task failed") is False  # nothing handed off: the lock is free
    assert ledger.interrupted_run("app") is None

    run_id = ledger.begin_run(application_id="app", trigger="cli", owner=me)
    plan = sample_plan("app")
    ledger.record_plan(run_id, plan, plan_id(plan))
    ledger.set_stage(run_id, "handoff")
    ledger.record(plan_id(plan), "publish", "0_0", {"offsets": {"orders-0": 5000}})
    assert ledger.fail_run(run_id, "task [0_1] committed its transaction failed: Local: Timed out") is True
    [summary] = [r for r in ledger.runs("app") if r.run_id == run_id]
    assert (summary.status, summary.stage) == ("failed", "handoff")

    with pytest.raises(ApplicationBusy) as busy:  # a new plan (a dry run, Airflow) is refused, told how to resume
        ledger.begin_run(application_id="app", trigger="manual")
    message = str(busy.value)
    assert f"run {run_id}" in message and "it failed in its handoff step" in message
    assert "takes it over and resumes it" in message and f"streamproc ledger finish {run_id}" in message

    halted = ledger.interrupted_run("app")  # its process is alive (this one): it failed, it was not killed
    assert halted is not None and (halted.run_id, halted.plan_id) == (run_id, plan_id(plan))
    assert halted.what_happened() == "failed in its handoff step" and "Local: Timed out" in str(halted.error)
    assert ledger.take_over(halted, me)
    assert ledger.begin_run(application_id="app", trigger="cli", owner=me, run_id=run_id) == run_id
    assert ledger.interrupted_run("app") is None  # running again, by a live process
    assert ledger.fail_run(run_id, "the cluster is still down") is True

    ledger.finish_run(run_id, "failed", "ended by hand with `streamproc ledger finish`")  # abandoned
    assert ledger.interrupted_run("app") is None
    assert ledger.begin_run(application_id="app", trigger="cli", owner=me) != run_id
