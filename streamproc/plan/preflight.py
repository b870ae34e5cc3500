"""What a Python topology can be checked for before any data moves, in the order a user fixes it.

A port that misses a serde, or whose ``describe()`` is not the live application's, must fail in the first second with
the fix in the message, not in every Spark task after the plan and the fetch. After the topology has been built (the
caller's ``load_topology``): its ``describe()`` equals the live application's when that is given; every source and
sink has its serdes (the runtime graph is built here as each task will build it, so the same error comes now); and
for a first run, every logged store's kind is known (it decides the changelog's configs). The group's emptiness,
the last check, needs the cluster: the planner's (``kafka.planner``).
"""

from __future__ import annotations

from streamproc.engine.describe_diff import first_difference
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_processor_topology
from streamproc.errors import ConfigError


def check_describe(topology: Topology, describe: str, reference: str) -> None:
    """``topology``'s ``describe()`` is the live application's (``streamproc topology check``'s rule)."""
    difference = first_difference(describe, str(topology.describe()))
    if difference is not None:
        raise ConfigError(f"{reference} is not the application's topology: {difference}")


def check_serdes(topology: Topology, application_id: str) -> None:
    """Every source and sink has its serdes: the runtime graph of the whole topology, built as a task builds it."""
    build_processor_topology(topology, None, application_id=application_id)


def check_store_kinds(topology: Topology) -> None:
    """A first run creates each logged store's changelog with its kind's configs: every kind must be known."""
    from streamproc.plan.internal_topics import store_kinds_of

    known = store_kinds_of(topology)
    stores = sorted({s for node in topology.nodes for s in topology.stores_of(node.name)})
    unknown = [s for s in stores if s not in known]
    if unknown:
        raise ConfigError(
            f"the kind of store(s) {', '.join(unknown)} cannot be told from their builders (build them with "
            "streamproc.Stores), and a first run creates their changelogs with their kind's configs"
        )


def preflight(
    topology: Topology,
    *,
    application_id: str,
    reference: str,
    describe: str | None = None,
    first_run: bool = False,
) -> None:
    """The checks of the module doc, in their order; the first that fails raises its one-line error."""
    if describe is not None:
        check_describe(topology, describe, reference)
    check_serdes(topology, application_id)
    if first_run:
        check_store_kinds(topology)
