"""One log line per image and per build step that runs, from ``docker build``'s and Compose's output as it arrives.

A cold deployment test spends most of its time building images (minutes per image on two cores, every layer copied in
full by the vfs storage driver); with the output captured until the end, its log said nothing for ten minutes and could
not say where the time went. Steps the builder takes from its cache are counted, not logged, so a warm run's log stays a
few lines long, and instructions that take no time (``ARG``, ``FROM``, ``ENV``, …) are not logged either. The whole
output is still returned, for :mod:`streamproc_dev.compose_failure` to explain a failure in one line.
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

log = logging.getLogger(__name__)

#: the classic builder (Debian's engine 20.10 has no buildx): ``Step 5/26 : RUN apt-get install …``
_STEP = re.compile(r"^Step (?P<step>\d+/\d+) : (?P<command>.*)$")
_CACHED = "---> Using cache"
#: the instructions that take time (the rest, ARG, FROM, ENV, …, finish at once and are not logged)
_WORK = ("RUN", "COPY", "ADD")
#: Compose, before and after each image: `` Image streamproc-spark:0.1.0 Building`` / ``… Built``
_IMAGE = re.compile(r"^\s*Image (?P<image>\S+) (?P<state>Building|Built)\s*$")
#: Compose's ``up --wait``: the moments a service is ready (or is not)
_CONTAINER = re.compile(r"^\s*Container (?P<container>\S+) (?P<state>Healthy|Exited|Error)\s*$")


class BuildProgress:
    """Turns output lines into log lines; fed from two reader threads, hence the lock."""

    def __init__(self, image: str) -> None:
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._image = image
        self._pending: str | None = None
        self._cached = 0
        self._ran = 0
        self._announced: set[str] = set()

    def _say(self, message: str) -> None:
        log.info("[%5.0fs] %s", time.monotonic() - self._started, message)

    def _flush(self) -> None:
        if self._pending is not None:
            self._say(self._pending)
            self._ran += 1
            self._pending = None

    def line(self, text: str) -> None:
        """One line of the build's or Compose's output (stdout or stderr)."""
        text = text.rstrip()
        with self._lock:
            if _CACHED in text and self._pending is not None:
                self._pending = None
                self._cached += 1
            elif step := _STEP.match(text):
                self._flush()
                command = " ".join(step["command"].split())
                if not command.upper().startswith(_WORK):
                    return
                command = command if len(command) <= 110 else command[:109] + "…"
                self._pending = f"{self._image} step {step['step']}: {command}"
            elif image := _IMAGE.match(text):
                self._image_event(image["image"], image["state"])
            elif container := _CONTAINER.match(text):
                said = f"container {container['container']}: {container['state'].lower()}"
                if said not in self._announced:  # ``up --wait`` repeats every state it has seen at each change
                    self._announced.add(said)
                    self._say(said)
            elif self._pending is not None and text:
                self._flush()  # the step's first output: it runs (a cached one says so first)

    def _image_event(self, image: str, state: str) -> None:
        if state == "Building" and image != self._image:
            self._flush()
            self._image, self._cached, self._ran = image, 0, 0
            if image not in self._announced:  # Compose says it again, and alternates when it builds in parallel
                self._announced.add(image)
                self._say(f"{image}: building")
        elif state == "Built":
            self._finish()

    def finished(self) -> None:
        """The build ended: the last image's line."""
        with self._lock:
            self._finish()

    def _finish(self) -> None:
        """One line for the image: the steps that ran and those taken from the cache."""
        self._flush()
        if self._ran or self._cached:
            self._say(f"{self._image}: built ({self._ran} steps ran, {self._cached} from the cache)")
        self._ran = self._cached = 0


def run(
    argv: Sequence[str], *, image: str, timeout_s: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and log its build progress; returns its stdout and stderr as ``subprocess.run`` would.

    ``subprocess.TimeoutExpired`` after ``timeout_s`` (the process killed); an exception here (an interrupt) kills
    the process too, so no build outlives its caller.
    """
    progress = BuildProgress(image)
    process = subprocess.Popen(  # noqa: S603
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    outputs: dict[str, list[str]] = {"stdout": [], "stderr": []}

    def read(stream: IO[str], into: list[str]) -> None:
        for text in stream:
            into.append(text)
            progress.line(text)

    assert process.stdout is not None and process.stderr is not None
    readers = [
        threading.Thread(target=read, args=(process.stdout, outputs["stdout"]), daemon=True),
        threading.Thread(target=read, args=(process.stderr, outputs["stderr"]), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout=timeout_s)
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        for reader in readers:
            reader.join(timeout=10)
    progress.finished()
    return subprocess.CompletedProcess(list(argv), process.returncode, "".join(outputs["stdout"]),
                                       "".join(outputs["stderr"]))  # fmt: skip
