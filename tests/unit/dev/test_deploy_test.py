"""When the compose deployment test runs in ``make test``: wherever an engine answers or we are root; else one line.

A machine's user and its engine cannot be switched from a test (CI is root, with an engine the test starts), so the
rule is checked on the two facts it reads: whether an engine answers and whether we are root.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from streamproc_dev import deploy_test, docker_engine


@pytest.mark.parametrize(
    ("answers", "uid", "skipped"),
    [("20.10.24", 1000, False), ("20.10.24", 0, False), (None, 0, False), (None, 1000, True)],
)
def test_only_a_user_without_root_and_without_an_engine_is_skipped(
    monkeypatch: pytest.MonkeyPatch, answers: str | None, uid: int, skipped: bool
) -> None:
    monkeypatch.setattr(docker_engine, "engine_version", lambda timeout_s=10: answers)
    monkeypatch.setattr(deploy_test.os, "geteuid", lambda: uid)
    monkeypatch.setattr(deploy_test, "free_bytes", lambda path: deploy_test.NEEDS_FREE_BYTES)
    monkeypatch.delenv("STREAMPROC_PREREQ_DOCKER", raising=False)
    reason = deploy_test.skip_reason()
    assert (reason is not None) == skipped
    if skipped:
        assert reason == (
            "no Docker engine answers and starting dockerd needs root "
            "(run `make deploy-test` as root, or start a Docker engine and run it again)"
        )


def test_the_skip_is_one_line_and_exit_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(docker_engine, "engine_version", lambda timeout_s=10: None)
    monkeypatch.setattr(deploy_test.os, "geteuid", lambda: 1000)
    assert deploy_test.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("deployment test skipped: no Docker engine answers")


def test_without_dockerd_installed_the_opt_out_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_engine, "engine_version", lambda timeout_s=10: None)
    monkeypatch.setattr(docker_engine, "dockerd_path", lambda: None)
    monkeypatch.setattr(deploy_test.os, "geteuid", lambda: 0)
    monkeypatch.setenv("STREAMPROC_PREREQ_DOCKER", "no")
    assert deploy_test.skip_reason() == (
        "no Docker engine answers and STREAMPROC_PREREQ_DOCKER=no left docker.io uninstalled"
    )


@pytest.mark.parametrize(("free_gb", "skipped"), [(9.9, True), (10.0, False), (250.0, False)])
def test_a_disk_that_cannot_hold_the_images_is_one_line_before_any_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, free_gb: float, skipped: bool
) -> None:
    """A full disk cannot be made here without taking it from everything else, so the rule is checked on what it
    reads: the free space on the data root's file system (its nearest existing parent, before the first run)."""
    monkeypatch.setattr(docker_engine, "engine_version", lambda timeout_s=10: None)
    monkeypatch.setattr(docker_engine, "dockerd_path", lambda: "/usr/sbin/dockerd")
    monkeypatch.setattr(deploy_test.os, "geteuid", lambda: 0)
    monkeypatch.delenv("STREAMPROC_PREREQ_DOCKER", raising=False)
    root = tmp_path / "cache" / "docker"
    monkeypatch.setattr(docker_engine, "data_root", lambda: root)
    seen: list[Path] = []

    def usage(path: Path) -> SimpleNamespace:
        seen.append(path)
        return SimpleNamespace(total=500 * 1024**3, used=0, free=int(free_gb * 1024**3))

    monkeypatch.setattr(deploy_test.shutil, "disk_usage", usage)
    reason = deploy_test.skip_reason()
    assert seen == [tmp_path]
    if skipped:
        assert reason == (
            f"9.9 GB free on the file system of {root}, where the images are built; the test needs 10 GB (free some "
            "and run `make deploy-test`)"
        )
    else:
        assert reason is None
    # an engine that answers keeps its data where it does: not checked
    monkeypatch.setattr(docker_engine, "engine_version", lambda timeout_s=10: "20.10.24")
    assert deploy_test.skip_reason() is None
