"""What went wrong in ``docker compose up``, in one line naming the service and the cause.

Compose prints a progress display and, on failure, the engine's or builder's error somewhere in it: a published port
already taken (the userland proxy's ``bind: address already in use``), a build step that failed (BuildKit's
``failed to solve``), a container that never became healthy. A user needs the service and the cause, not the
hundred lines around it; this module finds them in the output. Pure text in, text out: unit-tested on real outputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: ``…endpoint streamproc-kafka-1 (…): Error starting userland proxy: listen tcp4 0.0.0.0:9094: bind: address…``
_PORT_TAKEN = re.compile(
    r"endpoint (?P<container>[\w.-]+) .*?listen (?:tcp|udp)[46]? (?P<address>[\d.:\[\]]+:(?P<port>\d+)): "
    r"bind: address already in use"
)
#: BuildKit names the service whose build failed (``target kafka: failed to solve: …``)
_BUILD_FAILED = re.compile(r"(?:target (?P<service>[\w.-]+): )?failed to solve: (?P<cause>.+)")
#: the classic builder (the engine without buildx): ``The command '/bin/sh -c …' returned a non-zero code: 3``
_STEP_FAILED = re.compile(r"The command '(?P<command>.+)' returned a non-zero code: (?P<code>\d+)")
#: Compose's progress line before each image build: `` Image streamproc-airflow:0.1.0 Building``
_IMAGE_BUILDING = re.compile(r"Image (?P<image>\S+) Building")
#: a one-shot its dependants wait for: ``service "airflow-init" didn't complete successfully: exit 1``
_ONE_SHOT_FAILED = re.compile(r"service \"(?P<service>[\w.-]+)\" didn't complete successfully: exit (?P<code>\d+)")
#: ``dependency failed to start: container streamproc-kafka-1 is unhealthy`` / ``… exited (1)``
_UNHEALTHY = re.compile(r"container (?P<container>[\w.-]+) (?P<cause>is unhealthy|exited \(\d+\))")


def service_of(container: str, project: str) -> str:
    """``streamproc-kafka-1`` → ``kafka``: Compose names containers ``<project>-<service>-<index>``."""
    name = container.removeprefix(f"{project}-")
    return re.sub(r"-\d+$", "", name)


def explain(output: str, project: str, image_services: Mapping[str, str] | None = None) -> str:
    """One line: ``<service>: <cause>`` when the output names them, else Compose's last error line.

    ``image_services`` maps an image Compose builds to the service named for it (the classic builder's output names
    the image, not the service).
    """
    if match := _PORT_TAKEN.search(output):
        service = service_of(match["container"], project)
        return (
            f"{service}: host port {match['port']} is already in use (published as {match['address']}); free it "
            "or set another port in .env"
        )
    if match := _BUILD_FAILED.search(output):
        service = match["service"] or _building(output[: match.start()], image_services or {})
        return f"{service}: the image build failed: {_short(match['cause'])}"
    if match := _STEP_FAILED.search(output):
        service = _building(output[: match.start()], image_services or {})
        return f"{service}: the image build failed: `{_short(match['command'], 200)}` exited with {match['code']}"
    if match := _ONE_SHOT_FAILED.search(output):
        return f"{match['service']}: the one-shot exited with {match['code']} before its dependants could start"
    if match := _UNHEALTHY.search(output):
        service = service_of(match["container"], project)
        return f"{service}: the container {match['cause']}; see `docker compose logs {service}`"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    building = list(_IMAGE_BUILDING.finditer(output))
    if building and f"Image {building[-1]['image']} Built" not in output[building[-1].end() :] and lines:
        # a build that stopped before any step ran: its base image (not found locally, no registry), say
        service = _building(output, image_services or {})
        return f"{service}: the image build failed: {_short(lines[-1])}"
    errors = [line for line in lines if "rror" in line]
    return _short((errors or lines or ["docker compose failed with no output"])[-1])


def _building(output: str, image_services: Mapping[str, str]) -> str:
    """The service of the last image Compose started building before the failure."""
    images = [m["image"] for m in _IMAGE_BUILDING.finditer(output)]
    if not images:
        return "a build"
    return f"{image_services.get(images[-1], images[-1])} (image {images[-1]})"


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
