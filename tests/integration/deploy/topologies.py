"""The deployment test's application: the Spark tests' count program on topics of its own (importable by name, as
the DAG's ``topology`` setting names it: MODULE:FUNCTION)."""

from __future__ import annotations

from streamproc import Topology
from tests.integration.spark.topologies import count_topology

REFERENCE = f"{__name__}:deployment"


def input_topic() -> str:
    return "deploy-words"


def output_topic() -> str:
    return "deploy-totals"


def deployment() -> Topology:
    return count_topology(input_topic(), output_topic())
