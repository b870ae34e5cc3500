"""Docker Compose, built from source with ``go install`` into the cache, so that ``docker compose config`` checks
docker-compose.yml in the tests on machines that have no Compose (the docker CLI alone, or nothing).

``config`` needs no Docker engine: it reads the file, interpolates ``.env``, applies Compose's defaults and
prints the normalised model, or refuses the file with Compose's own error. The binary is built once into
``~/.cache/streamproc/compose-<version>/docker-compose`` (like MinIO: :mod:`streamproc_dev.go_build`); beside it a
Docker config directory whose ``cli-plugins/docker-compose`` links to it makes ``DOCKER_CONFIG=<dir> docker
compose`` run it as the docker CLI's plugin, the way users type the command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamproc.errors import DevServiceError
from streamproc_dev.go_build import go_install
from streamproc_dev.versions import COMPOSE_MODULE, COMPOSE_VERSION, cache_dir

NAME = "docker-compose"


def binary_path(version: str = COMPOSE_VERSION) -> Path:
    return cache_dir() / f"compose-{version}" / NAME


def plugin_dir(version: str = COMPOSE_VERSION) -> Path:
    """A ``DOCKER_CONFIG`` directory holding only ``cli-plugins/docker-compose`` (a link to the built binary)."""
    return cache_dir() / f"compose-{version}" / "docker-config"


def fetch(version: str = COMPOSE_VERSION) -> Path:
    """Build Compose once (a cached binary is reused) and link it as a docker CLI plugin; returns the binary.

    The version is stamped in as Compose's release build does, so that ``docker compose version`` names it.
    """
    binary = go_install(
        f"{COMPOSE_MODULE}/cmd",
        version,
        binary_path(version),
        ldflags=[f"-X {COMPOSE_MODULE}/internal.Version={version}"],
        what="Docker Compose",
    )
    plugin = plugin_dir(version) / "cli-plugins" / NAME
    if not plugin.is_symlink():
        plugin.parent.mkdir(parents=True, exist_ok=True)
        plugin.symlink_to(binary)
    return binary


@dataclass(frozen=True, slots=True)
class ComposeCommand:
    """How to run Compose here: the words before the subcommand and the environment they need."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)

    def run(
        self, *args: str, environ: Mapping[str, str] | None = None, timeout_s: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run Compose with ``args`` in ``environ`` (default: this process's environment)."""
        return subprocess.run(  # noqa: S603
            [*self.argv, *args],
            env={**(os.environ if environ is None else environ), **self.env},
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s,
        )


def command(version: str = COMPOSE_VERSION) -> ComposeCommand:
    """``docker compose`` with the built plugin when the docker CLI is installed, else the standalone binary.

    Builds Compose first when the cache has none (``make services`` has built it already).
    """
    binary = fetch(version)
    docker = shutil.which("docker")
    if docker is None:
        return ComposeCommand((str(binary),))
    return ComposeCommand((docker, "compose"), {"DOCKER_CONFIG": str(plugin_dir(version))})


def config(
    compose_file: Path, env_file: Path, *, project_name: str | None = None, version: str = COMPOSE_VERSION
) -> dict[str, Any]:
    """``docker compose config --format json``: the file's normalised model, or ``DevServiceError`` with Compose's
    own error when Compose refuses the file.

    Compose would let this process's environment override the env file (``POSTGRES_USER`` set in a shell, say):
    it runs with ``PATH`` and ``HOME`` only, so that the model is the file's with the env file's values.
    """
    args: Sequence[str] = ["-f", str(compose_file), "--env-file", str(env_file)]
    if project_name is not None:
        args = [*args, "--project-name", project_name]
    environ = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    result = command(version).run(*args, "config", "--format", "json", environ=environ)
    if result.returncode != 0:
        raise DevServiceError(f"docker compose config refused {compose_file}: {result.stderr.strip()}")
    model: dict[str, Any] = json.loads(result.stdout)
    return model
