"""A Python Streams DSL on top of the engine's :class:`~streamproc.engine.topology.Topology` (issue #16).

Every generated name (processor nodes, stores, changelog and repartition topics) must be the one the Java DSL gives
the same program, or the live application will not find the state and offsets a hand-off wrote for it. The
side-by-side programs (``streamproc_dev/conformance/dsl_programs.py`` and ``conformance/.../DslPrograms.java``)
check that ``describe()`` is byte for byte Kafka Streams 4.2.2's. Porting guide: ``docs/porting.md``.
"""

from streamproc.dsl.builder import NO_OPTIMIZATION, OPTIMIZE, TOPOLOGY_OPTIMIZATION_CONFIG, StreamsBuilder
from streamproc.dsl.grouped import KGroupedStream, KGroupedTable, WindowedKStream
from streamproc.dsl.internals.change import Change
from streamproc.dsl.kstream import BranchedKStream, KStream
from streamproc.dsl.ktable import GlobalKTable, KTable
from streamproc.dsl.options import (
    Branched,
    Consumed,
    Grouped,
    Joined,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    StreamJoined,
)
from streamproc.dsl.suppressed import BufferConfig, Suppressed
from streamproc.dsl.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "NO_OPTIMIZATION",
    "OPTIMIZE",
    "TOPOLOGY_OPTIMIZATION_CONFIG",
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "Change",
    "Consumed",
    "GlobalKTable",
    "Grouped",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Produced",
    "Repartitioned",
    "SessionWindows",
    "SlidingWindows",
    "StreamJoined",
    "StreamsBuilder",
    "Suppressed",
    "TimeWindows",
    "WindowedKStream",
]
