"""Fetch: copy each planned ``[start, end)`` range from Kafka to object storage as proved segments.

Each range is streamed into segments, each proved complete (every offset present or explained) before it and its
manifest are written (``range_fetch``); a retry fetches only the sub-ranges still missing, to identical bytes.
Many ranges run in threads or worker processes (``parallel``); the values of the step are in ``ranges``.
"""

from streamproc.fetch.parallel import fetch_plan, fetch_ranges
from streamproc.fetch.range_fetch import fetch_range
from streamproc.fetch.ranges import FETCH_LIMITS, FetchRange, RangeFetchResult, check_disjoint, planned_ranges

__all__ = [
    "FETCH_LIMITS",
    "FetchRange",
    "RangeFetchResult",
    "check_disjoint",
    "fetch_plan",
    "fetch_range",
    "fetch_ranges",
    "planned_ranges",
]
