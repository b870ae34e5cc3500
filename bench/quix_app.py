"""The benchmark workloads as a Quix Streams application (run by ``bench/compare.py`` in ``.venv-quix``).

Quix Streams needs confluent-kafka < 2.13 and streamproc pins a newer one, so this file runs in a venv of its own
(``bench/quix-requirements.txt``) and imports nothing from streamproc. The logic is ``bench/workloads.py``'s, on the
same records: the filter drops amounts ending in 0 and keeps the value's first 12 bytes; the count is per key in
Quix's RocksDB state (changelogged, as Quix does by default); the window workload re-keys by item (``group_by``: a
repartition topic) and sums the amount in 60 s tumbling windows (grace 7 days: longer than the data spans, so
nothing is dropped as late), every update sent on (``current()``).

A new consumer group and an empty state directory per run stand for the reset; the app stops itself (``app.stop()``)
once the workload's last stage has seen every input record. Prints one JSON object:
``python bench/quix_app.py BOOTSTRAP GROUP WORKLOAD INPUT OUTPUT EXPECTED STATE_DIR``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from quixstreams import Application, State

WINDOW_MS = 60_000
GRACE_MS = 7 * 86_400_000  # longer than any data set spans: no system drops a record as late


def amount(value: bytes) -> int:
    return int(value[6:12])


def main(bootstrap: str, group: str, workload: str, input_topic: str, output_topic: str, expected: int,
         state_dir: str) -> None:  # fmt: skip
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest", state_dir=state_dir,
                      loglevel="WARNING")  # fmt: skip
    source = app.topic(input_topic, key_deserializer="bytes", value_deserializer="bytes")
    seen = 0
    done_at = 0.0

    def note(_: Any) -> None:
        nonlocal seen, done_at
        seen += 1
        if seen == expected:
            done_at = time.perf_counter()
            app.stop()

    sdf = app.dataframe(source)
    if workload == "pass_through":
        sink = app.topic(output_topic, key_serializer="bytes", value_serializer="bytes")
        sdf = sdf.update(note).filter(lambda v: v[11] != 48).apply(lambda v: v[:12])
    elif workload == "count":
        sink = app.topic(output_topic, key_serializer="bytes", value_serializer="int")

        def count(_: bytes, state: State) -> int:
            n: int = state.get("n", 0) + 1
            state.set("n", n)
            return n

        sdf = sdf.update(note).apply(count, stateful=True)
    elif workload == "window":
        sink = app.topic(output_topic, key_serializer="bytes", value_serializer="int")
        sdf = sdf.group_by(lambda v: v[:5], name="item", key_serializer="bytes", value_serializer="bytes",
                           key_deserializer="bytes", value_deserializer="bytes")  # fmt: skip
        sdf = sdf.update(note)
        windows = sdf.tumbling_window(WINDOW_MS, grace_ms=GRACE_MS)
        sdf = windows.reduce(lambda total, v: total + amount(v), initializer=amount).current()
        sdf = sdf.apply(lambda window: window["value"])
    else:
        raise SystemExit(f"unknown workload {workload}")
    sdf.to_topic(sink)
    started = time.perf_counter()
    app.run()
    closed = time.perf_counter()
    processing = (done_at or closed) - started
    print(json.dumps({"records": seen, "processing_s": processing, "until_closed_s": closed - started}))


if __name__ == "__main__":
    b, g, w, i, o, n, s = sys.argv[1:]
    main(b, g, w, i, o, int(n), s)
