"""Each command module imports on its own, first, in a fresh interpreter (as Airflow's task bodies and spark-submit
import them): the package registers every command on ``streamproc.cli.main``, whichever module is imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULES = [
    "streamproc.cli",
    "streamproc.cli.handoff",
    "streamproc.cli.ledger",
    "streamproc.cli.run",
    "streamproc.cli.process",
    "streamproc.cli.submit",
    "streamproc.handoff.preview",
]


@pytest.mark.parametrize("module", MODULES)
def test_the_module_imports_first(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
