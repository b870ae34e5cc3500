"""Fixtures of the conformance tests: the oracle's ``reference`` answers, computed once per session."""

from __future__ import annotations

from typing import Any

import pytest

from streamproc_dev.conformance.reference import reference_request, run_reference


@pytest.fixture(scope="session")
def kafka_reference() -> dict[str, Any]:
    """Java's answers (real ``java.util.PriorityQueue``, kafka-clients' murmur2 and partitioner, Kafka's
    ``TopologyTestDriver``) to the seeded request of :mod:`streamproc_dev.conformance.reference`."""
    return run_reference(reference_request())
