"""What a ``RangeReader`` asks of its consumer: the fetch-queue backoff that keeps a working reader fed, under the
caller's own client settings."""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.kafka import range_reader
from streamproc.kafka.range_reader import FETCH_QUEUE_BACKOFF_MS, READ_UNCOMMITTED, RangeReader


def _consumer_config(monkeypatch: pytest.MonkeyPatch, client_config: dict[str, object]) -> dict[str, object]:
    seen: dict[str, object] = {}

    def consumer(config: dict[str, object], *, topic: str | None = None, **settings: object) -> Any:
        seen.update(config, **settings)
        return object()

    monkeypatch.setattr(range_reader.kafka_clients, "consumer", consumer)
    RangeReader(client_config, "t", 0, 0, 10, isolation_level=READ_UNCOMMITTED)._consumer()
    return seen


def test_a_reader_backs_off_a_full_fetch_queue_briefly_not_librdkafkas_second(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _consumer_config(monkeypatch, {"bootstrap.servers": "h:1"})
    assert config["fetch.queue.backoff.ms"] == FETCH_QUEUE_BACKOFF_MS < 1000
    assert config["isolation.level"] == READ_UNCOMMITTED and config["enable.auto.commit"] is False


def test_the_callers_backoff_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _consumer_config(monkeypatch, {"bootstrap.servers": "h:1", "fetch.queue.backoff.ms": 5})
    assert config["fetch.queue.backoff.ms"] == 5
