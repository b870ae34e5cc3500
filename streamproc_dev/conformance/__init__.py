"""Run a conformance scenario (``../shared/spec/scenarios/``) through streamproc.

Each scenario kind has a runner module exposing ``run_scenario(scenario: dict) -> dict`` that returns the actual
result in the shape of the scenario's ``expected`` (same keys, same types), or ``{"error": {...}}``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from streamproc.errors import ConfigError

_RUNNERS = {
    "ordering": "streamproc_dev.conformance.ordering",
    "topology": "streamproc_dev.conformance.topology",
    "planning": "streamproc_dev.conformance.planning",
    "state": "streamproc_dev.conformance.state",
}


def load_scenario(path: Path) -> dict[str, Any]:
    """Read a scenario file; a file that is not a JSON object with a known ``kind`` is a ``ConfigError``."""
    try:
        scenario = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read scenario {path}: {exc}") from exc
    if not isinstance(scenario, dict) or scenario.get("kind") not in _RUNNERS:
        raise ConfigError(f"scenario {path}: 'kind' must be one of {sorted(_RUNNERS)}")
    return scenario


def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """Dispatch a loaded scenario to the runner of its kind."""
    module = importlib.import_module(_RUNNERS[scenario["kind"]])
    result: dict[str, Any] = module.run_scenario(scenario)
    return result
