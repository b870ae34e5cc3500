"""``AssignedStreamsTasks``: the active tasks one worker owns, and the operations that drive them.

The seed class (Kafka Streams ≤ 2.5, ``PI/AssignedStreamsTasks``) was split in 2.6 (KAFKA-9113) into ``Tasks``
(registries), ``TaskExecutor`` (process, punctuate), ``TaskManager`` (commit) and the state-updater thread
(restoration); state.md §12 lists the differences. streamproc keeps the seed's one class, because a batch worker owns
a fixed set of tasks and nothing rebalances, and follows 4.2 wherever they differ:

- **registries**: ``created`` → ``restoring`` (:meth:`add_to_restoring`) → ``running``. A task without changelogs
  goes straight to running. :meth:`update_restored` takes changelog partitions whose restoration completed and moves
  every task whose changelogs are *all* complete to running (4.2's state updater returns whole tasks; the seed's
  ``restoredPartitions.containsAll``). Entering running is ``completeRestoration``: committed partition times, then
  the topology's ``init`` (:func:`~streamproc.engine.replay.start_replay`, ordering.md §9.1 steps 1-4).
- **process**: up to ``max_num_records`` records per processable running task, in ``TaskId`` order, each followed
  by the task's punctuation checks (ordering.md D-3/D-4: a batch checks after every record, where the live thread's
  ``punctuate`` runs once per loop). Returns the number of records, as ``TaskExecutor.process`` does (the seed
  returned the number of tasks, the same count with one record each). :meth:`run_to_end` drains each running task
  with the replay loop (``engine/replay.drain``, the bulk loop when the task allows it): tasks share nothing in a
  batch, so running them one after another gives every task the same order as interleaving them.
- **punctuate**: stream-time, then wall-clock punctuation per running task; returns how many fired.
- **commit**: :meth:`maybe_commit` commits every running or restoring task that needs it, all at once through one
  ``committer`` call (4.2 commits all tasks in one ``commitSync`` or one transaction); a ``context.commit()`` from
  any task makes :meth:`maybe_commit_per_user_requested` commit every running task that needs it (4.2; the seed
  committed only the requesting task). What a commit *is* belongs to the caller: the Spark job commits once, at
  each task's end, because its inputs are staged and its outputs deterministic, so a retry simply re-runs the task
  (see ``streamproc/spark``).
- **errors**: a task's error is logged as ``TaskExecutor`` logs it (``Failed to process stream task 0_1 due to the
  following error:``, ``Failed to punctuate stream task ...``, ``Failed to commit stream task ...``) and re-raised
  with the task id set; a ``StreamsError`` keeps its own message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NoReturn

from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import PartitionInput, ReplayResult, drain, finish_replay, start_replay
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.errors import ProcessingError, StreamprocError, StreamsError

logger = logging.getLogger(__name__)

#: Commits a group of tasks together (one transaction in 4.2); raises to fail them all.
Committer = Callable[[Sequence[StreamTask]], None]


@dataclass(frozen=True, slots=True)
class TaskInputs:
    """What a task needs to start running in a batch: its partitions' records and the changelogs it must restore."""

    inputs: tuple[PartitionInput, ...]
    changelog_partitions: frozenset[TopicPartition] = frozenset()
    buffered_records_per_partition: int | None = None


class AssignedStreamsTasks:
    """The active tasks of one worker: ``created``/``restoring``/``running`` and the operations of the seed class."""

    def __init__(self, *, log_prefix: str = "stream-thread [batch] ", committer: Committer | None = None) -> None:
        self._log_prefix = log_prefix
        self._committer = committer
        self.created: dict[TaskId, StreamTask] = {}
        self.restoring: dict[TaskId, StreamTask] = {}
        self.running: dict[TaskId, StreamTask] = {}
        self._inputs: dict[TaskId, TaskInputs] = {}
        self._restored_partitions: set[TopicPartition] = set()
        self._steps: dict[TaskId, int] = {}
        self.commits = 0

    # -- registries ------------------------------------------------------------------------------------------------

    def _log(self, level: int, message: str, *args: object, exc: BaseException | None = None) -> None:
        logger.log(level, self._log_prefix + message, *args, exc_info=exc)

    def log_task_failure(self, task_id: TaskId | str, exc: BaseException) -> None:
        """``TaskExecutor``'s line for a task that failed processing (also for a task run over columns, which
        ``spark/task_runner.py`` runs outside this loop)."""
        self._log(logging.ERROR, "Failed to process stream task %s due to the following error:", task_id, exc=exc)

    def add_new_task(self, task: StreamTask, inputs: TaskInputs) -> None:
        """A task assigned to this worker, not initialised yet (``created``)."""
        if task.id in self._inputs:
            raise ProcessingError("is already assigned to this worker", task_id=str(task.id))
        self.created[task.id] = task
        self._inputs[task.id] = inputs
        self._steps[task.id] = 0

    def add_to_restoring(self, task_id: TaskId) -> StreamTask:
        """``addToRestoring``: a created task waits for its changelogs; one without changelogs runs at once."""
        task = self.created.pop(task_id, None)
        if task is None:
            raise ProcessingError(
                "is not a created task of this worker; add it with add_new_task", task_id=str(task_id)
            )
        if self._inputs[task_id].changelog_partitions - self._restored_partitions:
            self.restoring[task_id] = task
            self._log(logging.DEBUG, "Added task %s to restoring: changelogs %s", task_id, self._pending(task_id))
        else:
            self._transition_to_running(task)
        return task

    def _pending(self, task_id: TaskId) -> list[str]:
        return sorted(str(tp) for tp in self._inputs[task_id].changelog_partitions - self._restored_partitions)

    def update_restored(self, restored: Iterable[TopicPartition]) -> list[StreamTask]:
        """``updateRestored``: record completed changelogs; every task whose changelogs are all complete runs.

        Returns the tasks that moved to running, in ``TaskId`` order.
        """
        self._restored_partitions.update(restored)
        ready = [
            task
            for task_id, task in sorted(self.restoring.items())
            if self._inputs[task_id].changelog_partitions <= self._restored_partitions
        ]
        for task in ready:
            del self.restoring[task.id]
            self._transition_to_running(task)
        if not self.restoring:
            self._restored_partitions.clear()
        return ready

    def _transition_to_running(self, task: StreamTask) -> None:
        """``completeRestoration``: partition times, topology ``init``, inputs (ordering.md §9.1 steps 1-4)."""
        inputs = self._inputs[task.id]
        try:
            start_replay(task, inputs.inputs, buffered_records_per_partition=inputs.buffered_records_per_partition)
        except Exception as exc:
            self._log(
                logging.ERROR, "Failed to initialize stream task %s due to the following error:", task.id, exc=exc
            )
            _rethrow(exc, task)
        self.running[task.id] = task
        self._log(logging.INFO, "Restoration took place; task %s transitioned to RUNNING", task.id)

    def all_tasks_running(self) -> bool:
        """``allTasksRunning``: nothing is waiting to be initialised or restored."""
        return not self.created and not self.restoring

    def tasks(self) -> Iterator[StreamTask]:
        """Every task of the worker, in ``TaskId`` order."""
        everything = {**self.created, **self.restoring, **self.running}
        return iter(everything[task_id] for task_id in sorted(everything))

    # -- processing ------------------------------------------------------------------------------------------------

    def process(self, max_num_records: int = 1, wall_clock_time: int | None = None) -> int:
        """``process``: up to ``max_num_records`` records per processable running task; returns the records processed.

        Each record is followed by the task's stream-time and wall-clock punctuation checks (ordering.md D-3/D-4).
        """
        processed = 0
        for task_id in sorted(self.running):
            task = self.running[task_id]
            done = 0
            try:
                while done < max_num_records and task.is_processable(
                    task.wall_clock.milliseconds() if wall_clock_time is None else wall_clock_time
                ):
                    if not task.process(wall_clock_time):
                        break
                    done += 1
                    task.maybe_punctuate_stream_time()
                    task.maybe_punctuate_system_time()
            except Exception as exc:
                self.log_task_failure(task_id, exc)
                _rethrow(exc, task)
            finally:
                self._steps[task_id] += done
                processed += done
        return processed

    def run_to_end(self) -> int:
        """Process every running task until none has a record left (the replay's loop per task); returns the steps."""
        total = 0
        for task_id in sorted(self.running):
            task = self.running[task_id]
            try:
                steps = drain(task)
            except Exception as exc:
                self.log_task_failure(task_id, exc)
                _rethrow(exc, task)
            self._steps[task_id] += steps
            total += steps
        return total

    def has_buffered(self) -> bool:
        """Whether any running task still holds records (the batch's "not done yet")."""
        return any(task.partition_group.num_buffered() > 0 for task in self.running.values())

    def punctuate(self) -> int:
        """``punctuate``: stream-time then wall-clock punctuation of each running task; returns how many fired."""
        punctuated = 0
        for task_id in sorted(self.running):
            task = self.running[task_id]
            try:
                if task.maybe_punctuate_stream_time():
                    punctuated += 1
                if task.maybe_punctuate_system_time():
                    punctuated += 1
            except Exception as exc:
                self._log(
                    logging.ERROR, "Failed to punctuate stream task %s due to the following error:", task_id, exc=exc
                )
                _rethrow(exc, task)
        return punctuated

    # -- commit ----------------------------------------------------------------------------------------------------

    def maybe_commit(self) -> int:
        """Commit every running or restoring task whose ``commit_needed`` is set, in one committer call."""
        candidates = {**self.restoring, **self.running}
        return self._commit([candidates[t] for t in sorted(candidates) if candidates[t].commit_needed])

    def maybe_commit_per_user_requested(self) -> int:
        """If any running task called ``context.commit()``, commit every running task that needs it (4.2)."""
        if not any(task.commit_requested for task in self.running.values()):
            return 0
        committed = self._commit([self.running[t] for t in sorted(self.running) if self.running[t].commit_needed])
        for task in self.running.values():
            task.commit_requested = False
        return committed

    def _commit(self, tasks: list[StreamTask]) -> int:
        if not tasks:
            return 0
        if self._committer is not None:
            try:
                self._committer(tasks)
            except Exception as exc:
                failed = tasks[0].id if len(tasks) == 1 else ", ".join(str(t.id) for t in tasks)
                self._log(logging.ERROR, "Failed to commit stream task %s due to the following error:", failed, exc=exc)
                if isinstance(exc, StreamprocError):
                    raise
                raise ProcessingError(
                    f"commit failed: {exc}; the tasks' outputs since their last commit are not durable",
                    task_id=str(tasks[0].id),
                ) from exc
        for task in tasks:
            task.commit_needed = False
            task.commit_requested = False
            self._log(logging.DEBUG, "Committed active task %s", task.id)
        self.commits += 1
        return len(tasks)

    # -- close -----------------------------------------------------------------------------------------------------

    def close_task(self, task_id: TaskId, *, clean: bool = True) -> ReplayResult | None:
        """Close one task (``Processor.close`` on every node); a running task's :class:`ReplayResult` is returned.

        A clean close of a running task first commits it if it needs a commit; a dirty close (after an error) only
        closes it, as ``closeDirty`` does.
        """
        for registry in (self.created, self.restoring, self.running):
            task = registry.pop(task_id, None)
            if task is None:
                continue
            if registry is not self.running:
                return None
            if not clean:
                try:
                    task.close()
                except Exception as exc:  # noqa: BLE001 - a dirty close swallows close errors, as closeDirty does
                    self._log(logging.WARNING, "Ignoring error while closing task %s dirty: %s", task_id, exc)
                return None
            try:
                task.flush_caches()  # the commit's flushCache, before the processors close
            except Exception as exc:
                self.log_task_failure(task_id, exc)
                _rethrow(exc, task)
            if task.commit_needed:
                self._commit([task])
            try:
                return finish_replay(task, self._steps[task_id], close=True)
            except Exception as exc:
                self._log(logging.ERROR, "Failed to close stream task %s due to the following error:", task_id, exc=exc)
                _rethrow(exc, task)
        raise ProcessingError("is not a task of this worker", task_id=str(task_id))

    def close(self, *, clean: bool = True) -> dict[TaskId, ReplayResult]:
        """Close every task (clean: commit first); returns the results of the tasks that were running."""
        results: dict[TaskId, ReplayResult] = {}
        for task in list(self.tasks()):
            result = self.close_task(task.id, clean=clean)
            if result is not None:
                results[task.id] = result
        return results


def _rethrow(exc: Exception, task: StreamTask) -> NoReturn:
    """``e.setTaskId(task.id())`` / ``new StreamsException(e, task.id())``: raise what the worker rethrows.

    Called inside the ``except`` block: an error that already names the task (or is not a task's error, such as a
    ``StateError``) is re-raised unchanged; a ``StreamsError`` without a task id gets this task's; anything else is
    wrapped in a ``ProcessingError`` naming the task, caused by the original.
    """
    if isinstance(exc, StreamsError) and exc.task_id is None:
        raise task._with_task_id(exc) from exc
    if isinstance(exc, StreamprocError):
        raise exc
    raise ProcessingError(f"{type(exc).__name__}: {exc}", task_id=str(task.id)) from exc
