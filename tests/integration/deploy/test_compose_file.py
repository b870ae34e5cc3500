"""docker-compose.yml is a valid Compose file whose every setting is defined, and whose services agree on ports.

Validated against the Compose Specification's JSON schema, vendored as ``compose-spec.json`` from
https://github.com/compose-spec/compose-spec/blob/a08f8d51631b7127ddac3d2c65537db429d0f1d0/schema/compose-spec.json
(the schema's last change as of 2026-06; the version ``docker compose`` v2.40 validates with), and by
``docker compose config`` where a Compose CLI is installed (this project's machines have the docker CLI without
the compose plugin and no engine, so that check is skipped there with the reason).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import jsonschema
import pytest

from tests.integration.deploy import compose_file
from tests.integration.deploy.compose_file import COMPOSE_FILE, ENV_EXAMPLE, SCHEMA_FILE

AIRFLOW_COMPONENTS = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                      "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}  # fmt: skip


def _validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("interpolated", [False, True], ids=["as-written", "with-env-example"])
def test_the_compose_file_follows_the_compose_specification(interpolated: bool) -> None:
    document = compose_file.load() if interpolated else compose_file.raw()
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator().iter_errors(document)]
    assert errors == []


def test_the_schema_refuses_a_broken_compose_file() -> None:
    broken: dict[str, Any] = compose_file.load()
    broken["services"]["kafka"]["depends_on"] = {"postgres": {"condition": "when_ready"}}
    broken["services"]["spark-worker"]["hostnme"] = "spark-worker"
    errors = sorted(e.message for e in _validator().iter_errors(broken))
    assert len(errors) == 2
    assert "'hostnme' does not match any of the regexes" in errors[0]


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def test_docker_compose_config_accepts_the_file() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no Compose CLI here: the docker CLI has no compose plugin and docker-compose is not installed")
    result = subprocess.run(
        [*cli, "-f", str(COMPOSE_FILE), "--env-file", str(ENV_EXAMPLE), "config", "--format", "json"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    ours = compose_file.load()
    assert set(resolved["services"]) == set(ours["services"])
    for name in AIRFLOW_COMPONENTS:
        assert resolved["services"][name]["environment"] == compose_file.environment(ours, name)


def test_every_variable_the_file_uses_is_in_env_example_and_every_one_there_is_used() -> None:
    used, defined = compose_file.references(compose_file.raw()), set(compose_file.env_example())
    assert sorted(used - defined) == [], "used by docker-compose.yml, missing from .env.example"
    assert sorted(defined - used) == [], "defined in .env.example, used nowhere"
    unset = [name for name, value in compose_file.env_example().items() if not value]
    assert unset == []


def test_every_address_names_a_service_on_the_port_it_listens_on() -> None:
    compose = compose_file.load()
    services = compose["services"]
    kafka = compose_file.environment(compose, "kafka")
    assert kafka["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://kafka:{compose_file.exposed_port(compose, 'kafka')}"
    minio = services["minio"]["command"]
    assert compose_file.option(minio, "--address") == f":{compose_file.exposed_port(compose, 'minio')}"
    master = services["spark-master"]["command"]
    assert int(compose_file.option(master, "--port")) == compose_file.exposed_port(compose, "spark-master")
    worker = services["spark-worker"]["command"]
    assert worker[-1] == f"spark://spark-master:{compose_file.exposed_port(compose, 'spark-master')}"
    airflow = compose_file.environment(compose, "airflow-scheduler")
    api_port = compose_file.exposed_port(compose, "airflow-apiserver")
    assert airflow["AIRFLOW__API__PORT"] == str(api_port)
    assert airflow["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == f"http://airflow-apiserver:{api_port}/execution/"
    assert json.loads(airflow["AIRFLOW_CONN_KAFKA_DEFAULT"])["extra"]["bootstrap.servers"] == "kafka:9092"
    assert json.loads(airflow["AIRFLOW_CONN_SPARK_DEFAULT"])["host"] == worker[-1]
    assert json.loads(airflow["AIRFLOW_CONN_AWS_DEFAULT"])["extra"]["endpoint_url"] == "http://minio:9000"
    # the driver's advertised host name is the scheduler's (LocalExecutor: tasks run there)
    assert airflow["SPARK_LOCAL_HOSTNAME"] == services["airflow-scheduler"]["hostname"] == "airflow-scheduler"


def test_services_start_in_order_on_healthchecks_and_airflow_runs_its_components() -> None:
    compose = compose_file.load()
    services = compose["services"]
    for name, spec in services.items():
        for needed, condition in (spec.get("depends_on") or {}).items():
            assert needed in services, f"{name} depends on an unknown service {needed}"
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[needed], f"{name} waits for {needed} to be healthy: it has no check"
            if condition["condition"] == "service_completed_successfully":
                assert services[needed].get("restart") == "no", f"{needed} is one-shot: it must not restart"
    for name, component in AIRFLOW_COMPONENTS.items():
        assert services[name]["command"] == ["airflow", component]
        assert "healthcheck" in services[name]
        env = compose_file.environment(compose, name)
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg://")
        assert env["STREAMPROC_LEDGER_URL"].startswith("postgresql+psycopg://")
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"] == env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] != env["STREAMPROC_LEDGER_URL"]  # two databases
        assert "/var/lib/streamproc/state" in compose_file.mount_points(compose, name)
    assert services["spark-worker"]["deploy"]["replicas"] == 2
    state = json.loads(compose_file.environment(compose, "airflow-scheduler")["AIRFLOW_VAR_STREAMPROC_INCREMENTAL"])
    assert state["state_dir"] == "/var/lib/streamproc/state"
    assert "streamproc-state" in compose["volumes"]
