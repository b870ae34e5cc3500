"""An exact reproduction of ``java.util.PriorityQueue``'s binary heap (ordering.md PG-4).

Kafka Streams keeps its non-empty partition queues and its punctuation schedules in ``java.util.PriorityQueue``s
ordered by a ``long`` key only, so ties are broken by the heap's array layout, not by insertion order. Python's
``heapq`` sifts differently (``heappop`` goes down to a leaf and back up), so this class copies OpenJDK's
``siftUpUsingComparator``/``siftDownUsingComparator``/``removeAt`` step for step (identical in JDK 11, 17, 21, 25).
The comparator is ``Comparator.comparingLong(key)``: the only comparators Kafka Streams uses on these heaps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class JavaPriorityQueue(Generic[T]):
    """``new PriorityQueue<>(Comparator.comparingLong(key))``: neither stable nor FIFO for equal keys."""

    __slots__ = ("_key", "_queue")

    def __init__(self, key: Callable[[T], int]) -> None:
        self._key = key
        self._queue: list[T] = []

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def __iter__(self) -> Iterator[T]:
        """The backing array in index order, as Java's iterator walks it (not priority order)."""
        return iter(list(self._queue))

    def offer(self, element: T) -> None:
        """``offer``/``add``: append at the end and sift up; an element never moves above an equal parent."""
        queue = self._queue
        queue.append(element)
        self._sift_up(len(queue) - 1, element)

    add = offer

    def peek(self) -> T | None:
        return self._queue[0] if self._queue else None

    def poll(self) -> T | None:
        """``poll``: take the root, move the last element to the root and sift it down (left child wins ties)."""
        queue = self._queue
        if not queue:
            return None
        result = queue[0]
        last = queue.pop()
        if queue:
            self._sift_down(0, last)
        return result

    def remove(self, element: object) -> bool:
        """``remove(Object)``: the first element in array order that equals ``element`` (Java ``equals``)."""
        for index, candidate in enumerate(self._queue):
            if candidate == element:
                self._remove_at(index)
                return True
        return False

    def clear(self) -> None:
        self._queue.clear()

    def _remove_at(self, index: int) -> None:
        queue = self._queue
        last_index = len(queue) - 1
        if last_index == index:
            queue.pop()
            return
        moved = queue.pop()
        self._sift_down(index, moved)
        if queue[index] is moved:
            self._sift_up(index, moved)

    def _sift_up(self, k: int, element: T) -> None:
        queue = self._queue
        key = self._key
        element_key = key(element)
        while k > 0:
            parent = (k - 1) >> 1
            above = queue[parent]
            if element_key >= key(above):
                break
            queue[k] = above
            k = parent
        queue[k] = element

    def _sift_down(self, k: int, element: T) -> None:
        queue = self._queue
        key = self._key
        size = len(queue)
        element_key = key(element)
        half = size >> 1
        while k < half:
            child = 2 * k + 1
            child_element = queue[child]
            child_key = key(child_element)
            right = child + 1
            if right < size:
                right_key = key(queue[right])
                if child_key > right_key:
                    child = right
                    child_element = queue[right]
                    child_key = right_key
            if element_key <= child_key:
                break
            queue[k] = child_element
            k = child
        queue[k] = element
