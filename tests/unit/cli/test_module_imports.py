"""Each command module imports on its own, first, in a fresh interpreter (as Airflow's task bodies and spark-submit
import them): the modules register themselves on ``streamproc.cli.main`` and must not depend on import order."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = [
    "streamproc.cli",
    "streamproc.handoff.cli",
    "streamproc.ledger.cli",
    "streamproc.run_cli",
    "streamproc.spark.cli",
    "streamproc.spark.submit",
    "streamproc.handoff.preview",
]


@pytest.mark.parametrize("module", MODULES)
def test_the_module_imports_first(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
