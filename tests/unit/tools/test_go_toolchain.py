"""``tools/go_toolchain.py``: a Go toolchain module zip from a module proxy, checked, unpacked with its modes, atomic.

The proxy here is a real HTTP server on 127.0.0.1 serving module zips laid out as the Go module proxy protocol
names them (``golang.org/toolchain/@v/<version>.zip``); the integration test downloads the real one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "tools" / "go_toolchain.py"
PREFIX = "golang.org/toolchain@v0.0.1-go1.99.0.linux-amd64/"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("go_toolchain", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


go_toolchain = _load()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module proxy on a free loopback port serving ``tmp_path/proxy``; GOPROXY points at it."""
    root = tmp_path / "proxy"
    (root / "golang.org" / "toolchain" / "@v").mkdir(parents=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("GOPROXY", f"http://127.0.0.1:{server.server_address[1]},direct")
    try:
        yield root
    finally:
        server.shutdown()
        server.server_close()


def _publish(proxy: Path, files: dict[str, tuple[bytes, int]]) -> str:
    """Write the go1.99.0 toolchain zip with ``files`` (name relative to the module: content, mode); its SHA-256."""
    archive = proxy / "golang.org" / "toolchain" / "@v" / "v0.0.1-go1.99.0.linux-amd64.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, (content, mode) in files.items():
            info = zipfile.ZipInfo(PREFIX + name)
            info.external_attr = (0o100000 | mode) << 16
            zf.writestr(info, content)
    return hashlib.sha256(archive.read_bytes()).hexdigest()


def test_the_toolchain_is_unpacked_without_the_module_prefix_and_keeps_its_modes(proxy: Path, tmp_path: Path) -> None:
    sha = _publish(proxy, {"bin/go": (b"#!/bin/sh\necho go\n", 0o755), "VERSION": (b"go1.99.0\n", 0o644)})
    dest = tmp_path / "cache" / "go1.99.0.linux-amd64"

    go = go_toolchain.fetch("1.99.0", "linux-amd64", sha, dest)

    assert go == dest / "bin" / "go"
    assert go.stat().st_mode & 0o777 == 0o755
    assert (dest / "VERSION").read_text() == "go1.99.0\n"
    assert (dest / "VERSION").stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in dest.parent.iterdir()) == ["go1.99.0.linux-amd64"]  # no staging left behind

    (proxy / "golang.org" / "toolchain" / "@v" / "v0.0.1-go1.99.0.linux-amd64.zip").unlink()
    assert go_toolchain.fetch("1.99.0", "linux-amd64", sha, dest) == go  # cached: no download


def test_a_zip_with_another_checksum_is_not_used(proxy: Path, tmp_path: Path) -> None:
    _publish(proxy, {"bin/go": (b"tampered", 0o755)})
    dest = tmp_path / "cache" / "go1.99.0.linux-amd64"

    with pytest.raises(ValueError, match=r"has SHA-256 [0-9a-f]{64}, expected 0{64}; not using it"):
        go_toolchain.fetch("1.99.0", "linux-amd64", "0" * 64, dest)

    assert list(dest.parent.iterdir()) == []


def test_a_zip_without_bin_go_or_with_a_path_outside_is_refused(proxy: Path, tmp_path: Path) -> None:
    sha = _publish(proxy, {"README": (b"no go here", 0o644)})
    with pytest.raises(ValueError, match="holds no bin/go"):
        go_toolchain.fetch("1.99.0", "linux-amd64", sha, tmp_path / "a")

    sha = _publish(proxy, {"../../escape": (b"x", 0o644), "bin/go": (b"", 0o755)})
    with pytest.raises(ValueError, match="unexpected path"):
        go_toolchain.fetch("1.99.0", "linux-amd64", sha, tmp_path / "b")
    assert not (tmp_path / "escape").exists()


@pytest.mark.parametrize(
    ("goproxy", "expected"),
    [
        ("", "https://proxy.golang.org"),
        ("direct", "https://proxy.golang.org"),
        ("off", "https://proxy.golang.org"),
        ("https://goproxy.example/,https://proxy.golang.org", "https://goproxy.example"),
        ("direct|http://10.0.0.1:3000", "http://10.0.0.1:3000"),
    ],
)
def test_the_proxy_is_the_first_http_entry_of_goproxy(
    goproxy: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOPROXY", goproxy)
    assert go_toolchain.proxy_url() == expected


def test_an_unreachable_proxy_is_one_error_line(tmp_path: Path) -> None:
    result = subprocess.run(  # noqa: S603
        [sys.executable, str(SCRIPT), "1.99.0", "linux-amd64", "0" * 64, str(tmp_path / "go")],
        env={"GOPROXY": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: could not download Go 1.99.0 (linux-amd64) from http://127.0.0.1:9: ")
    assert len(result.stderr.splitlines()) == 1
