"""A real Schema Registry for tests: Apicurio Registry, which serves Confluent's Schema Registry REST API.

Confluent's own registry is not reachable from here; Apicurio Registry is on Maven Central, and its REST API includes
Confluent's under ``/apis/ccompat/v7`` (what ``confluent_kafka.schema_registry.SchemaRegistryClient`` and Confluent's
Java serializers speak). ``fetch`` unpacks the app's ready-to-run build (``apicurio-registry-app-<version>-all.tar.gz``:
a Quarkus runner jar and its ``lib/``) into ``~/.cache/streamproc/apicurio-registry-<version>/`` with the Maven
project in ``tools/schema-registry``; a later ``start`` finds it there and never calls Maven again.

``start`` runs it on a free loopback port with its storage in an embedded H2 database file under the work directory
(no database server, no Kafka), so that a registry restarted from the same work directory keeps its schemas, ids and
URL, as the broker keeps its topics. The handle's ``address`` is the Confluent-compatible base URL,
``http://127.0.0.1:<port>/apis/ccompat/v7``. Settings that make it answer as Confluent's registry does:

- a new registry's global compatibility is ``BACKWARD``, Confluent's default (Apicurio's own is ``NONE``);
- a schema registered again under a subject in another layout (whitespace, key order) is the same version and id,
  as Confluent compares schemas in canonical form (``apicurio.ccompat.use-canonical-hash``);
- ids are content ids, one per distinct schema, shared by the subjects that register it (Confluent's schema ids);

``auth=True`` makes it require HTTP basic auth (Quarkus' embedded users): user ``USER`` and a random password per new
registry, kept in the handle like MinIO's secret key, so that a test can search logs for a string nothing else holds.
The password is in the registry's config file in the work directory (mode 0600), never on its command line.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle
from streamproc_dev.versions import APICURIO_REGISTRY_VERSION, cache_dir

log = logging.getLogger(__name__)

NAME = "schema-registry"
POM = Path(__file__).resolve().parents[1] / "tools" / "schema-registry" / "pom.xml"
#: Where Apicurio serves Confluent's Schema Registry API (its "ccompat" API, Confluent's v7 REST API).
CCOMPAT_PATH = "/apis/ccompat/v7"
#: The basic-auth user of a registry started with ``auth=True``.
USER = "streamproc"
#: A new registry's global compatibility level: Confluent's registry's default.
DEFAULT_COMPATIBILITY = "BACKWARD"
_COMPLETE = ".complete"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

# Quarkus reads config/application.properties from the process's working directory (the work directory).
_CONFIG = """\
quarkus.http.host=127.0.0.1
quarkus.http.port={port}
apicurio.storage.kind=sql
apicurio.storage.sql.kind=h2
apicurio.datasource.url=jdbc:h2:file:{database}
apicurio.datasource.jdbc.initial-size=1
apicurio.datasource.jdbc.min-size=1
apicurio.datasource.jdbc.max-size=10
apicurio.ccompat.use-canonical-hash=true
apicurio.ccompat.legacy-id-mode.enabled=false
"""

_BASIC_AUTH = """\
quarkus.http.auth.basic=true
quarkus.security.users.embedded.plain-text=true
quarkus.security.users.embedded.users.{user}={password}
quarkus.security.users.embedded.roles.{user}=sr-admin
"""


def install_dir(version: str = APICURIO_REGISTRY_VERSION) -> Path:
    return cache_dir() / f"apicurio-registry-{version}"


def runner_jar(version: str = APICURIO_REGISTRY_VERSION) -> Path:
    return install_dir(version) / f"apicurio-registry-app-{version}-runner.jar"


def fetch(version: str = APICURIO_REGISTRY_VERSION) -> Path:
    """Unpack Apicurio Registry's runner jar and ``lib/`` into the cache once; a complete cache is reused without
    calling Maven. Returns the directory holding the runner jar."""
    target = install_dir(version)
    if (target / _COMPLETE).exists():
        log.info("Apicurio Registry %s already cached in %s", version, target)
        return target
    if shutil.which("mvn") is None:
        raise DevServiceError("Maven ('mvn') is not on PATH; install it (Debian: apt-get install maven) and retry")
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
    staging = scratch / "registry"
    artifact = f"io.apicurio:apicurio-registry-app:{version}:tar.gz:all"
    log.info("Fetching Apicurio Registry %s (%s) from Maven Central into %s", version, artifact, target)
    cmd = [
        "mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:unpack", f"-Dapicurio.version={version}",
        f"-Dregistry.output={staging}", f"-Dregistry.markers={scratch / 'markers'}",
    ]  # fmt: skip
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603
        if result.returncode != 0:
            raise DevServiceError(
                f"Maven could not fetch Apicurio Registry {version} ({artifact}): {_maven_error(result)}"
            )
        jar = staging / runner_jar(version).name
        if not jar.is_file() or not (staging / "lib").is_dir():
            raise DevServiceError(f"{artifact} unpacked without {jar.name} and lib/; is it still Apicurio's build?")
        (staging / _COMPLETE).write_text(version, encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log.info("Cached Apicurio Registry %s (%d jars in lib/)", version, len(list((target / "lib").glob("*.jar"))))
    return target


def _maven_error(result: subprocess.CompletedProcess[str]) -> str:
    """Maven's first ``[ERROR]`` line (the failed goal and why), else the end of its output."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", f"{result.stdout}\n{result.stderr}")  # Maven's colour resets
    for line in output.splitlines():
        if line.startswith("[ERROR]") and line[len("[ERROR]") :].strip():
            return line[len("[ERROR]") :].strip()
    return output.strip()[-2000:] or f"mvn exited with {result.returncode}"


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    if not java:
        raise DevServiceError("Java is not on PATH; install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")
    return java


def _authorization(user: str | None, password: str | None) -> dict[str, str]:
    if not user:
        return {}
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}"}


def _call(url: str, *, user: str | None, password: str | None, method: str = "GET", body: object = None) -> object:
    """One request to the registry's Confluent API; its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Accept": _CONTENT_TYPE, **_authorization(user, password)}
    if data is not None:
        headers["Content-Type"] = _CONTENT_TYPE
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
        return json.loads(response.read() or b"null")


def _answers(url: str, user: str | None, password: str | None) -> bool:
    """The Confluent API lists subjects: HTTP up, storage initialised, credentials accepted."""
    return isinstance(_call(f"{url}/subjects", user=user, password=password), list)


def _password(previous: ServiceHandle | None) -> str:
    """Random for each new registry; a registry restarted from its work directory keeps the one it had."""
    if previous is not None and previous.extra.get("password"):
        return str(previous.extra["password"])
    return f"registry-{secrets.token_urlsafe(24)}"


def start(
    workdir: Path | None = None,
    *,
    version: str = APICURIO_REGISTRY_VERSION,
    auth: bool = False,
    heap: str = "384m",
    timeout_s: float = 120,
) -> ServiceHandle:
    """Start the registry in ``workdir`` (a new temp dir if None) and wait until its Confluent API answers.

    A work directory that holds a registry's data is restarted on the same port with its schemas (and, with
    ``auth``, its password); a new one gets a free port and the global compatibility ``BACKWARD``."""
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-registry-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(
            f"a Schema Registry is already running from {workdir} (pid {previous.pid}, {previous.address})"
        )
    java = _java()
    jar = fetch(version) / runner_jar(version).name
    database = workdir / "data" / "registry"
    fresh = not database.with_name("registry.mv.db").exists()
    if previous is not None and not fresh:
        port = int(previous.extra["port"])
        log.info("Restarting Schema Registry from %s on 127.0.0.1:%d", workdir, port)
    else:
        port = service_process.free_port()
    user, password = (USER, _password(previous)) if auth else (None, None)
    config = workdir / "config" / "application.properties"
    config.parent.mkdir(exist_ok=True)
    config.touch(mode=0o600)
    config.chmod(0o600)
    text = _CONFIG.format(port=port, database=database)
    if auth:
        text += _BASIC_AUTH.format(user=user, password=password)
    config.write_text(text, encoding="utf-8")
    (workdir / "tmp").mkdir(exist_ok=True)
    log_path = workdir / "registry.log"
    # C1 only and the serial collector: the JVM's start is most of the registry's, and the tests' load is light.
    args = [
        java, f"-Xmx{heap}", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        f"-Djava.io.tmpdir={workdir / 'tmp'}", "-jar", str(jar),
    ]  # fmt: skip
    pid = service_process.spawn(args, log_path=log_path, cwd=workdir)
    url = f"http://127.0.0.1:{port}{CCOMPAT_PATH}"
    log.info("Started Apicurio Registry %s (pid %d) on %s; log: %s", version, pid, url, log_path)
    service_process.wait_until(
        lambda: _answers(url, user, password), pid=pid, name=NAME, log_path=log_path, timeout_s=timeout_s
    )
    if fresh:
        try:
            _call(f"{url}/config", user=user, password=password, method="PUT",
                  body={"compatibility": DEFAULT_COMPATIBILITY})  # fmt: skip
        except (OSError, ValueError) as exc:
            service_process.stop_pid(pid, name=NAME)
            raise DevServiceError(f"Schema Registry at {url} refused the global compatibility setting: {exc}") from exc
    extra = {"port": str(port), "version": version, "auth": "basic" if auth else "none"}
    if auth:
        extra |= {"user": USER, "password": str(password)}
    handle = ServiceHandle(name=NAME, pid=pid, address=url, workdir=str(workdir), log_path=str(log_path), extra=extra)
    handle.save()
    os.chmod(workdir / service_process.STATE_FILE, 0o600)
    log.info("Schema Registry ready at %s", url)
    return handle


def client_config(handle: ServiceHandle) -> dict[str, str]:
    """``SchemaRegistryClient``'s configuration for this registry (``url``, and ``basic.auth.user.info`` with auth)."""
    config = {"url": handle.address}
    if handle.extra.get("user"):
        config["basic.auth.user.info"] = f"{handle.extra['user']}:{handle.extra['password']}"
    return config


def stop(workdir: Path) -> bool:
    """Stop the Schema Registry started from ``workdir`` by its recorded PID; False when none was running."""
    return service_process.stop_recorded(workdir, name=NAME)


def status(workdir: Path) -> str:
    return service_process.recorded_status(workdir, what="Schema Registry", running=_running)


def _running(handle: ServiceHandle) -> str:
    user, password = handle.extra.get("user"), handle.extra.get("password")
    answering = service_process.answers(lambda: _answers(handle.address, user, password))
    return f"running: pid {handle.pid}, url {handle.address}, {'answering' if answering else 'not answering'}"
