"""``JavaPriorityQueue`` against a real ``java.util.PriorityQueue`` (``Comparator.comparingLong``) on seeded traces.

Every op's result (polled element, remove's boolean) and the backing array's order after every op (what Java's
iterator walks) must be Java's: the oracle's ``reference`` mode runs the same ops at test time.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.engine.java_priority_queue import JavaPriorityQueue
from streamproc_dev.conformance.reference import PRIORITY_QUEUE_SEEDS, priority_queue_traces

TRACES = priority_queue_traces()


class Element:
    """Identity-equal, like a Java object without ``equals``."""

    def __init__(self, ident: int, key: int) -> None:
        self.ident = ident
        self.key = key


def _key(element: Element) -> int:
    return element.key


def replay(ops: list[str]) -> tuple[list[Any], list[list[int]]]:
    """The ops on ``JavaPriorityQueue``, answered in the reference mode's shape (results, layouts)."""
    pq: JavaPriorityQueue[Element] = JavaPriorityQueue(_key)
    elements: list[Element] = []
    results: list[Any] = []
    layouts: list[list[int]] = []
    for op in ops:
        if op.startswith("o"):
            element = Element(len(elements), int(op[1:]))
            elements.append(element)
            pq.offer(element)
            results.append(None)
        elif op == "p":
            polled = pq.poll()
            results.append(None if polled is None else polled.ident)
        else:
            results.append(pq.remove(elements[int(op[1:])]))
        layouts.append([e.ident for e in pq])
    return results, layouts


def test_the_traces_cover_ties_removes_and_empty_polls() -> None:
    ops = [op for trace in TRACES for op in trace["ops"]]
    offered = [int(op[1:]) for op in ops if op.startswith("o")]
    assert len(offered) > 2 * len(set(offered)), "keys repeat, so ties decide the order"
    assert sum(op.startswith("r") for op in ops) > 100
    assert min(offered) == -(2**63) and max(offered) == 2**63 - 1


@pytest.mark.parametrize("index", range(len(TRACES)), ids=[f"seed{s}" for s in PRIORITY_QUEUE_SEEDS])
def test_every_op_and_heap_layout_matches_java(kafka_reference: dict[str, Any], index: int) -> None:
    java = kafka_reference["priority_queue"][index]
    results, layouts = replay(TRACES[index]["ops"])
    assert results == java["results"]
    assert layouts == java["layouts"]
