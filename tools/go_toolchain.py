"""Download one Go toolchain from the Go module proxy into a directory, without needing any Go installed.

Go publishes every release as the module ``golang.org/toolchain`` (version ``v0.0.1-go1.24.13.linux-amd64``); this
is what ``GOTOOLCHAIN=go1.24.13 go version`` downloads. A fresh Debian 12 machine has either no Go or Debian's
1.19, which predates toolchain switching, so ``tools/prereq.sh`` fetches the module zip itself: from the first
``GOPROXY`` entry, checked against a SHA-256 pinned in the script (the zip whose ``h1:`` hash Go's checksum database
lists), unpacked into a staging directory and renamed into place, so a half-downloaded toolchain is never used.

Usage: ``python3.11 tools/go_toolchain.py GO_VERSION PLATFORM SHA256 DEST`` (for example ``1.24.13 linux-amd64
<sha256> ~/.cache/streamproc/go1.24.13.linux-amd64``); prints ``DEST/bin/go`` on success, one ``error: ...`` line
on stderr and exit 1 otherwise. Runs before the project's venv exists, so it uses the standard library only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

DEFAULT_PROXY = "https://proxy.golang.org"


def proxy_url() -> str:
    """The first HTTP(S) entry of ``GOPROXY`` (as Go reads it: comma or pipe separated), else Go's default."""
    for entry in os.environ.get("GOPROXY", "").replace("|", ",").split(","):
        entry = entry.strip()
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    return DEFAULT_PROXY


def zip_url(go_version: str, platform: str) -> str:
    return f"{proxy_url()}/golang.org/toolchain/@v/v0.0.1-go{go_version}.{platform}.zip"


def download(url: str, into: Path) -> str:
    """Stream ``url`` into ``into``; the SHA-256 of what was written."""
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=60) as response, into.open("wb") as out:  # noqa: S310 - https proxy
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def unpack(archive: Path, staging: Path) -> None:
    """Extract the module zip without its ``golang.org/toolchain@…/`` prefix, keeping the executable bits."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            _, _, relative = info.filename.partition("/")  # golang.org/...
            _, _, relative = relative.partition("/")  # toolchain@v0.0.1-.../...
            if not relative or info.is_dir():
                continue
            target = staging / relative
            if staging.resolve() not in target.resolve().parents:
                raise ValueError(f"unexpected path {info.filename!r} in {archive.name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            target.chmod(mode or 0o644)


def fetch(go_version: str, platform: str, sha256: str, dest: Path) -> Path:
    go = dest / "bin" / "go"
    if go.exists():
        return go
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        archive = work / "toolchain.zip"
        url = zip_url(go_version, platform)
        got = download(url, archive)
        if got != sha256:
            raise ValueError(f"{url} has SHA-256 {got}, expected {sha256}; not using it")
        staging = work / "go"
        unpack(archive, staging)
        if not (staging / "bin" / "go").exists():
            raise ValueError(f"{url} holds no bin/go")
        try:
            staging.rename(dest)
        except OSError:
            if not go.exists():  # else another run put the same toolchain there first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return go


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: go_toolchain.py GO_VERSION PLATFORM SHA256 DEST", file=sys.stderr)
        return 2
    go_version, platform, sha256, dest = argv
    try:
        print(fetch(go_version, platform, sha256, Path(dest)))
    except (OSError, ValueError) as exc:
        print(f"error: could not download Go {go_version} ({platform}) from {proxy_url()}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
