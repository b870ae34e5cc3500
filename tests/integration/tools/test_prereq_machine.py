"""``tools/prereq.sh`` on this machine: every prerequisite is there, and what it hands the Makefile works.

Also the one install path that needs no root and leaves the machine as it was: with an old Go first on PATH, Go
1.24 is downloaded for real from the Go module proxy into a temporary cache and builds a program.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "tools" / "prereq.sh"
#: docker: the compose deployment test's engine (dockerd) and debootstrap, checked by default since `make test` runs it
TOOLS = ("python", "java", "mvn", "go", "cc", "postgresql", "chromium", "docker")


#: What `make` exports from `.prereq.env`: the script would take these over PATH, so a test of what it finds on
#: PATH runs without them (as on a machine where make has not run yet).
FOUND_BEFORE = ("STREAMPROC_GO", "STREAMPROC_PG_BINDIR", "STREAMPROC_CHROMIUM")


def _run(env_file: Path, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if k not in FOUND_BEFORE}
    return subprocess.run(  # noqa: S603
        ["sh", str(SCRIPT), str(env_file)],
        env={**inherited, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def _exported(env_file: Path) -> dict[str, str]:
    names = ("JAVA_HOME", "STREAMPROC_GO", "STREAMPROC_PG_BINDIR", "STREAMPROC_CHROMIUM")
    script = f". {env_file} && " + " && ".join(f'printf "%s=%s\\n" {n} "${n}"' for n in names)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout  # noqa: S603,S607
    return dict(line.split("=", 1) for line in out.splitlines())


def _version(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)  # noqa: S603
    return result.stdout + result.stderr


def test_this_machine_has_every_prerequisite_and_the_paths_work(tmp_path: Path) -> None:
    env_file = tmp_path / "prereq.env"
    result = _run(env_file)

    assert result.returncode == 0, result.stdout + result.stderr
    found = re.findall(r"^prereq: (\w+) +(\S+) (\S+)", result.stdout, re.MULTILINE)
    assert [tool for tool, _, _ in found] == list(TOOLS), result.stdout
    exported = _exported(env_file)

    java_version = _version([f"{exported['JAVA_HOME']}/bin/java", "-version"])
    major = re.search(r'version "(\d+)', java_version)
    assert major and int(major[1]) >= 17, java_version
    assert _version([f"{exported['JAVA_HOME']}/bin/javac", "-version"]).startswith("javac ")
    go = _version([exported["STREAMPROC_GO"], "version"])
    assert re.match(r"go version go1\.(2[4-9]|[3-9]\d)", go), go
    for program in ("initdb", "pg_ctl", "postgres"):
        assert "(PostgreSQL)" in _version([f"{exported['STREAMPROC_PG_BINDIR']}/{program}", "--version"])
    assert re.search(r"\d+\.\d+\.\d+", _version([exported["STREAMPROC_CHROMIUM"], "--version"]))
    for tool, version, path in found:
        assert Path(path).exists(), (tool, path)
        assert version[0].isdigit(), (tool, version)


def test_an_old_go_makes_it_download_go_1_24_from_the_module_proxy(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "go"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "go version go1.21.13 linux/amd64"\n', encoding="utf-8")
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    env_file = tmp_path / "prereq.env"

    result = _run(env_file, PATH=f"{fake.parent}:{os.environ['PATH']}", STREAMPROC_CACHE=str(cache))

    assert result.returncode == 0, result.stdout + result.stderr
    go = cache / "go1.24.13.linux-amd64" / "bin" / "go"
    assert f"prereq: go         1.24.13 {go} (installed)\n" in result.stdout
    assert _exported(env_file)["STREAMPROC_GO"] == str(go)

    program = tmp_path / "hello" / "main.go"
    program.parent.mkdir()
    program.write_text('package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("built by", "go1.24") }\n')
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOCACHE": str(tmp_path / "gocache")}
    built = subprocess.run(  # noqa: S603
        [str(go), "run", "main.go"], cwd=program.parent, env=env, capture_output=True, text=True, timeout=300
    )
    assert built.stdout == "built by go1.24\n", built.stderr

    again = _run(env_file, PATH=f"{fake.parent}:{os.environ['PATH']}", STREAMPROC_CACHE=str(cache))
    assert f"prereq: go         1.24.13 {go}\n" in again.stdout  # the cached toolchain, no second download
    assert "downloading" not in again.stdout


def test_make_prereq_passes_here_and_hands_the_paths_to_the_recipes(tmp_path: Path) -> None:
    env_file = tmp_path / "prereq.env"
    result = subprocess.run(  # noqa: S603
        ["make", "--no-print-directory", "-C", str(PROJECT_ROOT), "prereq", f"PREREQ_ENV={env_file}"],  # noqa: S607
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(re.findall(r"^prereq: ", result.stdout, re.MULTILINE)) == len(TOOLS)
    assert set(_exported(env_file)) == {"JAVA_HOME", "STREAMPROC_GO", "STREAMPROC_PG_BINDIR", "STREAMPROC_CHROMIUM"}
    assert all(_exported(env_file).values())
