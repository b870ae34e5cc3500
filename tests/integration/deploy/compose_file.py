"""docker-compose.yml and .env.example as data: the one definition the deployment test takes its settings from.

``load()`` reads the compose file and interpolates ``${VARIABLE}`` from ``.env.example`` as Compose does (only the
forms the file uses: ``${NAME}`` and ``$$``). :class:`LocalEquivalent` turns a service's environment into the same
variables for the services started on 127.0.0.1 by the no-Docker test: each ``service:port`` address becomes the
local service's address, each mount point the local directory, each SQLAlchemy URL and connection the local server's
(credentials included), so every variable name and every value that is not an address, a path or a credential is
exactly the compose file's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import PROJECT_ROOT

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
ENV_EXAMPLE = PROJECT_ROOT / ".env.example"
SCHEMA_FILE = Path(__file__).with_name("compose-spec.json")

#: boto3's variables for MinIO's key pair (the compose file's MINIO_ROOT_USER / MINIO_ROOT_PASSWORD)
_S3_KEY_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_REFERENCE = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)\})")
#: the hosts a container binds to "every interface" with; on the test machine everything binds loopback
_ANY_HOST = "0.0.0.0"  # noqa: S104 - a value compared with the compose file's, not bound here


def env_example() -> dict[str, str]:
    """``NAME=value`` lines of ``.env.example`` (comments and blank lines skipped)."""
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    return data


def references(node: Any) -> set[str]:
    """Every ``${NAME}`` the compose file uses."""
    if isinstance(node, str):
        return {m.group(2) for m in _REFERENCE.finditer(node) if m.group(2)}
    if isinstance(node, Mapping):
        return set().union(*(references(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(references(v) for v in node)) if node else set()
    return set()


def interpolate(node: Any, values: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _REFERENCE.sub(lambda m: "$" if m.group(1) == "$" else values[m.group(2)], node)
    if isinstance(node, Mapping):
        return {k: interpolate(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v, values) for v in node]
    return node


def load() -> dict[str, Any]:
    """The compose file with ``.env.example``'s values in place."""
    loaded: dict[str, Any] = interpolate(raw(), env_example())
    return loaded


def service(compose: Mapping[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"][name]
    return found


def environment(compose: Mapping[str, Any], name: str) -> dict[str, str]:
    env = service(compose, name).get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def exposed_port(compose: Mapping[str, Any], name: str) -> int:
    """The one port a service offers to the others (its ``expose``)."""
    [port] = service(compose, name)["expose"]
    return int(port)


def mount_points(compose: Mapping[str, Any], name: str) -> list[str]:
    """Where a service's volumes are mounted in its container."""
    return [str(v).split(":")[1] for v in service(compose, name).get("volumes") or []]


def option(command: list[str], flag: str) -> str:
    """The value after ``flag`` in a service's command."""
    return command[command.index(flag) + 1]


@dataclass
class LocalEquivalent:
    """What stands in for each compose service on the test machine.

    ``addresses``: compose service → ``127.0.0.1:PORT`` of the local server; ``paths``: mount point → local
    directory; ``databases``: database name in the compose file → the local database's SQLAlchemy URL;
    ``s3_keys``: the compose file's MinIO (user, password) → the local server's.
    """

    compose: Mapping[str, Any]
    addresses: dict[str, str]
    paths: dict[str, Path]
    databases: dict[str, str] = field(default_factory=dict)
    s3_keys: tuple[str, str] = ("", "")

    def address_of(self, text: str) -> str:
        for name, local in self.addresses.items():
            text = text.replace(f"{name}:{exposed_port(self.compose, name)}", local)
        for mount, local_path in sorted(self.paths.items(), key=lambda item: -len(item[0])):
            text = text.replace(mount, str(local_path))
        return text

    def value(self, name: str, value: str) -> str:
        """The local value of the compose variable ``name``."""
        if name in _S3_KEY_VARIABLES:
            return self.s3_keys[_S3_KEY_VARIABLES.index(name)]
        if value.startswith("postgresql+"):
            return self._database_url(name, value)
        if name.startswith("AIRFLOW_CONN_"):
            return json.dumps(self._connection(json.loads(value)))
        if value == _ANY_HOST or value in self.compose["services"]:
            return "127.0.0.1"  # a bind-all address or a service's host name
        return self.address_of(value)

    def _database_url(self, name: str, value: str) -> str:
        from sqlalchemy.engine import make_url

        url = make_url(value)
        port = exposed_port(self.compose, "postgres")
        assert (url.host, url.port) == ("postgres", port), f"{name} names {url.host}:{url.port}, not postgres:{port}"
        assert url.database in self.databases, f"{name}: database {url.database} has no local equivalent"
        local = make_url(self.databases[url.database])
        assert local.drivername == url.drivername, f"{name}: driver {url.drivername}, the test's {local.drivername}"
        return local.render_as_string(hide_password=False)

    def _connection(self, conn: dict[str, Any]) -> dict[str, Any]:
        if conn["conn_type"] == "aws":
            conn["login"], conn["password"] = self.s3_keys
        conn = json.loads(self.address_of(json.dumps(conn)))
        return conn

    def environment(self, name: str, *, drop: tuple[str, ...] = ()) -> dict[str, str]:
        """Service ``name``'s environment for the local services (without the variables in ``drop``)."""
        env = environment(self.compose, name)
        for path in (v for v in env.values() if v.startswith("/") and not v.startswith("/opt/airflow")):
            assert any(path.startswith(m) for m in mount_points(self.compose, name)), (
                f"{name}: {path} is not on a volume of the service"
            )
        return {k: self.value(k, v) for k, v in env.items() if k not in drop}
