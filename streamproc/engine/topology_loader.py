"""The user's topology by reference: ``--topology MODULE:FUNCTION``, imported wherever it runs.

A reference rather than a pickled object, because every Spark executor (and Airflow worker) must rebuild the same
``Topology`` from the same code: the reference is small, and an import error names the module to install.
"""

from __future__ import annotations

import importlib

from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology import Topology
from streamproc.errors import ConfigError


def load_topology(reference: str) -> tuple[Topology, TaskConfig]:
    """``MODULE:FUNCTION`` → the user's ``Topology`` (and ``TaskConfig`` when the factory returns a pair)."""
    module_name, _, function_name = reference.partition(":")
    if not module_name or not function_name:
        raise ConfigError(f"--topology {reference!r}: give MODULE:FUNCTION, e.g. myapp.topology:build")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"--topology {reference!r}: cannot import {module_name} ({exc}); it must be importable on the driver and "
            "on every executor (installed, or on PYTHONPATH)"
        ) from exc
    factory = getattr(module, function_name, None)
    if not callable(factory):
        raise ConfigError(f"--topology {reference!r}: {module_name} has no function {function_name}")
    built = factory()
    config = TaskConfig()
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[1], TaskConfig):
        built, config = built
    if not isinstance(built, Topology):
        raise ConfigError(
            f"--topology {reference!r} returned {type(built).__name__}, not a streamproc Topology "
            "(or a (Topology, TaskConfig) pair)"
        )
    return built, config
