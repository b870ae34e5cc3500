"""The Python DSL builds the topology the Java DSL builds: ``describe()`` byte for byte Kafka Streams 4.2.2's.

Each program of ``streamproc_dev/conformance/dsl_programs.py`` has a Java twin (``DslPrograms.java``, and the DSL
programs of ``GoldenTopologies.java``) whose ``describe()`` text the oracle wrote to ``conformance/dsl/<name>.txt``
(``conformance/golden/``); the refused programs' ``TopologyException`` messages are in ``<name>.error.txt``. The
texts are checked in, so the comparisons need no Java; ``test_dsl_texts_are_current`` rebuilds them with the
oracle and fails when they drifted.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from streamproc.errors import TopologyError
from streamproc_dev.conformance.dsl_programs import ERRORS, GOLDEN, PROGRAMS
from streamproc_dev.conformance.oracle import CONFORMANCE_DIR, ensure_oracle_jar

DSL_DIR = CONFORMANCE_DIR / "dsl"
GOLDEN_DIR = CONFORMANCE_DIR / "golden"


def test_every_java_program_has_a_python_twin() -> None:
    assert sorted(p.name.removesuffix(".txt") for p in DSL_DIR.glob("*.txt") if not p.name.endswith(".error.txt")) == (
        sorted(PROGRAMS)
    )
    assert sorted(p.name.removesuffix(".error.txt") for p in DSL_DIR.glob("*.error.txt")) == sorted(ERRORS)
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_describe_is_kafkas(name: str) -> None:
    assert str(PROGRAMS[name]().describe()) == (DSL_DIR / f"{name}.txt").read_text("utf-8")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_dsl_programs_describe_as_kafka(name: str) -> None:
    assert str(GOLDEN[name]().describe()) == (GOLDEN_DIR / f"{name}.txt").read_text("utf-8")


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_programs_fail_with_kafkas_message(name: str) -> None:
    expected = (DSL_DIR / f"{name}.error.txt").read_text("utf-8").strip()
    with pytest.raises(TopologyError) as info:
        ERRORS[name]()
    assert str(info.value) == expected


def test_dsl_texts_are_current(tmp_path: Path) -> None:
    """Regenerating with Kafka Streams 4.2.2 gives the checked-in texts byte for byte."""
    assert shutil.which("java") is not None, "java is not on PATH; install a JDK 17"
    jar = ensure_oracle_jar()
    proc = subprocess.run(
        ["java", "-jar", str(jar), "dsl", str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in DSL_DIR.iterdir())
    for path in sorted(DSL_DIR.iterdir()):
        assert (tmp_path / path.name).read_text("utf-8") == path.read_text("utf-8"), path.name
