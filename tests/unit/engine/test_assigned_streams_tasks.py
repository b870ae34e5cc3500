"""``AssignedStreamsTasks``: registries, restoration, process/punctuate/commit and errors (state.md §12)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from streamproc.engine.assigned_streams_tasks import AssignedStreamsTasks, TaskInputs
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.errors import ProcessingError, StreamsError
from tests.unit.engine.builders import Recorder, raw, string_deserializer

T0 = TaskId(0, 0)
T1 = TaskId(0, 1)
CHANGELOG_0 = TopicPartition("app-store-changelog", 0)
CHANGELOG_1 = TopicPartition("app-store-changelog", 1)


def task(task_id: TaskId, recorder: Recorder) -> StreamTask:
    partitions = [TopicPartition("a", task_id.partition), TopicPartition("b", task_id.partition)]
    source = SourceNode("source", ["a", "b"], string_deserializer, string_deserializer)
    node = ProcessorNode("proc", recorder)
    source.add_child(node)
    return StreamTask(task_id, ProcessorTopology([source, node]), partitions)


def inputs(task_id: TaskId, *, changelogs: Sequence[TopicPartition] = ()) -> TaskInputs:
    p = task_id.partition
    a = [raw("a", p, offset, ts) for offset, ts in enumerate([5, 1, 9, 3])]
    b = [raw("b", p, offset, ts) for offset, ts in enumerate([2, 8, 4])]
    return TaskInputs(
        (PartitionInput(TopicPartition("a", p), a), PartitionInput(TopicPartition("b", p), b)),
        frozenset(changelogs),
    )


def worker(
    *specs: tuple[TaskId, Sequence[TopicPartition]], **kwargs: Any
) -> tuple[AssignedStreamsTasks, dict[TaskId, Recorder]]:
    tasks = AssignedStreamsTasks(**kwargs)
    recorders: dict[TaskId, Recorder] = {}
    for task_id, changelogs in specs:
        recorders[task_id] = Recorder()
        tasks.add_new_task(task(task_id, recorders[task_id]), inputs(task_id, changelogs=changelogs))
    return tasks, recorders


def test_a_task_without_changelogs_runs_at_once_and_one_with_them_waits_for_all() -> None:
    tasks, recorders = worker((T0, ()), (T1, (CHANGELOG_1, TopicPartition("other-changelog", 1))))
    assert set(tasks.created) == {T0, T1}
    assert not tasks.all_tasks_running()

    tasks.add_to_restoring(T0)
    tasks.add_to_restoring(T1)
    assert set(tasks.running) == {T0}
    assert set(tasks.restoring) == {T1}
    assert not tasks.all_tasks_running()
    assert recorders[T1].context is None  # init only when running

    assert tasks.update_restored([CHANGELOG_1]) == []
    assert set(tasks.restoring) == {T1}
    moved = tasks.update_restored([TopicPartition("other-changelog", 1)])
    assert [t.id for t in moved] == [T1]
    assert tasks.all_tasks_running()
    assert recorders[T1].context is not None


def test_restored_changelogs_of_a_later_task_count_when_it_starts_restoring() -> None:
    tasks, _ = worker((T0, (CHANGELOG_0,)), (T1, (CHANGELOG_1,)))
    tasks.add_to_restoring(T0)
    tasks.update_restored([CHANGELOG_1])  # T1 is still created: remembered while something restores
    tasks.add_to_restoring(T1)
    assert set(tasks.running) == {T1}


def test_process_takes_one_record_per_running_task_per_call_in_task_order() -> None:
    tasks, recorders = worker((T1, ()), (T0, ()))
    for task_id in (T1, T0):
        tasks.add_to_restoring(task_id)
    counts = []
    while True:
        count = tasks.process()
        if count == 0:
            break
        counts.append(count)
    assert counts == [2] * 7
    assert not tasks.has_buffered()

    # the order per task is the replay's (ordering.md §9): compare with the engine run directly
    for task_id in (T0, T1):
        direct = Recorder()
        replay(task(task_id, direct), inputs(task_id).inputs)
        assert recorders[task_id].seen == direct.seen


def test_process_with_more_records_per_task_and_run_to_end_give_the_same_order() -> None:
    batched, batched_recorders = worker((T0, ()), (T1, ()))
    bulk, bulk_recorders = worker((T0, ()), (T1, ()))
    for tasks in (batched, bulk):
        tasks.add_to_restoring(T0)
        tasks.add_to_restoring(T1)
    assert batched.process(max_num_records=5) == 10
    assert batched.process(max_num_records=5) == 4
    assert batched.process(max_num_records=5) == 0
    assert bulk.run_to_end() == 14
    for task_id in (T0, T1):
        assert batched_recorders[task_id].seen == bulk_recorders[task_id].seen
    results = bulk.close()
    assert {task_id: r.records_processed for task_id, r in results.items()} == {T0: 7, T1: 7}
    assert all(recorder.closed for recorder in bulk_recorders.values())
    assert not bulk.running


def test_punctuate_fires_due_stream_time_schedules_and_counts_them() -> None:
    fired: list[tuple[TaskId, int]] = []

    def on_init(context: ProcessorContext) -> None:
        context.schedule(4, PunctuationType.STREAM_TIME, lambda ts: fired.append((context.task_id, ts)))

    tasks = AssignedStreamsTasks()
    for task_id in (T0, T1):
        tasks.add_new_task(task(task_id, Recorder(on_init=on_init)), inputs(task_id))
        tasks.add_to_restoring(task_id)
    assert tasks.punctuate() == 0  # stream time unknown: nothing is due
    tasks.process()
    # process() already ran the check after the record (D-3); punctuate() finds nothing more due
    assert fired == [(T0, 2), (T1, 2)]
    assert tasks.punctuate() == 0
    assert [t.punctuations for t in tasks.running.values()] == [1, 1]


def test_maybe_commit_commits_every_task_that_needs_it_in_one_call() -> None:
    calls: list[list[TaskId]] = []
    tasks, _ = worker((T0, ()), (T1, (CHANGELOG_1,)), committer=lambda ts: calls.append([t.id for t in ts]))
    tasks.add_to_restoring(T0)
    tasks.add_to_restoring(T1)
    assert tasks.maybe_commit() == 0  # nothing processed yet
    tasks.process()
    assert tasks.maybe_commit() == 1
    assert calls == [[T0]]
    assert tasks.maybe_commit() == 0
    tasks.update_restored([CHANGELOG_1])
    tasks.process()
    assert tasks.maybe_commit() == 2
    assert calls == [[T0], [T0, T1]]


def test_a_user_requested_commit_commits_all_running_tasks_that_need_it() -> None:
    calls: list[list[TaskId]] = []

    def request(context: ProcessorContext, record: Record[Any, Any]) -> None:
        if context.task_id == T1:
            context.commit()

    tasks = AssignedStreamsTasks(committer=lambda ts: calls.append([t.id for t in ts]))
    tasks.add_new_task(task(T0, Recorder()), inputs(T0))
    tasks.add_new_task(task(T1, Recorder(on_process=request)), inputs(T1))
    tasks.add_to_restoring(T0)
    tasks.add_to_restoring(T1)
    assert tasks.maybe_commit_per_user_requested() == 0
    tasks.process()
    assert tasks.maybe_commit_per_user_requested() == 2  # 4.2: all tasks, not only the one that asked
    assert calls == [[T0, T1]]
    assert not any(t.commit_requested for t in tasks.running.values())
    assert tasks.maybe_commit_per_user_requested() == 0


def test_a_failing_commit_names_the_task() -> None:
    def fail(_tasks: Sequence[StreamTask]) -> None:
        raise OSError("disk full")

    tasks, _ = worker((T0, ()), committer=fail)
    tasks.add_to_restoring(T0)
    tasks.process()
    with pytest.raises(ProcessingError, match=r"task \[0_0\] commit failed: disk full"):
        tasks.maybe_commit()


def test_a_processing_error_is_logged_as_kafka_streams_logs_it_and_names_the_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(context: ProcessorContext, record: Record[Any, Any]) -> None:
        raise RuntimeError("boom")

    tasks = AssignedStreamsTasks()
    tasks.add_new_task(task(T1, Recorder(on_process=explode)), inputs(T1))
    tasks.add_to_restoring(T1)
    with caplog.at_level(logging.ERROR), pytest.raises(StreamsError) as raised:
        tasks.process()
    assert raised.value.task_id == "0_1"
    assert "Exception caught in process. taskId=0_1, processor=proc, topic=b, partition=1, offset=0" in str(
        raised.value
    )
    assert "Failed to process stream task 0_1 due to the following error:" in caplog.text


def test_an_error_in_a_punctuator_is_logged_and_names_the_task(caplog: pytest.LogCaptureFixture) -> None:
    def on_init(context: ProcessorContext) -> None:
        context.schedule(1, PunctuationType.STREAM_TIME, lambda ts: 1 / 0)

    tasks = AssignedStreamsTasks()
    tasks.add_new_task(task(T0, Recorder(on_init=on_init)), inputs(T0))
    tasks.add_to_restoring(T0)
    with caplog.at_level(logging.ERROR), pytest.raises(ProcessingError) as raised:
        tasks.process()
    assert raised.value.task_id == "0_0"
    assert "Failed to process stream task 0_0 due to the following error:" in caplog.text


def test_an_error_in_init_names_the_task_and_the_task_does_not_run(caplog: pytest.LogCaptureFixture) -> None:
    def on_init(context: ProcessorContext) -> None:
        raise KeyError("missing config")

    tasks = AssignedStreamsTasks()
    tasks.add_new_task(task(T0, Recorder(on_init=on_init)), inputs(T0))
    with caplog.at_level(logging.ERROR), pytest.raises(ProcessingError, match=r"task \[0_0\] failed to initialize"):
        tasks.add_to_restoring(T0)
    assert not tasks.running
    assert "Failed to initialize stream task 0_0" in caplog.text


def test_unknown_and_duplicate_tasks_are_refused() -> None:
    tasks, _ = worker((T0, ()))
    with pytest.raises(ProcessingError, match=r"task \[0_0\] is already assigned"):
        tasks.add_new_task(task(T0, Recorder()), inputs(T0))
    with pytest.raises(ProcessingError, match=r"task \[0_1\] is not a created task"):
        tasks.add_to_restoring(T1)
    with pytest.raises(ProcessingError, match=r"task \[0_1\] is not a task of this worker"):
        tasks.close_task(T1)


def test_a_dirty_close_does_not_commit() -> None:
    calls: list[list[TaskId]] = []
    tasks, recorders = worker((T0, ()), committer=lambda ts: calls.append([t.id for t in ts]))
    tasks.add_to_restoring(T0)
    tasks.process()
    assert tasks.close(clean=False) == {}
    assert calls == []
    assert recorders[T0].closed
