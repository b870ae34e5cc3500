"""Versions of the real services the project runs for tests and the demo, in one place.

``KAFKA_VERSION`` must equal ``kafka.version`` in ``tools/kafka/pom.xml`` and the Kafka Streams version of the
oracle in ``conformance/pom.xml`` (a unit test checks both), because the broker, the oracle and the semantics
streamproc reproduces are one release: Kafka Streams 4.2.
"""

from __future__ import annotations

from pathlib import Path

from streamproc.target import KAFKA_STREAMS_VERSION

#: The broker release: the Kafka Streams release streamproc reproduces (streamproc/target.py).
KAFKA_VERSION = KAFKA_STREAMS_VERSION

# MinIO is built from source with `go install`; MinIO publishes no semver tags for Go, so this is the module
# proxy's pseudo-version of the commit we tested against.
MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"

# Docker Compose, built with `go install` for `docker compose config` in the tests: the newest release whose go.mod
# asks for no newer Go than the 1.24 tools/prereq.sh guarantees (later v5 releases need Go 1.25/1.26), and whose
# go.mod has no replace or exclude directive (`go install MODULE@VERSION` refuses those).
COMPOSE_MODULE = "github.com/docker/compose/v5"
COMPOSE_VERSION = "v5.0.2"

# Apicurio Registry, the Schema Registry of the tests: it serves Confluent's Schema Registry API under
# /apis/ccompat/v7 (Confluent's own server and Karapace are not reachable from here). Maven Central's `all` tar.gz of
# io.apicurio:apicurio-registry-app is its ready-to-run build; 3.0.9 is the newest served one that runs on Java 17
# (3.1.7's app is not served; from 3.2 the app is compiled for Java 21). Equal to apicurio.version in
# tools/schema-registry/pom.xml (a unit test checks it).
APICURIO_REGISTRY_VERSION = "3.0.9"


def cache_dir() -> Path:
    """Where downloaded jars and built binaries live: outside the repo, shared by every clone and CI run."""
    import os

    root = os.environ.get("STREAMPROC_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "streamproc"
