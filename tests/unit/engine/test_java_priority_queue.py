"""``JavaPriorityQueue`` on PG-4's worked examples and its own rules.

Every op and heap layout is compared with a real ``java.util.PriorityQueue`` on seeded traces at test time:
``tests/integration/conformance/test_reference_priority_queue.py``.
"""

from __future__ import annotations

import heapq

from streamproc.engine.java_priority_queue import JavaPriorityQueue


class Element:
    """Identity-equal, like a Java object without ``equals``."""

    def __init__(self, ident: int, key: int) -> None:
        self.ident = ident
        self.key = key


def _key(element: Element) -> int:
    return element.key


def _drain_like_partition_group(records_per_queue: list[int]) -> list[int]:
    """Poll the root, then re-offer it while it has records left: PartitionGroup.nextRecord's heap operations."""
    remaining = list(records_per_queue)
    pq: JavaPriorityQueue[Element] = JavaPriorityQueue(_key)
    for ident in range(len(remaining)):
        pq.offer(Element(ident, 10))
    order: list[int] = []
    while pq:
        element = pq.poll()
        assert element is not None
        order.append(element.ident)
        remaining[element.ident] -= 1
        if remaining[element.ident]:
            pq.offer(element)
    return order


def test_pg4_two_partitions_alternate() -> None:
    assert _drain_like_partition_group([3, 3]) == [0, 1, 0, 1, 0, 1]


def test_pg4_three_partitions_middle_waits() -> None:
    assert _drain_like_partition_group([3, 3, 3]) == [0, 2, 0, 2, 0, 2, 1, 1, 1]


def test_pg4_four_single_records_come_out_reversed_after_the_first() -> None:
    assert _drain_like_partition_group([1, 1, 1, 1]) == [0, 3, 2, 1]


def test_pg4_five_partitions_two_records_each() -> None:
    assert _drain_like_partition_group([2] * 5) == [0, 4, 0, 4, 3, 2, 3, 2, 1, 1]


def test_differs_from_heapq_on_ties() -> None:
    """heapq with (key, counter) is FIFO on ties; Java's heap is not, so using it would change the order."""
    heap: list[tuple[int, int]] = []
    for ident in range(4):
        heapq.heappush(heap, (10, ident))
    fifo = [heapq.heappop(heap)[1] for _ in range(4)]
    assert fifo == [0, 1, 2, 3]
    assert _drain_like_partition_group([1, 1, 1, 1]) != fifo


def test_peek_poll_on_empty_and_remove_missing() -> None:
    pq: JavaPriorityQueue[Element] = JavaPriorityQueue(_key)
    assert pq.peek() is None
    assert pq.poll() is None
    assert not pq.remove(Element(0, 1))
    element = Element(1, 5)
    pq.add(element)
    assert pq.peek() is element
    assert list(pq) == [element]
    pq.clear()
    assert len(pq) == 0


def test_negative_keys_sort_first() -> None:
    pq: JavaPriorityQueue[Element] = JavaPriorityQueue(_key)
    for ident, key in enumerate([5, 0, -1, 7]):
        pq.offer(Element(ident, key))
    polled = [pq.poll() for _ in range(4)]
    assert [e.key for e in polled if e is not None] == [-1, 0, 5, 7]
