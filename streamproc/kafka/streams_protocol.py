"""Does the cluster offer KIP-1071's streams group protocol? One ``StreamsGroupDescribe`` asks it.

An application with ``group.protocol=streams`` on a broker without the protocol cannot start: its first
``StreamsGroupHeartbeat`` is answered ``UNSUPPORTED_VERSION`` and it goes to ``ERROR`` (docs/streams-groups.md §5),
and it leaves no group, so a plan sees a new application and its hand-off would hand off to an application that
cannot run. Kafka 4.2's broker answers both streams group APIs ``UNSUPPORTED_VERSION`` unless
``group.coordinator.rebalance.protocols`` holds ``streams`` and the ``streams.version`` feature is at least 1
(``KafkaApis.isStreamsGroupProtocolEnabled``); confluent-kafka has no streams group call, so the request is written
here (``StreamsGroupDescribe`` v0, API key 89, flexible).

Only a plaintext listener is asked (a raw socket has no TLS or SASL); with another ``security.protocol`` the answer
is unknown and the plan goes on as before.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from streamproc.kafka.group_metadata import WireReader

#: ``ApiKeys.STREAMS_GROUP_DESCRIBE``.
STREAMS_GROUP_DESCRIBE: Final = 89
#: ``Errors.UNSUPPORTED_VERSION``: what a broker without the protocol answers.
UNSUPPORTED_VERSION: Final = 35
_CLIENT_ID: Final = b"streamproc"
_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class StreamsProtocolAnswer:
    """The broker's answer: ``offered`` ``None`` when it could not be asked; ``detail`` says what it answered."""

    offered: bool | None
    detail: str


def describe_request(group_id: str, correlation_id: int = 1) -> bytes:
    """A size-prefixed ``StreamsGroupDescribe`` v0 request for one group (header v2: the client id is a classic
    string, then the header's tagged fields)."""
    group = group_id.encode("utf-8")
    header = struct.pack(">hhih", STREAMS_GROUP_DESCRIBE, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID + b"\x00"
    body = _uvarint(2) + _uvarint(len(group) + 1) + group + b"\x00" + b"\x00"  # GroupIds, IncludeAuthorizedOperations
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def first_group_error(response: bytes) -> int:
    """The first group's error code of a ``StreamsGroupDescribe`` v0 response (without its size prefix): header v1
    (correlation id, tagged fields), then ``ThrottleTimeMs`` and the ``Groups`` array, each group's ``ErrorCode``
    first."""
    reader = WireReader(response, flexible=True)
    reader.int32()
    reader.skip_tagged_fields()
    reader.int32()
    if reader.array_length() < 1:
        raise ValueError("the response lists no group")
    return reader.int16()


def ask_streams_protocol(client_config: Mapping[str, object], group_id: str) -> StreamsProtocolAnswer:
    """Ask the first bootstrap server whether it serves streams groups (``StreamsGroupDescribe`` of ``group_id``)."""
    protocol = str(client_config.get("security.protocol", "plaintext")).lower()
    if protocol != "plaintext":
        return StreamsProtocolAnswer(None, f"not asked over security.protocol={protocol}")
    first = str(client_config.get("bootstrap.servers", "")).split(",")[0].strip()
    host, _, port = first.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=_TIMEOUT_S) as sock:
            sock.sendall(describe_request(group_id))
            size = _read(sock, 4)
            if size is None:
                return StreamsProtocolAnswer(False, "the broker closed the connection on StreamsGroupDescribe")
            response = _read(sock, struct.unpack(">i", size)[0])
    except (OSError, ValueError) as exc:
        return StreamsProtocolAnswer(None, f"not answered: {exc}")
    if response is None:
        return StreamsProtocolAnswer(False, "the broker closed the connection on StreamsGroupDescribe")
    try:
        error = first_group_error(response)
    except ValueError as exc:
        return StreamsProtocolAnswer(None, f"unreadable answer: {exc}")
    if error == UNSUPPORTED_VERSION:
        return StreamsProtocolAnswer(False, "StreamsGroupDescribe answered UNSUPPORTED_VERSION")
    return StreamsProtocolAnswer(True, f"StreamsGroupDescribe answered error code {error}")


def _read(sock: socket.socket, n: int) -> bytes | None:
    """Exactly ``n`` bytes, or ``None`` when the peer closes first."""
    chunks, left = [], n
    while left > 0:
        chunk = sock.recv(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
