"""The reset-tool oracle asks again when the tool's client timed out reaching the broker (a loaded machine), and
takes any other outcome, a refusal included, as the tool's answer. The timeout is a fault of the machine's load,
which cannot be caused on demand: the dry run's outcomes are given here."""

from __future__ import annotations

from typing import Any

import pytest

from streamproc_dev.conformance import reset_tool

TIMED_OUT = (
    "ERROR: java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.TimeoutException: Timed out "
    "waiting for a node assignment. Call: describeConsumerGroups(api=FIND_COORDINATOR)"
)
ANSWER = "Topic: orders Partition: 0 Offset: 5"


def _asked(monkeypatch: pytest.MonkeyPatch, outcomes: list[tuple[int, str]]) -> tuple[tuple[int, str], int]:
    monkeypatch.setattr(reset_tool, "_PAUSE_S", 0.0)
    run: Any = reset_tool._Run.__new__(reset_tool._Run)
    left = list(outcomes)
    monkeypatch.setattr(run, "_dry_run", lambda: left.pop(0))
    return run._answered_dry_run(), len(outcomes) - len(left)


def test_a_client_timeout_is_asked_again_until_the_tool_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _asked(monkeypatch, [(1, TIMED_OUT), (0, ANSWER)]) == ((0, ANSWER), 2)


def test_a_refusal_is_the_answer_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = "ERROR: Consumer group app is still active."
    assert _asked(monkeypatch, [(1, refusal), (0, ANSWER)]) == ((1, refusal), 1)


def test_timeouts_on_every_try_end_in_the_last_ones_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    tries = [(1, TIMED_OUT)] * reset_tool._ATTEMPTS
    assert _asked(monkeypatch, [*tries, (0, ANSWER)]) == ((1, TIMED_OUT), reset_tool._ATTEMPTS)
