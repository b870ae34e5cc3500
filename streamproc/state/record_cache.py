"""Kafka Streams' record cache at one flush: what an application with a cache large enough for the window's updates
and one commit at its end (``statestore.cache.max.bytes`` ≥ the dirty entries, ``commit.interval.ms`` ≥ the window)
sends, instead of every update (``--record-cache flush-at-end``, opt-in; the default is the cache off).

A DSL store is cached unless its ``Materialized`` says ``withCachingDisabled`` (``CachingKeyValueStore`` under
``MeteredTimestampedKeyValueStore``). A cached store does not write through: ``put`` lands in the task's cache as a
dirty entry with the record context of the write, a read sees the cache first, and the processor that owns the store
forwards nothing itself (``TimestampedTupleForwarder.maybeForward`` is a no-op when caching is on). At the commit
(``ProcessorStateManager.flushCache``, stores in registration order), each dirty entry, in the order of its key's
last write (``NamedCache`` moves a re-dirtied key to the end of its ``LinkedHashSet``), is:

1. compared with the store underneath: its old value read when the new one is a tombstone or the processor sends old
   values; a tombstone for a key the store does not hold is neither written nor sent
   (``CachingKeyValueStore.putAndMaybeForward``);
2. written to the store underneath with the entry's record context installed, so its changelog record carries that
   write's timestamp, as the uncached write had;
3. forwarded from the owning processor's node as ``Change(new, old if sending old values)``, stamped with the new
   value's timestamp, or the entry's own for a tombstone, with the entry's headers
   (``TimestampedCacheFlushListener.apply``).

So the changelog is the last write per key in the order of those last writes (what ``changelog_reduction`` already
gives), and downstream processors see one update per key, whose old value is the one before the window, not the
previous update. Only the processors that know the cache take part (they register a :class:`FlushListener`);
a cached store nobody registered for is refused by :func:`RecordCaches.check` with the store's name, never run as if
uncached: its owner would send every update where Kafka Streams sends one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from streamproc.engine.records import ProcessorRecordContext
from streamproc.errors import ConfigError, StateError
from streamproc.state.stores import (
    TimestampedKeyValueStore,
    TimestampedWindowStore,
    TimeWindow,
    ValueAndTimestamp,
    Windowed,
)

#: ``--record-cache`` values: every update sent (Kafka Streams with ``statestore.cache.max.bytes=0``), or one flush.
RECORD_CACHE_OFF = "off"
RECORD_CACHE_FLUSH_AT_END = "flush-at-end"
RECORD_CACHE_MODES = (RECORD_CACHE_OFF, RECORD_CACHE_FLUSH_AT_END)


def check_record_cache_mode(mode: str) -> str:
    """The mode, or one line naming the choices."""
    if mode not in RECORD_CACHE_MODES:
        raise ConfigError(f"record cache {mode!r}: expected one of {', '.join(RECORD_CACHE_MODES)}")
    return mode


@dataclass(slots=True)
class DirtyEntry:
    """``LRUCacheEntry`` of a dirty write: the new value and the record context of the write."""

    value: ValueAndTimestamp[Any] | None
    context: ProcessorRecordContext


class FlushListener(Protocol):
    """What forwards a flushed entry (the DSL's ``TimestampedCacheFlushListener``, in ``processor_support``)."""

    send_old_values: bool

    def apply(
        self,
        key: Any,
        new: ValueAndTimestamp[Any] | None,
        old: ValueAndTimestamp[Any] | None,
        entry: ProcessorRecordContext,
    ) -> None: ...


class CachingTimestampedKeyValueStore(TimestampedKeyValueStore[Any, Any]):
    """``CachingKeyValueStore`` over a timestamped key-value store: a second view of the same bytes store and store
    context, whose writes wait in :attr:`dirty` until :meth:`flush_cache`."""

    def __init__(self, inner: TimestampedKeyValueStore[Any, Any], task_context: Any) -> None:
        super().__init__(inner.name, inner.bytes_store, inner.key_serde, inner.value_serde, inner.context)
        self.inner = inner
        self.task_context = task_context
        #: serialized key → entry, in the order of each key's last write (dicts keep insertion order)
        self.dirty: dict[bytes, DirtyEntry] = {}
        self.listener: FlushListener | None = None

    def set_flush_listener(self, listener: FlushListener) -> bool:
        """``WrappedStateStore.setFlushListener``: True, the store caches (its owner stops forwarding)."""
        self.listener = listener
        return True

    # -- reads: the cache first ----------------------------------------------------------------------------------

    def get_for_update(self, key: Any) -> tuple[bytes, ValueAndTimestamp[Any] | None]:
        raw_key = self._key(key)
        entry = self.dirty.get(raw_key)
        if entry is not None:
            return raw_key, entry.value
        return super().get_for_update(key)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        return self.get_for_update(key)[1]

    def range(self, key_from: Any, key_to: Any) -> Iterator[tuple[Any, ValueAndTimestamp[Any]]]:
        raise _unsupported(self.name, "range")

    def all(self) -> Iterator[tuple[Any, ValueAndTimestamp[Any]]]:
        raise _unsupported(self.name, "all")

    # -- writes: into the cache ----------------------------------------------------------------------------------

    def _write(self, key: bytes, value: ValueAndTimestamp[Any] | None) -> None:
        if value is not None and value.value is None:
            value = None  # ValueAndTimestamp.make(null, ts) is null: the cache holds a tombstone
        dirty = self.dirty
        dirty.pop(key, None)  # a re-dirtied key moves to the end (NamedCache.put)
        dirty[key] = DirtyEntry(value, self.task_context.record_context)

    put_serialized = _write

    def put(self, key: Any, value: ValueAndTimestamp[Any] | None) -> None:
        self.put_serialized(self._key(key), value)

    def put_if_absent(self, key: Any, value: ValueAndTimestamp[Any] | None) -> ValueAndTimestamp[Any] | None:
        raw_key, old = self.get_for_update(key)
        if old is None:
            self.put_serialized(raw_key, value)
        return old

    def delete(self, key: Any) -> ValueAndTimestamp[Any] | None:
        raw_key, old = self.get_for_update(key)
        self.put_serialized(raw_key, None)
        return old

    # -- the commit ----------------------------------------------------------------------------------------------

    def flush_cache(self) -> int:
        """Write and forward every dirty entry (see the module doc); returns how many were forwarded."""
        entries, self.dirty = self.dirty, {}  # cleared first: the listener may write again (re-entrant)
        inner = self.inner

        def old(raw_key: bytes) -> ValueAndTimestamp[Any] | None:
            return inner._decode(inner.bytes_store.get(raw_key))

        def write(raw_key: bytes, new: ValueAndTimestamp[Any] | None) -> Any:
            inner.put_serialized(raw_key, new)
            return self._from_key(raw_key)  # the metered layer deserializes the flushed key (``entry.key().get()``)

        return flush_entries(self.name, self.listener, self.task_context, entries, old, write)


class CachingTimestampedWindowStore(TimestampedWindowStore[Any, Any]):
    """``CachingWindowStore`` over a timestamped window store: writes wait per (key, window start) in the order of
    their last write (``put`` keys the cache by the window's store key with sequence number 0) until
    :meth:`flush_cache`, which writes them underneath with their record context (a write to an expired segment is
    dropped there, as the uncached write would be) and forwards ``Windowed(key, window)`` updates."""

    def __init__(self, inner: TimestampedWindowStore[Any, Any], task_context: Any) -> None:
        super().__init__(
            inner.name,
            inner.segments,
            inner.key_serde,
            inner.value_serde,
            window_size_ms=inner.window_size_ms,
            retain_duplicates=inner.retain_duplicates,
            context=inner.context,
        )
        self.inner = inner
        self.task_context = task_context
        #: (serialized key, window start) → entry, in the order of each window's last write
        self.dirty: dict[tuple[bytes, int], DirtyEntry] = {}
        self.listener: FlushListener | None = None

    def set_flush_listener(self, listener: FlushListener) -> bool:
        """``WrappedStateStore.setFlushListener``: True, the store caches (its owner stops forwarding)."""
        self.listener = listener
        return True

    def fetch_at(self, key: Any, window_start: int) -> Any:
        entry = self.dirty.get((self._key(key), window_start))
        if entry is not None:
            return entry.value
        return self.inner.fetch_at(key, window_start)

    def put(self, key: Any, value: Any, window_start: int) -> None:
        if value is not None and value.value is None:
            value = None  # ValueAndTimestamp.make(null, ts) is null: the cache holds a tombstone
        where = (self._key(key), window_start)
        dirty = self.dirty
        dirty.pop(where, None)  # a re-dirtied window moves to the end (NamedCache.put)
        dirty[where] = DirtyEntry(value, self.task_context.record_context)

    def fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Any]]:
        raise _unsupported(self.name, "fetch")

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed[Any], Any]]:
        raise _unsupported(self.name, "fetch_all")

    def all(self) -> Iterator[tuple[Windowed[Any], Any]]:
        raise _unsupported(self.name, "all")

    def flush_cache(self) -> int:
        """``CachingWindowStore.putAndMaybeForward`` for every dirty window (see the module doc)."""
        entries, self.dirty = self.dirty, {}
        inner = self.inner

        def old(where: tuple[bytes, int]) -> Any:
            return inner.fetch_at(self._from_key(where[0]), where[1])

        def write(where: tuple[bytes, int], new: ValueAndTimestamp[Any] | None) -> Any:
            key, start = self._from_key(where[0]), where[1]
            inner.put(key, new, start)
            return Windowed(key, TimeWindow(start, start + self.window_size_ms))

        return flush_entries(self.name, self.listener, self.task_context, entries, old, write)


def flush_entries(
    store: str,
    listener: FlushListener | None,
    context: Any,
    entries: Mapping[Any, DirtyEntry],
    old_of: Callable[[Any], ValueAndTimestamp[Any] | None],
    write: Callable[[Any, ValueAndTimestamp[Any] | None], Any],
) -> int:
    """``putAndMaybeForward`` of each dirty entry in order (the rule both caching stores share): the old value read
    underneath when the new one is a tombstone or old values are sent; a tombstone for what the store does not hold
    skipped; else, with the entry's record context installed, ``write`` (the store underneath and its changelog;
    returns the key to forward) then the listener's forward. Returns how many were forwarded."""
    if listener is None:
        raise StateError(f"store {store}: cached, but no processor registered to forward its flush")
    sent = 0
    for where, entry in entries.items():
        new = entry.value
        old = old_of(where) if new is None or listener.send_old_values else None
        if new is None and old is None:
            continue
        current = context.record_context
        context.record_context = entry.context
        try:
            key = write(where, new)
            listener.apply(key, new, old, entry.context)
        finally:
            context.record_context = current
        sent += 1
    return sent


def _unsupported(store: str, operation: str) -> StateError:
    return StateError(
        f"store {store}: {operation}() over a cached store is not emulated by --record-cache "
        f"{RECORD_CACHE_FLUSH_AT_END}; run with --record-cache {RECORD_CACHE_OFF}"
    )


class RecordCaches:
    """A task's cached stores, wrapped in registration order, flushed together at the task's commit."""

    def __init__(self, caches: Sequence[CachingTimestampedKeyValueStore | CachingTimestampedWindowStore]) -> None:
        self.caches = tuple(caches)

    @classmethod
    def install(cls, stores: MutableMapping[str, Any], cached: Sequence[str], task_context: Any) -> RecordCaches:
        """Replace each store named in ``cached`` (registration order) by its caching view in ``stores``."""
        caches: list[CachingTimestampedKeyValueStore | CachingTimestampedWindowStore] = []
        for name in cached:
            store = stores[name]
            cache: CachingTimestampedKeyValueStore | CachingTimestampedWindowStore
            if type(store) is TimestampedKeyValueStore:
                cache = CachingTimestampedKeyValueStore(store, task_context)
            elif type(store) is TimestampedWindowStore:
                cache = CachingTimestampedWindowStore(store, task_context)
            else:
                raise ConfigError(
                    f"store {name}: --record-cache {RECORD_CACHE_FLUSH_AT_END} emulates the cache of the DSL's "
                    f"aggregations (count, aggregate, reduce, windowed by TimeWindows too); this store is a "
                    f"{store.store_type.value} store, cached in Kafka Streams too: run with --record-cache "
                    f"{RECORD_CACHE_OFF}, or materialize it withCachingDisabled()"
                )
            stores[name] = cache
            caches.append(cache)
        return cls(caches)

    def check(self) -> None:
        """After the processors' ``init``: every cached store has the processor that forwards its flush."""
        for cache in self.caches:
            if cache.listener is None:
                raise ConfigError(
                    f"store {cache.name}: cached in Kafka Streams (the DSL's default), but its processor is not one "
                    f"--record-cache {RECORD_CACHE_FLUSH_AT_END} emulates (count, aggregate, reduce of a grouped "
                    f"stream): run with --record-cache {RECORD_CACHE_OFF}, or materialize it withCachingDisabled()"
                )

    def flush(self) -> int:
        """``ProcessorStateManager.flushCache``: every store's cache in registration order; the records forwarded."""
        return sum(cache.flush_cache() for cache in self.caches)


def cached_store_names(definitions: Sequence[Any], stores: Mapping[str, Any]) -> list[str]:
    """The task's stores built with caching, in registration order."""
    return [d.name for d in definitions if getattr(d, "caching_enabled", False) and d.name in stores]


def check_cached_stores(topology: Any, mode: str) -> None:
    """Before Spark starts (the driver): under ``flush-at-end`` every cached store is a timestamped key-value store
    or timestamped window store connected to a processor that forwards through its cache (a supplier with
    ``forwards_through_cache``: the DSL's grouped-stream ``count``/``aggregate``/``reduce``, windowed by
    ``TimeWindows`` too), else one line naming the store; the executors check again
    after ``init`` (:meth:`RecordCaches.check`)."""
    if mode == RECORD_CACHE_OFF:
        return
    connected: dict[str, list[Any]] = {}
    for node in topology.nodes:
        supplier = getattr(node, "supplier", None)
        for store_name in topology.stores_of(node.name):
            connected.setdefault(store_name, []).append(supplier)
    builders = topology.store_builders()
    for name, builder in builders.items():
        if not getattr(builder, "caching_enabled", False):
            continue
        kind = getattr(getattr(builder, "store_type", None), "value", "unknown")
        owned = any(getattr(s, "forwards_through_cache", False) for s in connected.get(name, ()))
        emulated = (TimestampedKeyValueStore.store_type.value, TimestampedWindowStore.store_type.value)
        if kind not in emulated or not owned:
            raise ConfigError(
                f"store {name} ({kind}) is cached in Kafka Streams (the DSL's default); --record-cache "
                f"{RECORD_CACHE_FLUSH_AT_END} emulates the cache of a grouped stream's count, aggregate and reduce "
                "(windowed by TimeWindows too) only: run with --record-cache "
                f"{RECORD_CACHE_OFF}, or materialize the store withCachingDisabled()"
            )
