"""``tools/prereq.sh``: version parsing, the line per tool, the exact command and the stop before anything else runs.

The script runs with a PATH that holds only the utilities it uses (sh, sed, coreutils) plus tools that print given
versions: printing an old version is the one way to cause "old Java" on a machine that has Java 17, and leaving a
tool out of PATH is the one way to cause "missing" without uninstalling it. Fixed places (/usr/lib/jvm,
/usr/lib/postgresql) are looked up under ``STREAMPROC_PREREQ_SYSROOT``, a temporary directory here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "tools" / "prereq.sh"
UTILITIES = ("sh", "sed", "head", "tail", "id", "uname", "readlink", "mkdir", "mv", "rm")
TOOLS = ("python", "java", "mvn", "go", "cc", "postgresql", "chromium")


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # never write through a symlink to a real program
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


@dataclass
class Machine:
    """A PATH and a system root for one run of the script; by default every tool is present and new enough."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def tool(self, name: str, output: str, *, stderr: bool = False, where: Path | None = None) -> Path:
        """A program ``name`` that prints ``output`` (on stderr where the real one does) whatever its arguments."""
        redirect = " >&2" if stderr else ""
        quoted = output.replace("'", "'\\''")
        return _executable((where or self.bin) / name, f"printf '%s\\n' '{quoted}'{redirect}\n")

    def remove(self, name: str) -> None:
        (self.bin / name).unlink()

    def java(self, version: str, *, javac: bool = True) -> None:
        self.tool("java", f'openjdk version "{version}" 2025-04-15\nOpenJDK Runtime Environment', stderr=True)
        if javac:
            self.tool("javac", f"javac {version}")
        elif (self.bin / "javac").exists():
            self.remove("javac")

    def postgresql(self, version: str, major: str = "15") -> Path:
        bindir = self.root / "sysroot" / "usr" / "lib" / "postgresql" / major / "bin"
        self.tool("initdb", f"initdb (PostgreSQL) {version} (Debian {version}-0+deb12u1)", where=bindir)
        for name in ("pg_ctl", "postgres"):
            self.tool(name, f"{name} (PostgreSQL) {version}", where=bindir)
        return bindir

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603
            ["sh", str(self.root / "tools" / "prereq.sh"), *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )


def as_root(machine: Machine) -> None:
    """The script's ``id -u`` answers 0: running as root is a condition another user cannot cause (CI is root,
    a developer usually is not), and the script's only use of it is choosing to install with apt-get."""
    machine.tool("id", "0")


def lines(output: str) -> dict[str, str]:
    """``prereq: <tool> <rest>`` lines by tool."""
    return {m[1]: m[2] for m in re.finditer(r"^prereq: (\w+) +(.*)$", output, re.MULTILINE) if m[1] in TOOLS}


@pytest.fixture
def machine() -> Iterator[Machine]:
    # world-readable, so that the non-root test can run the same files as another user
    root = Path(tempfile.mkdtemp(prefix="prereq-"))
    root.chmod(0o755)
    try:
        (root / "tools").mkdir()
        for name in ("prereq.sh", "go_toolchain.py"):
            shutil.copy(PROJECT_ROOT / "tools" / name, root / "tools" / name)
        (root / "bin").mkdir()
        for name in (*UTILITIES, "apt-get"):  # apt-get: never run with STREAMPROC_PREREQ_INSTALL=never
            real = shutil.which(name)
            assert real, name
            (root / "bin" / name).symlink_to(real)
        # the interpreter running the tests is a real Python 3.11 with venv and headers
        (root / "bin" / "python3.11").symlink_to(os.path.realpath(sys._base_executable))  # type: ignore[attr-defined]
        m = Machine(
            root,
            env={
                "PATH": str(root / "bin"),
                "HOME": str(root / "home"),
                "STREAMPROC_CACHE": str(root / "cache"),
                "STREAMPROC_PREREQ_SYSROOT": str(root / "sysroot"),
                "STREAMPROC_PREREQ_INSTALL": "never",
            },
        )
        m.java("17.0.15")
        m.tool("mvn", "\x1b[1mApache Maven 3.8.7\x1b[m\nMaven home: /usr/share/maven")
        m.tool("go", "go version go1.26.8 linux/amd64")
        m.tool("cc", "cc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022")
        m.postgresql("15.18")
        m.tool("chromium", "Chromium 156.0.8078.79 built on Debian GNU/Linux 12 (bookworm)")
        yield m
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_complete_machine_passes_with_one_line_per_tool_and_an_env_file(machine: Machine) -> None:
    env_file = machine.root / "prereq.env"
    result = machine.run(str(env_file))

    assert result.returncode == 0, result.stdout + result.stderr
    found = lines(result.stdout)
    assert list(found) == list(TOOLS)
    assert found["java"] == f"17.0.15 {machine.bin / 'java'}"
    assert found["mvn"] == f"3.8.7 {machine.bin / 'mvn'}"
    assert found["go"] == f"1.26.8 {machine.bin / 'go'}"
    assert found["cc"] == f"12.2.0 {machine.bin / 'cc'}"
    bindir = machine.root / "sysroot/usr/lib/postgresql/15/bin"
    assert found["postgresql"] == f"15.18 {bindir}"
    assert found["chromium"] == f"156.0.8078.79 {machine.bin / 'chromium'}"
    assert found["python"].startswith("3.11.")
    assert "MISSING" not in result.stdout

    exported = subprocess.run(  # noqa: S603
        [
            "sh",
            "-c",
            f'. {env_file} && printf \'%s\\n\' "$JAVA_HOME" "$STREAMPROC_GO" "$STREAMPROC_PG_BINDIR" '
            '"$STREAMPROC_CHROMIUM" "$PATH"',
        ],  # fmt: skip
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert exported == [
        str(machine.root),  # java's directory is bin/, so JAVA_HOME is its parent
        str(machine.bin / "go"),
        str(bindir),
        str(machine.bin / "chromium"),
        f"{machine.root}/bin:/usr/bin:/bin",
    ]


@pytest.mark.parametrize("version", ["17", "17.0.15", "21-ea", "25.0.1"])
def test_java_17_and_newer_is_accepted(machine: Machine, version: str) -> None:
    machine.java(version)
    result = machine.run()
    assert result.returncode == 0, result.stdout
    assert lines(result.stdout)["java"] == f"{version} {machine.bin / 'java'}"


@pytest.mark.parametrize("version", ["11.0.22", "1.8.0_292", "16.0.2"])
def test_old_java_stops_with_the_debian_command(machine: Machine, version: str) -> None:
    machine.java(version)
    result = machine.run()
    assert result.returncode == 1
    assert lines(result.stdout)["java"] == f"MISSING: need a JDK >= 17; {machine.bin / 'java'} is {version}"
    assert "  apt-get update && apt-get install -y openjdk-17-jdk-headless\n" in result.stdout


def test_a_jre_without_javac_is_not_enough(machine: Machine) -> None:
    machine.java("17.0.15", javac=False)
    result = machine.run()
    assert result.returncode == 1
    assert "a JRE without javac; Maven needs a JDK" in lines(result.stdout)["java"]


def test_a_newer_jdk_in_usr_lib_jvm_is_used_when_path_has_an_old_one(machine: Machine) -> None:
    machine.java("11.0.22")
    jdk = machine.root / "sysroot/usr/lib/jvm/java-17-openjdk-amd64"
    machine.tool("java", 'openjdk version "17.0.15" 2025-04-15', stderr=True, where=jdk / "bin")
    machine.tool("javac", "javac 17.0.15", where=jdk / "bin")
    env_file = machine.root / "prereq.env"

    result = machine.run(str(env_file))

    assert result.returncode == 0, result.stdout
    assert lines(result.stdout)["java"] == f"17.0.15 {jdk / 'bin/java'}"
    assert f"export JAVA_HOME='{jdk}'" in env_file.read_text(encoding="utf-8")


@pytest.mark.parametrize(("version", "accepted"), [("1.24", True), ("1.24.0", True), ("1.25.1", True),
                                                   ("1.23.12", False), ("1.19.8", False)])  # fmt: skip
def test_go_version_boundary(machine: Machine, version: str, accepted: bool) -> None:
    machine.tool("go", f"go version go{version} linux/amd64")
    result = machine.run()
    line = lines(result.stdout)["go"]
    if accepted:
        assert result.returncode == 0, result.stdout
        assert line == f"{version} {machine.bin / 'go'}"
    else:
        assert result.returncode == 1
        assert (
            line == f"MISSING: need Go >= 1.24 (builds MinIO, the S3 test server); {machine.bin / 'go'} is go{version}"
        )
        # Go never comes from apt-get (Debian's is 1.19): the download from the module proxy is the way
        assert "apt-get" not in result.stdout
        assert "unset STREAMPROC_PREREQ_INSTALL and run make again: it downloads Go 1.24.13" in result.stdout


def test_a_cached_go_toolchain_is_used_when_path_has_an_old_go(machine: Machine) -> None:
    machine.tool("go", "go version go1.22.5 linux/amd64")
    cached = machine.root / "cache" / "go1.24.13.linux-amd64" / "bin"
    machine.tool("go", "go version go1.24.13 linux/amd64", where=cached)
    result = machine.run()
    assert result.returncode == 0, result.stdout
    assert lines(result.stdout)["go"] == f"1.24.13 {cached / 'go'}"


@pytest.mark.parametrize(("version", "accepted"), [("3.6.3", True), ("3.9.9", True), ("3.6.2", False),
                                                   ("3.3.9", False)])  # fmt: skip
def test_maven_version_boundary(machine: Machine, version: str, accepted: bool) -> None:
    machine.tool("mvn", f"Apache Maven {version} (hash)")
    result = machine.run()
    assert (result.returncode == 0) is accepted, result.stdout
    expected = (
        f"{version} {machine.bin / 'mvn'}"
        if accepted
        else f"MISSING: {machine.bin / 'mvn'} is Maven {version}; need >= 3.6.3"
    )
    assert lines(result.stdout)["mvn"] == expected


def test_the_newest_postgresql_is_chosen_and_an_old_one_refused(machine: Machine) -> None:
    newer = machine.postgresql("16.4", major="16")
    result = machine.run()
    assert lines(result.stdout)["postgresql"] == f"16.4 {newer}"

    shutil.rmtree(machine.root / "sysroot/usr/lib/postgresql")
    old = machine.postgresql("12.19", major="12")
    result = machine.run()
    assert result.returncode == 1
    assert lines(result.stdout)["postgresql"] == f"MISSING: {old} is PostgreSQL 12.19; need >= 13"


def test_explicit_locations_win_and_a_wrong_one_is_reported(machine: Machine) -> None:
    elsewhere = machine.postgresql("17.2", major="17")
    result = machine.run(STREAMPROC_PG_BINDIR=str(elsewhere))
    assert lines(result.stdout)["postgresql"] == f"17.2 {elsewhere}"

    result = machine.run(STREAMPROC_PG_BINDIR="/nonexistent", STREAMPROC_CHROMIUM="/nonexistent/chrome")
    assert result.returncode == 1
    found = lines(result.stdout)
    assert found["postgresql"] == (
        "MISSING: no PostgreSQL server binaries (initdb, pg_ctl, postgres) in STREAMPROC_PG_BINDIR=/nonexistent"
    )
    assert found["chromium"].startswith("MISSING: no Chromium at STREAMPROC_CHROMIUM=/nonexistent/chrome")


def test_python_other_than_3_11_is_refused(machine: Machine) -> None:
    python = machine.tool("python3.10", "3.10.14\nyes")
    result = machine.run(PYTHON=str(python))
    assert result.returncode == 1
    assert (
        lines(result.stdout)["python"]
        == f"MISSING: {python} is Python 3.10.14; streamproc needs 3.11 (set PYTHON=/path/to/python3.11)"
    )


def test_missing_tools_are_listed_together_with_one_command(machine: Machine) -> None:
    for name in ("java", "javac", "mvn", "chromium", "cc"):
        machine.remove(name)
    shutil.rmtree(machine.root / "sysroot")
    env_file = machine.root / "prereq.env"

    result = machine.run(str(env_file))

    assert result.returncode == 1
    found = lines(result.stdout)
    assert [tool for tool, line in found.items() if line.startswith("MISSING")] == [
        "java", "mvn", "cc", "postgresql", "chromium"]  # fmt: skip
    assert found["go"] == f"1.26.8 {machine.bin / 'go'}"
    assert result.stdout.endswith(
        "prereq: stopped before anything else ran; install what is missing and run make again:\n"
        "  apt-get update && apt-get install -y openjdk-17-jdk-headless maven gcc python3.11-dev postgresql "
        "chromium chromium-driver\n"
    )
    assert not env_file.exists()


def test_without_apt_get_the_packages_are_named_for_another_package_manager(machine: Machine) -> None:
    machine.remove("apt-get")
    machine.remove("chromium")
    result = machine.run()
    assert result.returncode == 1
    assert result.stdout.endswith(
        "  install with your system's package manager what provides: chromium "
        "(Debian names: chromium chromium-driver)\n"
    )


def test_a_non_root_user_is_told_to_use_sudo(machine: Machine) -> None:
    machine.remove("chromium")
    machine.env["STREAMPROC_PREREQ_INSTALL"] = "auto"  # installing needs root: as another user it only prints
    if os.geteuid() == 0:
        env = [f"{k}={v}" for k, v in machine.env.items()]
        cmd = ["runuser", "-u", "nobody", "--", "env", "-i", *env, "sh", str(machine.root / "tools/prereq.sh")]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)  # noqa: S603
    else:
        result = machine.run()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "prereq: installing" not in result.stdout
    # (as nobody, the test interpreter under /root may be unreadable too: then python3.11's packages lead the list)
    assert re.search(
        r"^  sudo apt-get update && sudo apt-get install -y .*chromium chromium-driver$", result.stdout, re.M
    )


@pytest.fixture
def apt_get(machine: Machine) -> Path:
    """An ``apt-get`` that records each call (arguments and DEBIAN_FRONTEND) and, on install, puts Java 17 and
    Maven on PATH: what the real one does on a fresh Debian machine, which cannot be reproduced on this one without
    uninstalling them."""
    calls = machine.root / "apt-calls"
    java = 'printf "%s\\n" "openjdk version \\"17.0.21\\" 2025-10-21" >&2'
    _executable(
        machine.bin / "apt-get",
        f'echo "$DEBIAN_FRONTEND $*" >> {calls}\n'
        f'case " $* " in *" install "*)\n'
        f"  printf '#!/bin/sh\\n%s\\n' '{java}' > {machine.bin}/java\n"
        f"  printf '#!/bin/sh\\necho javac 17.0.21\\n' > {machine.bin}/javac\n"
        f"  printf '#!/bin/sh\\necho Apache Maven 3.8.7\\n' > {machine.bin}/mvn\n"
        f"  {shutil.which('chmod')} +x {machine.bin}/java {machine.bin}/javac {machine.bin}/mvn ;;\n"
        f"esac\n",
    )
    return calls


def test_as_root_missing_packages_are_installed_with_one_update_and_one_install(
    machine: Machine, apt_get: Path
) -> None:
    as_root(machine)
    for name in ("java", "javac", "mvn"):
        machine.remove(name)

    result = machine.run(STREAMPROC_PREREQ_INSTALL="auto")

    assert result.returncode == 0, result.stdout + result.stderr
    assert apt_get.read_text(encoding="utf-8").splitlines() == [
        "noninteractive -qq -o DPkg::Lock::Timeout=600 update",
        "noninteractive -qq -y -o DPkg::Lock::Timeout=600 install openjdk-17-jdk-headless maven",
    ]
    assert (
        f"prereq: installing openjdk-17-jdk-headless maven with apt-get (log: {machine.root}/cache/prereq-apt.log)"
        in (result.stdout)
    )
    found = lines(result.stdout)
    assert found["java"] == f"17.0.21 {machine.bin / 'java'} (installed)"
    assert found["mvn"] == f"3.8.7 {machine.bin / 'mvn'} (installed)"
    assert found["go"] == f"1.26.8 {machine.bin / 'go'}"


def test_a_failed_apt_get_stops_with_its_log_and_the_command(machine: Machine) -> None:
    as_root(machine)
    _executable(machine.bin / "apt-get", 'echo "E: Unable to locate package $*"; exit 100\n')
    machine.remove("chromium")

    result = machine.run(STREAMPROC_PREREQ_INSTALL="auto")

    assert result.returncode == 1
    assert "prereq: apt-get failed; the end of" in result.stdout
    assert "prereq:   E: Unable to locate package -qq -o DPkg::Lock::Timeout=600 update" in result.stdout
    assert lines(result.stdout)["chromium"].startswith("MISSING")
    assert result.stdout.endswith("  apt-get update && apt-get install -y chromium chromium-driver\n")


def test_make_stops_before_creating_the_venv_when_a_tool_is_missing(machine: Machine) -> None:
    """``make install`` (and so services/test/demo) runs the check first and nothing after it fails."""
    machine.remove("mvn")
    for name in ("make", "bash"):
        real = shutil.which(name)
        assert real
        (machine.bin / name).symlink_to(real)
    venv = machine.root / "venv"

    result = subprocess.run(  # noqa: S603
        ["make", "-C", str(PROJECT_ROOT), "install", f"VENV={venv}", f"PREREQ_ENV={machine.root / 'prereq.env'}"],
        env=machine.env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    assert result.returncode != 0
    assert lines(result.stdout)["mvn"] == "MISSING: mvn not on PATH"
    assert "  apt-get update && apt-get install -y maven\n" in result.stdout
    assert not venv.exists()
