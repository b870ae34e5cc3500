"""A WordCountDemo port as a new user writes it, and the same port missing the Java app's default serdes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamproc import Topology, serde_for
from streamproc.dsl import Produced, StreamsBuilder

WORDS_INPUT = "first-hour-lines"
WORDS_OUTPUT = "first-hour-counts"

#: What WordCountDemo's properties set: String keys and values by default.
DEFAULT_SERDES = {"default.key.serde": "String", "default.value.serde": "String"}


def _word_count(props: Mapping[str, Any]) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(WORDS_INPUT)
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda _key, word: word)
        .count()
        .to_stream()
        .to(WORDS_OUTPUT, Produced.with_(serde_for("String"), serde_for("Long")))
    )
    return builder.build(props)


def word_count() -> Topology:
    return _word_count(DEFAULT_SERDES)


def word_count_without_default_serdes() -> Topology:
    """The port forgot ``default.key.serde``/``default.value.serde``: ``describe()`` is the same, the sources have
    no serde."""
    return _word_count({})
