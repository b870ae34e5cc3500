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
        log.info("%s %s already built at %s", what, version, target)
        return target
    go = go_binary()
    cache_dir().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=cache_dir()))
    args = [go, "install"]
    if ldflags:
        args += ["-ldflags", " ".join(ldflags)]
    args.append(f"{package}@{version}")
    log.info("Building %s %s with go install (a few minutes, once)", what, version)
    try:
        result = subprocess.run(  # noqa: S603
            args,
            env={**os.environ, "GOBIN": str(staging), "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"},
            capture_output=True,
            text=True,
            check=False,
        )
        built = staging / package.rsplit("/", 1)[-1]
        if result.returncode != 0 or not built.exists():
            raise DevServiceError(f"go install {package}@{version} failed:\n{result.stderr[-4000:]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        built.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("Built %s at %s", what, target)
    return target
