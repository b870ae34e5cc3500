"""The Kafka Streams release whose behaviour streamproc reproduces, in one place.

``streamproc --version`` prints it; the repository's dev broker and the conformance oracle run this same release
(``streamproc_dev`` takes it from here), because the broker, the oracle and the semantics streamproc reproduces are
one release. State written for 4.3 is a hand-off option (``--kafka-streams-version``), not a different target.
"""

from __future__ import annotations

from typing import Final

KAFKA_STREAMS_VERSION: Final = "4.2.2"
