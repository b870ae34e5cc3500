"""The DSL versions of the comparison's workloads compute what the Processor API versions do (same records out).

Not a timing: it keeps ``DSL_WORKLOADS`` honest, since ``compare.py`` sets its figures beside the Processor API's
and Kafka Streams' DSL. Runs both through streamproc's ``TopologyTestDriver`` on generated records of the
benchmark's shape (``IIIII,AAAAAA,…``), out of order, over several windows.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from bench import workloads
from streamproc import TaskConfig, Topology, TopologyTestDriver, serde_for

pytestmark = pytest.mark.bench
IN, OUT = "bench-in", "bench-out"
BYTES, LONG = serde_for("ByteArray"), serde_for("Long")


@pytest.fixture(autouse=True)
def _topics(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STREAMPROC_BENCH_INPUT", IN)
    monkeypatch.setenv("STREAMPROC_BENCH_OUTPUT", OUT)
    yield


def _records(n: int) -> list[tuple[bytes, bytes, int]]:
    rng = random.Random(17)
    out = []
    for i in range(n):
        value = f"{rng.randrange(20):05d},{rng.randrange(1_000_000):06d},padding".encode()
        out.append((f"user-{rng.randrange(30):06d}".encode(), value, 10_000 + i * 7_000 - rng.randrange(5_000)))
    return out


def _outputs(workload: str, api: str) -> list[tuple[bytes, object, int]]:
    factory = (workloads.PAPI_WORKLOADS if api == "papi" else workloads.DSL_WORKLOADS)[workload]
    value_serde = BYTES if workload == "pass_through" else LONG
    with TopologyTestDriver(factory(), TaskConfig(application_id=f"bench-{api}")) as driver:
        source = driver.create_input_topic(IN, BYTES, BYTES)
        for key, value, timestamp in _records(400):
            source.pipe_input(key, value, timestamp)
        out = driver.create_output_topic(OUT, BYTES, value_serde)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


@pytest.mark.parametrize("workload", sorted(workloads.DSL_WORKLOADS.keys() & workloads.PAPI_WORKLOADS.keys()))
def test_dsl_workload_equals_processor_api(workload: str) -> None:
    papi, dsl = _outputs(workload, "papi"), _outputs(workload, "dsl")
    assert papi, f"{workload}: the Processor API version sent nothing"
    assert dsl == papi


def _longs_sent(topology: Topology, records: list[tuple[bytes, bytes, int]]) -> list[tuple[bytes, int, int]]:
    """What a DSL-only workload with Long values out sends for ``records``, through streamproc's test driver."""
    with TopologyTestDriver(topology, TaskConfig(application_id="bench-dsl")) as driver:
        source = driver.create_input_topic(IN, BYTES, BYTES)
        for key, value, timestamp in records:
            source.pipe_input(key, value, timestamp)
        out = driver.create_output_topic(OUT, BYTES, LONG)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def test_dsl_filter_count_counts_the_kept_records_per_key() -> None:
    """``filter_count`` (DSL only): per kept record (value's 12th byte not ``0``), the key's running count."""
    records = _records(400)
    got = [(key, value) for key, value, _ in _longs_sent(workloads.dsl_filter_count(), records)]
    seen: dict[bytes, int] = {}
    expected = []
    for key, value, _ in records:
        if value[11] != ord("0"):
            seen[key] = seen.get(key, 0) + 1
            expected.append((key, seen[key]))
    assert got == expected and 0 < len(got) < len(records)


def test_dsl_window_count_counts_each_key_per_tumbling_window() -> None:
    """``window_count`` (DSL only): per record, its key's running count in its 60 s window, stamped with the latest
    timestamp the window has seen, keyed by the record's key (``toStream((windowed, count) -> windowed.key())``)."""
    records = _records(400)
    got = _longs_sent(workloads.dsl_window_count(), records)
    windows: dict[tuple[bytes, int], tuple[int, int]] = {}
    expected = []
    for key, _, timestamp in records:
        start = timestamp - timestamp % workloads.WINDOW_MS
        count, latest = windows.get((key, start), (0, timestamp))
        windows[(key, start)] = (count + 1, max(latest, timestamp))
        expected.append((key, count + 1, max(latest, timestamp)))
    assert got == expected
    assert len(windows) < len(records)  # some windows counted more than one record


def test_dsl_session_count_counts_each_key_per_session() -> None:
    """``session_count`` (DSL only): per record, a tombstone for each of its key's sessions it merges (those within the
    5-minute gap of it), then the merged session's count, keyed by the record's key."""
    records = _records(400)
    got = [(key, count) for key, count, _ in _longs_sent(workloads.dsl_session_count(), records)]
    gap = workloads.SESSION_GAP_MS
    sessions: dict[bytes, list[tuple[int, int, int]]] = {}  # key -> (end, start, count), in the store's order
    expected: list[tuple[bytes, int | None]] = []
    for key, _, timestamp in records:
        held = sessions.setdefault(key, [])
        merged = [s for s in held if s[0] >= timestamp - gap and s[1] <= timestamp + gap]
        expected += [(key, None)] * len(merged)
        start = min([timestamp, *(s[1] for s in merged)])
        end = max([timestamp, *(s[0] for s in merged)])
        session = (end, start, 1 + sum(s[2] for s in merged))
        held[:] = sorted([*(s for s in held if s not in merged), session])
        expected.append((key, session[2]))
    assert got == expected
    assert (None in {c for _, c in got}) and any(len(h) > 1 for h in sessions.values())  # merges, and gaps


def test_dsl_aggregate_sums_the_amount_per_key() -> None:
    """``aggregate`` (DSL only): per record, its key's running sum of the amounts (value bytes 6–12), stamped with
    the latest timestamp the key has seen."""
    records = _records(400)
    sums: dict[bytes, tuple[int, int]] = {}
    expected = []
    for key, value, timestamp in records:
        total, latest = sums.get(key, (0, timestamp))
        sums[key] = (total + int(value[6:12]), max(latest, timestamp))
        expected.append((key, *sums[key]))
    assert _longs_sent(workloads.dsl_aggregate(), records) == expected
