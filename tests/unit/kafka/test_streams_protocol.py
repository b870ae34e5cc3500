"""``StreamsGroupDescribe`` v0 on the wire: the bytes are those Kafka 4.2.2's own classes write
(``RequestUtils.serialize`` of the request header and ``StreamsGroupDescribeRequestData``; the response of
``StreamsGroupDescribeRequest.getErrorResponse(UNSUPPORTED_VERSION)``, what a broker without the protocol answers)."""

from __future__ import annotations

import pytest

from streamproc.kafka.streams_protocol import (
    UNSUPPORTED_VERSION,
    ask_streams_protocol,
    describe_request,
    first_group_error,
)

KAFKA_REQUEST = bytes.fromhex("0059000000000001000a73747265616d70726f630002046170700000")
KAFKA_UNSUPPORTED = bytes.fromhex("0000000100000000000200230004617070010000000000000000ff01800000000000")


def test_the_request_is_the_one_kafka_writes() -> None:
    request = describe_request("app")
    assert request[:4] == len(KAFKA_REQUEST).to_bytes(4, "big") and request[4:] == KAFKA_REQUEST


def test_the_answer_of_a_broker_without_the_protocol_is_read() -> None:
    assert first_group_error(KAFKA_UNSUPPORTED) == UNSUPPORTED_VERSION
    with pytest.raises(ValueError):
        first_group_error(KAFKA_UNSUPPORTED[:9])


def test_a_listener_a_raw_socket_cannot_speak_to_is_not_asked() -> None:
    answer = ask_streams_protocol({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_SSL"}, "app")
    assert (answer.offered, answer.detail) == (None, "not asked over security.protocol=sasl_ssl")
