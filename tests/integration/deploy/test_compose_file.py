"""docker-compose.yml is a valid Compose file whose every setting is defined, and whose services agree on ports.

Validated against the Compose Specification's JSON schema, vendored as ``compose-spec.json`` from
https://github.com/compose-spec/compose-spec/blob/a08f8d51631b7127ddac3d2c65537db429d0f1d0/schema/compose-spec.json
(the schema's last change as of 2026-06; the version ``docker compose`` v2.40 validates with), and by Compose
itself: ``docker compose config`` (Docker Compose built from source into the cache by ``make services``,
:mod:`streamproc_dev.compose`; ``config`` needs no Docker engine) must accept the file and normalise it to the
services, ports and volumes the file means.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from streamproc.errors import DevServiceError
from streamproc_dev import compose
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


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """``docker compose config --format json`` of the file with ``.env.example``: Compose's normalised model."""
    return compose.config(COMPOSE_FILE, ENV_EXAMPLE)


def _ports(spec: dict[str, Any]) -> list[tuple[str, int, str]]:
    """The file's ``HOST:CONTAINER`` ports as (published, target, protocol), Compose's long form's fields."""
    return [(host, int(container), "tcp") for host, container in (str(p).split(":") for p in spec.get("ports") or [])]


def _volumes(spec: dict[str, Any], named: set[str]) -> list[tuple[str, str, str, bool]]:
    """The file's ``SOURCE:TARGET[:ro]`` volumes as (type, source, target, read-only): a named volume, or a bind
    mount of a path relative to the compose file's directory."""
    mounts = []
    for volume in spec.get("volumes") or []:
        source, target, *mode = str(volume).split(":")
        if source in named:
            mounts.append(("volume", source, target, mode == ["ro"]))
        else:
            mounts.append(("bind", os.path.normpath(COMPOSE_FILE.parent / source), target, mode == ["ro"]))
    return mounts


def test_docker_compose_config_resolves_the_services_ports_and_volumes_the_file_means(
    resolved: dict[str, Any],
) -> None:
    ours = compose_file.load()
    named = set(ours["volumes"])
    assert resolved["name"] == ours["name"] == "streamproc"
    assert set(resolved["services"]) == set(ours["services"])
    for name, spec in ours["services"].items():
        got = resolved["services"][name]
        assert got.get("expose") == spec.get("expose"), name
        assert [(p["published"], p["target"], p["protocol"]) for p in got.get("ports") or []] == _ports(spec), name
        assert [
            (v["type"], v["source"], v["target"], v.get("read_only", False)) for v in got.get("volumes") or []
        ] == _volumes(spec, named), name
        assert got["environment"] == compose_file.environment(ours, name), name  # the merges (<<) as YAML means
        assert got.get("command") == spec.get("command"), name
        assert {k: v["condition"] for k, v in (got.get("depends_on") or {}).items()} == {
            k: v["condition"] for k, v in (spec.get("depends_on") or {}).items()
        }, name
        assert got.get("restart") == spec.get("restart"), name
    assert (
        resolved["services"]["airflow-apiserver"]["ports"][0]["published"]
        == compose_file.env_example()["AIRFLOW_UI_PORT"]
    )
    assert resolved["services"]["spark-worker"]["deploy"]["replicas"] == 2
    # every named volume is the project's: `docker compose up` creates them as streamproc_<name>
    assert resolved["volumes"] == {volume: {"name": f"streamproc_{volume}"} for volume in named}


def test_docker_compose_config_refuses_a_broken_file(tmp_path: Path) -> None:
    broken = compose_file.raw()
    broken["services"]["spark-worker"]["depends_on"] = {"spark-mastr": {"condition": "service_healthy"}}
    broken_file = tmp_path / "docker-compose.yml"
    broken_file.write_text(yaml.safe_dump(broken), encoding="utf-8")
    with pytest.raises(DevServiceError, match="docker compose config refused .*spark-mastr"):
        compose.config(broken_file, ENV_EXAMPLE)


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
    host_port = compose_file.env_example()["KAFKA_HOST_PORT"]
    assert kafka["KAFKA_ADVERTISED_LISTENERS"] == (
        f"PLAINTEXT://kafka:{compose_file.exposed_port(compose, 'kafka')},EXTERNAL://localhost:{host_port}"
    )
    # the host's clients reach the EXTERNAL listener through the published port
    assert f"{host_port}:9094" in services["kafka"]["ports"] and "EXTERNAL://0.0.0.0:9094" in kafka["KAFKA_LISTENERS"]
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
