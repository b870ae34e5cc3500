"""The command line as a new user meets it, through click's ``CliRunner``: every command, every error path that
needs no service (a Kafka address is only ever a refused one here, and the commands below stop before using it)."""

from __future__ import annotations

import json
import logging
from importlib import metadata
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from streamproc.cli import main
from streamproc.target import KAFKA_STREAMS_VERSION

REFUSED = "127.0.0.1:1"  # never contacted: the commands below fail on their arguments first


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error_line(result: Result) -> str:
    """The single ``error: …`` line on stderr of a failed command, with nothing on stdout."""
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


def json_error(result: Result) -> dict[str, str]:
    """The JSON error object on stdout of a failed ``--output json`` command, with nothing on stderr."""
    assert result.exit_code == 1, result.output
    assert result.stderr == ""
    error: dict[str, str] = json.loads(result.stdout)
    assert sorted(error) == ["error", "message"]
    return error


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(prefix, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += commands(command, (*prefix, name))
        else:
            found.append(((*prefix, name), command))
    return found


def test_version_names_streamproc_the_kafka_streams_it_targets_and_its_kafka_client() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.startswith(
        f"streamproc {metadata.version('streamproc')} for Kafka Streams {KAFKA_STREAMS_VERSION} (confluent-kafka "
    )
    assert "librdkafka " in result.output


@pytest.mark.parametrize("path", [p for p, _ in commands(main)], ids=lambda p: " ".join(p) or "streamproc")
def test_every_command_has_help_and_every_option_says_what_it_does(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    command = dict(commands(main))[path]
    assert command.help, f"{' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(path)} {param.opts[0]} has no help text"
            assert param.opts[-1] in result.output


def test_usage_errors_stay_clicks() -> None:
    result = run("plan", "--application-id", "app", "--input-topic", "t")
    assert result.exit_code == 2
    assert "Missing option '--bootstrap'" in result.stderr
    assert run("--output", "yaml", "verify", "--store", "x").exit_code == 2


def test_a_malformed_client_setting_is_one_line_or_a_json_object() -> None:
    args = ("plan", "--bootstrap", REFUSED, "-X", "linger.ms", "--application-id", "app", "--input-topic", "t")
    assert one_error_line(run(*args)) == "error: -X takes key=value (a librdkafka setting), not 'linger.ms'"
    assert json_error(run("--output", "json", *args)) == {
        "error": "ConfigError",
        "message": "-X takes key=value (a librdkafka setting), not 'linger.ms'",
    }


def test_an_empty_bootstrap_address_is_refused_before_any_client_exists() -> None:
    line = one_error_line(run("plan", "--bootstrap", " ", "--application-id", "app", "--input-topic", "t"))
    assert "no Kafka bootstrap servers given" in line


def test_two_start_options_are_refused() -> None:
    line = one_error_line(run("plan", "--bootstrap", REFUSED, "--application-id", "app", "--input-topic", "t",
                              "--to-earliest", "--to-latest"))  # fmt: skip
    assert "at most one start option" in line


def test_an_input_file_that_is_not_text_names_the_option(tmp_path: Path) -> None:
    topology = tmp_path / "topology.txt"
    topology.write_bytes(b"Topologies:\n\xff\xfe")
    line = one_error_line(run("plan", "--bootstrap", REFUSED, "--application-id", "app", "--topology", str(topology)))
    assert line == f"error: --topology {topology}: not UTF-8 text (byte 12); give a text file"


def test_an_unreadable_file_is_one_line_naming_it() -> None:
    # /proc/self/mem exists and is a file, but reading it from the start fails with EIO: a real unreadable file
    args = ("plan", "--bootstrap", REFUSED, "--application-id", "app", "--input-topic", "t",
            "--from-file", "/proc/self/mem")  # fmt: skip
    assert one_error_line(run(*args)) == "error: Input/output error: '/proc/self/mem'"
    assert json_error(run("--output", "json", *args)) == {
        "error": "OSError",
        "message": "Input/output error: '/proc/self/mem'",
    }
    result = run("fetch", "--bootstrap", REFUSED, "--plan", "/proc/self/mem", "--store", "unused")
    assert one_error_line(result) == "error: cannot read plan /proc/self/mem: [Errno 5] Input/output error"


def test_a_plan_that_is_not_a_plan_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"format": "streamproc-run-plan", "version": 1}')
    result = run("--output", "json", "fetch", "--bootstrap", REFUSED, "--plan", str(bad), "--store", str(tmp_path))
    error = json_error(result)
    assert error["error"] == "PlanError" and "missing field 'ranges'" in error["message"]


def test_verify_an_empty_store_fails_in_text_and_json(tmp_path: Path) -> None:
    result = run("verify", "--store", str(tmp_path))
    assert result.exit_code == 1 and result.stdout.startswith("0 of 0 segment(s) verified\n")
    assert "no staged segment here" in result.stdout
    result = run("--output", "json", "verify", "--store", str(tmp_path))
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["segments_checked"] == 0 and report["segments_ok"] == 0
    assert [p["problem"] for p in report["problems"]] == [
        "no staged segment here: nothing was fetched to this store, or the URI is wrong"
    ]


def test_verify_refuses_an_unknown_storage_scheme() -> None:
    assert "unknown storage scheme 'ftp://'" in one_error_line(run("verify", "--store", "ftp://host/x"))


def test_verbose_shows_debug_logs_and_quiet_hides_librdkafka() -> None:
    run("-v", "verify", "--store", "ftp://host/x")
    assert logging.getLogger("streamproc").getEffectiveLevel() == logging.DEBUG
    assert logging.getLogger("streamproc.librdkafka").isEnabledFor(logging.ERROR)
    run("verify", "--store", "ftp://host/x")
    assert not logging.getLogger("streamproc.librdkafka").isEnabledFor(logging.CRITICAL)
    assert logging.getLogger("streamproc").getEffectiveLevel() == logging.WARNING


def test_a_setting_librdkafka_rejects_is_one_line_in_its_words() -> None:
    args = ("plan", "--bootstrap", REFUSED, "-X", "no.such.setting=1", "--application-id", "app", "--input-topic", "t")
    assert one_error_line(run(*args)) == 'error: Kafka: No such configuration property: "no.such.setting"'
    assert json_error(run("--output", "json", *args))["error"] == "KafkaException"
