"""Building a Go program from the Go module proxy into the cache, once: how MinIO and Docker Compose get here.

Both are pinned module versions built with ``go install MODULE/PACKAGE@VERSION`` (no checkout, no replace
directives to honour), statically (``CGO_ENABLED=0``), by the Go that ``tools/prereq.sh`` found or downloaded
(``STREAMPROC_GO`` in ``.prereq.env``), else ``go`` on PATH. The binary is built into a temporary directory of the
cache and renamed into place only when the build succeeded, so a build that failed or was killed never leaves a
binary that looks finished.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev.versions import cache_dir

log = logging.getLogger(__name__)


def go_binary() -> str:
    """The Go to build with: ``STREAMPROC_GO`` (what tools/prereq.sh found) when set, else ``go`` on PATH."""
    go = os.environ.get("STREAMPROC_GO") or shutil.which("go")
    if go and not os.access(go, os.X_OK):
        raise DevServiceError(f"STREAMPROC_GO={go} is not an executable; point it at a Go 1.24+ binary or unset it")
    if go is None:
        raise DevServiceError(
            "Go ('go') is not on PATH and STREAMPROC_GO is not set; run `make services` (it downloads Go 1.24 into "
            "the cache) or install Go 1.24+ (https://go.dev/doc/install) and retry"
        )
    return go


def go_install(
    package: str,
    version: str,
    target: Path,
    *,
    ldflags: Sequence[str] = (),
    what: str,
) -> Path:
    """Build ``package@version`` into ``target`` unless it is there already; returns ``target``.

    ``go install`` names the binary after the package's last path element (``.../cmd`` gives ``cmd``): it is
    renamed to ``target``'s name. ``what`` names the program in logs and errors.
    """
    if target.exists():
        log.debug("%s %s already built at %s", what, version, target)
        return target
    go = go_binary()
    cache_dir().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=cache_dir()))
    args = [go, "install", "-v"]
    if ldflags:
        args += ["-ldflags", " ".join(ldflags)]
    args.append(f"{package}@{version}")
    log.info("Building %s %s with go install (a few minutes, once)", what, version)
    try:
        returncode, stderr = _run_with_progress(
            args, {**os.environ, "GOBIN": str(staging), "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}, what
        )
        built = staging / package.rsplit("/", 1)[-1]
        if returncode != 0 or not built.exists():
            raise DevServiceError(f"go install {package}@{version} failed:\n{stderr[-4000:]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        built.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("Built %s at %s", what, target)
    return target


#: How often a build that is still running says so.
PROGRESS_INTERVAL_S = 30.0


def _run_with_progress(args: Sequence[str], env: dict[str, str], what: str) -> tuple[int, str]:
    """Run ``go install -v``, logging every ``PROGRESS_INTERVAL_S`` how many packages it has compiled so far.

    A cold build takes minutes with no output of its own; ``-v`` names each package on stderr as it is built, which
    is the only progress Go gives. Returns the exit code and the whole stderr (for the error message).
    """
    started = time.monotonic()
    last_report = started
    lines: list[str] = []
    compiled = 0
    with subprocess.Popen(  # noqa: S603
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            compiled += not line.startswith("go: ")  # "go: downloading …" is a module fetched, not compiled
            now = time.monotonic()
            if now - last_report >= PROGRESS_INTERVAL_S:
                last_report = now
                log.info("Building %s: %d packages compiled, %.0f s", what, compiled, now - started)
        returncode = process.wait()
    return returncode, "".join(lines)
