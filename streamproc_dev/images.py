"""The stand-in base images of the deployment test, built locally because no image registry is reachable here.

docker-compose.yml names each base image by a variable whose default is the public image (``.env.example``);
``docker/standins/README.md`` says what each stand-in keeps of the public image's contract and what differs. The
root is a Debian bookworm made with ``debootstrap`` and ``docker import`` (its tarball cached, ~1 min to make once);
the rest are small Dockerfiles over it built with the host's network (containers have no route to the package
registries), reusing what the host has cached already: Kafka's jars (``broker fetch``) and the MinIO binary
(``s3 fetch``), instead of a 20-minute Go build inside an image. Each build is skipped when its image exists: the
engine's data root is in the cache (:mod:`streamproc_dev.docker_engine`), so a later run reuses them.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import build_log
from streamproc_dev.docker_engine import docker_cli
from streamproc_dev.versions import KAFKA_VERSION, cache_dir

log = logging.getLogger(__name__)

REPOSITORY = "streamproc-standin"
STANDINS = Path(__file__).resolve().parent.parent / "docker" / "standins"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: The host's own certificate authorities (beyond Debian's bundle): the stand-in Python trusts them too.
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")

#: The compose file's base-image variables and the stand-in each points at.
DEBIAN_IMAGE = f"{REPOSITORY}/debian:bookworm"
VARIABLES: Mapping[str, str] = {
    "DEBIAN_IMAGE": DEBIAN_IMAGE,
    "PYTHON_IMAGE": f"{REPOSITORY}/python:3.11",
    "KAFKA_IMAGE": f"{REPOSITORY}/kafka:{KAFKA_VERSION}",
    "POSTGRES_IMAGE": f"{REPOSITORY}/postgres:15",
    "GOLANG_IMAGE": f"{REPOSITORY}/minio-build:latest",
}


def _docker(*args: str, timeout_s: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603
        [docker_cli(), *args], capture_output=True, text=True, check=False, timeout=timeout_s
    )


def image_exists(name: str) -> bool:
    return _docker("image", "inspect", name, timeout_s=30).returncode == 0


def debian_tarball() -> Path:
    """A minimal Debian bookworm root filesystem as a tarball, made once with debootstrap (needs root)."""
    tarball = cache_dir() / "images" / "debian-bookworm-minbase.tar"
    if tarball.exists():
        return tarball
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise DevServiceError("debootstrap is not installed; run `STREAMPROC_PREREQ_DOCKER=yes make prereq` as root")
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tarball.parent) as staging:
        root = Path(staging) / "rootfs"
        log.info("Making a Debian bookworm root filesystem with debootstrap (about a minute, once)")
        started = time.monotonic()
        _run([debootstrap, "--variant=minbase", "bookworm", str(root), DEBIAN_MIRROR], what="debootstrap")
        partial = Path(staging) / "rootfs.tar"
        _run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial), "."], what="tar")
        partial.rename(tarball)
    log.info("Debian root filesystem made in %.0f s: %s", time.monotonic() - started, tarball)
    return tarball


def _run(args: Sequence[str], *, what: str) -> None:
    result = subprocess.run(list(args), capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise DevServiceError(f"{what} failed (exit {result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")


def _build(name: str, context: Path) -> None:
    """``docker build`` a stand-in over the Debian root, with the host's network (apt-get reaches Debian's mirror)."""
    log.info("Building %s", name)
    args = ["build", "--network", "host", "--build-arg", f"DEBIAN_IMAGE={DEBIAN_IMAGE}", "-t", name, str(context)]
    result = build_log.run([docker_cli(), *args], image=name, timeout_s=3600)
    if result.returncode != 0:
        raise DevServiceError(f"building {name} failed:\n{(result.stdout + result.stderr)[-3000:]}")


def _context_with(directory: str, files: Mapping[str, Path]) -> Path:
    """A build context: the stand-in's directory plus host files (jars, binaries) copied in under their names."""
    context = Path(tempfile.mkdtemp(prefix=f"standin-{directory}-", dir=cache_dir() / "images"))
    shutil.copytree(STANDINS / directory, context, dirs_exist_ok=True)
    for name, source in files.items():
        if not source.exists():
            (context / name).mkdir()
        elif source.is_dir():
            shutil.copytree(source, context / name)
        else:
            shutil.copy2(source, context / name)
    return context


def _kafka_tools_jar(libs: Path) -> Path:
    """kafka-tools (BrokerApiVersionsCommand, the compose healthcheck's tool), which the broker jars lack."""
    jar = cache_dir() / "images" / f"kafka-tools-{KAFKA_VERSION}.jar"
    if not jar.exists():
        with tempfile.TemporaryDirectory(dir=jar.parent) as out:
            _run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact=org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
                  f"-DoutputDirectory={out}"], what="Maven (kafka-tools)")  # fmt: skip
            Path(out, jar.name).rename(jar)
    return jar


def build_standins() -> dict[str, str]:
    """Build every stand-in that is missing; returns the compose variables pointing at them."""
    from streamproc_dev import broker, s3

    if not image_exists(DEBIAN_IMAGE):
        tarball = debian_tarball()
        log.info("Importing %s", DEBIAN_IMAGE)
        result = _docker("import", str(tarball), DEBIAN_IMAGE)
        if result.returncode != 0:
            raise DevServiceError(f"docker import of the Debian root failed: {result.stderr.strip()}")
    for variable, name in VARIABLES.items():
        if variable == "DEBIAN_IMAGE" or image_exists(name):
            continue
        directory = name.split("/", 1)[1].split(":", 1)[0]
        files: dict[str, Path] = {}
        if directory == "kafka":
            libs = broker.fetch()
            files = {"libs": libs}
        elif directory == "minio-build":
            files = {"minio": s3.fetch()}
        elif directory == "python":
            files = {"ca": HOST_CA_DIR}
        context = _context_with(directory, files)
        try:
            if directory == "kafka":
                shutil.copy2(_kafka_tools_jar(libs), context / "libs")
            _build(name, context)
        finally:
            shutil.rmtree(context, ignore_errors=True)
    return dict(VARIABLES)
