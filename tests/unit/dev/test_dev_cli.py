"""``python -m streamproc_dev``: the repository's own commands (services, conformance), through click's ``CliRunner``.

They left the ``streamproc`` command with the move of the tooling out of the wheel; output and errors still follow
``streamproc``'s rules (``--output json``, one error line).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from streamproc_dev.cli import main
from tests.unit.cli.test_cli import commands, json_error, one_error_line


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("path", [p for p, _ in commands(main)], ids=lambda p: " ".join(p) or "streamproc_dev")
def test_every_command_has_help_and_every_option_says_what_it_does(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    command = dict(commands(main))[path]
    assert command.help, f"{' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(path)} {param.opts[0]} has no help text"


def test_conformance_run_refuses_a_file_that_is_not_a_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text("[1, 2]")
    line = one_error_line(run("conformance", "run", str(scenario)))
    assert line.startswith(f"error: scenario {scenario}: 'kind' must be one of")
    assert json_error(run("--output", "json", "conformance", "run", str(scenario)))["error"] == "ConfigError"


def test_conformance_run_prints_a_scenarios_result(scenarios_dir: Path) -> None:
    scenario = scenarios_dir / "ordering" / "o01-tie-two-partitions-alternate.json"
    result = run("conformance", "run", str(scenario))
    assert result.exit_code == 0, result.output
    expected = json.loads(scenario.read_text())["expected"]
    assert sorted(json.loads(result.stdout)) == sorted(expected)


@pytest.mark.parametrize("service", ["broker", "s3", "registry"])
def test_dev_status_and_stop_of_a_workdir_without_a_service_honour_output(service: str, tmp_path: Path) -> None:
    status = run(service, "status", "--workdir", str(tmp_path))
    assert status.exit_code == 0 and str(tmp_path) in status.stdout and status.stdout.startswith("no ")
    status_json = json.loads(run("--output", "json", service, "status", "--workdir", str(tmp_path)).stdout)
    assert status_json == {"workdir": str(tmp_path), "status": status.stdout.strip()}

    stop = run(service, "stop", "--workdir", str(tmp_path))
    assert stop.exit_code == 0 and stop.stdout.startswith("No ") and str(tmp_path) in stop.stdout
    stop_json = json.loads(run("--output", "json", service, "stop", "--workdir", str(tmp_path)).stdout)
    assert stop_json == {"workdir": str(tmp_path), "stopped": False}


def test_dev_fetch_of_cached_services_honours_output() -> None:
    # make install / make services cached both; a cached fetch only reports where
    libs = json.loads(run("--output", "json", "broker", "fetch").stdout)["libs"]
    assert any(Path(libs).glob("kafka_2.13-*.jar"))
    binary = json.loads(run("--output", "json", "s3", "fetch").stdout)["binary"]
    assert Path(binary).name == "minio" and Path(binary).is_file()
    assert run("broker", "fetch").stdout == f"Kafka jars in {libs}\n"
    directory = json.loads(run("--output", "json", "registry", "fetch").stdout)["directory"]
    assert any(Path(directory).glob("apicurio-registry-app-*-runner.jar")) and (Path(directory) / "lib").is_dir()
