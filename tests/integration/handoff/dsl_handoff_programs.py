"""``MODULE:FUNCTION`` factories for ``streamproc run --topology`` of the side-by-side DSL programs that
``test_dsl_programs_handoff.py`` hands off to their real Java twins (``DslPrograms.java``, oracle mode ``dsl-app``):
each returns the Python twin from ``streamproc_dev/conformance/dsl_programs.py`` by its shared name."""

from __future__ import annotations

from streamproc.engine.topology import Topology
from streamproc_dev.conformance.dsl_programs import PROGRAMS

#: factory name here -> the program's name in both registries
NAMES = {
    "two_aggregates_one_repartition_optimized": "two-aggregates-one-repartition-optimized",
    "windowed_aggregate_materialized": "windowed-aggregate-materialized",
    "stream_stream_outer_join_named": "stream-stream-outer-join-named",
    "stream_stream_inner_join_named": "stream-stream-inner-join-named",
    "stream_table_left_join_named": "stream-table-left-join-named",
    "table_group_by": "table-group-by",
    "rekey_join_optimized": "rekey-join-optimized",
    "bytes_count": "bytes-count",
    "bytes_window_sum": "bytes-window-sum",
    "bytes_window_count": "bytes-window-count",
    "session_aggregate": "session-aggregate",
}


def two_aggregates_one_repartition_optimized() -> Topology:
    return PROGRAMS[NAMES["two_aggregates_one_repartition_optimized"]]()


def windowed_aggregate_materialized() -> Topology:
    return PROGRAMS[NAMES["windowed_aggregate_materialized"]]()


def session_aggregate() -> Topology:
    return PROGRAMS[NAMES["session_aggregate"]]()


def stream_stream_outer_join_named() -> Topology:
    return PROGRAMS[NAMES["stream_stream_outer_join_named"]]()


def stream_stream_inner_join_named() -> Topology:
    return PROGRAMS[NAMES["stream_stream_inner_join_named"]]()


def stream_table_left_join_named() -> Topology:
    return PROGRAMS[NAMES["stream_table_left_join_named"]]()


def table_group_by() -> Topology:
    return PROGRAMS[NAMES["table_group_by"]]()


def rekey_join_optimized() -> Topology:
    return PROGRAMS[NAMES["rekey_join_optimized"]]()


def bytes_count() -> Topology:
    return PROGRAMS[NAMES["bytes_count"]]()


def bytes_window_sum() -> Topology:
    return PROGRAMS[NAMES["bytes_window_sum"]]()


def bytes_window_count() -> Topology:
    return PROGRAMS[NAMES["bytes_window_count"]]()
