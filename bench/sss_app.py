"""The benchmark workloads as Spark Structured Streaming queries (run by ``bench/compare.py`` in ``.venv-sss``).

The peer a Spark user would write instead of ``streamproc run``: PySpark's Kafka source and sink
(``spark-sql-kafka-0-10``, its jars passed with ``--jars``), ``Trigger.AvailableNow`` (everything on the topic at
the start, then stop), the RocksDB state store provider and a fresh checkpoint location (stands for the reset),
``spark.sql.shuffle.partitions`` = the data set's partitions, on ``local[c]``. It runs in a venv of its own
(``bench/sss-requirements.txt``: PySpark 4.2 with pandas, pyarrow and protobuf, which ``transformWithStateInPandas``
needs and streamproc's lock leaves out) and imports nothing from streamproc. The logic is ``bench/workloads.py``'s:

- ``pass_through`` (``dsl``): drop amounts ending in 0, keep the value's first 12 bytes (append mode);
- ``count`` (``dsl``): ``groupBy(key).count()`` in update mode;
- ``window`` (``dsl``): re-key by item (the shuffle of the ``groupBy``), 60 s tumbling windowed sum of the amount,
  update mode, behind a 7-day watermark — the other systems' grace: the timestamps are at most 5 s out of order,
  so no record is dropped as late (``numRowsDroppedByWatermark`` is reported);
- ``count`` (``papi``): ``transformWithStateInPandas`` with a count in a ``ValueState``, every record's updated
  count sent on, as the Processor API's ``Count`` does.

In update mode Spark sends each key's (window's) last value per micro-batch, not every update: with the default
``AvailableNow`` (no ``maxOffsetsPerTrigger``) one batch holds the whole data set, so ``count`` sends one record
per key — what Kafka Streams' record cache does between commits. Counts and sums are sent as 8-byte big-endian
longs (Kafka's ``LongSerializer``). Prints one JSON object: the input and output rows from the query's progress,
the batches, and the query's wall seconds (start to termination, without the JVM's start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
WINDOW = "60 seconds"
WATERMARK = "7 days"  # the other systems' grace: longer than any data set spans, so nothing is dropped as late
COUNT_STATE = StructType([StructField("n", LongType())])
COUNT_OUTPUT = StructType([StructField("key", BinaryType()), StructField("count", LongType())])


def session(cores: int, partitions: int, jars: str) -> SparkSession:
    """Spark's defaults but for what the comparison fixes: the cores, the state store, the shuffle's partitions (the
    data set's, as Kafka Streams' tasks), the connector's jars; loopback, no UI, no console progress bars."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers in this venv, not the first python3 on PATH
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("bench-sss")
        .config("spark.jars", jars)
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    return builder.getOrCreate()


def long_bytes(column: Column) -> Column:
    """A long as Kafka's ``LongSerializer`` writes it: 8 bytes, big-endian (hex of a negative long is 16 digits)."""
    return F.unhex(F.lpad(F.hex(column), 16, "0"))


def amount(value: Column) -> Column:
    return F.substring(value, 7, 6).cast("string").cast("long")


class Count(StatefulProcessor):
    """The Processor API count: per key a count in RocksDB, every record's updated count sent on."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.count = handle.getValueState("count", COUNT_STATE)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        """One key's rows of a micro-batch (pandas frames): a count per row, the last one stored."""
        stored = self.count.get() if self.count.exists() else None  # get() of no value logs a warning per key
        n = 0 if stored is None else int(stored[0])
        for batch in rows:
            counts = pd.RangeIndex(n + 1, n + len(batch) + 1)
            n += len(batch)
            yield pd.DataFrame({"key": batch["key"].to_numpy(), "count": counts.to_numpy(dtype="int64")})
        self.count.update((n,))

    def close(self) -> None:
        pass


def query(source: DataFrame, workload: str, api: str) -> tuple[DataFrame, str]:
    """The workload over the Kafka source's rows: the (key, value) rows for the Kafka sink and the output mode."""
    if (workload, api) == ("pass_through", "dsl"):
        kept = source.where(F.substring("value", 12, 1).cast("string") != "0")
        return kept.select("key", F.substring("value", 1, 12).alias("value")), "append"
    if (workload, api) == ("count", "dsl"):
        counts = source.groupBy("key").count()
        return counts.select("key", long_bytes(F.col("count")).alias("value")), "update"
    if (workload, api) == ("window", "dsl"):
        sums = (
            source.withWatermark("timestamp", WATERMARK)
            .groupBy(F.window("timestamp", WINDOW), F.substring("value", 1, 5).alias("key"))
            .agg(F.sum(amount(F.col("value"))).alias("total"))
        )
        return sums.select("key", long_bytes(F.col("total")).alias("value")), "update"
    if (workload, api) == ("count", "papi"):
        counts = source.select("key").groupBy("key").transformWithStateInPandas(Count(), COUNT_OUTPUT, "append", "None")
        return counts.select("key", long_bytes(F.col("count")).alias("value")), "append"
    raise SystemExit(f"no Spark Structured Streaming version of {workload} ({api})")


def progress_totals(progress: list[dict[str, Any]]) -> dict[str, int]:
    """What the query's batches say they read, wrote and dropped: the completion check of ``bench/compare.py``."""
    operators = [op for p in progress for op in p.get("stateOperators", ())]
    return {
        "input_rows": sum(p["numInputRows"] for p in progress),
        "output_rows": sum(p["sink"]["numOutputRows"] for p in progress),
        "batches": len(progress),
        "state_rows_updated": sum(op["numRowsUpdated"] for op in operators),
        "dropped_by_watermark": sum(op["numRowsDroppedByWatermark"] for op in operators),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("bootstrap")
    parser.add_argument("workload")
    parser.add_argument("api", choices=("dsl", "papi"))
    parser.add_argument("input_topic")
    parser.add_argument("output_topic")
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--cores", type=int, required=True)
    parser.add_argument("--checkpoint", required=True, help="a fresh directory: no offsets, no state")
    parser.add_argument("--jars", required=True, help="the Kafka connector's jars, comma-separated")
    args = parser.parse_args(argv)
    spark = session(args.cores, args.partitions, args.jars)
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input_topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    rows, mode = query(source, args.workload, args.api)
    started = time.perf_counter()
    running = (
        rows.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", args.output_topic)
        .option("checkpointLocation", args.checkpoint)
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    running.awaitTermination()
    processing = time.perf_counter() - started
    totals = progress_totals([json.loads(p.json) for p in running.recentProgress])
    spark.stop()
    print(json.dumps({**totals, "processing_s": processing}))


if __name__ == "__main__":
    main()
