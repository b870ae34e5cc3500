"""``streamproc.extras`` names the extras pyproject.toml declares, and each module it checks comes from that extra.

The wheel test (tests/integration/packaging/) shows the messages in an install without the extras; here the
definitions are held to pyproject.toml, so that a renamed extra or a moved dependency cannot leave a message that
tells users to install the wrong thing.
"""

from __future__ import annotations

import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from streamproc import extras
from streamproc.errors import ConfigError, MissingExtra
from tests.conftest import PROJECT_ROOT

OPTIONAL = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
EXTRAS = [extras.SPARK, extras.VALIDATION, extras.S3, extras.POSTGRES, extras.AIRFLOW, extras.SCHEMA_REGISTRY]


def _distributions(extra: str) -> set[str]:
    """The distributions an extra installs by name, following ``streamproc[other]`` to the other extras."""
    names: set[str] = set()
    for requirement in map(Requirement, OPTIONAL[extra]):
        name = canonicalize_name(requirement.name)
        if name == "streamproc":
            for nested in requirement.extras:
                names |= _distributions(nested)
        else:
            names.add(name)
    return names


@pytest.mark.parametrize("extra", EXTRAS, ids=lambda e: e.name)
def test_each_checked_module_is_installed_by_the_extra_the_message_names(extra: extras.Extra) -> None:
    provided_by = metadata.packages_distributions()
    for module in extra.modules:
        owners = {canonicalize_name(name) for name in provided_by[module]}
        assert owners & _distributions(extra.name), f"{module} ({owners}) is not in streamproc[{extra.name}]"


def test_a_missing_module_is_one_line_naming_the_extra() -> None:
    missing = extras.Extra("spark", "Spark", ("pyspark", "no_such_module_for_streamproc"))
    with pytest.raises(MissingExtra) as caught:
        extras.require(missing, "streamproc process")
    assert str(caught.value) == (
        "streamproc process needs Spark (no_such_module_for_streamproc not installed): pip install 'streamproc[spark]'"
    )
    assert isinstance(caught.value, ConfigError)  # the CLI's one-line error, as every setting problem


def test_installed_extras_pass() -> None:
    for extra in EXTRAS:  # the repository's venv has every extra (the dev extra includes them)
        extras.require(extra, "the test")


#: What a base install (no extra) runs: the CLI, the Python API and test driver, the fetch's staging and the
#: hand-off (``tests/integration/packaging/test_wheel.py`` runs them from a real base install, at the end of CI).
BASE_MODULES = ("streamproc", "streamproc.cli", "streamproc.testing", "streamproc.storage.staging",
                "streamproc.handoff.procedure")  # fmt: skip


def _requirements(distribution: str, seen: set[str]) -> set[str]:
    """``distribution`` and everything it requires unconditionally, by normalized name."""
    name = canonicalize_name(distribution)
    if name in seen:
        return seen
    seen.add(name)
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return seen
    for requirement in requires:
        if "extra ==" not in requirement:
            _requirements(Requirement(requirement).name, seen)
    return seen


def test_the_modules_a_base_install_runs_import_without_any_extras_modules() -> None:
    """A module the engine imports may take Arrow at module level (a base dependency) but not numpy, which only the
    spark extra installs: ``store_encoding`` once did, and every base command failed. Here, in seconds, with every
    module that only an extra installs made unimportable in a fresh interpreter."""
    import subprocess
    import sys

    base: set[str] = set()
    for requirement in tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        _requirements(Requirement(requirement).name, base)
    extra_only: set[str] = set()
    for extra in OPTIONAL:
        if extra != "dev":
            for distribution in _distributions(extra):
                extra_only |= _requirements(distribution, set()) - base
    blocked = sorted(
        module
        for module, owners in metadata.packages_distributions().items()
        if module.isidentifier() and {canonicalize_name(o) for o in owners} <= extra_only
    )
    assert {"numpy", "pyspark", "pandera", "boto3", "airflow"} <= set(blocked)
    script = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None  # import raises ModuleNotFoundError, as in a base install\n"
        f"for name in {BASE_MODULES!r}:\n"
        "    __import__(name)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
