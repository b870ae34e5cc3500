"""Confluent's kafka-streams-examples (github.com/confluentinc/kafka-streams-examples), ported to the Python DSL.

Each module is one Java example, call for call, with its topics, its schemas (``avro/``, the examples' ``.avsc``
files as they are) and its serdes: a Schema Registry's Avro serdes configured from the application's settings, as
the Java applications configure them from their streams properties. ``build(settings)`` is the ``--topology``
function: ``streamproc run --topology examples.kafka_streams_examples.wikipedia_feed:build --streams-config
app.properties …``.
"""

from __future__ import annotations

from pathlib import Path

#: The examples' Avro schemas; the Kafka Streams oracle (conformance/) compiles the same files for the Java apps.
AVRO_DIR = Path(__file__).resolve().parent / "avro"


def avro_schema(name: str) -> str:
    """The text of one of the examples' schemas (``wikifeed``, ``pageview``, ``userprofile``, ``pageviewregion``)."""
    return (AVRO_DIR / f"{name}.avsc").read_text(encoding="utf-8")
