"""Types of the compiled fetch loops (``_message_kernel.c``): a batch's scan against a range's end, segment fills."""

from typing import Any

SCAN_ALL: int
SCAN_ERROR: int
SCAN_PAST_END: int
SCAN_LAST_OFFSET: int

def scan(messages: list[Any], end: int) -> tuple[int, int]: ...
def fill(
    messages: list[Any],
    first: int,
    max_records: int,
    max_bytes: int,
    overhead: int,
    timestamp_type_ids: dict[int, int],
    size_now: int,
    offsets: list[int],
    timestamps: list[int],
    timestamp_types: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
    header_offsets: list[int],
    header_keys: list[str],
    header_values: list[bytes | None],
    leader_epochs: list[int | None],
) -> tuple[int, int, int]: ...
