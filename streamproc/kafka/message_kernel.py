"""Which loops a fetch runs over confluent-kafka's messages: the compiled ones (``_message_kernel.c``) or Python's.

The Python loops (``RangeReader.batches``' check, ``SegmentColumns.fill_python``) are the reference; the compiled
ones do the same statement for statement at a fraction of the CPU. A source checkout without ``make install`` has
only the Python loops, and the tests switch the compiled ones off to compare the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from types import ModuleType
from typing import Any

try:
    from streamproc.kafka import _message_kernel
except ImportError:  # not built: the Python loops do the same
    _message_kernel = None  # type: ignore[assignment]

#: Set to a true value to run the fetch's Python loops even when the compiled ones are built.
PURE_PYTHON_FETCH_ENV = "STREAMPROC_PURE_PYTHON_FETCH"


def message_kernel() -> ModuleType | None:
    """The compiled loops, or ``None`` where they are not built or :data:`PURE_PYTHON_FETCH_ENV` is set."""
    if _message_kernel is None or os.environ.get(PURE_PYTHON_FETCH_ENV):
        return None
    return _message_kernel


#: What ended :func:`scan`: every message is deliverable; ``messages[count]`` has an error; ``messages[count]`` lies
#: at or past the range's end; ``messages[count - 1]`` is the range's last offset.
SCAN_ALL, SCAN_ERROR, SCAN_PAST_END, SCAN_LAST_OFFSET = 0, 1, 2, 3


def scan_python(messages: Sequence[Any], end: int) -> tuple[int, int]:
    """:func:`scan` in Python, the reference."""
    for index, message in enumerate(messages):
        if message.error() is not None:
            return index, SCAN_ERROR
        offset = message.offset()
        if offset >= end:
            return index, SCAN_PAST_END
        if offset == end - 1:
            return index + 1, SCAN_LAST_OFFSET
    return len(messages), SCAN_ALL


def scan(messages: list[Any], end: int) -> tuple[int, int]:
    """How many of a consumed batch's messages, in order, belong to a range ending at ``end`` (no error, offset
    below ``end``), and why the rest do not: ``(count, SCAN_*)``. A range reader's check of every message."""
    kernel = message_kernel()
    if kernel is None:
        return scan_python(messages, end)
    return kernel.scan(messages, end)  # type: ignore[no-any-return]
