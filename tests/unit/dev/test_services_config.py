"""The service launchers' rules that need no running service: versions agree, the cache is honoured."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from streamproc.errors import DevServiceError
from streamproc_dev import broker, s3, schema_registry
from streamproc_dev.service_process import ServiceHandle, free_port, is_alive, port_open
from streamproc_dev.versions import APICURIO_REGISTRY_VERSION, KAFKA_VERSION, MINIO_VERSION
from tests.conftest import PROJECT_ROOT


def test_broker_pom_names_the_targeted_kafka_version() -> None:
    pom = (PROJECT_ROOT / "tools" / "kafka" / "pom.xml").read_text(encoding="utf-8")
    assert re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom).group(1) == KAFKA_VERSION  # type: ignore[union-attr]
    assert KAFKA_VERSION.startswith("4.2.")


def test_cluster_id_is_a_kafka_uuid_text_that_never_looks_like_an_option() -> None:
    ids = {broker._cluster_id() for _ in range(2_000)}  # about 1 in 64 raw draws starts with "-"
    assert len(ids) == 2_000
    for cluster_id in ids:
        assert len(cluster_id) == 22
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
        assert not cluster_id.startswith("-")


def test_cached_jars_are_reused_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")  # no mvn reachable: a Maven call would fail
    libs = tmp_path / f"kafka-{KAFKA_VERSION}" / "libs"
    libs.mkdir(parents=True)
    (libs / ".complete").write_text(KAFKA_VERSION)

    assert broker.fetch() == libs


def test_incomplete_cache_without_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    (tmp_path / f"kafka-{KAFKA_VERSION}" / "libs").mkdir(parents=True)  # interrupted earlier fetch: no marker

    with pytest.raises(DevServiceError, match="Maven .* is not on PATH"):
        broker.fetch()


def test_registry_pom_names_the_pinned_apicurio_version() -> None:
    pom = (PROJECT_ROOT / "tools" / "schema-registry" / "pom.xml").read_text(encoding="utf-8")
    version = re.search(r"<apicurio\.version>([^<]+)</apicurio\.version>", pom).group(1)  # type: ignore[union-attr]
    assert version == APICURIO_REGISTRY_VERSION
    assert schema_registry.POM == PROJECT_ROOT / "tools" / "schema-registry" / "pom.xml"


def test_cached_registry_is_reused_without_maven_and_an_incomplete_one_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")  # no mvn reachable: a Maven call would fail
    install = tmp_path / f"apicurio-registry-{APICURIO_REGISTRY_VERSION}"
    install.mkdir()  # an interrupted earlier fetch: no marker
    with pytest.raises(DevServiceError, match="Maven .* is not on PATH"):
        schema_registry.fetch()

    (install / ".complete").write_text(APICURIO_REGISTRY_VERSION)
    assert schema_registry.fetch() == install
    assert schema_registry.runner_jar() == install / f"apicurio-registry-app-{APICURIO_REGISTRY_VERSION}-runner.jar"


def test_a_failed_registry_fetch_is_mavens_first_error_line() -> None:
    import subprocess

    output = (
        "\x1b[0m[ERROR] Failed to execute goal ...:unpack (default-cli): Unable to find artifact. x was not found\n"
        "[ERROR] \n[ERROR] Try downloading the file manually from the project website.\n"
    )
    failed = subprocess.CompletedProcess(["mvn"], 1, stdout=output, stderr="")
    assert schema_registry._maven_error(failed) == (
        "Failed to execute goal ...:unpack (default-cli): Unable to find artifact. x was not found"
    )
    assert schema_registry._maven_error(subprocess.CompletedProcess(["mvn"], 3, "", "")) == "mvn exited with 3"


def test_registry_client_config_carries_the_credentials_only_with_auth(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/apis/ccompat/v7"
    plain = ServiceHandle("schema-registry", 1, url, str(tmp_path), str(tmp_path / "l"), {"auth": "none"})
    assert schema_registry.client_config(plain) == {"url": url}
    secured = ServiceHandle(
        "schema-registry", 1, url, str(tmp_path), str(tmp_path / "l"), {"auth": "basic", "user": "u", "password": "p"}
    )
    assert schema_registry.client_config(secured) == {"url": url, "basic.auth.user.info": "u:p"}


def test_cached_minio_is_reused_without_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMPROC_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("STREAMPROC_GO", raising=False)  # `make test` sets it (tools/prereq.sh)
    binary = tmp_path / f"minio-{MINIO_VERSION}" / "minio"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")

    assert s3.fetch() == binary
    binary.unlink()
    with pytest.raises(DevServiceError, match="Go .* is not on PATH and STREAMPROC_GO is not set"):
        s3.fetch()
    monkeypatch.setenv("STREAMPROC_GO", str(tmp_path / "no-such-go"))
    with pytest.raises(DevServiceError, match="STREAMPROC_GO=.*no-such-go is not an executable"):
        s3.fetch()


def test_service_handle_round_trips_through_its_state_file(tmp_path: Path) -> None:
    handle = ServiceHandle("kafka-broker", 123, "127.0.0.1:9", str(tmp_path), str(tmp_path / "l"), {"port": "9"})
    handle.save()
    assert ServiceHandle.load(tmp_path) == handle
    assert ServiceHandle.load(tmp_path / "other") is None


def test_free_port_is_free_and_our_own_pid_is_alive() -> None:
    import os

    assert not port_open("127.0.0.1", free_port())
    assert is_alive(os.getpid())
