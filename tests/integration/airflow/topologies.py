"""The Airflow tests' programs: the Spark tests' count program, each test on topics of its own (importable by name).

A DAG run names its topology as MODULE:FUNCTION and a factory takes no arguments, so each test that hands off gets
a factory over its own input and output topics: what one run publishes cannot be mistaken for another's.
"""

from __future__ import annotations

from streamproc import Topology
from tests.integration.spark.topologies import count_topology

NAMES = ("approved", "rejected", "stale", "incremental", "checks", "retry", "browser", "recovery")


def input_topic(name: str) -> str:
    return f"airflow-{name}-words"


def output_topic(name: str) -> str:
    return f"airflow-{name}-totals"


def reference(name: str) -> str:
    """The ``topology`` param of the test ``name``."""
    return f"{__name__}:{name}"


def approved() -> Topology:
    return count_topology(input_topic("approved"), output_topic("approved"))


def rejected() -> Topology:
    return count_topology(input_topic("rejected"), output_topic("rejected"))


def stale() -> Topology:
    return count_topology(input_topic("stale"), output_topic("stale"))


def incremental() -> Topology:
    return count_topology(input_topic("incremental"), output_topic("incremental"))


def checks() -> Topology:
    return count_topology(input_topic("checks"), output_topic("checks"))


def retry() -> Topology:
    return count_topology(input_topic("retry"), output_topic("retry"))


def browser() -> Topology:
    return count_topology(input_topic("browser"), output_topic("browser"))


def recovery() -> Topology:
    return count_topology(input_topic("recovery"), output_topic("recovery"))
