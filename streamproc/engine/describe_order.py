"""The order in which Kafka Streams 4.2 prints nodes, neighbours, stores and topics in ``describe()``.

``InternalTopologyBuilder#describeSubtopology`` puts a sub-topology's nodes in a ``HashMap`` (iterated in hash-bucket
order), then, node by node in that order, adds each edge to two ``TreeSet``\\s ordered by ``NODE_COMPARATOR``
(larger ``size`` first, then name) and adds the child's current ``size`` to the parent and all its ancestors known so
far. The comparator reads sizes that keep changing after an element was inserted, so the sets' iteration order is
only reproducible by replaying those insertions in a red-black tree exactly as ``java.util.TreeMap`` does; the
nodes themselves are sorted once, with final sizes. Store names and source topics are printed from ``HashSet``\\s.
Byte-for-byte ``describe()`` text is what a port is checked against (``streamproc topology check``), so this is
reproduced rather than approximated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


def java_string_hash(text: str) -> int:
    """``String#hashCode`` (UTF-16 code units, 32-bit signed arithmetic)."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split(" ") if text else ():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)``."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def _capacity(size: int) -> int:
    """A ``HashMap``'s table size after ``size`` puts from the default 16 (resize when size > 0.75 × capacity)."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def hash_order(items: Iterable[str], capacity: int | None = None) -> list[str]:
    """Iteration order of a ``HashSet``/``HashMap`` filled with ``items`` in order (bucket, then insertion)."""
    ordered = list(dict.fromkeys(items))
    cap = capacity if capacity is not None else _capacity(len(ordered))
    return sorted(ordered, key=lambda s: _spread(java_string_hash(s)) & (cap - 1))


def hash_set_copy_order(items: Iterable[str]) -> list[str]:
    """Iteration order of ``new HashSet<>(collection)``: capacity ``max(n / .75 + 1, 16)`` rounded to a power of 2."""
    ordered = list(dict.fromkeys(items))
    wanted = max(int(len(ordered) / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return hash_order(ordered, capacity)


class _Entry(Generic[T]):
    __slots__ = ("key", "left", "right", "parent", "black")

    def __init__(self, key: T, parent: _Entry[T] | None) -> None:
        self.key = key
        self.left: _Entry[T] | None = None
        self.right: _Entry[T] | None = None
        self.parent = parent
        self.black = True


class JavaTreeSet(Generic[T]):
    """``java.util.TreeSet`` over a red-black ``TreeMap``: insertion descends with the comparator *as it is now*."""

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self._compare = compare
        self._root: _Entry[T] | None = None

    def add(self, key: T) -> None:
        t = self._root
        if t is None:
            self._root = _Entry(key, None)
            return
        parent = t
        cmp = 0
        while t is not None:
            parent = t
            cmp = self._compare(key, t.key)
            if cmp < 0:
                t = t.left
            elif cmp > 0:
                t = t.right
            else:
                return
        entry = _Entry(key, parent)
        if cmp < 0:
            parent.left = entry
        else:
            parent.right = entry
        self._fix_after_insertion(entry)

    def __iter__(self) -> Iterator[T]:
        out: list[T] = []

        def walk(e: _Entry[T] | None) -> None:
            if e is not None:
                walk(e.left)
                out.append(e.key)
                walk(e.right)

        walk(self._root)
        return iter(out)

    # -- TreeMap's balancing, verbatim in structure ----------------------------------------------------------------

    @staticmethod
    def _black(e: _Entry[T] | None) -> bool:
        return True if e is None else e.black

    @staticmethod
    def _parent(e: _Entry[T] | None) -> _Entry[T] | None:
        return None if e is None else e.parent

    @staticmethod
    def _left(e: _Entry[T] | None) -> _Entry[T] | None:
        return None if e is None else e.left

    @staticmethod
    def _right(e: _Entry[T] | None) -> _Entry[T] | None:
        return None if e is None else e.right

    @staticmethod
    def _set_black(e: _Entry[T] | None, black: bool) -> None:
        if e is not None:
            e.black = black

    def _rotate_left(self, p: _Entry[T] | None) -> None:
        if p is None or p.right is None:
            return
        r = p.right
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry[T] | None) -> None:
        if p is None or p.left is None:
            return
        left = p.left
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        left.parent = p.parent
        if p.parent is None:
            self._root = left
        elif p.parent.right is p:
            p.parent.right = left
        else:
            p.parent.left = left
        left.right = p
        p.parent = left

    def _fix_after_insertion(self, x: _Entry[T] | None) -> None:
        assert x is not None
        x.black = False
        P, L, R, B = self._parent, self._left, self._right, self._black
        while x is not None and x is not self._root and not B(P(x)):
            if P(x) is L(P(P(x))):
                y = R(P(P(x)))
                if not B(y):
                    self._set_black(P(x), True)
                    self._set_black(y, True)
                    self._set_black(P(P(x)), False)
                    x = P(P(x))
                else:
                    if x is R(P(x)):
                        x = P(x)
                        self._rotate_left(x)
                    self._set_black(P(x), True)
                    self._set_black(P(P(x)), False)
                    self._rotate_right(P(P(x)))
            else:
                y = L(P(P(x)))
                if not B(y):
                    self._set_black(P(x), True)
                    self._set_black(y, True)
                    self._set_black(P(P(x)), False)
                    x = P(P(x))
                else:
                    if x is L(P(x)):
                        x = P(x)
                        self._rotate_right(x)
                    self._set_black(P(x), True)
                    self._set_black(P(P(x)), False)
                    self._rotate_left(P(P(x)))
        assert self._root is not None
        self._root.black = True


class DescribedOrder:
    """Replays ``describeSubtopology`` for one sub-topology: node order, successor and predecessor order."""

    def __init__(self, names: Sequence[str], predecessors: Callable[[str], Sequence[str]]) -> None:
        self.sizes: dict[str, int] = dict.fromkeys(names, 1)
        known = set(names)
        compare = self._compare
        self._succ: dict[str, JavaTreeSet[str]] = {n: JavaTreeSet(compare) for n in names}
        self._pred: dict[str, JavaTreeSet[str]] = {n: JavaTreeSet(compare) for n in names}
        self._pred_list: dict[str, list[str]] = {n: [] for n in names}
        for name in hash_order(names):
            for parent in predecessors(name):
                if parent not in known:
                    continue
                self._pred[name].add(parent)
                self._pred_list[name].append(parent)
                self._succ[parent].add(name)
                self._update_size(parent, self.sizes[name])
        self.nodes = sorted(names, key=lambda n: (-self.sizes[n], n))

    def _compare(self, a: str, b: str) -> int:
        if a == b:
            return 0
        sa, sb = self.sizes[a], self.sizes[b]
        if sa != sb:
            return sb - sa
        return -1 if a < b else 1

    def _update_size(self, name: str, delta: int) -> None:
        self.sizes[name] += delta
        for parent in list(self._pred[name]):
            self._update_size(parent, delta)

    def successors(self, name: str) -> list[str]:
        return list(self._succ[name])

    def predecessors(self, name: str) -> list[str]:
        return list(self._pred[name])
