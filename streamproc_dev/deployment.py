"""docker-compose.yml brought up and torn down as a user does, for the deployment test and by hand.

``up`` is ``docker compose --parallel 1 build`` then ``up -d --wait``: every image built, every service started in
dependency order and healthy (or the one-shots completed). When that fails, the project is torn down (``down -v``)
before the error is raised, so nothing is left running, and the error is one line naming the service and the cause
(:mod:`streamproc_dev.compose_failure`). Settings come from an env file written from ``.env.example`` with the
caller's overrides (ports, the stand-in base images), so the file's own defaults stay what a user copies.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import build_log, compose, compose_failure
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


def host_port(attempts: int = 200) -> int:
    """A free TCP port for the project to publish, below the kernel's ephemeral range.

    ``make test`` runs this test beside pytest's workers, whose services take ``free_port()`` ports (the OS picks
    them in the ephemeral range, as it does for every outgoing connection), and the ports are bound only minutes
    later, when ``up`` starts the containers after the builds. Below that range nothing the suite starts picks a
    port, so nothing can take it in between. Checked free on 0.0.0.0, where Docker publishes.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    pick = random.SystemRandom()
    for _ in range(attempts):
        port = pick.randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("0.0.0.0", port))  # noqa: S104 - where Docker publishes the port
            except OSError:
                continue
            return port
    raise DevServiceError(f"no free TCP port below the ephemeral range ({low}) after {attempts} tries")


@dataclass(frozen=True, slots=True)
class Deployment:
    """One compose project: its name, env file and compose file."""

    project: str
    env_file: Path
    compose_file: Path = COMPOSE_FILE

    def _base(self) -> list[str]:
        return ["--project-name", self.project, "-f", str(self.compose_file), "--env-file", str(self.env_file)]

    def compose(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        return compose.command().run(*self._base(), *args, timeout_s=timeout_s)

    def up(self) -> float:
        """Build, start and wait for every service; returns the seconds it took. On failure: torn down, then
        ``DevServiceError("<service>: <cause>")``.

        The images are built one at a time first (``--parallel 1 build``, each image once): the ``airflow`` target
        is built ``FROM`` the ``spark`` one, and two parallel builds would each build the shared stages (the engine's
        classic builder shares only finished layers). ``up`` then starts what was built, without ``--build``: where a
        layer's cache missed (a file of the context changed since), ``up --build`` builds the image once per service
        that names it, side by side (four Airflow services, three Spark ones), each in its own build container: 29 GB
        of disk in one run here, where building each image once needs a few.
        """
        started = time.monotonic()
        log.info("docker compose build, then up --wait (project %s)", self.project)
        self._step("compose build", "--parallel", "1", "--progress", "plain", "build")
        self._step("compose up", "--progress", "plain", "up", "-d", "--wait", "--wait-timeout", str(WAIT_TIMEOUT_S))
        return time.monotonic() - started

    def _step(self, what: str, *args: str) -> None:
        command = compose.command()
        try:
            # each image and each build step that runs logged as it starts (build_log): a cold build takes minutes
            result = build_log.run([*command.argv, *self._base(), *args], image=what, timeout_s=UP_TIMEOUT_S,
                                   env={**os.environ, **command.env})  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            self.down()
            raise DevServiceError(f"docker compose {' '.join(args)} did not finish within {UP_TIMEOUT_S:.0f}s; "
                                  "the project was torn down") from exc  # fmt: skip
        except KeyboardInterrupt:  # interrupted (make's Ctrl-C or SIGTERM, streamproc_dev.deploy_test): nothing left
            self.down()
            raise
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

    def remove_leftovers(self) -> None:
        """Whatever ``leftovers`` finds, removed with the docker CLI alone: the last resort when ``down`` itself was
        interrupted (make's Ctrl-C during a teardown), before the engine the test started is stopped."""
        found = self.leftovers()
        removals = {"containers": ["rm", "-f", "-v"], "volumes": ["volume", "rm", "-f"], "networks": ["network", "rm"]}
        for kind, args in removals.items():  # containers first: they hold the volumes and networks
            if found[kind]:
                subprocess.run([docker_cli(), *args, *found[kind]], capture_output=True, check=False, timeout=300)  # noqa: S603

    def container_names(self, service: str) -> list[str]:
        result = self.compose("ps", "--all", "--format", "{{.Name}}", service)
        return sorted(result.stdout.split())
