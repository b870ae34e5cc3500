"""``--wait-for-empty-group[=DURATION]`` of ``plan`` and ``run``: a bare flag waits PT60S, a DURATION is read as
``--by-duration`` is, and a bad one is one line naming the option before anything reaches Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from streamproc.cli import main
from streamproc.errors import ConfigError
from tests.unit.cli.test_cli import REFUSED, one_error_line

DEMO_TOPOLOGY = "streamproc_dev.demo_topology:orders_app"
PLAN = ("plan", "--bootstrap", REFUSED, "--application-id", "app", "--input-topic", "t")


@pytest.mark.parametrize(
    ("args", "wait_ms"),
    [
        ((), None),
        (("--wait-for-empty-group",), 60_000),
        (("--wait-for-empty-group", "--dry-run"), 60_000),  # the next option is not taken for a DURATION
        (("--wait-for-empty-group=PT2M",), 120_000),
        (("--wait-for-empty-group", "PT0.5S"), 500),
    ],
    ids=["absent", "bare", "bare-before-an-option", "equals", "space"],
)
def test_plan_passes_the_wait_to_the_planner(
    args: tuple[str, ...], wait_ms: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamproc.kafka import planner

    seen: dict[str, Any] = {}

    def plan_run(*_args: object, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise ConfigError("planned")

    monkeypatch.setattr(planner, "plan_run", plan_run)
    assert one_error_line(CliRunner().invoke(main, [*PLAN, *args])) == "error: planned"
    assert seen["wait_for_empty_group_ms"] == wait_ms


@pytest.mark.parametrize("duration", ["soon", "PT-5S", "P1W"])
def test_a_bad_duration_is_one_line_naming_the_option(duration: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamproc.kafka import planner

    monkeypatch.setattr(planner, "plan_run", lambda *a, **k: pytest.fail("the plan ran"))
    line = one_error_line(CliRunner().invoke(main, [*PLAN, f"--wait-for-empty-group={duration}"]))
    assert line.startswith(f"error: --wait-for-empty-group '{duration}' is ")
    assert "ISO-8601 duration" in line


def test_run_refuses_a_bad_duration_before_the_topology_is_loaded(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["run", "--bootstrap", REFUSED, "--application-id", "app", "--topology", "no_such_module:build",
         "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--wait-for-empty-group=soon"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: --wait-for-empty-group 'soon' is not a duration")


def test_run_passes_the_wait_to_its_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamproc.kafka import planner

    seen: dict[str, Any] = {}

    def plan_run(*_args: object, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise ConfigError("planned")

    monkeypatch.setattr(planner, "plan_run", plan_run)
    result = CliRunner().invoke(
        main,
        ["run", "--bootstrap", REFUSED, "--application-id", "app", "--topology", DEMO_TOPOLOGY,
         "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--wait-for-empty-group"],
    )  # fmt: skip
    assert "error: planned" in result.stderr, result.output
    assert seen["wait_for_empty_group_ms"] == 60_000
