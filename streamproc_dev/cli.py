"""``python -m streamproc_dev``: the repository's own commands, which the streamproc wheel does not carry.

``broker``, ``s3``, ``registry`` (a Schema Registry) and ``airflow`` start, stop and check the real local services
the tests and the demo use; ``compose fetch`` builds the Docker Compose the deployment's tests run
``docker compose config`` with; ``docker`` starts a Docker engine and ``images build`` the stand-in base images
for the deployment's test; ``conformance run`` prints streamproc's result for one conformance scenario. The
options, output (``--output json``) and one-line errors are ``streamproc``'s: the helpers come from
:mod:`streamproc.cli.output`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from streamproc.cli.output import catch_errors, configure_logging, emit


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people; json for scripts (results and errors as JSON objects on stdout).",
)
@click.option("-v", "--verbose", count=True, help="Debug logs on stderr; -vv adds other libraries'.")
def main(output: str, verbose: int) -> None:
    """The repository's tooling: local services (a Kafka broker, MinIO, a Schema Registry, Airflow) and the
    conformance scenarios."""
    configure_logging(verbose)


def _default_workdir(service: str) -> Path:
    from streamproc_dev.versions import cache_dir

    return cache_dir() / "run" / service


_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the service keeps its data, log and PID [default: ~/.cache/streamproc/run/<service>].",
)


@main.group()
def broker() -> None:
    """A single-node KRaft Kafka broker on 127.0.0.1 from Maven Central's jars."""


@broker.command("fetch")
@click.pass_context
@catch_errors
def broker_fetch(ctx: click.Context) -> None:
    """Copy the broker jars into the cache (once)."""
    from streamproc_dev import broker as kafka_broker

    libs = kafka_broker.fetch()
    emit(ctx, {"libs": str(libs)}, f"Kafka jars in {libs}")


@broker.command("start")
@_workdir_option
@click.option("--fresh", is_flag=True, help="Delete the work directory's data first.")
@click.pass_context
@catch_errors
def broker_start(ctx: click.Context, workdir: Path | None, fresh: bool) -> None:
    """Start the broker (restarting it on its old data and ports when the work directory has some)."""
    from streamproc_dev import broker as kafka_broker

    workdir = workdir or _default_workdir("broker")
    if fresh and workdir.exists():
        kafka_broker.stop(workdir)
        shutil.rmtree(workdir)
    handle = kafka_broker.start(workdir)
    emit(
        ctx,
        {"bootstrap": handle.address, "pid": handle.pid, "log": handle.log_path},
        f"Kafka broker running: bootstrap {handle.address}, pid {handle.pid}, log {handle.log_path}",
    )


@broker.command("stop")
@_workdir_option
@click.pass_context
@catch_errors
def broker_stop(ctx: click.Context, workdir: Path | None) -> None:
    """Stop the broker started from the work directory, by its PID."""
    from streamproc_dev import broker as kafka_broker

    workdir = workdir or _default_workdir("broker")
    stopped = kafka_broker.stop(workdir)
    emit(
        ctx,
        {"workdir": str(workdir), "stopped": stopped},
        "Stopped" if stopped else f"No broker running from {workdir}",
    )


@broker.command("status")
@_workdir_option
@click.pass_context
@catch_errors
def broker_status(ctx: click.Context, workdir: Path | None) -> None:
    """Say whether the broker runs and answers."""
    from streamproc_dev import broker as kafka_broker

    workdir = workdir or _default_workdir("broker")
    status = kafka_broker.status(workdir)
    emit(ctx, {"workdir": str(workdir), "status": status}, status)


@main.group()
def s3() -> None:
    """A MinIO S3 server on 127.0.0.1, built with go install."""


@s3.command("fetch")
@click.pass_context
@catch_errors
def s3_fetch(ctx: click.Context) -> None:
    """Build the MinIO binary into the cache (once)."""
    from streamproc_dev import s3 as minio

    binary = minio.fetch()
    emit(ctx, {"binary": str(binary)}, f"MinIO at {binary}")


@s3.command("start")
@_workdir_option
@click.pass_context
@catch_errors
def s3_start(ctx: click.Context, workdir: Path | None) -> None:
    """Start MinIO."""
    from streamproc_dev import s3 as minio

    handle = minio.start(workdir or _default_workdir("s3"))
    emit(
        ctx,
        {"endpoint": handle.address, "pid": handle.pid, **handle.extra},
        f"MinIO running: endpoint {handle.address}, access key {handle.extra['access_key']}, pid {handle.pid}",
    )


@s3.command("stop")
@_workdir_option
@click.pass_context
@catch_errors
def s3_stop(ctx: click.Context, workdir: Path | None) -> None:
    """Stop MinIO by its PID."""
    from streamproc_dev import s3 as minio

    workdir = workdir or _default_workdir("s3")
    stopped = minio.stop(workdir)
    emit(
        ctx, {"workdir": str(workdir), "stopped": stopped}, "Stopped" if stopped else f"No MinIO running from {workdir}"
    )


@s3.command("status")
@_workdir_option
@click.pass_context
@catch_errors
def s3_status(ctx: click.Context, workdir: Path | None) -> None:
    """Say whether MinIO runs and is live."""
    from streamproc_dev import s3 as minio

    workdir = workdir or _default_workdir("s3")
    status = minio.status(workdir)
    emit(ctx, {"workdir": str(workdir), "status": status}, status)


@main.group()
def registry() -> None:
    """A Schema Registry on 127.0.0.1 (Apicurio Registry from Maven Central) serving Confluent's API."""


@registry.command("fetch")
@click.pass_context
@catch_errors
def registry_fetch(ctx: click.Context) -> None:
    """Unpack Apicurio Registry's runner jar and lib/ into the cache (once)."""
    from streamproc_dev import schema_registry

    directory = schema_registry.fetch()
    emit(ctx, {"directory": str(directory)}, f"Apicurio Registry in {directory}")


@registry.command("start")
@_workdir_option
@click.option("--fresh", is_flag=True, help="Delete the work directory's schemas first.")
@click.option("--auth", is_flag=True, help="Require HTTP basic auth (user streamproc, a random password).")
@click.pass_context
@catch_errors
def registry_start(ctx: click.Context, workdir: Path | None, fresh: bool, auth: bool) -> None:
    """Start the registry (restarting it on its old schemas and port when the work directory has some)."""
    from streamproc_dev import schema_registry

    workdir = workdir or _default_workdir("registry")
    if fresh and workdir.exists():
        schema_registry.stop(workdir)
        shutil.rmtree(workdir)
    handle = schema_registry.start(workdir, auth=auth)
    credentials = f" (user {handle.extra['user']}, password {handle.extra['password']})" if auth else ""
    emit(
        ctx,
        {"url": handle.address, "pid": handle.pid, "log": handle.log_path, **handle.extra},
        f"Schema Registry running: {handle.address}{credentials}, pid {handle.pid}, log {handle.log_path}",
    )


@registry.command("stop")
@_workdir_option
@click.pass_context
@catch_errors
def registry_stop(ctx: click.Context, workdir: Path | None) -> None:
    """Stop the registry started from the work directory, by its PID."""
    from streamproc_dev import schema_registry

    workdir = workdir or _default_workdir("registry")
    stopped = schema_registry.stop(workdir)
    emit(
        ctx,
        {"workdir": str(workdir), "stopped": stopped},
        "Stopped" if stopped else f"No Schema Registry running from {workdir}",
    )


@registry.command("status")
@_workdir_option
@click.pass_context
@catch_errors
def registry_status(ctx: click.Context, workdir: Path | None) -> None:
    """Say whether the registry runs and answers."""
    from streamproc_dev import schema_registry

    workdir = workdir or _default_workdir("registry")
    status = schema_registry.status(workdir)
    emit(ctx, {"workdir": str(workdir), "status": status}, status)


@main.group()
def compose() -> None:
    """Docker Compose built with go install: `docker compose config` for the deployment's tests (no engine)."""


@compose.command("fetch")
@click.pass_context
@catch_errors
def compose_fetch(ctx: click.Context) -> None:
    """Build the docker-compose binary into the cache (once) and link it as a docker CLI plugin."""
    from streamproc_dev import compose as docker_compose

    binary = docker_compose.fetch()
    plugins = docker_compose.plugin_dir()
    emit(
        ctx,
        {"binary": str(binary), "docker_config": str(plugins)},
        f"Docker Compose at {binary} (as a docker CLI plugin: DOCKER_CONFIG={plugins} docker compose)",
    )


@main.group("docker")
def docker_group() -> None:
    """A Docker engine for the deployment test: the one that answers, else dockerd started here (root)."""


@docker_group.command("start")
@_workdir_option
@click.pass_context
@catch_errors
def docker_start(ctx: click.Context, workdir: Path | None) -> None:
    """Start dockerd (data root ~/.cache/streamproc/docker) unless an engine answers already."""
    from streamproc_dev import docker_engine

    handle = docker_engine.start(workdir or _default_workdir("docker"))
    if handle is None:
        emit(ctx, {"started": False}, f"Docker engine {docker_engine.engine_version()} already answers")
    else:
        emit(
            ctx,
            {"started": True, "pid": handle.pid, "host": handle.address, "log": handle.log_path, **handle.extra},
            f"dockerd running: pid {handle.pid}, {handle.address}, data root {handle.extra['data_root']}, "
            f"log {handle.log_path}",
        )


@docker_group.command("stop")
@_workdir_option
@click.pass_context
@catch_errors
def docker_stop(ctx: click.Context, workdir: Path | None) -> None:
    """Stop the dockerd started from the work directory, by its PID (never an engine we did not start)."""
    from streamproc_dev import docker_engine

    workdir = workdir or _default_workdir("docker")
    stopped = docker_engine.stop(workdir)
    emit(ctx, {"workdir": str(workdir), "stopped": stopped}, "Stopped" if stopped else f"No dockerd from {workdir}")


@docker_group.command("status")
@_workdir_option
@click.pass_context
@catch_errors
def docker_status(ctx: click.Context, workdir: Path | None) -> None:
    """Say whether an engine answers and whether it is the one started here."""
    from streamproc_dev import docker_engine

    workdir = workdir or _default_workdir("docker")
    status = docker_engine.status(workdir)
    emit(ctx, {"workdir": str(workdir), "status": status}, status)


@main.group()
def images() -> None:
    """The deployment's stand-in base images (no image registry reachable): docker/standins/README.md."""


@images.command("build")
@click.pass_context
@catch_errors
def images_build(ctx: click.Context) -> None:
    """Build the missing stand-in base images; prints the .env lines that point docker-compose.yml at them."""
    from streamproc_dev import images as standins

    variables = standins.build_standins()
    emit(ctx, variables, "\n".join(f"{name}={image}" for name, image in variables.items()))


@main.group("airflow")
def airflow_group() -> None:
    """Airflow 3 (`airflow standalone`) on 127.0.0.1: the repository's DAGs and the streamproc monitoring page."""


@airflow_group.command("start")
@_workdir_option
@click.option(
    "--dags",
    "dags_folder",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("dags"),
    show_default=True,
    help="The DAGs folder.",
)
@click.pass_context
@catch_errors
def airflow_start(ctx: click.Context, workdir: Path | None, dags_folder: Path) -> None:
    """Start Airflow with connections to the dev broker and MinIO (kafka_default, aws_default, spark_default)."""
    import json

    from streamproc_dev import airflow_server

    env = airflow_server.connections_env(_default_workdir("broker"), _default_workdir("s3"))
    handle = airflow_server.start(workdir or _default_workdir("airflow"), dags_folder=dags_folder, env=env)
    [user] = json.loads(handle.extra["users"])
    emit(
        ctx,
        {"url": handle.address, "user": user["name"], "password": user["password"], "pid": handle.pid,
         "log": handle.log_path, "airflow_home": handle.extra["home"]},
        f"Airflow running: {handle.address} (user {user['name']}, password {user['password']}), pid {handle.pid}, "
        f"log {handle.log_path}",
    )  # fmt: skip


@airflow_group.command("stop")
@_workdir_option
@click.pass_context
@catch_errors
def airflow_stop(ctx: click.Context, workdir: Path | None) -> None:
    """Stop Airflow (all its components) by its PID."""
    from streamproc_dev import airflow_server

    workdir = workdir or _default_workdir("airflow")
    stopped = airflow_server.stop(workdir)
    emit(
        ctx,
        {"workdir": str(workdir), "stopped": stopped},
        "Stopped" if stopped else f"No Airflow running from {workdir}",
    )


@airflow_group.command("status")
@_workdir_option
@click.pass_context
@catch_errors
def airflow_status(ctx: click.Context, workdir: Path | None) -> None:
    """Say whether Airflow runs and how its components are."""
    from streamproc_dev import airflow_server

    workdir = workdir or _default_workdir("airflow")
    status = airflow_server.status(workdir)
    emit(ctx, {"workdir": str(workdir), "status": status}, status)


@main.group()
def conformance() -> None:
    """Run the spec's conformance scenarios through streamproc."""


@conformance.command("run")
@click.argument("scenario_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@catch_errors
def conformance_run(scenario_file: Path) -> None:
    """Print streamproc's result for SCENARIO_FILE as JSON, in the shape of the scenario's ``expected``."""
    from streamproc_dev.conformance import load_scenario, run_scenario

    result = run_scenario(load_scenario(scenario_file))
    click.echo(json.dumps(result, indent=2, sort_keys=True))
