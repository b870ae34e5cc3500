"""A Schema Registry that is down or refuses the credentials stops ``streamproc run`` and ``process`` with one line
naming the registry and the cause, before anything is planned, fetched or started on Spark, and without the
password anywhere in what was printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from streamproc.cli import main
from streamproc_dev.service_process import free_port
from tests.conftest import SchemaRegistry

pytestmark = pytest.mark.integration

WIKIPEDIA_FEED = "examples.kafka_streams_examples.wikipedia_feed:build"


def _run(tmp_path: Path, *settings: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main,
        ["run", "--bootstrap", f"127.0.0.1:{free_port()}", "--application-id", "never-planned",
         "--topology", WIKIPEDIA_FEED, "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"),
         *settings],
    )  # fmt: skip
    return result.exit_code, result.output


def test_a_registry_that_is_down_stops_the_run_before_the_plan(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    code, output = _run(tmp_path, "--streams-setting", f"schema.registry.url={down}")
    assert code == 1
    [line] = [line for line in output.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: the Schema Registry at {down} did not answer while listing its subjects: ")
    assert not (tmp_path / "work" / "plan.json").exists()
    assert not (tmp_path / "staging").exists()


def test_refused_credentials_stop_the_run_and_the_password_is_not_printed(
    schema_registry: SchemaRegistry, tmp_path: Path
) -> None:
    wrong = f"{schema_registry.user}:{schema_registry.password}-wrong"
    config = tmp_path / "app.properties"
    config.write_text(
        f"schema.registry.url={schema_registry.url}\nbasic.auth.credentials.source=USER_INFO\n"
        f"basic.auth.user.info={wrong}\n",
        encoding="utf-8",
    )
    code, output = _run(tmp_path, "--streams-config", str(config))
    assert code == 1
    assert f"error: the Schema Registry at {schema_registry.url} refused the credentials" in output
    assert schema_registry.password not in output
    assert not (tmp_path / "work" / "plan.json").exists()
