"""The application's state directory as Kafka Streams 4.2 lays it out (``PI/StateDirectory.java``, state.md §1).

- app dir ``<state.dir>/<application.id>`` with permissions ``rwxr-x---``, created only when the topology has
  persistent stores;
- ``.lock`` in the app dir: Kafka Streams takes a non-blocking exclusive ``FileChannel.tryLock`` on it, which the JVM
  implements with POSIX ``fcntl`` record locks on Linux, so streamproc locks it with ``fcntl.lockf`` (never
  ``flock``, which the JVM's lock does not see): while streamproc holds it, a Kafka Streams instance cannot start on
  the directory, and a running instance makes :meth:`StateDirectory.lock` fail with :class:`StateDirLocked`;
- ``kafka-streams-process-metadata`` (``{"processId": "<uuid>"}``) is Kafka Streams' own identity: written by the
  instance at start-up when it has persistent stores. streamproc reads it (:meth:`StateDirectory.process_id`) but
  never creates, copies or changes it (rule 3: two hosts sharing one process id claim one identity);
- task directories ``<subtopology>_<partition>`` (named topologies under ``__<name>__/``), created lazily; a regular
  file in their place is an error; no ``*.lock`` files inside them (pre-3.0 leftovers that Kafka deletes).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
from pathlib import Path
from types import TracebackType
from typing import IO

from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.store_layout import LOCK_FILE_NAME, application_directory, task_directory

LOG = logging.getLogger(__name__)

#: ``StateDirectory.PROCESS_FILE_NAME``.
PROCESS_FILE_NAME = "kafka-streams-process-metadata"
#: ``PosixFilePermissions.fromString("rwxr-x---")`` (``StateDirectory.configurePermissions``).
APP_DIR_PERMISSIONS = 0o750
#: ``StateDirectory.TASK_DIR_PATH_NAME``-style names ``\\d+_\\d+`` (``parseTaskDirectoryName``).
_TASK_DIR = re.compile(r"^\d+_\d+$")


class StateDirLocked(StateError):
    """The app dir ``.lock`` is held by another process: a Kafka Streams instance (or another streamproc) runs."""

    kafka_message = (
        "Unable to initialize state, this can happen if multiple instances of Kafka Streams are running in the "
        "same state directory"
    )

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        super().__init__(
            f"{self.kafka_message} ({self.path} is locked by another process); stop the Kafka Streams application "
            "on this host before writing its state"
        )


class StateDirectory:
    """``StateDirectory`` for one application: paths, the ``.lock`` and the read-only process id."""

    def __init__(self, state_dir: Path | str, application_id: str) -> None:
        self.state_dir = Path(state_dir)
        self.application_id = application_id
        self.app_dir = application_directory(self.state_dir, application_id)
        self._lock_handle: IO[bytes] | None = None

    @property
    def lock_path(self) -> Path:
        return self.app_dir / LOCK_FILE_NAME

    @property
    def process_file(self) -> Path:
        return self.app_dir / PROCESS_FILE_NAME

    def ensure_app_dir(self) -> Path:
        """Create the app dir (with parents) as Kafka Streams does for an app with persistent stores.

        Kafka Streams forces ``rwxr-x---`` on both ``state.dir`` and the app dir at every start; streamproc sets it
        only on directories it creates, so a shared ``state.dir`` keeps its owner's permissions.
        """
        if self.app_dir.exists() and not self.app_dir.is_dir():
            raise StateError(
                f"state directory [{self.app_dir}] can't be created as there is an existing file with the same name"
            )
        if not self.app_dir.is_dir():
            base_created = not self.state_dir.exists()
            self.app_dir.mkdir(parents=True, exist_ok=True)
            if base_created:
                os.chmod(self.state_dir, APP_DIR_PERMISSIONS)
            os.chmod(self.app_dir, APP_DIR_PERMISSIONS)
            LOG.info("Created state directory %s for application %s", self.app_dir, self.application_id)
        return self.app_dir

    # -- the .lock ----------------------------------------------------------------------------------------------------

    @property
    def locked(self) -> bool:
        """This object holds the app dir lock."""
        return self._lock_handle is not None

    def lock(self) -> None:
        """Take the app dir ``.lock`` the way Kafka Streams does (exclusive, non-blocking POSIX lock)."""
        if self._lock_handle is not None:
            return
        self.ensure_app_dir()
        handle = open(self.lock_path, "a+b")  # noqa: SIM115 - held until unlock()
        try:
            fcntl.lockf(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            raise StateDirLocked(self.lock_path) from exc
        self._lock_handle = handle
        LOG.debug("Locked %s", self.lock_path)

    def unlock(self) -> None:
        handle = self._lock_handle
        if handle is None:
            return
        self._lock_handle = None
        try:
            fcntl.lockf(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()

    def is_locked_elsewhere(self) -> bool:
        """Whether another process holds the ``.lock`` (``F_GETLK``-style probe; never releases our own lock)."""
        if self._lock_handle is not None or not self.lock_path.exists():
            return False
        with open(self.lock_path, "rb") as handle:
            try:
                fcntl.lockf(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.lockf(handle.fileno(), fcntl.LOCK_UN)
        return False

    def __enter__(self) -> StateDirectory:
        self.lock()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.unlock()

    # -- the process file ---------------------------------------------------------------------------------------------

    def process_id(self) -> str | None:
        """The ``processId`` Kafka Streams recorded, ``None`` if it has not started here yet or the file is unreadable.

        Kafka Streams replaces an unreadable file with a fresh id ("Failed to read json process file"); streamproc
        only reports it and never writes the file.
        """
        try:
            data = json.loads(self.process_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            LOG.warning(
                "Failed to read json process file %s: %s (Kafka Streams will replace it)", self.process_file, exc
            )
            return None
        process_id = data.get("processId") if isinstance(data, dict) else None
        return process_id if isinstance(process_id, str) else None

    # -- task directories ---------------------------------------------------------------------------------------------

    def task_dir_path(self, task_id: TaskId) -> Path:
        return task_directory(self.state_dir, self.application_id, task_id)

    def task_dir(self, task_id: TaskId) -> Path:
        """``getOrCreateDirectoryForTask``: the task directory, created (with the app dir) if missing."""
        path = self.task_dir_path(task_id)
        if path.exists() and not path.is_dir():
            raise StateError(
                f"task [{task_id}] state directory [{path}] can't be created as there is an existing file with the "
                "same name; remove the file"
            )
        if not path.is_dir():
            self.ensure_app_dir()
            path.mkdir(parents=True, exist_ok=True)
        return path

    def task_ids(self) -> list[TaskId]:
        """Task directories present (entries matching ``\\d+_\\d+``; everything else is ignored, as in Kafka)."""
        if not self.app_dir.is_dir():
            return []
        ids: list[TaskId] = []
        for entry in self.app_dir.iterdir():
            if entry.is_dir() and _TASK_DIR.match(entry.name):
                subtopology, partition = entry.name.split("_", 1)
                ids.append(TaskId(int(subtopology), int(partition)))
        return sorted(ids, key=lambda t: (t.subtopology, t.partition))

    def wipe_task(self, task_id: TaskId) -> None:
        """``StateManagerUtil.closeStateManager(wipeStateStore=true)``: delete the whole task directory."""
        path = self.task_dir_path(task_id)
        if path.exists():
            shutil.rmtree(path)
            LOG.warning("task [%s] Wiped state directory %s", task_id, path)
