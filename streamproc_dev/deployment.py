"""docker-compose.yml brought up and torn down as a user does, for the deployment test and by hand.

``up`` is ``docker compose up -d --build --wait``: every image built, every service started in dependency order and
healthy (or the one-shots completed). When that fails, the project is torn down (``down -v``) before the error is
raised, so nothing is left running, and the error is one line naming the service and the cause
(:mod:`streamproc_dev.compose_failure`). Settings come from an env file written from ``.env.example`` with the
caller's overrides (ports, the stand-in base images), so the file's own defaults stay what a user copies.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import compose, compose_failure
from streamproc_dev.docker_engine import docker_cli

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
#: Building every image cold takes minutes on two cores; starting and becoming healthy, two to four more.
UP_TIMEOUT_S = 3600.0
WAIT_TIMEOUT_S = 900


def write_env_file(target: Path, overrides: Mapping[str, str], example: Path = ENV_EXAMPLE) -> Path:
    """``.env.example`` with each ``NAME=`` line in ``overrides`` replaced (and unknown names appended)."""
    lines, seen = [], set()
    for line in example.read_text(encoding="utf-8").splitlines():
        name = line.partition("=")[0].strip()
        if name in overrides and not line.lstrip().startswith("#"):
            lines.append(f"{name}={overrides[name]}")
            seen.add(name)
        else:
            lines.append(line)
    lines += [f"{name}={value}" for name, value in overrides.items() if name not in seen]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


@dataclass(frozen=True, slots=True)
class Deployment:
    """One compose project: its name, env file and compose file."""

    project: str
    env_file: Path
    compose_file: Path = COMPOSE_FILE

    def compose(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        base = ["--project-name", self.project, "-f", str(self.compose_file), "--env-file", str(self.env_file)]
        return compose.command().run(*base, *args, timeout_s=timeout_s)

    def up(self) -> float:
        """Build, start and wait for every service; returns the seconds it took. On failure: torn down, then
        ``DevServiceError("<service>: <cause>")``.

        The images are built one at a time first (``--parallel 1 build``): the ``airflow`` target is built ``FROM``
        the ``spark`` one, and two parallel builds would each build the shared stages (the engine's classic builder
        shares only finished layers). What is left for ``up --build`` is then cached.
        """
        started = time.monotonic()
        log.info("docker compose build, then up --wait (project %s)", self.project)
        self._step("--parallel", "1", "--progress", "plain", "build")
        self._step("--progress", "plain", "up", "-d", "--build", "--wait", "--wait-timeout", str(WAIT_TIMEOUT_S))
        return time.monotonic() - started

    def _step(self, *args: str) -> None:
        try:
            result = self.compose(*args, timeout_s=UP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            self.down()
            raise DevServiceError(f"docker compose {' '.join(args)} did not finish within {UP_TIMEOUT_S:.0f}s; "
                                  "the project was torn down") from exc  # fmt: skip
        if result.returncode != 0:
            output = result.stdout + result.stderr
            log.debug("docker compose %s failed:\n%s", " ".join(args), output)
            logs = self.env_file.with_name(f"{self.project}-failed-up.log")
            saved = self.compose("logs", "--no-color", "--timestamps", "--tail", "200")
            logs.write_text(output + "\n--- docker compose logs ---\n" + saved.stdout + saved.stderr, encoding="utf-8")
            self.down()
            explained = compose_failure.explain(output, self.project, self.image_services())
            raise DevServiceError(f"{explained} (the project was torn down; its output and logs: {logs})")

    def image_services(self) -> dict[str, str]:
        """Each image the file builds → the first service (in file order) that builds it."""
        model = compose.config(self.compose_file, self.env_file, project_name=self.project)
        found: dict[str, str] = {}
        for name, spec in model["services"].items():
            if "build" in spec and "image" in spec:
                found.setdefault(spec["image"], name)
        return found

    def down(self) -> float:
        """``down -v --remove-orphans``: containers, networks and volumes gone; returns the seconds it took."""
        started = time.monotonic()
        result = self.compose("down", "-v", "--remove-orphans", "--timeout", "20")
        if result.returncode != 0:
            raise DevServiceError(f"docker compose down failed: {result.stderr.strip()[-1000:]}")
        return time.monotonic() - started

    def leftovers(self) -> dict[str, list[str]]:
        """The project's containers, volumes and networks that still exist (by Compose's project label)."""
        label = f"label=com.docker.compose.project={self.project}"
        found = {}
        listings = {"containers": ["ps", "-a"], "volumes": ["volume", "ls"], "networks": ["network", "ls"]}
        for kind, args in listings.items():
            name = "{{.Names}}" if kind == "containers" else "{{.Name}}"
            result = subprocess.run(  # noqa: S603
                [docker_cli(), *args, "--filter", label, "--format", name],
                capture_output=True, text=True, check=True, timeout=60,
            )  # fmt: skip
            found[kind] = result.stdout.split()
        return found

    def container_names(self, service: str) -> list[str]:
        result = self.compose("ps", "--all", "--format", "{{.Name}}", service)
        return sorted(result.stdout.split())
