"""Window specifications of the DSL API: the values the windowed processors use
(:mod:`streamproc.dsl.internals.windows`), re-exported so that a program imports them from ``streamproc.dsl``."""

from streamproc.dsl.internals.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = ["JoinWindows", "SessionWindows", "SlidingWindows", "TimeWindows"]
