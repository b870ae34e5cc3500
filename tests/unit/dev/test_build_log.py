"""Build progress from the classic builder's and Compose's real output: one line per image and per step that runs.

The lines are the shapes ``docker compose build`` (Compose v5.0.2, Debian's engine 20.10 without buildx) printed on
this machine kind: the build stream on stdout, Compose's ``Image … Building``/``Built`` on stderr.
"""

from __future__ import annotations

import logging
import sys

import pytest

from streamproc_dev import build_log

COMPOSE_STDOUT = """\
Step 1/29 : ARG PYTHON_IMAGE=python:3.11-slim-bookworm
Step 6/29 : FROM ${PYTHON_IMAGE} AS runtime
 ---> 579e6ada6647
Step 7/29 : RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless
 ---> Using cache
 ---> 1c2d3e4f5a6b
Step 12/29 : COPY streamproc ./streamproc
 ---> 9a8b7c6d5e4f
Step 13/29 : RUN uv pip install --python /opt/streamproc/venv/bin/python '.[spark,s3]'
 ---> Running in 026f2c4460c2
Resolved 80 packages in 1.2s
 ---> 0f1e2d3c4b5a
Successfully tagged streamproc-spark:0.1.0
"""


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage().split("] ", 1)[1] for r in caplog.records if r.name == "streamproc_dev.build_log"]


def test_each_step_that_runs_is_one_line_and_cached_or_instant_ones_none(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streamproc_dev.build_log")
    progress = build_log.BuildProgress("compose build")
    progress.line(" Image streamproc-spark:0.1.0 Building \n")
    for line in COMPOSE_STDOUT.splitlines():
        progress.line(line)
    progress.line(" Image streamproc-spark:0.1.0 Built \n")
    progress.finished()

    assert _messages(caplog) == [
        "streamproc-spark:0.1.0: building",
        "streamproc-spark:0.1.0 step 12/29: COPY streamproc ./streamproc",
        "streamproc-spark:0.1.0 step 13/29: RUN uv pip install --python /opt/streamproc/venv/bin/python '.[spark,s3]'",
        "streamproc-spark:0.1.0: built (2 steps ran, 1 from the cache)",
    ]


def test_a_service_state_is_one_line_however_often_compose_repeats_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streamproc_dev.build_log")
    progress = build_log.BuildProgress("compose up")
    states = [
        "kafka-1 Starting",
        "kafka-1 Started",
        "kafka-1 Healthy",
        "init-1 Exited",
        "kafka-1 Healthy",
        "init-1 Exited",
    ]
    for state in states:
        progress.line(f" Container p-{state} ")
    assert _messages(caplog) == ["container p-kafka-1: healthy", "container p-init-1: exited"]


def test_run_returns_both_outputs_and_the_exit_status_as_subprocess_run_does() -> None:
    script = "import sys; print('Step 1/1 : RUN true'); print('oops', file=sys.stderr); sys.exit(3)"
    result = build_log.run([sys.executable, "-c", script], image="x", timeout_s=60)
    assert (result.returncode, result.stdout, result.stderr) == (3, "Step 1/1 : RUN true\n", "oops\n")
