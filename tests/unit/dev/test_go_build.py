"""``go_install``: a long build reports progress, a failed one leaves nothing that looks built.

``go`` here is a script standing in for the Go toolchain: a cold build of the real programs takes minutes and the
module proxy, and what is under test is streamproc's handling of the build, not Go.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from streamproc.errors import DevServiceError
from streamproc_dev import go_build


def _fake_go(tmp_path: Path, body: str) -> Path:
    go = tmp_path / "go"
    go.write_text("#!/bin/sh\n" + body)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    return go


def test_a_build_logs_packages_compiled_and_installs_the_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    go = _fake_go(
        tmp_path,
        'echo "go: downloading example.org/tool v1.0.0" >&2\n'
        'for p in a b c; do echo "example.org/tool/$p" >&2; done\n'
        'printf built > "$GOBIN/cmd"\n',
    )
    monkeypatch.setenv("STREAMPROC_GO", str(go))
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(go_build, "PROGRESS_INTERVAL_S", 0.0)
    target = tmp_path / "bin" / "tool"
    with caplog.at_level(logging.INFO, logger=go_build.__name__):
        assert go_build.go_install("example.org/tool/cmd", "v1.0.0", target, what="tool") == target
    assert target.read_text() == "built"
    progress = [r.getMessage() for r in caplog.records if "packages compiled" in r.getMessage()]
    assert progress[-1].startswith("Building tool: 3 packages compiled")


def test_a_failed_build_raises_its_stderr_and_leaves_no_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    go = _fake_go(tmp_path, 'echo "cannot find module" >&2\nprintf half > "$GOBIN/cmd"\nexit 1\n')
    monkeypatch.setenv("STREAMPROC_GO", str(go))
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "bin" / "tool"
    with pytest.raises(DevServiceError, match="cannot find module"):
        go_build.go_install("example.org/tool/cmd", "v1.0.0", target, what="tool")
    assert not target.exists()
