"""DESIGN.md §2: dependencies point one way. The engine imports none of state/kafka/storage/plan; plan never
imports kafka (the live planner in ``kafka/`` reads the cluster and calls ``plan``, not the other way)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "streamproc"

FORBIDDEN = {
    "engine": ("streamproc.state", "streamproc.kafka", "streamproc.storage", "streamproc.plan"),
    "state": ("streamproc.kafka", "streamproc.storage", "streamproc.plan"),
    "plan": ("streamproc.kafka", "streamproc.storage"),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_one_way(package: str) -> None:
    offending = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / package).glob("*.py"))
        for name in _imports(path)
        if name.startswith(FORBIDDEN[package])
    }
    assert not offending
