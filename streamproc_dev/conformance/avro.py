"""The oracle's Avro modes: Confluent's Avro example apps as real Kafka Streams apps, and Avro through a registry.

Confluent's Java serdes (``KafkaAvroSerializer``, ``GenericAvroSerde``, ``SpecificAvroSerde``) are not on Maven
Central; the oracle stands for them with Apicurio Registry's Kafka serde in Confluent's wire format
(``conformance/README.md``, "Schema Registry": the settings, and where it differs). :func:`run_avro_serde` sends
requests to ``avro-serde`` (one JVM for all): a datum in Avro's JSON encoding serialized (``{"bytes": hex}``), or
bytes deserialized (``{"value": ..., "class": ...}``), or ``{"error": line}`` / ``{"unsupported": reason}``.
:func:`run_avro_app` runs ``avro-app``: ``WikipediaFeedAvroLambdaExample`` (``wikipedia-feed``) or
``PageViewRegionLambdaExample`` (``pageview-region``) over what its input topics hold, to the committed ends, and
returns its result line (``restored``, ``store``) with the restore events under ``events``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streamproc_dev.conformance.oracle import EXAMPLE_SCHEMAS_DIR, JVM_OPTIONS, OracleError, ensure_oracle_jar

#: The example apps' schemas (Confluent's ``.avsc`` files as they are), beside their Python ports; the oracle
#: compiles them.
AVRO_SCHEMA_DIR = EXAMPLE_SCHEMAS_DIR
#: ``avro-app`` programs: the example's input topics and its output topic.
AVRO_APPS = {
    "wikipedia-feed": (("WikipediaFeed",), "WikipediaStats"),
    "pageview-region": (("PageViews", "UserProfiles"), "PageViewsByRegion"),
}
#: Where Apicurio Registry serves Confluent's API; the oracle wants the registry's base URL without it.
CCOMPAT_PATH = "/apis/ccompat/v7"
_SERDE_TIMEOUT_S = 300
_APP_TIMEOUT_S = 240


def registry_base(url: str) -> str:
    """The registry's root (``http://127.0.0.1:PORT``) from its Confluent API URL or its root."""
    return url.rstrip("/").removesuffix(CCOMPAT_PATH)


def avro_schema(name: str) -> str:
    """The text of an example schema (``wikifeed``, ``pageview``, ``userprofile``, ``pageviewregion``)."""
    return (AVRO_SCHEMA_DIR / f"{name}.avsc").read_text(encoding="utf-8")


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; install a JDK 17+ to run the oracle")
    return java


def run_avro_serde(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One answer per request, in order, from one ``avro-serde`` JVM (``AvroSerdeRunner``)."""
    jar = ensure_oracle_jar()
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    proc = subprocess.run(
        [_java(), *JVM_OPTIONS, "-jar", str(jar), "avro-serde"],
        input=body,
        capture_output=True,
        text=True,
        timeout=_SERDE_TIMEOUT_S,
        check=False,
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or len(answers) != len(requests):
        raise OracleError(
            f"oracle avro-serde: {len(answers)} answers to {len(requests)} requests (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    return answers


def run_avro_app(
    bootstrap: str,
    application_id: str,
    state_dir: Path,
    program: str,
    registry_url: str,
    user: str | None = None,
    password: str | None = None,
) -> dict[str, Any]:
    """``avro-app``'s result line (``restored``, ``store``; the restore events under ``events``); raises
    :class:`OracleError` when the app fails or prints no result."""
    if program not in AVRO_APPS:
        raise ValueError(f"no Avro example app {program!r} ({', '.join(AVRO_APPS)})")
    jar = ensure_oracle_jar()
    # The password goes by the environment ("-" on the command line), never on argv.
    auth = [user, "-"] if user else []
    env = {**os.environ, "REGISTRY_PASSWORD": password or ""}
    cmd = [_java(), *JVM_OPTIONS, "-jar", str(jar), "avro-app", bootstrap, application_id, str(state_dir), program,
           registry_base(registry_url), *auth]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_APP_TIMEOUT_S, check=False, env=env)  # noqa: S603
    except subprocess.TimeoutExpired as exc:
        raise OracleError(f"avro-app {program} did not finish in {_APP_TIMEOUT_S} s") from exc
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [e for e in events if e.get("event") == "result"]
    if proc.returncode != 0 or not results:
        raise OracleError(f"avro-app {program} failed (exit {proc.returncode}): {events}\n{proc.stderr[-6000:]}")
    result: dict[str, Any] = results[0]
    result["events"] = events
    return result
