"""The ledger's CLI test topology: the Spark tests' count program on topics of its own (importable by name)."""

from __future__ import annotations

from streamproc import Topology
from tests.integration.spark.topologies import count_topology

INPUT = "ledger-count-words"
OUTPUT = "ledger-count-totals"
#: the resumed-fetch test's topics: an input long enough to span several segments
RESUMED_INPUT = "ledger-resumed-words"
RESUMED_OUTPUT = "ledger-resumed-totals"


def count() -> Topology:
    """Source → count (persistent timestamped store ``counts``, logged) → sink."""
    return count_topology(INPUT, OUTPUT)


def count_of_a_missing_topic() -> Topology:
    """The same program on an input topic that does not exist: the plan refuses it."""
    return count_topology("ledger-no-such-topic", OUTPUT)


def count_resumed() -> Topology:
    """The same program on the resumed-fetch test's topics."""
    return count_topology(RESUMED_INPUT, RESUMED_OUTPUT)


def count_on(settings: dict[str, str]) -> Topology:
    """The same program on the topics the application settings name (``test.input``, ``test.output``), so that
    each test of a module has a pair of its own."""
    return count_topology(settings["test.input"], settings["test.output"])
