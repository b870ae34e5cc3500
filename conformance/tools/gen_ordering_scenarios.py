"""Generate the project's own ordering scenarios (``conformance/scenarios/c*.json``) from real Kafka Streams.

Each scenario below is an input (shared format, ``../shared/spec/scenarios/README.md`` section ``ordering/``) plus
a *prediction*: the facts that ordering.md's rules give for it, written by hand (tie orders and punctuation-heap
orders come from :func:`pg4_order`/:func:`pg4_punctuations`, a literal transcription of the PG-4 heap algorithm).
The script runs every input through the Kafka Streams 4.2.2 task-level oracle in one JVM (``batch`` mode), checks
the oracle's result against the prediction, and writes the oracle's result as ``expected``. A scenario whose
oracle result contradicts its prediction is written with ``"expected"`` = Kafka's result and listed on stderr, so
that it can be written up in ``conformance/FINDINGS.md``: Kafka Streams wins.

    python3 conformance/tools/gen_ordering_scenarios.py   # needs conformance/target/streamproc-oracle.jar
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "conformance" / "scenarios"
JAR = ROOT / "conformance" / "target" / "streamproc-oracle.jar"

FAIL_TS = "FailOnInvalidTimestamp"
SKIP_TS = "LogAndSkipOnInvalidTimestamp"
USE_PT = "UsePartitionTimeOnInvalidTimestamp"
WALL = "WallclockTimestampExtractor"
DE_FAIL = "LogAndFailExceptionHandler"
DE_CONT = "LogAndContinueExceptionHandler"
PE_FAIL = "LogAndFailProcessingExceptionHandler"
PE_CONT = "LogAndContinueProcessingExceptionHandler"
STREAMS_EXCEPTION = "org.apache.kafka.streams.errors.StreamsException"
DESER_FAIL_MSG = (
    "Deserialization exception handler is set to fail upon a deserialization error. If you would rather have the "
    "streaming pipeline continue after a deserialization error, please set the deserialization.exception.handler "
    "appropriately."
)
NEGATIVE_TAIL = "has invalid (negative) timestamp. Possibly because a pre-0.10 producer client was used"
UNKNOWN_PT_TAIL = "because partition time is unknown."

REFERENCE = (
    "Kafka Streams 4.2.2 (Maven Central kafka-streams 4.2.2): the real StreamTask driven by the task-level oracle "
    "(conformance/, TaskRunner), stepped per ordering.md section 9.1; prediction derived by hand from ordering.md "
    "first (conformance/tools/gen_ordering_scenarios.py)."
)
NOTE_DETERMINISTIC = "Deterministic in Kafka Streams as well: no tie, no wall clock, no punctuation timing involved."
NOTE_TIE = (
    "The order among equal timestamps follows the java.util.PriorityQueue layout (PG-4), whose history in a live "
    "run depends on fetch order (PG-5); this result holds under D-1 (partitions added once, in list order) and is "
    "what the real StreamTask produces under that decision. A full KafkaStreams run may differ."
)
NOTE_PUNCT = (
    "Punctuation timing holds under D-3 (one stream-time check after every step, as TopologyTestDriver does); a "
    "live thread checks after batches of records (ST-4) and can merge due times. Confirmed on the real StreamTask "
    "under D-3, not in a live run."
)
NOTE_RESTORED = (
    "Holds under D-5 (one stream-time check before the first record when a partition time was restored); a live "
    "restart normally does the same because inputs stay paused until the task runs (ST-8). Confirmed on the real "
    "StreamTask, not in a live restart."
)
NOTE_WALL = (
    "WallclockTimestampExtractor reads System.currentTimeMillis(), which the oracle cannot freeze: it substitutes "
    "an extractor returning the frozen clock (D-4), so this checks the merge and tie logic under D-4, not the real "
    "extractor class."
)


# --------------------------------------------------------------------------------------------------- building


def rec(offset: int, ts: int, key: str | None = "k", value: str | None = "", **extra: Any) -> dict[str, Any]:
    """One input record; ``value`` defaults to ``v<offset>``."""
    r: dict[str, Any] = {"offset": offset, "timestamp": ts, "key": key, "value": value if value != "" else f"v{offset}"}
    if extra.pop("corrupt", False):
        r["value"] = "<corrupt>"
        r["corrupt"] = True
    if extra.pop("fail", False):
        r["fail_processing"] = True
    if "headers" in extra:
        r["headers"] = extra.pop("headers")
    if "value_exact" in extra:
        r["value"] = extra.pop("value_exact")
    if "txn" in extra:
        r["txn"] = extra.pop("txn")
    if "leader_epoch" in extra:
        r["leader_epoch"] = extra.pop("leader_epoch")
    assert not extra, extra
    return r


def ctl(offset: int, txn: str, *, abort: bool = False) -> dict[str, Any]:
    """The commit or abort marker of transaction ``txn`` at ``offset`` (a control batch: one offset, no record)."""
    return {"offset": offset, "control": "ABORT" if abort else "COMMIT", "txn": txn}


def part(
    topic: str,
    timestamps: list[int] | None = None,
    *,
    records: list[dict[str, Any]] | None = None,
    committed: int | None = None,
) -> dict[str, Any]:
    if records is None:
        records = [rec(i, ts) for i, ts in enumerate(timestamps or [])]
    p: dict[str, Any] = {"topic": topic, "partition": 0, "records": records}
    if committed is not None:
        p["committed_partition_time"] = committed
    return p


def config(
    ts: str = FAIL_TS,
    de: str = DE_FAIL,
    pe: str = PE_FAIL,
    wall: int | None = None,
    *,
    guarantee: str | None = None,
    isolation: str | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "timestamp_extractor": ts,
        "deserialization_exception_handler": de,
        "processing_exception_handler": pe,
        "max_task_idle_ms": 0,
    }
    if wall is not None:
        c["virtual_wall_clock_ms"] = wall
    if guarantee is not None:
        c["processing_guarantee"] = guarantee
    if isolation is not None:
        c["isolation_level"] = isolation
    return c


def stream(interval: int, start: int | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"type": "STREAM_TIME", "interval_ms": interval}
    if start is not None:
        p["start_ms"] = start
    return p


def wall_clock(interval: int) -> dict[str, Any]:
    return {"type": "WALL_CLOCK_TIME", "interval_ms": interval}


# ------------------------------------------------------------------------------------- PG-4, transcribed literally


class JavaPriorityQueue:
    """ordering.md PG-4: OpenJDK's siftUp/siftDown with a key function; never moves past an equal key."""

    def __init__(self) -> None:
        self.a: list[tuple[int, Any]] = []

    def offer(self, key: int, item: Any) -> None:
        self.a.append((key, item))
        k = len(self.a) - 1
        x = self.a[k]
        while k > 0:
            parent = (k - 1) // 2
            if x[0] >= self.a[parent][0]:
                break
            self.a[k] = self.a[parent]
            k = parent
        self.a[k] = x

    def peek(self) -> tuple[int, Any]:
        return self.a[0]

    def poll(self) -> tuple[int, Any]:
        result = self.a[0]
        x = self.a.pop()
        n = len(self.a)
        if n > 0:
            k = 0
            while k < n // 2:
                c = 2 * k + 1
                if c + 1 < n and self.a[c][0] > self.a[c + 1][0]:
                    c += 1
                if x[0] <= self.a[c][0]:
                    break
                self.a[k] = self.a[c]
                k = c
            self.a[k] = x
        return result

    def __len__(self) -> int:
        return len(self.a)


def pg4_order(partitions: list[dict[str, Any]]) -> tuple[list[str], list[int]]:
    """PG-3/PG-4/PG-6 for valid records only: order as ``topic@offset`` and stream time after each."""
    heap = JavaPriorityQueue()
    queues = {p["topic"]: list(p["records"]) for p in partitions}
    stream_time = max([-1] + [p.get("committed_partition_time", -1) for p in partitions])
    for p in partitions:
        if queues[p["topic"]]:
            heap.offer(queues[p["topic"]][0]["timestamp"], p["topic"])
    order: list[str] = []
    times: list[int] = []
    while len(heap):
        _, topic = heap.poll()
        r = queues[topic].pop(0)
        if queues[topic]:
            heap.offer(queues[topic][0]["timestamp"], topic)
        stream_time = max(stream_time, r["timestamp"])
        order.append(f"{topic}@{r['offset']}")
        times.append(stream_time)
    return order, times


def pg4_punctuations(schedules: list[int], stream_times: list[int]) -> list[tuple[int, int, int]]:
    """ST-2/ST-3/ST-5 for plain STREAM_TIME schedules (first due 0): (timestamp, after_record_index, schedule)."""
    heap = JavaPriorityQueue()
    for i, _ in enumerate(schedules):
        heap.offer(0, i)
    fired: list[tuple[int, int, int]] = []
    for index, now in enumerate(stream_times):
        while len(heap) and heap.peek()[0] <= now:
            due, s = heap.poll()
            fired.append((now, index, s))
            interval = schedules[s]
            nxt = due + interval if now < due + interval else due + ((now - due) // interval + 1) * interval
            heap.offer(nxt, s)
    return fired


# --------------------------------------------------------------------------------------------------- scenarios

SCENARIOS: list[dict[str, Any]] = []


def scenario(
    sid: str,
    title: str,
    description: str,
    rules: list[str],
    cfg: dict[str, Any],
    partitions: list[dict[str, Any]],
    predict: dict[str, Any],
    *,
    confidence: str,
    notes: str,
    punctuations: list[dict[str, Any]] | None = None,
    extras: tuple[str, ...] = (),
    contains: list[str] | None = None,
) -> None:
    s: dict[str, Any] = {
        "id": sid,
        "kind": "ordering",
        "name": sid,
        "title": title,
        "description": description,
        "reference": REFERENCE,
        "rules": rules,
        "config": cfg,
        "partitions": partitions,
    }
    if punctuations is not None:
        s["punctuations"] = punctuations
    skeleton: dict[str, Any] = {key: [] for key in extras}
    if contains is not None:
        skeleton["error"] = {"kafka_message_contains": contains}
    s["expected"] = skeleton
    s["confidence"] = confidence
    s["notes"] = notes
    SCENARIOS.append({"scenario": s, "predict": predict})


def tie(sid: str, title: str, desc: str, parts: list[dict[str, Any]], rules: list[str] | None = None) -> None:
    order, times = pg4_order(parts)
    scenario(
        sid,
        title,
        desc + f" PG-4 gives {', '.join(order)}.",
        rules or ["PG-1", "PG-3", "PG-4", "PG-5", "D-1"],
        config(),
        parts,
        {"order": order, "stream_time_after_each": times, "dropped": [], "skip_steps": []},
        confidence="low",
        notes=NOTE_TIE,
    )


def topics(n: int, timestamps: list[int]) -> list[dict[str, Any]]:
    return [part(f"t{i}", timestamps) for i in range(n)]


def build() -> None:  # noqa: C901 - one flat list of cases reads best
    # ---- ties across 2..8 partitions of several topics
    tie(
        "c01-tie-two-topics-three-each",
        "Two topics, three equal timestamps each, strictly alternate",
        "All six records have timestamp 5. PG-4: the re-offered queue never sifts above an equal parent, so two "
        "queues take turns.",
        topics(2, [5, 5, 5]),
    )
    tie(
        "c02-tie-three-topics-uneven-lengths",
        "Three topics of 1, 3 and 2 equal-timestamp records",
        "All timestamps 7. t0 drains after one record, which changes which queue is moved to the root.",
        [part("t0", [7]), part("t1", [7, 7, 7]), part("t2", [7, 7])],
    )
    tie(
        "c03-tie-five-topics-two-each",
        "Five topics with two equal-timestamp records each",
        "All ten records have timestamp 3 (the o03 shape on distinct topics).",
        topics(5, [3, 3]),
    )
    tie(
        "c04-tie-six-topics-one-each",
        "Six single-record topics with equal timestamps",
        "Each poll moves the last array element to the root and sifts it down; with single-record queues the order "
        "is fixed by the array layout alone.",
        topics(6, [1]),
    )
    tie(
        "c05-tie-seven-topics-two-each",
        "Seven topics with two equal-timestamp records each",
        "All timestamps 0 (0 is a valid timestamp, RQ-5).",
        topics(7, [0, 0]),
    )
    tie(
        "c06-tie-eight-topics-one-each",
        "Eight single-record topics with equal timestamps",
        "All timestamps 9; a full three-level heap.",
        topics(8, [9]),
    )
    tie(
        "c07-tie-eight-topics-three-each",
        "Eight topics with three equal-timestamp records each",
        "All 24 records have timestamp 4.",
        topics(8, [4, 4, 4]),
    )
    tie(
        "c08-tie-topic-names-by-code-point",
        "Upper-case topic names sort before lower-case ones (D-1 order)",
        "Topics A, B, a, b (ascending by code point, the D-1 insertion order), one record each at timestamp 2: the "
        "o04 pattern p0, p3, p2, p1 on these names.",
        [part(t, [2]) for t in ("A", "B", "a", "b")],
    )
    tie(
        "c09-tie-subsets-among-distinct-timestamps",
        "Ties among subsets of four topics with distinct timestamps",
        "Heads change between 1, 2 and 3; only equal heads tie, and the tie goes by heap position.",
        [part("t0", [1, 3, 3]), part("t1", [3, 3]), part("t2", [2, 3]), part("t3", [3])],
    )
    tie(
        "c10-tie-reappears-after-drain",
        "A tie that forms again after a queue drains",
        "t0 drains early; t1 and t2 meet at equal timestamps twice.",
        [part("t0", [1, 2]), part("t1", [2, 5, 5]), part("t2", [3, 5, 5])],
    )

    # ---- interleaved out-of-order timestamps
    for sid, title, desc, parts in [
        (
            "c11-out-of-order-two-topics-interleaved",
            "Out-of-order timestamps in two topics merge by head timestamp",
            "Each step takes the smallest head timestamp (PG-1), offsets stay in order inside a partition (RQ-1), and "
            "stream time is the running maximum (PG-6).",
            [part("a", [5, 1, 9, 2]), part("b", [3, 8, 4])],
        ),
        (
            "c12-out-of-order-three-topics-late-records",
            "Late records in three topics never lower stream time",
            "A late head is still chosen when it is the smallest head; stream time does not go back (PG-6).",
            [part("a", [10, 2, 30]), part("b", [20, 1]), part("c", [15, 40, 3])],
        ),
        (
            "c13-head-not-partition-time-after-jump",
            "The heap key is the head timestamp, not the partition time",
            "After a jumps to 100 its next head is 6, which is chosen before b's 50 (PG-1, not the seed's "
            "partition-time ordering).",
            [part("a", [1, 100, 6, 7]), part("b", [50, 60])],
        ),
    ]:
        order, times = pg4_order(parts)
        scenario(
            sid,
            title,
            desc + f" Order: {', '.join(order)}.",
            ["PG-1", "PG-3", "PG-6", "RQ-1", "RQ-7"],
            config(),
            parts,
            {"order": order, "stream_time_after_each": times, "dropped": [], "skip_steps": []},
            confidence="high",
            notes=NOTE_DETERMINISTIC,
        )

    # ---- corrupt heads, middles and tails, both deserialization handlers
    scenario(
        "c14-corrupt-two-at-head-continue",
        "Two corrupt records at the head are skipped at addRecords",
        "LogAndContinue: updateHead drops a@0 and a@1 while a is added (RQ-9 item 3, before_record_index 0) and makes "
        "a@2 the head; no placeholder because a valid record follows (RQ-6).",
        ["RQ-2", "RQ-3", "RQ-6", "RQ-9", "DE-1", "DE-2"],
        config(de=DE_CONT),
        [part("a", records=[rec(0, 1, corrupt=True), rec(1, 2, corrupt=True), rec(2, 4), rec(3, 6)]), part("b", [5])],
        {
            "order": ["a@2", "b@0", "a@3"],
            "stream_time_after_each": [4, 5, 6],
            "dropped": [("a", 0, "deserialization", 0), ("a", 1, "deserialization", 0)],
            "skip_steps": [],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c15-corrupt-middle-continue",
        "Corrupt records in the middle are skipped while the previous one is polled",
        "LogAndContinue: a@1 and a@2 are dropped while a@0 is polled, before a@0 is processed (RQ-9 item 1); a@3 "
        "becomes the head, so there is no placeholder step.",
        ["RQ-2", "RQ-6", "RQ-9", "DE-1"],
        config(de=DE_CONT),
        [part("a", records=[rec(0, 1), rec(1, 9, corrupt=True), rec(2, 9, corrupt=True), rec(3, 2)]), part("b", [3])],
        {
            "order": ["a@0", "a@3", "b@0"],
            "stream_time_after_each": [1, 2, 3],
            "dropped": [("a", 1, "deserialization", 0), ("a", 2, "deserialization", 0)],
            "skip_steps": [],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c16-corrupt-two-at-tail-continue",
        "Two trailing corrupt records leave one placeholder for the last",
        "LogAndContinue: polling a@1 drops a@2 and a@3 and leaves a CorruptedRecord for offset 3 (RQ-6, timestamp "
        "-1), which sorts first and is consumed as a skip step before b@0; stream time is unchanged by it.",
        ["RQ-6", "PG-1", "PG-6", "ST-1"],
        config(de=DE_CONT),
        [part("a", records=[rec(0, 1), rec(1, 2), rec(2, 3, corrupt=True), rec(3, 4, corrupt=True)]), part("b", [10])],
        {
            "order": ["a@0", "a@1", "b@0"],
            "stream_time_after_each": [1, 2, 10],
            "dropped": [("a", 2, "deserialization", 1), ("a", 3, "deserialization", 1)],
            "skip_steps": [("a", 3, 2)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c17-corrupt-head-fail-at-add",
        "A corrupt head under LogAndFail fails addRecords before any processing",
        "LogAndFail: b's first record is deserialized when b is added (RQ-9 item 3), the handler returns FAIL and "
        "StreamsException is thrown (DE-1 step 4); a's records are buffered but none is processed.",
        ["RQ-9", "DE-1", "DE-2"],
        config(),
        [part("a", [1, 2]), part("b", records=[rec(0, 0, corrupt=True), rec(1, 0)])],
        {
            "order": [],
            "stream_time_after_each": [],
            "dropped": [],
            "skip_steps": [],
            "error": ("deserialization", "b", 0, 0),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c18-corrupt-middle-fail-blocks-preceding",
        "A corrupt middle record under LogAndFail stops its predecessor",
        "LogAndFail: b@0 is processed; then a@0 is taken, and polling it deserializes a@1, which fails (RQ-9 item "
        "2): a@0 has left the queue but is never processed.",
        ["RQ-9", "DE-1"],
        config(),
        [part("a", records=[rec(0, 5), rec(1, 5, corrupt=True), rec(2, 6)]), part("b", [1, 7])],
        {
            "order": ["b@0"],
            "stream_time_after_each": [1],
            "dropped": [],
            "skip_steps": [],
            "error": ("deserialization", "a", 1, 1),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c19-corrupt-tail-fail",
        "A corrupt last record under LogAndFail stops the record before it",
        "LogAndFail: a@0 is processed; polling a@1 deserializes a@2 and fails, so a@1 is never processed (RQ-9).",
        ["RQ-9", "DE-1"],
        config(),
        [part("a", records=[rec(0, 1), rec(1, 2), rec(2, 3, corrupt=True)])],
        {
            "order": ["a@0"],
            "stream_time_after_each": [1],
            "dropped": [],
            "skip_steps": [],
            "error": ("deserialization", "a", 2, 1),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c20-all-corrupt-partition-placeholder-first",
        "A partition of only corrupt records steps first",
        "LogAndContinue: adding b drops both records (before_record_index 0) and leaves a placeholder for b@1 with "
        "timestamp -1 (RQ-6, PG-2: the queue still enters the heap), which is the heap root: the first step is a "
        "skip step.",
        ["RQ-6", "PG-1", "PG-2", "ST-1"],
        config(de=DE_CONT),
        [part("a", [3, 3]), part("b", records=[rec(0, 1, corrupt=True), rec(1, 2, corrupt=True)])],
        {
            "order": ["a@0", "a@1"],
            "stream_time_after_each": [3, 3],
            "dropped": [("b", 0, "deserialization", 0), ("b", 1, "deserialization", 0)],
            "skip_steps": [("b", 1, 0)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c21-placeholder-step-runs-a-punctuation-check",
        "A skip step is followed by a check that does not fire",
        "LogAndContinue, STREAM_TIME every 10: fires at 10 and 20 after a@0 and a@1; polling a@1 drops a@2 and the "
        "placeholder step that follows leaves stream time at 20, so the check after it fires nothing (D-3, ST-2).",
        ["RQ-6", "ST-1", "ST-2", "ST-3", "D-3"],
        config(de=DE_CONT),
        [part("a", records=[rec(0, 10), rec(1, 20), rec(2, 30, corrupt=True)])],
        {
            "order": ["a@0", "a@1"],
            "stream_time_after_each": [10, 20],
            "dropped": [("a", 2, "deserialization", 1)],
            "skip_steps": [("a", 2, 2)],
            "punctuations_fired": [(10, 0, 0), (20, 1, 0)],
        },
        confidence="low",
        notes=NOTE_PUNCT,
        punctuations=[stream(10)],
    )

    # ---- negative timestamps under every extractor
    scenario(
        "c22-negative-fail-on-invalid-middle",
        "FailOnInvalidTimestamp on a middle record stops its predecessor",
        "a@1 has timestamp -1. It is extracted while a@0 is polled (after b@0 was processed), the extractor throws "
        "StreamsException (TE-2) and a@0 is never processed (RQ-9 item 2).",
        ["TE-2", "RQ-9"],
        config(),
        [part("a", [4, -1, 5]), part("b", [2])],
        {
            "order": ["b@0"],
            "stream_time_after_each": [2],
            "dropped": [],
            "skip_steps": [],
            "error": ("negative_timestamp", "a", 1, 1),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        contains=[NEGATIVE_TAIL],
    )
    scenario(
        "c23-negative-log-and-skip-head-middle-tail",
        "LogAndSkip drops negative records at head, middle and tail",
        "a@0 (-1) is dropped at add, a@2 (-2) while a@1 is polled, a@4 (-3) while a@3 is polled; the last drop "
        "leaves a placeholder (RQ-6, 4.0+). The extractor sees the partition time of polled records only (RQ-4).",
        ["TE-3", "RQ-4", "RQ-5", "RQ-6"],
        config(ts=SKIP_TS),
        [part("a", [-1, 3, -2, 4, -3])],
        {
            "order": ["a@1", "a@3"],
            "stream_time_after_each": [3, 4],
            "dropped": [
                ("a", 0, "negative_timestamp", 0),
                ("a", 2, "negative_timestamp", 0),
                ("a", 4, "negative_timestamp", 1),
            ],
            "skip_steps": [("a", 4, 2)],
            "extracted_timestamps": [
                ("a", 0, -1, -1),
                ("a", 1, -1, 3),
                ("a", 2, 3, -2),
                ("a", 3, 3, 4),
                ("a", 4, 4, -3),
            ],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c24-negative-use-partition-time-substitutes",
        "UsePartitionTime substitutes the partition time, per record",
        "a@1 (-1) and a@2 (-5) get the partition time 10 (a@0 polled); a@4 (-1) gets 20 (TE-4, RQ-4).",
        ["TE-4", "RQ-4"],
        config(ts=USE_PT),
        [part("a", [10, -1, -5, 20, -1])],
        {
            "order": ["a@0", "a@1", "a@2", "a@3", "a@4"],
            "stream_time_after_each": [10, 10, 10, 20, 20],
            "dropped": [],
            "skip_steps": [],
            "extracted_timestamps": [
                ("a", 0, -1, 10),
                ("a", 1, 10, 10),
                ("a", 2, 10, 10),
                ("a", 3, 10, 20),
                ("a", 4, 20, 20),
            ],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c25-negative-use-partition-time-restored",
        "UsePartitionTime uses a restored partition time for the first record",
        "Partition time 50 restored from commit metadata (ST-8): a@0 (-1) gets 50 at add; a@1 (40) keeps 40; a@2 "
        "(-7) gets max(50, 40) = 50. Stream time starts at 50 (PG-6).",
        ["TE-4", "RQ-4", "RQ-7", "ST-8"],
        config(ts=USE_PT),
        [part("a", [-1, 40, -7], committed=50)],
        {
            "order": ["a@0", "a@1", "a@2"],
            "stream_time_after_each": [50, 50, 50],
            "dropped": [],
            "skip_steps": [],
            "extracted_timestamps": [("a", 0, 50, 50), ("a", 1, 50, 40), ("a", 2, 50, 50)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c26-negative-use-partition-time-unknown-second-topic",
        "UsePartitionTime fails at add when b's time is unknown",
        "a's records are valid, but b@0 (-3) is extracted when b is added, with b's partition time -1: "
        "StreamsException 'Could not infer new timestamp …' (TE-4) from addRecords (RQ-9 item 3); a's known time does "
        "not help (per partition).",
        ["TE-4", "RQ-4", "RQ-9"],
        config(ts=USE_PT),
        [part("a", [1, 2]), part("b", [-3, 4])],
        {
            "order": [],
            "stream_time_after_each": [],
            "dropped": [],
            "skip_steps": [],
            "error": ("partition_time_unknown", "b", 0, 0),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        contains=[UNKNOWN_PT_TAIL],
    )
    scenario(
        "c27-negative-wallclock-extractor-ignores-record",
        "WallclockTimestampExtractor ignores negative record times",
        "Under D-4 every record gets the virtual wall clock 1000, whatever its (negative) broker timestamp; nothing "
        "is dropped and the equal timestamps tie (PG-4): a@0, b@0, a@1.",
        ["TE-5", "D-4", "PG-4", "RQ-4"],
        config(ts=WALL, wall=1000),
        [part("a", [-1, -5]), part("b", [-2])],
        {
            "order": ["a@0", "b@0", "a@1"],
            "stream_time_after_each": [1000, 1000, 1000],
            "dropped": [],
            "skip_steps": [],
            "extracted_timestamps": [("a", 0, -1, 1000), ("b", 0, -1, 1000), ("a", 1, 1000, 1000)],
        },
        confidence="low",
        notes=NOTE_WALL,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c28-negative-log-and-skip-whole-partition",
        "A partition of only negative timestamps yields one skip step",
        "LogAndSkip: both records of a are dropped at add and a placeholder for a@1 is left (RQ-6, since 4.0 also for "
        "negative timestamps); it is the first step, then b@0.",
        ["TE-3", "RQ-5", "RQ-6", "PG-2"],
        config(ts=SKIP_TS),
        [part("a", [-1, -2]), part("b", [5])],
        {
            "order": ["b@0"],
            "stream_time_after_each": [5],
            "dropped": [("a", 0, "negative_timestamp", 0), ("a", 1, "negative_timestamp", 0)],
            "skip_steps": [("a", 1, 0)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )
    scenario(
        "c29-zero-timestamp-is-valid-and-punctuates",
        "Timestamp 0 is valid, makes stream time known, and punctuates",
        "All records at 0 (RQ-5: the test is < 0). Stream time becomes 0, which is not UNKNOWN, so the plain "
        "schedule (first due 0) fires at 0 after the first record (ST-2, ST-6); next due 10.",
        ["RQ-5", "TE-2", "ST-2", "ST-3", "ST-6", "PG-4"],
        config(),
        [part("a", [0, 0]), part("b", [0])],
        {
            "order": ["a@0", "b@0", "a@1"],
            "stream_time_after_each": [0, 0, 0],
            "dropped": [],
            "skip_steps": [],
            "punctuations_fired": [(0, 0, 0)],
            "extracted_timestamps": [("a", 0, -1, 0), ("b", 0, -1, 0), ("a", 1, 0, 0)],
        },
        confidence="low",
        notes=NOTE_PUNCT,
        punctuations=[stream(10)],
        extras=("extracted_timestamps",),
    )

    # ---- the partition-time argument seen by extractors
    scenario(
        "c30-partition-time-arg-is-per-partition",
        "The extractor's partition time is per partition, not stream time",
        "a@1 is extracted with a's partition time 10 although stream time is 10 too; a@2 with max(10, 5) = 10; b@1 "
        "with b's 6 while stream time is only 6 (RQ-4). Extraction order follows the polls (RQ-9).",
        ["RQ-4", "RQ-9", "PG-1"],
        config(),
        [part("a", [10, 5, 7]), part("b", [6, 20])],
        {
            "order": ["b@0", "a@0", "a@1", "a@2", "b@1"],
            "stream_time_after_each": [6, 10, 10, 10, 20],
            "dropped": [],
            "skip_steps": [],
            "extracted_timestamps": [
                ("a", 0, -1, 10),
                ("b", 0, -1, 6),
                ("b", 1, 6, 20),
                ("a", 1, 10, 5),
                ("a", 2, 10, 7),
            ],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c31-partition-time-arg-restored",
        "A restored partition time is the first extractor argument",
        "a restored at 100, b has none: a@0 is extracted with 100, b@0 with -1, a@1 with max(100, 50) = 100 (RQ-4, "
        "ST-8); stream time starts at 100 (PG-6).",
        ["RQ-4", "RQ-7", "ST-8", "PG-6"],
        config(),
        [part("a", [50, 150], committed=100), part("b", [60])],
        {
            "order": ["a@0", "b@0", "a@1"],
            "stream_time_after_each": [100, 100, 150],
            "dropped": [],
            "skip_steps": [],
            "extracted_timestamps": [("a", 0, 100, 50), ("b", 0, -1, 60), ("a", 1, 100, 150)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )
    scenario(
        "c32-partition-time-arg-ignores-dropped",
        "A dropped record does not raise the partition time",
        "LogAndSkip: a@1 (-1) is dropped while a@0 is polled; a@2 (3, late) is then extracted with partition time 5 "
        "and a@3 with 5 (max(5, 3)) (RQ-4, RQ-5).",
        ["RQ-4", "RQ-5", "TE-3"],
        config(ts=SKIP_TS),
        [part("a", [5, -1, 3, 9])],
        {
            "order": ["a@0", "a@2", "a@3"],
            "stream_time_after_each": [5, 5, 9],
            "dropped": [("a", 1, "negative_timestamp", 0)],
            "skip_steps": [],
            "extracted_timestamps": [("a", 0, -1, 5), ("a", 1, 5, -1), ("a", 2, 5, 3), ("a", 3, 5, 9)],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("extracted_timestamps",),
    )

    # ---- punctuation
    def punct(
        sid: str,
        title: str,
        desc: str,
        rules: list[str],
        parts: list[dict[str, Any]],
        schedules: list[dict[str, Any]],
        fired: list[tuple[int, int, int]] | None = None,
    ) -> None:
        order, times = pg4_order(parts)
        if fired is None:
            fired = pg4_punctuations([s["interval_ms"] for s in schedules], times)
        scenario(
            sid,
            title,
            desc,
            rules,
            config(),
            parts,
            {
                "order": order,
                "stream_time_after_each": times,
                "dropped": [],
                "skip_steps": [],
                "punctuations_fired": fired,
            },
            confidence="low",
            notes=NOTE_PUNCT,
            punctuations=schedules,
        )

    punct(
        "c33-punct-exact-boundaries-interval-5",
        "A record exactly at the due time fires the schedule",
        "Interval 5: due times 0, 5, 10, 15 are each reached exactly; 14 and 16 fire nothing (ST-2: due <= stream "
        "time).",
        ["ST-2", "ST-3", "ST-6", "D-3"],
        [part("a", [0, 5, 10, 14, 15, 16])],
        [stream(5)],
        [(0, 0, 0), (5, 1, 0), (10, 2, 0), (15, 4, 0)],
    )
    punct(
        "c34-punct-big-jump-no-catch-up",
        "A jump of a million ms fires once and realigns",
        "Interval 10: after the jump from 1 to 1000000 the schedule fires once (no catch-up) and the next due time "
        "is 1000010, aligned to the original anchor (ST-3).",
        ["ST-2", "ST-3"],
        [part("a", [1, 1000000, 1000005, 1000010])],
        [stream(10)],
        [(1, 0, 0), (1000000, 1, 0), (1000010, 3, 0)],
    )
    punct(
        "c35-punct-two-schedules-different-intervals",
        "Two schedules with intervals 10 and 25",
        "Both are first due at 0 and fire after the first record (s0, then s1: PG-4 on equal due times); at stream "
        "time 50 both are due and fire in due-time order (s0 due 40, then s1 due 50) (ST-5).",
        ["ST-2", "ST-3", "ST-5"],
        [part("a", [0, 10, 20, 25, 30, 50])],
        [stream(10), stream(25)],
        [(0, 0, 0), (0, 0, 1), (10, 1, 0), (20, 2, 0), (25, 3, 1), (30, 4, 0), (50, 5, 0), (50, 5, 1)],
    )
    punct(
        "c36-punct-four-equal-schedules-heap-order",
        "Four schedules with the same interval fire in heap order",
        "Four STREAM_TIME schedules of 10 ms: at each boundary all four are due and the punctuation heap (ST-5, "
        "PG-4) decides their order, not registration order.",
        ["ST-5", "PG-4"],
        [part("a", [0, 10, 20])],
        [stream(10)] * 4,
    )
    punct(
        "c37-punct-anchored-future-start",
        "An anchored schedule first fires at its start time",
        "schedule(Instant 100, 10 ms): stream time is -1 at init, so the first due time stays 100 (ST-6); it fires "
        "at 100, then at 130 with next due 140.",
        ["ST-6", "ST-3"],
        [part("a", [50, 100, 105, 130])],
        [stream(10, 100)],
        [(100, 1, 0), (130, 3, 0)],
    )
    punct(
        "c43-punct-wall-clock-and-stream-same-interval",
        "A WALL_CLOCK_TIME schedule never fires in a replay",
        "Two schedules of 10 ms, wall clock then stream time: only the STREAM_TIME one fires (D-4: the virtual "
        "wall clock never advances).",
        ["ST-7", "D-4", "ST-2"],
        [part("a", [0, 10])],
        [wall_clock(10), stream(10)],
        [(0, 0, 1), (10, 1, 1)],
    )

    restored = [
        (
            "c38-punct-anchored-before-restored-time-realigned",
            "Anchored schedules that start before the restored stream time move to the next aligned time",
            "Stream time restored to 1000 before init (ST-8). s0 = (start 0, 300 ms) moves to 1200, the first 0+k*300 "
            "strictly after 1000; s1 = (start 400, 200 ms) has 1000 itself aligned but must be strictly after, so it "
            "moves to 1200 as well (ST-6, StreamTask#getInitialSchedule). At 1200 both fire (s0 first, heap order), at "
            "1500 s1 (due 1400) fires before s0 (due 1500).",
            ["ST-6", "ST-8", "ST-5", "D-5"],
            [part("a", [1100, 1200, 1250, 1500], committed=1000)],
            [stream(300, 0), stream(200, 400)],
            [(1200, 1, 0), (1200, 1, 1), (1500, 3, 1), (1500, 3, 0)],
        ),
        (
            "c39-punct-restored-fires-before-first-record",
            "A restored stream time fires a plain schedule before records",
            "Restored 500: the check before the first record (D-5) fires at 500 with after_record_index -1; the late "
            "record 450 keeps stream time at 500; 600 fires again.",
            ["ST-8", "D-5", "ST-2", "PG-6"],
            [part("a", [450, 600, 610], committed=500)],
            [stream(100)],
            [(500, -1, 0), (600, 1, 0)],
        ),
        (
            "c40-stream-time-before-first-record-two-restored",
            "Stream time is the max of two restored partition times",
            "a restored at 30, b at 70: stream time is 70 before any record (PG-6, ST-8); a@0 (10) and b@0 (60) are "
            "processed at 70, a@1 raises it to 80. Each extractor sees its own partition's restored time (RQ-4).",
            ["ST-8", "PG-6", "RQ-4"],
            [part("a", [10, 80], committed=30), part("b", [60], committed=70)],
            None,
            None,
        ),
        (
            "c41-punct-restored-then-late-records",
            "Late records after a restore do not punctuate",
            "Restored 1000: fires at 1000 before the first record (D-5); 900, 950, 1000 and 1099 do not reach the next "
            "due time 1100; 1100 does.",
            ["ST-8", "D-5", "ST-2", "ST-3"],
            [part("a", [900, 950, 1000, 1099, 1100], committed=1000)],
            [stream(100)],
            [(1000, -1, 0), (1100, 4, 0)],
        ),
        (
            "c42-punct-restored-plain-anchored-wall",
            "Plain, anchored and wall-clock schedules after a restore",
            "Restored 20: the plain 10 ms schedule fires at 20 before the first record (D-5); the anchored one (start "
            "25) is not before 20, so it stays at 25 and fires when stream time reaches 25; the wall-clock one never "
            "fires (D-4); at 31 the plain one fires again (next 40).",
            ["ST-6", "ST-8", "D-4", "D-5"],
            [part("a", [22, 25, 31], committed=20)],
            [stream(10), stream(10, 25), wall_clock(5)],
            [(20, -1, 0), (25, 1, 1), (31, 2, 0)],
        ),
    ]
    for sid, title, desc, rules, parts, schedules, fired in restored:
        order, times = pg4_order(parts)
        predict: dict[str, Any] = {"order": order, "stream_time_after_each": times, "dropped": [], "skip_steps": []}
        extras: tuple[str, ...] = ()
        if schedules is not None:
            predict["punctuations_fired"] = fired
        else:
            predict["extracted_timestamps"] = [("a", 0, 30, 10), ("b", 0, 70, 60), ("a", 1, 30, 80)]
            extras = ("extracted_timestamps",)
        scenario(
            sid,
            title,
            desc,
            rules,
            config(),
            parts,
            predict,
            confidence="low",
            notes=NOTE_RESTORED
            if schedules is not None
            else NOTE_DETERMINISTIC.replace(
                "no punctuation timing involved.",
                "no punctuation timing involved (restored times come from commit metadata, ST-8).",
            ),
            punctuations=schedules,
            extras=extras,
        )

    # ---- processing exceptions with both handlers
    scenario(
        "c44-processing-continue-two-failures-and-tie",
        "LogAndContinue processing handler: each failure is one drop",
        "a@0 and a@2 make proc throw; RESUME counts one dropped record each at its record_index (PE-2) and the task "
        "goes on; the tie between a@1 and b@0 (both 2) follows PG-4.",
        ["PE-1", "PE-2", "DR-1", "PG-4"],
        config(pe=PE_CONT),
        [part("a", records=[rec(0, 1, fail=True), rec(1, 2), rec(2, 3, fail=True)]), part("b", [2])],
        {
            "order": ["a@0", "b@0", "a@1", "a@2"],
            "stream_time_after_each": [1, 2, 2, 3],
            "dropped": [("a", 0, "processing_exception", None, 0), ("a", 2, "processing_exception", None, 3)],
            "skip_steps": [],
        },
        confidence="low",
        notes=NOTE_TIE,
    )
    scenario(
        "c45-processing-fail-after-punctuation",
        "LogAndFail processing handler stops the task before the next check",
        "a@1 makes proc throw; FAIL surfaces StreamsException 'Exception caught in process. …' (PE-3) from the step, "
        "so the punctuation check that would have fired at 20 never runs; the one at 10 did.",
        ["PE-3", "ST-1", "ST-2", "D-3"],
        config(),
        [part("a", records=[rec(0, 10), rec(1, 20, fail=True), rec(2, 30)])],
        {
            "order": ["a@0", "a@1"],
            "stream_time_after_each": [10, 20],
            "dropped": [],
            "skip_steps": [],
            "punctuations_fired": [(10, 0, 0)],
            "error": ("processing_exception", "a", 1, 1),
        },
        confidence="low",
        notes=NOTE_PUNCT,
        punctuations=[stream(10)],
    )
    scenario(
        "c46-processing-continue-ties-and-punctuation",
        "RESUME keeps stream time and punctuation going",
        "All at 5, LogAndContinue: a@0 and b@0 fail and are counted as drops; stream time already includes them "
        "(PE-2), so the plain schedule fires at 5 after the first record.",
        ["PE-2", "ST-2", "PG-4"],
        config(pe=PE_CONT),
        [part("a", records=[rec(0, 5, fail=True), rec(1, 5)]), part("b", records=[rec(0, 5, fail=True)])],
        {
            "order": ["a@0", "b@0", "a@1"],
            "stream_time_after_each": [5, 5, 5],
            "dropped": [("a", 0, "processing_exception", None, 0), ("b", 0, "processing_exception", None, 1)],
            "skip_steps": [],
            "punctuations_fired": [(5, 0, 0)],
        },
        confidence="low",
        notes=NOTE_TIE + " " + NOTE_PUNCT,
        punctuations=[stream(5)],
    )
    scenario(
        "c47-processing-fail-first-record",
        "LogAndFail on the very first record",
        "a@0 throws in proc: order holds just a@0, stream time already 7 (PE-3, SR-3), error before_record_index 0.",
        ["PE-3", "SR-3"],
        config(),
        [part("a", records=[rec(0, 7, fail=True), rec(1, 8)]), part("b", [9])],
        {
            "order": ["a@0"],
            "stream_time_after_each": [7],
            "dropped": [],
            "skip_steps": [],
            "error": ("processing_exception", "a", 0, 0),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
    )

    # ---- headers and null keys/values
    scenario(
        "c48-headers-and-null-keys-values-two-topics",
        "Headers, empty strings and nulls pass through in the context",
        "Null key, null value, empty key/value and non-ASCII header values reach proc unchanged (SR-2, SR-3); the "
        "tie between a@1 and b@0 follows PG-4.",
        ["SR-2", "SR-3", "RQ-3", "PG-4"],
        config(),
        [
            part(
                "a",
                records=[
                    rec(0, 1, key=None, value="x", headers={"h1": "1", "h2": ""}),
                    rec(1, 2, key="", value_exact=""),
                    rec(2, 3, key="k", value=None, headers={"x": "\u00fc\u20ac"}),
                ],
            ),
            part("b", records=[rec(0, 2, key=None, value=None, headers={"only": "b"})]),
        ],
        {
            "order": ["a@0", "b@0", "a@1", "a@2"],
            "stream_time_after_each": [1, 2, 2, 3],
            "dropped": [],
            "skip_steps": [],
        },
        confidence="low",
        notes=NOTE_TIE,
        extras=("record_contexts",),
    )
    scenario(
        "c49-null-value-is-not-corrupt",
        "A null value is not a deserialization failure; a corrupt neighbour is",
        "LogAndContinue: a@0 has a null value (StringDeserializer returns null), a@1 is corrupt and dropped while a@0 "
        "is polled (before_record_index 0), a@2 carries headers through (RQ-3, DE-1).",
        ["RQ-3", "DE-1", "SR-3"],
        config(de=DE_CONT),
        [
            part(
                "a",
                records=[
                    rec(0, 1, value=None),
                    rec(1, 2, corrupt=True, headers={"h": "c"}),
                    rec(2, 3, key=None, headers={"h": "v"}),
                ],
            )
        ],
        {
            "order": ["a@0", "a@2"],
            "stream_time_after_each": [1, 3],
            "dropped": [("a", 1, "deserialization", 0)],
            "skip_steps": [],
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC,
        extras=("record_contexts",),
    )
    build_transactional()
    build_leader_epochs()


EOS = "exactly_once_v2"
READ_COMMITTED = "read_committed"
NOTE_TXN = (
    "Transactional input: the app-level oracle writes the records with transactional producers so that every "
    "marker lands at its offset. A read_committed consumer returns neither the markers nor the aborted records "
    "(CompletedFetch#nextFetchedRecord), so they never reach the RecordQueue; the consumer's position still moves "
    "past them and the task commits that position once its queue is empty (StreamTask#findOffsetAndMetadata, "
    "#commitNeeded)."
)


def build_transactional() -> None:
    """c50-c57: transactional inputs (ordering.md section 11 question 6)."""
    scenario(
        "c50-txn-aborted-between-records-read-committed",
        "An aborted transaction between committed records is invisible under read_committed",
        "exactly_once_v2 (read_committed). a: t1 (a@0, a@1) committed by the marker a@2, t2 (a@3, a@4 with "
        "timestamps 100, 101) aborted by a@5, then a@6. The aborted records never reach the queue: stream time "
        "never sees 100/101, the tie b@1/a@6 (both 5) follows PG-4 (b was re-offered first), and a's committed "
        "offset is 7, b's 2.",
        ["RQ-2", "PG-3", "PG-4", "PG-6"],
        config(guarantee=EOS),
        [
            part(
                "a",
                records=[
                    rec(0, 1, txn="t1"),
                    rec(1, 3, txn="t1"),
                    ctl(2, "t1"),
                    rec(3, 100, txn="t2"),
                    rec(4, 101, txn="t2"),
                    ctl(5, "t2", abort=True),
                    rec(6, 5),
                ],
            ),
            part("b", records=[rec(0, 2), rec(1, 5)]),
        ],
        {
            "order": ["a@0", "b@0", "a@1", "b@1", "a@6"],
            "stream_time_after_each": [1, 2, 3, 5, 5],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 7), ("b", 2)],
        },
        confidence="low",
        notes=NOTE_TXN + " " + NOTE_TIE,
        extras=("record_contexts", "committed_offsets"),
    )
    scenario(
        "c51-txn-aborted-at-head-tie-after-gap",
        "An aborted transaction at the head of a partition: its first record is at offset 3",
        "at_least_once with isolation_level read_committed. b starts with t1 (b@0, b@1) aborted by b@2; its first "
        "delivered record b@3 (timestamp 2) ties a@0 (2); PG-4 takes a first (added first, D-1). Offsets in the "
        "record contexts keep the gap. (With the gap on a, the partition added first, a live run fetches b's "
        "record first and puts it first: see FINDINGS.md, ordering.md section 11 question 6.)",
        ["RQ-2", "PG-4", "D-1"],
        config(isolation=READ_COMMITTED),
        [
            part("a", records=[rec(0, 2), rec(1, 4)]),
            part(
                "b", records=[rec(0, 1, txn="t1"), rec(1, 2, txn="t1"), ctl(2, "t1", abort=True), rec(3, 2), rec(4, 3)]
            ),
        ],
        {
            "order": ["a@0", "b@3", "b@4", "a@1"],
            "stream_time_after_each": [2, 2, 3, 4],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 2), ("b", 5)],
        },
        confidence="low",
        notes=NOTE_TXN + " " + NOTE_TIE,
        extras=("record_contexts", "committed_offsets"),
    )
    scenario(
        "c52-txn-aborted-at-tail-committed-offset-after-gap",
        "An aborted transaction at the tail: the commit is past the abort marker",
        "exactly_once_v2. a: a@0, a@1, then t1 (a@2 with timestamp 0, a@3) aborted by a@4. Only a@0 and a@1 are "
        "processed (then b@0), and a's committed offset is 5 (the position after the marker), not 2 (last record "
        "+ 1).",
        ["RQ-2", "PG-3", "PG-6"],
        config(guarantee=EOS),
        [
            part(
                "a", records=[rec(0, 1), rec(1, 2), rec(2, 0, txn="t1"), rec(3, 9, txn="t1"), ctl(4, "t1", abort=True)]
            ),
            part("b", records=[rec(0, 3)]),
        ],
        {
            "order": ["a@0", "a@1", "b@0"],
            "stream_time_after_each": [1, 2, 3],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 5), ("b", 1)],
        },
        confidence="high",
        notes=NOTE_TXN + " " + NOTE_DETERMINISTIC,
        extras=("committed_offsets",),
    )
    scenario(
        "c53-txn-committed-marker-between-two-partitions-heads",
        "One committed transaction over two partitions: its marker sits after each partition's head",
        "exactly_once_v2. t1 writes a@0 (1) and b@0 (2) and commits: the markers land at a@1 and b@1, between each "
        "partition's head and its next record (a@2 = 3, b@2 = 3). Markers take offsets but no step; the tie a@2/b@2 "
        "follows PG-4.",
        ["RQ-2", "PG-4"],
        config(guarantee=EOS),
        [
            part("a", records=[rec(0, 1, txn="t1"), ctl(1, "t1"), rec(2, 3)]),
            part("b", records=[rec(0, 2, txn="t1"), ctl(1, "t1"), rec(2, 3)]),
        ],
        {
            "order": ["a@0", "b@0", "a@2", "b@2"],
            "stream_time_after_each": [1, 2, 3, 3],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 3), ("b", 3)],
        },
        confidence="low",
        notes=NOTE_TXN + " " + NOTE_TIE,
        extras=("record_contexts", "committed_offsets"),
    )
    scenario(
        "c54-txn-aborted-records-read-uncommitted",
        "read_uncommitted (at_least_once default) processes aborted records; only markers are skipped",
        "The input of c50 under at_least_once without isolation_level: the consumer returns the aborted a@3 (100) "
        "and a@4 (101), so stream time jumps to 100 and the later records are late; the markers a@2 and a@5 still "
        "take no step and the committed offset of a is 7.",
        ["RQ-2", "PG-3", "PG-6"],
        config(),
        [
            part(
                "a",
                records=[
                    rec(0, 1, txn="t1"),
                    rec(1, 3, txn="t1"),
                    ctl(2, "t1"),
                    rec(3, 100, txn="t2"),
                    rec(4, 101, txn="t2"),
                    ctl(5, "t2", abort=True),
                    rec(6, 5),
                ],
            ),
            part("b", records=[rec(0, 2), rec(1, 5)]),
        ],
        {
            "order": ["a@0", "b@0", "a@1", "b@1", "a@3", "a@4", "a@6"],
            "stream_time_after_each": [1, 2, 3, 5, 100, 101, 101],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 7), ("b", 2)],
        },
        confidence="high",
        notes=NOTE_TXN + " " + NOTE_DETERMINISTIC,
        extras=("committed_offsets",),
    )
    scenario(
        "c55-txn-partition-with-only-aborted-records",
        "A partition holding only an aborted transaction is never processed nor committed",
        "exactly_once_v2. b holds t1 (b@0, b@1) aborted by b@2 and nothing else: its queue never gets a record, "
        "a is processed alone, and the task commits a only (consumedOffsets never names b).",
        ["RQ-2", "PG-2"],
        config(guarantee=EOS),
        [
            part("a", [1, 2, 3]),
            part("b", records=[rec(0, 0, txn="t1"), rec(1, 0, txn="t1"), ctl(2, "t1", abort=True)]),
        ],
        {
            "order": ["a@0", "a@1", "a@2"],
            "stream_time_after_each": [1, 2, 3],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 3)],
        },
        confidence="high",
        notes=NOTE_TXN + " " + NOTE_DETERMINISTIC,
        extras=("committed_offsets",),
    )
    scenario(
        "c56-txn-aborted-timestamps-do-not-punctuate",
        "Aborted timestamps move neither stream time nor punctuation",
        "read_committed, a STREAM_TIME schedule anchored at 20 with interval 100. a: a@0 (5), t1 (a@1 = 1000) "
        "aborted by a@2, a@3 (12); b: b@0 (7), b@1 (25). Stream time goes 5, 7, 12, 25 and the schedule fires once, "
        "at 25 after the last record (ST-6); had the aborted record been delivered, it would have fired at 1000. "
        "The first due time lies after every record but the last, so no batching of punctuation checks (ST-4) can "
        "change when it fires.",
        ["ST-2", "ST-6", "PG-6", "D-3"],
        config(isolation=READ_COMMITTED),
        [
            part("a", records=[rec(0, 5), rec(1, 1000, txn="t1"), ctl(2, "t1", abort=True), rec(3, 12)]),
            part("b", records=[rec(0, 7), rec(1, 25)]),
        ],
        {
            "order": ["a@0", "b@0", "a@3", "b@1"],
            "stream_time_after_each": [5, 7, 12, 25],
            "dropped": [],
            "skip_steps": [],
            "punctuations_fired": [(25, 3, 0)],
            "committed_offsets": [("a", 4), ("b", 2)],
        },
        confidence="high",
        notes=NOTE_TXN + " " + NOTE_DETERMINISTIC,
        punctuations=[stream(100, start=20)],
        extras=("committed_offsets",),
    )
    scenario(
        "c57-txn-aborted-corrupt-record-never-deserialized",
        "A corrupt record in an aborted transaction never reaches the deserializer",
        "exactly_once_v2 with LogAndFailExceptionHandler. a@1 is corrupt but belongs to t1, aborted by a@2: the "
        "consumer never returns it, so nothing fails and nothing is dropped (compare c17-c19).",
        ["RQ-2", "RQ-3", "DE-1"],
        config(guarantee=EOS),
        [
            part("a", records=[rec(0, 1), rec(1, 2, txn="t1", corrupt=True), ctl(2, "t1", abort=True), rec(3, 3)]),
        ],
        {
            "order": ["a@0", "a@3"],
            "stream_time_after_each": [1, 3],
            "dropped": [],
            "skip_steps": [],
            "committed_offsets": [("a", 4)],
        },
        confidence="high",
        notes=NOTE_TXN + " " + NOTE_DETERMINISTIC,
        extras=("committed_offsets",),
    )


NOTE_EPOCH = (
    "leader_epoch 0 is what a record fetched from a fresh single broker carries (its batch's partition leader "
    "epoch); FailOnInvalidTimestamp and UsePartitionTimeOnInvalidTimestamp quote ConsumerRecord#toString, so the "
    "message says leaderEpoch = 0 where the epoch-less c22/c26 say null."
)


def build_leader_epochs() -> None:
    """c58, c59: c22 and c26 with the leader epoch a live fetch carries."""
    scenario(
        "c58-negative-fail-on-invalid-middle-leader-epoch",
        "c22 with leader epoch 0: the error quotes leaderEpoch = 0",
        "As c22 (a@1 has timestamp -1 under FailOnInvalidTimestamp; a@0 is never processed), with every record at "
        "leader epoch 0 as a live fetch from a fresh broker gives.",
        ["TE-2", "RQ-9", "SR-2"],
        config(),
        [
            part("a", records=[rec(i, ts, leader_epoch=0) for i, ts in enumerate([4, -1, 5])]),
            part("b", records=[rec(0, 2, leader_epoch=0)]),
        ],
        {
            "order": ["b@0"],
            "stream_time_after_each": [2],
            "dropped": [],
            "skip_steps": [],
            "error": ("negative_timestamp", "a", 1, 1),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC + " " + NOTE_EPOCH,
        contains=[NEGATIVE_TAIL],
    )
    scenario(
        "c59-negative-use-partition-time-unknown-second-topic-leader-epoch",
        "c26 with leader epoch 0: the error quotes leaderEpoch = 0",
        "As c26 (b@0 = -3 under UsePartitionTimeOnInvalidTimestamp while b's partition time is unknown: fails at "
        "addRecords), with every record at leader epoch 0 as a live fetch from a fresh broker gives.",
        ["TE-4", "RQ-4", "RQ-9", "SR-2"],
        config(ts=USE_PT),
        [
            part("a", records=[rec(i, ts, leader_epoch=0) for i, ts in enumerate([1, 2])]),
            part("b", records=[rec(i, ts, leader_epoch=0) for i, ts in enumerate([-3, 4])]),
        ],
        {
            "order": [],
            "stream_time_after_each": [],
            "dropped": [],
            "skip_steps": [],
            "error": ("partition_time_unknown", "b", 0, 0),
        },
        confidence="high",
        notes=NOTE_DETERMINISTIC + " " + NOTE_EPOCH,
        contains=[UNKNOWN_PT_TAIL],
    )


# ------------------------------------------------------------------------------------------- prediction check


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """The oracle's result in the prediction's compact notation."""
    out: dict[str, Any] = {
        "order": [f"{t}@{o}" for t, _, o in result["order"]],
        "stream_time_after_each": result["stream_time_after_each"],
        "dropped": [
            (d["topic"], d["offset"], d["reason"], d["before_record_index"])
            if "before_record_index" in d
            else (d["topic"], d["offset"], d["reason"], None, d["record_index"])
            for d in result["dropped"]
        ],
        "skip_steps": [(s["topic"], s["offset"], s["before_record_index"]) for s in result["skip_steps"]],
    }
    if "punctuations_fired" in result:
        out["punctuations_fired"] = [
            (p["timestamp"], p["after_record_index"], p["schedule_index"]) for p in result["punctuations_fired"]
        ]
    if "extracted_timestamps" in result:
        out["extracted_timestamps"] = [
            (x["topic"], x["offset"], x["partition_time_arg"], x["timestamp"]) for x in result["extracted_timestamps"]
        ]
    if "error" in result:
        e = result["error"]
        out["error"] = (e["reason"], e["topic"], e["offset"], e["before_record_index"])
    if "committed_offsets" in result:
        out["committed_offsets"] = [(c["topic"], c["offset"]) for c in result["committed_offsets"]]
    return out


def mismatches(predict: dict[str, Any], result: dict[str, Any]) -> list[str]:
    got = compact(result)
    diffs = []
    for key, want in predict.items():
        have = got.get(key)
        if want is None:
            continue
        if [tuple(x) if isinstance(x, list) else x for x in want] != have and want != have:
            diffs.append(f"{key}: predicted {want}, Kafka Streams {have}")
    for key in got:
        if key not in predict and key != "punctuations_fired":
            diffs.append(f"{key}: not predicted, Kafka Streams {got[key]}")
    return diffs


def finalize_error(error: dict[str, Any], contains: list[str] | None) -> dict[str, Any]:
    """Scenario-format error block: fully qualified class, a stable message prefix, the quoted substrings."""
    message: str = error["kafka_message_prefix"]
    out = {k: error[k] for k in ("reason", "topic", "partition", "offset", "before_record_index")}
    out["kafka_exception"] = (
        STREAMS_EXCEPTION if error["kafka_exception"] == "StreamsException" else error["kafka_exception"]
    )
    marker = ", offset = "
    if marker in message:
        # ConsumerRecord#toString: keep topic, partition, leader epoch and offset; the rest is quoted below.
        cut = message.index(marker) + len(marker)
        cut = message.index(", ", cut) + 2
        out["kafka_message_prefix"] = message[:cut]
    else:
        out["kafka_message_prefix"] = message
    if contains is not None:
        out["kafka_message_contains"] = contains
    return out


def main() -> int:
    build()
    if not JAR.is_file():
        print(f"{JAR} is missing: mvn -q -f conformance/pom.xml package -DskipTests", file=sys.stderr)
        return 2
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for item in SCENARIOS:
            path = Path(tmp) / f"{item['scenario']['id']}.json"
            path.write_text(json.dumps(item["scenario"]), encoding="utf-8")
            files.append(str(path))
        proc = subprocess.run(["java", "-jar", str(JAR), "batch", *files], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(SCENARIOS), proc.stderr[-3000:]
    disagreements = 0
    for item, line in zip(SCENARIOS, lines, strict=True):
        s = item["scenario"]
        if "result" not in line:
            print(f"{s['id']}: oracle did not answer: {line}", file=sys.stderr)
            return 2
        result = line["result"]
        diffs = mismatches(item["predict"], result)
        if diffs:
            disagreements += 1
            print(f"{s['id']}: Kafka Streams differs from the prediction:\n  " + "\n  ".join(diffs), file=sys.stderr)
        contains = s["expected"].get("error", {}).get("kafka_message_contains")
        if "error" in result:
            result["error"] = finalize_error(result["error"], contains)
        s["expected"] = result
        (OUT_DIR / f"{s['id']}.json").write_text(json.dumps(s, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(SCENARIOS)} scenarios to {OUT_DIR}; {disagreements} differ from their prediction")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
