"""The built-in persistent store kinds streamproc writes in Kafka Streams' layout (state.md §6.2).

Names follow ``Stores.persistent*Store``/``BuiltInDslStoreSuppliers`` (4.2.0). Versioned, emit-final time-ordered
and list-value stores use other layouts and are out of scope for v1; the suppress buffer is in memory only.
"""

from __future__ import annotations

import enum


class StoreType(enum.Enum):
    """One built-in RocksDB store kind; the value is the spelling used in plans and scenario files."""

    KEY_VALUE = "key_value"
    TIMESTAMPED_KEY_VALUE = "timestamped_key_value"
    WINDOW = "window"
    TIMESTAMPED_WINDOW = "timestamped_window"
    SESSION = "session"
    #: The suppress buffer (``InMemoryTimeOrderedKeyValueChangeBuffer``): in memory only, rebuilt from its changelog.
    TIME_ORDERED_KEY_VALUE_BUFFER = "time_ordered_key_value_buffer"

    @property
    def timestamped(self) -> bool:
        """Values carry an 8-byte timestamp prefix (``ValueAndTimestampSerializer``)."""
        return self in (StoreType.TIMESTAMPED_KEY_VALUE, StoreType.TIMESTAMPED_WINDOW)

    @property
    def segmented(self) -> bool:
        """One RocksDB per time segment (``AbstractSegments``)."""
        return self in (StoreType.WINDOW, StoreType.TIMESTAMPED_WINDOW, StoreType.SESSION)

    @property
    def windowed(self) -> bool:
        """Keys follow ``WindowKeySchema`` (key ‖ window start ‖ seqnum)."""
        return self in (StoreType.WINDOW, StoreType.TIMESTAMPED_WINDOW)
