"""Benchmarks reuse the test suite's real-service fixtures (broker, MinIO) and record results with the machine."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from tests.conftest import admin, kafka_broker, kafka_broker_handle, s3_server, unique  # noqa: F401 - fixtures

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, Any]:
    """What the figures were measured on: ratios from another machine are not comparable."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": model,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def record(name: str, result: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps({**result, "machine": machine()}, indent=2) + "\n")
