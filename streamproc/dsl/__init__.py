"""A Python Streams DSL on top of the engine's :class:`~streamproc.engine.topology.Topology` (issue #16).

Every generated name (processor nodes, stores, changelog and repartition topics) must be the one the Java DSL gives
the same program, or the live application will not find the state and offsets a hand-off wrote for it.
"""
