"""Types of the compiled fetch loops (``_message_kernel.c``): a batch's scan against a range's end, segment fills,
librdkafka's messages consumed and read in place; and the hand-off's produce loop over Arrow's buffers."""

from typing import Any, overload

SCAN_ALL: int
SCAN_ERROR: int
SCAN_PAST_END: int
SCAN_LAST_OFFSET: int

def scan(messages: list[Any] | Batch, end: int) -> tuple[int, int]: ...
def fill(
    columns: Any,  # a streamproc.storage.segments.SegmentColumns, appended to in place
    messages: list[Any] | Batch,
    first: int,
    max_records: int,
    max_bytes: int,
    overhead: int,
    timestamp_type_ids: dict[int, int],
) -> tuple[int, int]: ...

class Batch:
    """librdkafka messages of one ``consume``, valid until ``release`` (a slice is a view of the first ``k``)."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int) -> Any: ...  # a view with confluent-kafka Message's methods
    @overload
    def __getitem__(self, index: slice) -> Batch: ...
    def release(self) -> None: ...
    def offsets(self) -> list[int]: ...

def bind(addresses: tuple[int, ...], kafka_error: type) -> None: ...
def consume(queue: int, timeout_ms: int, max_messages: int) -> Batch: ...
def produce(
    producer: int,
    topic: bytes,
    partition: int,
    first: int,
    rows: int,
    timestamps: tuple[Any, int],  # (int64 data buffer, array offset)
    keys: tuple[Any, Any, Any, int],  # (validity buffer or None, int32 offsets, data, array offset)
    values: tuple[Any, Any, Any, int],
) -> tuple[int, int]: ...
