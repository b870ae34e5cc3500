"""The compose deployment test as ``make test`` runs it beside pytest (and ``make deploy-test`` alone).

``python -m streamproc_dev.deploy_test [PYTEST_ARGS…]`` runs ``tests/integration/deploy/test_compose_up.py`` in a
pytest process of its own, with its progress (dockerd, each image and build step, each service healthy) logged live
with the time, so that its log says where a cold run's minutes went. Three things it adds to a plain pytest:

- **Where no engine can be had, one line and exit 0.** The test needs a Docker engine: one that answers, or
  ``dockerd`` (Debian's ``docker.io``, installed by ``tools/prereq.sh`` as root) started by the test, which needs
  root. A developer who is not root and has no engine gets ``deployment test skipped: …`` with the reason and the
  command that would run it; everything else in ``make test`` still counts. CI runs as root, so there the test always
  runs (``tools/prereq.sh`` installs the engine unless ``STREAMPROC_PREREQ_DOCKER=no``, which skips it the same way,
  with its own line). Anything else (an engine that does not start, a build that fails) is a failure.
- **Where the disk cannot hold the images, one line and exit 0.** Before it starts an engine of its own, the file
  system of its data root must have :data:`NEEDS_FREE_BYTES` free: a build that runs out of space fails deep in a
  layer's tar with ``no space left on device``, after minutes, and takes the disk from the tests beside it.
- **SIGTERM tears down.** ``make test`` starts it in the background, where the shell ignores SIGINT for it; make's
  trap sends SIGTERM on an interrupt instead. That becomes a ``KeyboardInterrupt``, on which pytest finishes its
  fixtures: the compose project is taken down and the dockerd the test started is stopped. Only once: a second
  SIGTERM during the teardown is ignored, so the teardown completes.
- Its own pytest options: no cache provider (the pytest beside it writes ``.pytest_cache``), output not captured.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from types import FrameType

TEST_FILE = Path(__file__).resolve().parent.parent / "tests" / "integration" / "deploy" / "test_compose_up.py"
HOW_TO_RUN = "run `make deploy-test` as root, or start a Docker engine and run it again"

#: What the test needs free where its engine keeps its data: a cold run (every image built, from an empty data root)
#: took 7.4 GB at its peak (2026-12-01, `make deploy-test`), and the pytest run beside it in `make test` needs room
#: of its own.
NEEDS_FREE_BYTES = 10 * 1024**3


def free_bytes(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (or would: its nearest existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def skip_reason() -> str | None:
    """Why the test cannot run here, or None when it can (an engine answers, or we may start one)."""
    from streamproc.errors import DevServiceError
    from streamproc_dev import docker_engine

    try:
        if docker_engine.engine_version() is not None:
            return None
    except DevServiceError:  # no docker CLI: no engine to talk to either
        pass
    if os.environ.get("STREAMPROC_PREREQ_DOCKER") == "no" and docker_engine.dockerd_path() is None:
        return "no Docker engine answers and STREAMPROC_PREREQ_DOCKER=no left docker.io uninstalled"
    if os.geteuid() != 0:
        return f"no Docker engine answers and starting dockerd needs root ({HOW_TO_RUN})"
    root = docker_engine.data_root()
    free = free_bytes(root)
    if free < NEEDS_FREE_BYTES:
        return (
            f"{free / 1024**3:.1f} GB free on the file system of {root}, where the images are built; the test needs "
            f"{NEEDS_FREE_BYTES / 1024**3:.0f} GB (free some and run `make deploy-test`)"
        )
    return None


def _interrupt_once(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    reason = skip_reason()
    if reason is not None:
        print(f"deployment test skipped: {reason}", flush=True)
        return 0
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
    progress = logging.getLogger("streamproc_dev")
    progress.addHandler(handler)
    progress.setLevel(logging.INFO)
    signal.signal(signal.SIGTERM, _interrupt_once)

    import pytest

    return int(pytest.main(["-p", "no:cacheprovider", "-s", str(TEST_FILE), *argv]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
