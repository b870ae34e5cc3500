"""ListOffsets right after a topic's creation: NOT_LEADER_FOR_PARTITION is retried, a real fault is not.

The race (the shared Admin client's metadata behind the broker's) cannot be caused on demand with a real broker, so
this one test answers the client calls itself."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from streamproc.errors import PlanError
from streamproc.kafka import cluster
from streamproc.plan.cluster_snapshot import IsolationLevel


class _Admin:
    def __init__(self, errors: list[int | None]) -> None:
        self.errors = errors
        self.calls = 0

    def list_offsets(self, specs: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        code = self.errors[min(self.calls, len(self.errors) - 1)]
        self.calls += 1
        futures: dict[Any, Future[Any]] = {}
        for tp in specs:
            future: Future[Any] = Future()
            if code is None:
                future.set_result(SimpleNamespace(offset=42))
            else:
                future.set_exception(KafkaException(KafkaError(code)))
            futures[tp] = future
        return futures


def test_a_partition_whose_leader_the_client_does_not_know_yet_is_asked_again() -> None:
    admin = _Admin([KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, None])
    tp = TopicPartition("t", 0)
    assert cluster._list_offsets(admin, {tp: object()}, IsolationLevel.READ_UNCOMMITTED, "log start") == {tp: 42}
    assert admin.calls == 3


def test_a_fault_that_is_not_retriable_fails_at_once_naming_the_partition() -> None:
    admin = _Admin([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(PlanError, match="could not read log start of t-3 from the cluster"):
        cluster._list_offsets(admin, {TopicPartition("t", 3): object()}, IsolationLevel.READ_UNCOMMITTED, "log start")
    assert admin.calls == 1


def test_retries_end_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "_RETRY_S", 0.3)
    admin = _Admin([KafkaError.NOT_LEADER_FOR_PARTITION])
    with pytest.raises(PlanError, match="Not leader for partition"):
        cluster._list_offsets(admin, {TopicPartition("t", 0): object()}, IsolationLevel.READ_UNCOMMITTED, "log end")
    assert admin.calls >= 2
