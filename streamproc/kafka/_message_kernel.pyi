"""Types of the compiled fetch loops (``_message_kernel.c``): a batch's scan against a range's end, segment fills."""

from typing import Any

SCAN_ALL: int
SCAN_ERROR: int
SCAN_PAST_END: int
SCAN_LAST_OFFSET: int

def scan(messages: list[Any], end: int) -> tuple[int, int]: ...
def fill(
    columns: Any,  # a streamproc.storage.segments.SegmentColumns, appended to in place
    messages: list[Any],
    first: int,
    max_records: int,
    max_bytes: int,
    overhead: int,
    timestamp_type_ids: dict[int, int],
) -> tuple[int, int]: ...
