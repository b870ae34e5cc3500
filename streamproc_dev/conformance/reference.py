"""Reference values for streamproc's reproductions of Java and Kafka classes, computed by those classes at test time.

streamproc copies these from Java and Kafka bit for bit: ``java.util.PriorityQueue``'s heap (tie order, PG-4),
Kafka's ``murmur2`` and default partitioner, the String serdes on malformed text, and ``TopologyTestDriver``'s
outputs. Their reference values are not
literals pasted into the tests: the tests generate inputs from fixed seeds (:func:`reference_request`), ask the
oracle project (``java -jar conformance/target/streamproc-oracle.jar reference REQUEST.json``,
``ReferenceRunner``: a real ``java.util.PriorityQueue``, ``Utils.murmur2``/``BuiltInPartitioner.partitionForKey``
of kafka-clients 4.2.2, the ``TopologyTestDriver`` of kafka-streams-test-utils 4.2.2) and compare streamproc's
answers with Java's
(``tests/integration/conformance/test_reference_*.py``). A different seed list gives different cases; the same seeds
always give the same ones.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from streamproc_dev.conformance.oracle import JVM_OPTIONS, OracleError, ensure_oracle_jar

PRIORITY_QUEUE_SEEDS = range(1, 61)
MURMUR2_SEED = 2026
STRINGS_SEED = 4242
TEST_DRIVER_SEEDS = range(1, 9)
#: Partition counts every key is placed for: small, prime, even, large, and ``Integer.MAX_VALUE``.
PARTITION_COUNTS = (1, 2, 3, 5, 6, 7, 12, 100, 2**31 - 1)
#: Kafka's own vectors (``UtilsTest#testMurmur2``), asked of ``Utils.murmur2`` like every other key.
KAFKA_UTILS_TEST_KEYS = (
    b"21",
    b"foobar",
    b"a-little-bit-long-string",
    b"a-little-bit-longer-string",
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
    b"abc",
)
#: Characters of generated string keys: ASCII, 2-, 3- and 4-byte UTF-8.
_KEY_ALPHABET = "abcxyz019-_: äéüßøΩжक中文字😀🚀"
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_TIMEOUT_S = 300


def priority_queue_traces(seeds: range = PRIORITY_QUEUE_SEEDS) -> list[dict[str, list[str]]]:
    """One trace of ops per seed: ``o<key>`` offer, ``p`` poll (also on an empty queue), ``r<id>`` remove.

    Key ranges vary with the seed (two keys: ties everywhere; a few keys; negatives; ``long`` extremes), removes
    name any element offered so far (one already polled or removed too), and every trace ends by polling the
    queue empty and once more.
    """
    traces = []
    for seed in seeds:
        rng = random.Random(seed)
        low, high = ((0, 1), (0, 3), (-5, 5), (0, 1000))[seed % 4]
        ops: list[str] = []
        offered = size = 0
        for _ in range(rng.randint(10, 220)):
            draw = rng.random()
            if draw < 0.5 or offered == 0:
                key = rng.choice(_INT64) if seed % 5 == 0 and rng.random() < 0.2 else rng.randint(low, high)
                ops.append(f"o{key}")
                offered += 1
                size += 1
            elif draw < 0.8:
                ops.append("p")
                size = max(0, size - 1)
            else:
                ops.append(f"r{rng.randrange(offered)}")
        ops.extend(["p"] * (offered + 1))
        traces.append({"ops": ops})
    return traces


def murmur2_keys(seed: int = MURMUR2_SEED) -> list[dict[str, Any]]:
    """Keys of every serializer Kafka Streams hashes: Kafka's own test vectors, then strings, longs, ints and raw
    bytes of every length from 0 to 40 (each tail length of murmur2's 4-byte blocks), drawn from ``seed``."""
    rng = random.Random(seed)
    keys: list[dict[str, Any]] = [{"type": "bytes", "value": data.hex()} for data in KAFKA_UTILS_TEST_KEYS]
    keys.append({"type": "string", "value": ""})
    for length in range(41):
        keys.append({"type": "string", "value": "".join(rng.choice(_KEY_ALPHABET) for _ in range(length))})
        keys.append({"type": "bytes", "value": rng.randbytes(length).hex()})
    for bounds, kind in ((_INT64, "long"), (_INT32, "int")):
        specials = [bounds[0], bounds[1], 0, 1, -1, 42]
        keys.extend({"type": kind, "value": v} for v in [*specials, *(rng.randint(*bounds) for _ in range(30))])
    return keys


def string_inputs(seed: int = STRINGS_SEED) -> dict[str, list[Any]]:
    """Byte sequences for ``StringDeserializer`` (valid and malformed UTF-8: stray continuation bytes, truncated and
    overlong sequences, encoded surrogates, code points past U+10FFFF; random ones drawn from ``seed``, then every
    sequence of up to three edge bytes) and strings for ``StringSerializer`` as UTF-16 code units (unpaired
    surrogates included)."""
    rng = random.Random(seed)
    pieces = [b"a", b"\xc3\xa4", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\x80", b"\xc0\xaf", b"\xe2\x82",
              b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98", b"\xc3", b"\xf8\x88\x80\x80\x80"]  # fmt: skip
    decode = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))).hex() for _ in range(200)]
    decode += [rng.randbytes(rng.randint(1, 12)).hex() for _ in range(100)]
    # every 1-3 byte sequence over the bytes where decoders disagree (leads, continuation bounds, ASCII)
    edges = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
    decode += [bytes(c).hex() for n in (1, 2, 3) for c in itertools.product(edges, repeat=n)]
    units = [0x61, 0xE4, 0x20AC, 0xD83D, 0xDE00, 0xD800, 0xDFFF, 0x0, 0xFFFF]
    encode = [[rng.choice(units) for _ in range(rng.randint(0, 6))] for _ in range(200)]
    return {"decode": decode, "encode": encode}


def driver_program_inputs(seed: int) -> dict[str, Any]:
    """Inputs of the ``TestDriverRunner`` programs for one seed (records are ``[key, value, timestamp, headers]``,
    a ``None`` timestamp taking the input topic's clock)."""
    rng = random.Random(seed)

    def headers() -> list[list[str]]:
        return [[f"h{i}", rng.choice(["x", "yz", "", "é"])] for i in range(rng.randint(0, 2))]

    filter_records = [
        [
            rng.choice([None, "a", "b", "c", "d"]),
            rng.choice(["1", "2", "3", "drop", "x"]),
            None if rng.random() < 0.6 else rng.randint(0, 2000),
            headers(),
        ]
        for _ in range(rng.randint(1, 20))
    ]
    clock = 0
    words = []
    for _ in range(rng.randint(1, 30)):
        clock += rng.choice([0, 1, 3, 7, 10, 15])
        late = rng.random() < 0.2
        words.append([rng.choice("abcdef"), max(0, clock - rng.randint(1, 20)) if late else clock])
    customers = ["alice", "bob", "carol", "dave"]
    inputs: dict[str, Any] = {
        "filter": {
            "start_timestamp_ms": rng.randint(0, 1000),
            "auto_advance_ms": rng.randint(0, 10),
            "records": filter_records,
        },
        "counter": {
            "words": words,
            "wall_clock_advances": [rng.choice([1, 10, 500, 999, 1000, 2500]) for _ in range(rng.randint(1, 6))],
        },
        "rekey": {
            "orders": [
                [f"o{i}", f"{rng.choice(customers)}:{rng.randint(0, 100)}", rng.randint(0, 50)]
                for i in range(rng.randint(1, 15))
            ]
        },
        "fanout": {
            "inputs": [
                ["k", ",".join(rng.choice("xyzw") for _ in range(rng.randint(1, 3))), rng.randint(0, 20)]
                for _ in range(rng.randint(1, 8))
            ]
        },
        "pattern": {
            "records": [
                [rng.choice(["events-eu", "events-us", "events-", "events", "other"]), "k", "v", rng.randint(0, 9)]
                for _ in range(rng.randint(1, 8))
            ]
        },
        "idle": {
            "max_task_idle_ms": rng.choice([1, 50, 100, 250]),
            "left": [["k", f"v{i}", rng.randint(0, 30)] for i in range(rng.randint(1, 3))],
            "wall_clock_advances": [rng.choice([1, 10, 49, 99, 100]) for _ in range(rng.randint(1, 6))],
        },
    }
    # Drawn last, so that the programs above keep their inputs. Records are [topic, key, value, timestamp]:
    # null keys, null values (table tombstones), "drop" values and out-of-order timestamps on purpose.
    dsl_clock = 0
    dsl_records = []
    for _ in range(rng.randint(5, 40)):
        dsl_clock += rng.choice([0, 1, 5, 20])
        dsl_records.append(
            [
                "table" if rng.random() < 0.3 else "in",
                rng.choice([None, "a", "b", "c"]),
                rng.choice([None, "x", "y", "drop", "zz"]),
                max(0, dsl_clock - rng.choice([0, 0, 0, 30])),
            ]
        )
    inputs["dsl"] = {"records": dsl_records}
    join_clock = 0
    join_records = []
    for _ in range(rng.randint(5, 40)):
        join_clock += rng.choice([0, 1, 2, 4, 9])
        topic = rng.choice(["j-orders", "j-orders", "j-payments", "j-customers", "j-regions"])
        values = ["alice", "bob", "x", None] if topic in ("j-customers", "j-regions") else ["o1", "o2", "p", None]
        join_records.append(
            [topic, rng.choice([None, "a", "b", "c"]), rng.choice(values), max(0, join_clock - rng.choice([0, 0, 12]))]
        )
    inputs["dsl_joins"] = {"records": join_records}
    more_clock = 0
    more_records = []
    for _ in range(rng.randint(5, 40)):
        more_clock += rng.choice([0, 1, 2, 3, 7])
        topic = rng.choice(["m-events", "m-events", "m-other", "m-left", "m-right"])
        values = ["a1", "b2", "c3", "ab", None] if topic.startswith("m-e") else ["x", "y", "xy", None]
        more_records.append(
            [topic, rng.choice([None, "k", "l"]), rng.choice(values), max(0, more_clock - rng.choice([0, 0, 9]))]
        )
    inputs["dsl_more"] = {"records": more_records}
    window_clock = 0
    window_records = []
    for _ in range(rng.randint(5, 40)):
        window_clock += rng.choice([0, 1, 2, 4, 8])
        window_ts = max(0, window_clock - rng.choice([0, 0, 0, 4, 15]))
        window_records.append([rng.choice([None, "k", "l", "m"]), rng.choice(["v", None]), window_ts])
    inputs["dsl_windows"] = {"records": window_records}
    # A global store of 4-byte integers: 3- and 5-character values cannot be deserialized; null values delete.
    global_records = [
        [
            topic,
            rng.choice(["a", "b", "c"]),
            rng.choice(["abcd", "wxyz", "abc", "vwxyz", None]) if topic == "amounts" else rng.choice(["a", "b", "c"]),
            i,
        ]
        for i, topic in enumerate(rng.choice(["amounts", "orders"]) for _ in range(rng.randint(4, 20)))
    ]
    inputs["global_store"] = {"records": global_records}
    return inputs


def reference_request() -> dict[str, Any]:
    """The whole request: every section, from the fixed seeds above."""
    return {
        "priority_queue": priority_queue_traces(),
        "murmur2": {"partition_counts": list(PARTITION_COUNTS), "keys": murmur2_keys()},
        "strings": string_inputs(),
        "test_driver": [driver_program_inputs(seed) for seed in TEST_DRIVER_SEEDS],
    }


def run_reference(body: dict[str, Any]) -> dict[str, Any]:
    """Java's answer to ``body`` (``reference`` mode of the oracle jar, built first when stale)."""
    java = shutil.which("java")
    if java is None:
        raise OracleError("java is not on PATH; install a JDK 17+ to run the oracle's reference mode")
    jar = ensure_oracle_jar()
    with tempfile.TemporaryDirectory(prefix="streamproc-reference-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        proc = subprocess.run(
            [java, *JVM_OPTIONS, "-jar", str(jar), "reference", str(path)],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise OracleError(
            f"oracle reference: no JSON on stdout (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        ) from exc
    if proc.returncode != 0 or not isinstance(answer, dict) or "oracle_error" in answer:
        raise OracleError(f"oracle reference failed (exit {proc.returncode}): {answer!r:.2000}\n{proc.stderr[-4000:]}")
    return answer
