"""The user's topology by reference: ``--topology MODULE:FUNCTION``, imported wherever it runs.

A reference rather than a pickled object, because every Spark executor (and Airflow worker) must rebuild the same
``Topology`` from the same code: the reference is small, and an import error names the module to install. A factory
with a parameter gets the application's settings (``--streams-config``, ``--streams-setting``: the ``Properties`` a
Java application builds its topology and serdes with, ``schema.registry.url`` among them), the same on the driver
and on every executor, which get them from the run, not from a file.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping

from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology import Topology
from streamproc.errors import ConfigError


def load_topology(reference: str, settings: Mapping[str, str] | None = None) -> tuple[Topology, TaskConfig]:
    """``MODULE:FUNCTION`` → the user's ``Topology`` (and ``TaskConfig`` when the factory returns a pair); a factory
    that takes a parameter is called with a copy of ``settings`` (empty when none are given)."""
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
    built = factory(dict(settings or {})) if _takes_settings(factory) else factory()
    config = TaskConfig()
    if isinstance(built, tuple) and len(built) == 2 and isinstance(built[1], TaskConfig):
        built, config = built
    if not isinstance(built, Topology):
        raise ConfigError(
            f"--topology {reference!r} returned {type(built).__name__}, not a streamproc Topology "
            "(or a (Topology, TaskConfig) pair)"
        )
    return built, config


def _takes_settings(factory: Callable[..., object]) -> bool:
    """The factory has a positional parameter for the settings (``def build(settings)``)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a callable whose signature cannot be read: called as before, bare
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional for p in parameters)
