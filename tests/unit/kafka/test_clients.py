"""The shared client configuration: what every confluent-kafka client streamproc builds gets, and what it refuses."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from streamproc.errors import ConfigError, KafkaUnavailableError
from streamproc.kafka import clients


@pytest.mark.parametrize("config", [{}, {"bootstrap.servers": ""}, {"bootstrap.servers": "  "}])
def test_a_client_without_bootstrap_servers_is_refused_not_warned_about(config: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="no Kafka bootstrap servers given"):
        clients.producer(config)
    with pytest.raises(ConfigError, match="no Kafka bootstrap servers given"):
        clients.consumer(config, **{"group.id": "g"})


def test_every_client_logs_through_python_logging_and_keeps_the_callers_settings() -> None:
    errors = clients.ConnectionErrors()
    config = clients._full_config({"bootstrap.servers": "h:1", "socket.connection.setup.timeout.ms": 900}, errors)
    assert config["logger"] is logging.getLogger("streamproc.librdkafka")
    assert config["error_cb"] is errors
    assert config["socket.connection.setup.timeout.ms"] == 900  # the caller's -X wins over the defaults
    assert config["reconnect.backoff.max.ms"] == clients.CONNECTION_DEFAULTS["reconnect.backoff.max.ms"]


def test_connection_errors_become_one_error_naming_the_address_and_the_cause() -> None:
    config = {"bootstrap.servers": "broker:9092"}
    error = clients.translate(KafkaException(KafkaError(KafkaError._TRANSPORT, "Connection refused")), config)
    assert isinstance(error, KafkaUnavailableError)
    assert str(error).startswith("cannot reach the Kafka cluster at broker:9092: Connection refused;")
    other = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert clients.translate(other, config) is other  # a refused request is not an unreachable cluster


def test_the_cause_is_the_last_connection_error_not_the_summary() -> None:
    errors = clients.ConnectionErrors()
    errors(KafkaError(KafkaError._TRANSPORT, "h:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused"))
    errors(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert errors.cause() == "h:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused"
    assert clients.ConnectionErrors().cause() == f"no answer within {clients.CONNECT_TIMEOUT_S:.0f} s"


def test_a_repeated_librdkafka_line_is_logged_once_then_with_its_count(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(clients.time, "monotonic", lambda: now[0])
    repeated = clients.RepeatedLineFilter()

    def passes(message: str) -> logging.LogRecord | None:
        record = logging.LogRecord("streamproc.librdkafka", logging.ERROR, __file__, 1, message, (), None)
        return record if repeated.filter(record) else None

    fail = "FAIL h:1/bootstrap: Connect failed: Connection refused (after {}ms in state CONNECT)"
    assert passes(fail.format(0)) is not None
    assert [passes(fail.format(ms)) for ms in (0, 1, 12)] == [None, None, None]  # timings aside, the same line
    assert passes("another line") is not None
    now[0] += clients.REPEAT_QUIET_S
    again = passes(fail.format(3))
    assert again is not None and again.getMessage() == fail.format(3) + " (and 3 more like it)"
