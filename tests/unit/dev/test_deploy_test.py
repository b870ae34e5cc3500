"""When the compose deployment test runs in ``make test``: wherever an engine answers or we are root; else one line.

A machine's user and its engine cannot be switched from a test (CI is root, with an engine the test starts), so the
rule is checked on the two facts it reads: whether an engine answers and whether we are root.
"""

from __future__ import annotations

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
