"""The compose test's env file: ``.env.example`` with the caller's values, everything else as the user gets it."""

from __future__ import annotations

from pathlib import Path

from streamproc_dev.deployment import ENV_EXAMPLE, write_env_file
from streamproc_dev.images import VARIABLES


def _values(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_overrides_replace_their_lines_and_the_rest_is_env_example(tmp_path: Path) -> None:
    written = write_env_file(tmp_path / "env", {**VARIABLES, "KAFKA_HOST_PORT": "41234", "EXTRA_SETTING": "x"})
    example, ours = _values(ENV_EXAMPLE), _values(written)
    assert {k: v for k, v in ours.items() if example.get(k) != v} == {
        **VARIABLES, "KAFKA_HOST_PORT": "41234", "EXTRA_SETTING": "x"}  # fmt: skip
    assert set(VARIABLES) <= set(example)  # every stand-in replaces a base image the file names
    # comments stay where they were
    comments = [line for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert [line for line in written.read_text(encoding="utf-8").splitlines() if line.startswith("#")] == comments
