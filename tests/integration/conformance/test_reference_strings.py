"""String serdes against kafka-clients 4.2.2 on malformed UTF-8 and unpaired surrogates (seeded inputs).

Java's ``new String(bytes, UTF_8)`` replaces malformed input in its own way (one U+FFFD per maximal invalid
subpart, encoded surrogates and code points past U+10FFFF rejected) and ``getBytes(UTF_8)`` writes ``?`` for an
unpaired surrogate; streamproc's ``StringDeserializer``/``StringSerializer`` must do the same. The oracle's
``reference`` mode answers for every input at test time; strings travel as UTF-16 code units, which JSON cannot
carry unpaired.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.engine.serdes import StringDeserializer, StringSerializer
from streamproc_dev.conformance.reference import string_inputs

INPUTS = string_inputs()


def code_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def from_code_units(units: list[int]) -> str:
    return b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", "surrogatepass")


def test_the_inputs_hold_malformed_bytes_and_unpaired_surrogates() -> None:
    malformed = 0
    for hex_bytes in INPUTS["decode"]:
        try:
            bytes.fromhex(hex_bytes).decode("utf-8")
        except UnicodeDecodeError:
            malformed += 1
    assert malformed > 100
    assert any(0xD800 <= u <= 0xDFFF for units in INPUTS["encode"] for u in units)


@pytest.mark.parametrize("chunk", range(0, len(INPUTS["decode"]), 50))
def test_decoding_replaces_malformed_bytes_like_java(kafka_reference: dict[str, Any], chunk: int) -> None:
    deserializer = StringDeserializer()
    for index in range(chunk, min(chunk + 50, len(INPUTS["decode"]))):
        data = bytes.fromhex(INPUTS["decode"][index])
        assert code_units(deserializer.deserialize("t", data)) == kafka_reference["strings"]["decoded"][index], data


@pytest.mark.parametrize("chunk", range(0, len(INPUTS["encode"]), 50))
def test_encoding_writes_unpaired_surrogates_like_java(kafka_reference: dict[str, Any], chunk: int) -> None:
    serializer = StringSerializer()
    for index in range(chunk, min(chunk + 50, len(INPUTS["encode"]))):
        text = from_code_units(INPUTS["encode"][index])
        data = serializer.serialize("t", text)
        assert data is not None and data.hex() == kafka_reference["strings"]["encoded"][index], repr(text)
