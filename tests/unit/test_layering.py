"""DESIGN.md §2 and docs/architecture.md: dependencies point one way, down the floors of a run's walk.

The engine is the ground floor; above it the state formats, the DSL, the plan rules, the adapters to Kafka and to
object storage, then the steps in the order a run takes them (fetch, process on Spark, the ledger that records them,
the hand-off), and on top the command line and Airflow, which call the steps' Python API. A package may import the
shared value modules, its own modules and packages on floors below its own, nothing else: a step never imports the
command line, the engine nothing outside itself. Imports under ``if TYPE_CHECKING:`` are annotations only and not
counted; everything else is, wherever in a module it sits (the lazy imports inside functions too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "streamproc"

#: Modules of ``streamproc/`` every floor may import: errors, shared values, the optional-dependency check, the
#: worker processes (the fetch's and the process step's).
SHARED = ("errors", "intervals", "target", "extras", "worker_processes")

#: From the ground up; a name is a package (``streamproc/<name>/``) or a module (``streamproc/<name>.py``).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("engine",),
    ("state",),
    ("dsl", "testing", "schema_registry"),
    ("plan",),
    ("kafka", "storage"),
    ("fetch",),
    ("spark",),
    ("ledger",),
    ("handoff",),
    ("cli",),
    ("airflow",),
)

FLOOR_OF = {name: level for level, names in enumerate(FLOORS) for name in names}


def _unit(path: Path) -> str:
    """The floor name a file belongs to: its top-level package or module under ``streamproc/``."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """Line numbers of the statements inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _imports(path: Path) -> set[str]:
    """The modules a file imports at run time, ``from streamproc import x`` as ``streamproc.x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    annotations_only = _type_checking_blocks(tree)
    names: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in annotations_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "streamproc":
                names.update(f"streamproc.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _files(unit: str) -> list[Path]:
    package = PACKAGE / unit
    return sorted(package.rglob("*.py")) if package.is_dir() else [PACKAGE / f"{unit}.py"]


def test_every_unit_has_a_floor() -> None:
    """A new package must be placed on a floor (or among the shared modules) before it can be checked."""
    units = {_unit(path) for path in PACKAGE.rglob("*.py")} - {"__init__"}
    assert units - set(FLOOR_OF) - set(SHARED) == set()


@pytest.mark.parametrize("unit", [name for names in FLOORS for name in names])
def test_imports_point_down(unit: str) -> None:
    allowed = {name for name, level in FLOOR_OF.items() if level < FLOOR_OF[unit]} | set(SHARED) | {unit}
    offending = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _files(unit)
        for name in _imports(path)
        if name.startswith("streamproc.") and name.split(".")[1] not in allowed
    }
    assert not offending


@pytest.mark.parametrize("module", SHARED)
def test_shared_modules_import_only_each_other(module: str) -> None:
    offending = {
        name
        for name in _imports(PACKAGE / f"{module}.py")
        if name.startswith("streamproc.") and name.split(".")[1] not in SHARED
    }
    assert not offending


def test_only_the_command_line_imports_click() -> None:
    offending = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if _unit(path) != "cli" and any(name == "click" or name.startswith("click.") for name in _imports(path))
    }
    assert not offending
