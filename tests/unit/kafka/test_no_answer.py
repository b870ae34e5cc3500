"""A cluster that stops answering mid-run: one line naming the request, never a bare ``TimeoutError``.

A broker that accepts connections and then goes silent between two requests of one run cannot be caused on demand
here, so the futures below are ones nobody completes; the code under test waits on them exactly as on librdkafka's.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import click
import pytest
from click.testing import CliRunner
from confluent_kafka import TopicPartition

from streamproc.cli.output import catch_errors
from streamproc.errors import PlanError
from streamproc.kafka import cluster
from streamproc.plan.cluster_snapshot import IsolationLevel


class _SilentAdmin:
    def list_offsets(self, specs: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        return {tp: Future() for tp in specs}


def test_a_listoffsets_answer_that_never_comes_names_the_partition_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cluster, "_TIMEOUT_S", 0.05)
    with pytest.raises(PlanError, match=r"could not read log start of t-3: the Kafka cluster did not answer in 0 s"):
        cluster._list_offsets(_SilentAdmin(), {TopicPartition("t", 3): object()}, IsolationLevel.READ_UNCOMMITTED,
                              "log start")  # fmt: skip


def test_an_admin_answer_that_never_comes_is_a_plan_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "_TIMEOUT_S", 0.05)
    with pytest.raises(PlanError, match="could not read the topics: the Kafka cluster did not answer"):
        cluster._result(Future(), "the topics")


def test_the_cli_turns_a_bare_timeout_into_one_line() -> None:
    @click.command()
    @catch_errors
    def command() -> None:
        raise TimeoutError

    result = CliRunner().invoke(command)
    assert result.exit_code == 1
    assert result.output.startswith("error: no answer in time from the Kafka cluster or the object store")
    assert "Traceback" not in result.output
