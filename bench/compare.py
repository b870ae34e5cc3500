"""streamproc against real Kafka Streams 4.2, Quix Streams and Spark Structured Streaming on the same records (issues
#17, #28): ``make bench-quick``,
``make bench`` (``python -m bench.compare --quick|--full``).

Every system reprocesses the same cached data set (:mod:`bench.generator`) from its first offset to its end offsets,
the way its users do it today, each in processes of its own that this one measures (:mod:`bench.measure`):

- **streamproc**: ``streamproc run`` end to end (plan + fetch + process + hand-off) as a user runs it (no
  ``--master``: the window processed inline or in worker processes, ``--streamproc-master`` chooses another, e.g.
  ``local`` for Spark's ``local[c]``), a new application id and empty state, at_least_once; the per-step wall seconds
  are the line it prints;
- **streamproc engine**: the same plan's tasks run one after the other in one Python process, staged segments →
  engine → output files, no Spark (:mod:`bench.engine_only`; the window's two stages joined by ``streamproc run``'s
  own hand-over): the engine's own cost, set against Kafka Streams' stream threads (its steady state);
- **Kafka Streams 4.2.2** (``conformance/…/BenchApps.java``): the reset tool (``StreamsResetter --to-earliest``,
  its own JVM), then the app: wipe state (``cleanUp``), start, run until its last stage has seen every record, stop;
  1 and 2 stream threads, the record cache at its default (10 MiB) and off;
- **Quix Streams 3.28** (``bench/quix_app.py``, its own venv): a new consumer group and state directory, run until
  its last stage has seen every record, stop;
- **Spark Structured Streaming 4.2** (``bench/sss_app.py``, its own venv, the Kafka connector's jars from
  :mod:`bench.sss_connector`): the same logic as SQL queries and ``transformWithStateInPandas``, a fresh checkpoint
  location, ``Trigger.AvailableNow`` (it stops once it has processed what the topic held at its start).

One core or two: ``taskset`` on every process of the run (and ``local[1]``/``local[2]`` for Spark). CPU seconds are
those of every process the run started (for Kafka Streams the reset tool too) — the figure that stays meaningful on
a shared machine; for the JVM also without its JIT compiler threads and GC threads, and its stream threads alone.
The broker's CPU is reported apart. Results: ``bench/results/<date>-<machine>-compare.{json,md}`` and the plots
(:mod:`bench.plots`). Never asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from bench import generator, sss_connector
from bench.conftest import RESULTS, machine
from bench.measure import Measured, become_subreaper, run_measured
from streamproc_dev.broker import libs_dir
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from streamproc_dev.conformance.reset_tool import tools_jar

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("pass_through", "count", "window")
#: Workloads with a DSL version only (``--apis dsl --workloads filter_count``), after :data:`WORKLOADS` in tables.
DSL_ONLY_WORKLOADS = ("filter_count", "window_count", "session_count", "aggregate")
_ORDER = (*WORKLOADS, *DSL_ONLY_WORKLOADS)
STEP = re.compile(r"(plan|fetch|process|hand-off) (\d+\.\d) s")
QUIX_PYTHON = ROOT / ".venv-quix" / "bin" / "python"
SSS_PYTHON = ROOT / ".venv-sss" / "bin" / "python"
SSS = "spark-structured-streaming"
#: Spark Structured Streaming's versions of each workload: ``dsl`` the SQL query (``groupBy(key).count()`` …),
#: ``papi`` the Processor API count as ``transformWithStateInPandas`` (``bench/sss_app.py``)
SSS_APIS = {"pass_through": ("dsl",), "count": ("dsl", "papi"), "window": ("dsl",)}
SYSTEMS = f"streamproc,streamproc-engine,kafka-streams,quix-streams,{SSS}"
#: the systems' order in tables and plots
SYSTEM_ORDER = ("streamproc", "streamproc-engine", "kafka-streams", "quix-streams", SSS)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one invocation measures."""

    sizes: tuple[int, ...]
    partitions: tuple[int, ...]
    repeats: int
    cores: tuple[int, ...]  # streamproc, Quix and Kafka Streams (1 thread, cache off) on each
    ks_variants: tuple[tuple[int, str], ...]  # (stream threads, cache) on the most cores
    apis: tuple[str, ...]


# quick answers the issue's table (every system × workload at 1 M) and its goals, nothing more: Kafka Streams' second
# thread is a point of the scaling curves (SCALING), not of the table
QUICK = Plan(sizes=(1_000_000,), partitions=(8,), repeats=1, cores=(2,),
             ks_variants=((1, "default"), (1, "off")), apis=("papi",))  # fmt: skip
# the scaling curves: over N and over cores (1 → 2; Kafka Streams 1 → 2 stream threads), streamproc run and Kafka
# Streams, one stateful workload (``--scaling``; narrow or widen with --sizes / --workloads)
SCALING = Plan(sizes=(1_000_000, 3_000_000), partitions=(8,), repeats=1, cores=(1, 2),
               ks_variants=((1, "off"), (2, "off")), apis=("papi",))  # fmt: skip
FULL = Plan(sizes=(1_000_000, 10_000_000), partitions=(8, 32), repeats=3, cores=(1, 2),
            ks_variants=((1, "default"), (1, "off"), (2, "default"), (2, "off")), apis=("papi", "dsl"))  # fmt: skip


#: ``streamproc run``'s process step: ``default`` as a user runs it (no ``--master``: inline or worker processes by
#: the window, ``spark.job.default_master``), ``local`` Spark's ``local[c]``, else that master.
STREAMPROC_MASTER = "default"


#: The DSL workloads whose stores ``--record-cache flush-at-end`` emulates (a grouped stream's count or aggregate,
#: windowed too):
#: each also runs that way, as the user of an app with Kafka Streams' default (cached) stores may choose to.
RECORD_CACHE_WORKLOADS = ("count", "filter_count", "aggregate", "window_count")
FLUSH_AT_END = "flush-at-end"


def streamproc_variant(api: str, cores: int, master: str, record_cache: str = "off") -> str:
    cache = "" if record_cache == "off" else f" record cache {record_cache}"
    if master == "default":
        return f"run {api}{cache}"
    return f"run {api} {f'local[{cores}]' if master == 'local' else master}{cache}"


def _master_flags(master: str, cores: int) -> list[str]:
    if master == "default":
        return []
    return ["--master", f"local[{cores}]" if master == "local" else master]


def _taskset(cores: int) -> list[str]:
    return ["taskset", "-c", ",".join(str(c) for c in range(cores))]


class Bench:
    def __init__(self, bootstrap: str, broker_pid: int, work: Path, log: Path) -> None:
        self.bootstrap, self.broker_pid, self.work, self.log = bootstrap, broker_pid, work, log
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.oracle = ensure_oracle_jar()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def topic(self, partitions: int) -> str:
        name = f"bench-out-{uuid.uuid4().hex[:10]}"
        self.admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(60)
        return name

    def drop_topics(self, *markers: str) -> None:
        """Delete every topic whose name contains one of ``markers`` (a run's outputs and internal topics)."""
        names = [t for t in self.admin.list_topics(timeout=30).topics if any(m in t for m in markers)]
        if names:
            for future in self.admin.delete_topics(names).values():
                future.result(60)

    def records_on(self, topic: str) -> int:
        """The records a run wrote to its new output topic: the sum of its end offsets."""
        partitions = self.admin.list_topics(topic, timeout=30).topics[topic].partitions
        request = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        return sum(future.result(60).offset for future in self.admin.list_offsets(request).values())

    def measured(self, commands: list[list[str]], env: dict[str, str]) -> Measured:
        return run_measured(commands, env=env, cwd=ROOT, log=self.log, broker_pid=self.broker_pid)

    # -- the systems -------------------------------------------------------------------------------------------

    def streamproc(
        self,
        data: generator.DataSet,
        workload: str,
        cores: int,
        api: str,
        master: str = STREAMPROC_MASTER,
        record_cache: str = "off",
        split: str = "auto",
        factory: str | None = None,
    ) -> dict[str, Any]:
        """``streamproc run`` of ``workload`` (``factory``: another topology than ``bench.workloads``' of that name,
        ``split``: its ``--split``, ``bench/split_run.py``'s)."""
        output = self.topic(data.partitions)
        app = f"bench-sp-{workload.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
        run_dir = Path(tempfile.mkdtemp(dir=self.work))
        if factory is None:
            factory = f"bench.workloads:{workload}" if api == "papi" else f"bench.workloads:dsl_{workload}"
        command = [*_taskset(cores), str(ROOT / ".venv" / "bin" / "streamproc"), "run", "--bootstrap", self.bootstrap,
                   "--application-id", app, "--topology", factory, "--store", str(run_dir / "staging"),
                   "--work-dir", str(run_dir / "work"), "--state-dir", str(run_dir / "state"),
                   *_master_flags(master, cores), "--create-internal-topics", "--record-cache", record_cache,
                   "--split", split, "--streams-setting", "replication.factor=1", "--yes"]  # fmt: skip
        env = {**self.env, "STREAMPROC_BENCH_INPUT": data.topic, "STREAMPROC_BENCH_OUTPUT": output}
        try:
            m = self.measured([command], env)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
            self.drop_topics(output, app)
        out = m.stdout[0] + m.stderr[0]
        if f"{data.records} records" not in out:
            raise RuntimeError(f"streamproc run did not process {data.records} records:\n{out[-2000:]}")
        [line] = [x for x in out.splitlines() if x.startswith("streamproc run: ")]
        return {**_figures(m, data.records), "steps_s": {k: float(v) for k, v in STEP.findall(line)}}

    def engine_only(self, data: generator.DataSet, workload: str, api: str) -> dict[str, Any]:
        output = self.topic(data.partitions)
        app = f"bench-eng-{workload.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
        run_dir = Path(tempfile.mkdtemp(dir=self.work))
        staging = self.work / f"staging-{data.topic}"  # one fetch per data set, shared by the workloads' runs
        command = [*_taskset(1), sys.executable, "-m", "bench.engine_only", self.bootstrap, app, workload, api,
                   str(run_dir), str(data.records), str(staging)]  # fmt: skip
        env = {**self.env, "STREAMPROC_BENCH_INPUT": data.topic, "STREAMPROC_BENCH_OUTPUT": output}
        try:
            m = self.measured([command], env)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
            self.drop_topics(output, app)
        inner = json.loads(m.stdout[0].strip().splitlines()[-1])
        figures = {"wall_s": round(inner["wall_s"], 2), "cpu_s": round(inner["cpu_s"], 2),
                   "records_per_s": round(data.records / inner["wall_s"]),
                   "records_per_cpu_s": round(data.records / inner["cpu_s"]),
                   "stage_wall_s": round(inner["stage_wall_s"], 2), "process_wall_s_with_staging": round(m.wall_s, 2),
                   "peak_rss_mb_largest": round(m.peak_rss_mb_largest, 1)}  # fmt: skip
        if len(inner.get("stages", ())) > 1:  # a two-stage workload (window): each stage's tasks apart
            figures["stages"] = [{"tasks": st["tasks"], "records": st["records"], "wall_s": round(st["wall_s"], 2),
                                  "cpu_s": round(st["cpu_s"], 2)} for st in inner["stages"]]  # fmt: skip
            figures["handed_over"] = inner["handed_over"]
        return figures

    def kafka_streams(
        self, data: generator.DataSet, workload: str, api: str, threads: int, cache: str, cores: int
    ) -> dict[str, Any]:
        output = self.topic(data.partitions)
        # unique per run: two invocations on one broker (--attach) must not join one group, nor reset each other's
        app = (f"bench-ks-{api}-{workload.replace('_', '-')}-{data.records}-{data.partitions}p-t{threads}-{cache}"
               f"-c{cores}-{uuid.uuid4().hex[:6]}")  # fmt: skip
        state = Path(tempfile.mkdtemp(dir=self.work))
        tools = tools_jar()  # fetched from Maven Central on a fresh machine, as the planning oracle does
        reset = [*_taskset(cores), "java", "-cp", f"{libs_dir()}/*:{tools}", "org.apache.kafka.tools.StreamsResetter",
                 "--bootstrap-server", self.bootstrap, "--application-id", app, "--input-topics", data.topic,
                 "--to-earliest", "--force"]  # fmt: skip
        streams = [*_taskset(cores), "java", "-jar", str(self.oracle), "bench", self.bootstrap, app, workload, api,
                   data.topic, output, str(threads), cache, str(data.records), str(state)]  # fmt: skip
        try:
            m = self.measured([reset, streams], self.env)
        finally:
            shutil.rmtree(state, ignore_errors=True)
            self.drop_topics(output, app + "-")
        inner = json.loads(m.stdout[1].strip().splitlines()[-1])
        threads_cpu = inner["thread_cpu_s"]
        jit, gc = threads_cpu.get("jit", 0.0), threads_cpu.get("gc", 0.0)
        figures = _figures(m, data.records)
        figures.update(
            reset_s=m.command_wall_s[0],
            app_s=m.command_wall_s[1],
            processing_s=round(inner["processing_s"], 2),
            jvm_thread_cpu_s={k: round(v, 2) for k, v in threads_cpu.items()},
            cpu_s_without_jit=round(m.cpu_s - jit, 2),
            cpu_s_without_jit_gc=round(m.cpu_s - jit - gc, 2),
            records_per_cpu_s_without_jit=round(data.records / (m.cpu_s - jit)),
            records_per_cpu_s_without_jit_gc=round(data.records / (m.cpu_s - jit - gc)),
        )
        if threads_cpu.get("stream_threads"):
            figures["records_per_stream_thread_cpu_s"] = round(data.records / threads_cpu["stream_threads"])
        return figures

    def quix(self, data: generator.DataSet, workload: str, cores: int) -> dict[str, Any]:
        output = self.topic(data.partitions)
        group = f"bench-quix-{workload.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
        state = Path(tempfile.mkdtemp(dir=self.work))
        command = [*_taskset(cores), str(QUIX_PYTHON), str(ROOT / "bench" / "quix_app.py"), self.bootstrap, group,
                   workload, data.topic, output, str(data.records), str(state)]  # fmt: skip
        env = {k: v for k, v in self.env.items() if k != "PYTHONPATH"}
        try:
            m = self.measured([command], env)
        finally:
            shutil.rmtree(state, ignore_errors=True)
            self.drop_topics(output, group)
        inner = json.loads(m.stdout[0].strip().splitlines()[-1])
        return {**_figures(m, data.records), "processing_s": round(inner["processing_s"], 2)}

    def spark_structured_streaming(
        self, data: generator.DataSet, workload: str, api: str, cores: int
    ) -> dict[str, Any]:
        jars = ",".join(str(j) for j in sss_connector.jars())  # fetched before the measured command, once
        output = self.topic(data.partitions)
        checkpoint = Path(tempfile.mkdtemp(dir=self.work))
        command = [*_taskset(cores), str(SSS_PYTHON), str(ROOT / "bench" / "sss_app.py"), self.bootstrap, workload,
                   api, data.topic, output, "--partitions", str(data.partitions), "--cores", str(cores),
                   "--checkpoint", str(checkpoint), "--jars", jars]  # fmt: skip
        env = {k: v for k, v in self.env.items() if k != "PYTHONPATH"}
        try:
            m = self.measured([command], env)
            written = self.records_on(output)
        finally:
            shutil.rmtree(checkpoint, ignore_errors=True)
            self.drop_topics(output)
        inner = json.loads(m.stdout[0].strip().splitlines()[-1])
        if failure := sss_incomplete(inner, written, data.records, api):
            raise RuntimeError(f"Spark Structured Streaming {workload} ({api}): {failure}")
        return {**_figures(m, data.records), "processing_s": round(inner["processing_s"], 2),
                "output_records": written, "batches": inner["batches"]}  # fmt: skip


def sss_incomplete(inner: dict[str, Any], written: int, records: int, api: str) -> str | None:
    """Why a Spark Structured Streaming run cannot report a speed, or ``None``: it read every record, dropped none as
    late, and its output topic holds what its sink says it wrote (the Processor API count: one record per input)."""
    if inner["input_rows"] != records:
        return f"read {inner['input_rows']} of {records} records"
    if inner["dropped_by_watermark"]:
        return f"dropped {inner['dropped_by_watermark']} records as late"
    if written == 0 or written != inner["output_rows"]:
        return f"the output topic holds {written} records, the sink reported {inner['output_rows']}"
    if api == "papi" and written != records:
        return f"sent {written} counts for {records} records"
    return None


def sss_variant(api: str, cores: int) -> str:
    return f"{'dsl' if api == 'dsl' else 'papi transformWithStateInPandas'} local[{cores}]"


def _figures(m: Measured, records: int) -> dict[str, Any]:
    return {
        "wall_s": round(m.wall_s, 2),
        "cpu_s": round(m.cpu_s, 2),
        "cpu_s_rusage": round(m.cpu_s_rusage, 2),  # without children of a parent ignoring SIGCHLD (bench.measure)
        "records_per_s": round(records / m.wall_s),
        "records_per_cpu_s": round(records / m.cpu_s),
        "peak_rss_mb_largest": round(m.peak_rss_mb_largest, 1),
        "peak_rss_mb_sum": round(m.peak_rss_mb_sum, 1),
        "disk_read_mb": round(m.disk_read_bytes / 2**20, 1),
        "disk_write_mb": round(m.disk_write_bytes / 2**20, 1),
        "broker_cpu_s": round(m.broker_cpu_s, 2),
        "broker_disk_write_mb": round(m.broker_disk_write_bytes / 2**20, 1),
    }


def runs_for(plan: Plan, workloads: tuple[str, ...], master: str = STREAMPROC_MASTER) -> list[dict[str, Any]]:
    """Every (system, variant) to run per data set, in order; ``master``: streamproc run's (see
    :data:`STREAMPROC_MASTER`)."""
    from bench.workloads import DSL_WORKLOADS, PAPI_WORKLOADS

    out: list[dict[str, Any]] = []
    most = max(plan.cores)
    for api in plan.apis:
        names = tuple(w for w in workloads if w in (PAPI_WORKLOADS if api == "papi" else DSL_WORKLOADS))
        for workload in names:
            caches = ("off", FLUSH_AT_END) if api == "dsl" and workload in RECORD_CACHE_WORKLOADS else ("off",)
            for cores in plan.cores:
                for cache in caches:
                    out.append({"system": "streamproc", "variant": streamproc_variant(api, cores, master, cache),
                                "workload": workload, "api": api, "cores": cores, "master": master,
                                "record_cache": cache})  # fmt: skip
            out.append({"system": "streamproc-engine", "variant": f"engine {api}", "workload": workload,
                        "api": api, "cores": 1})  # fmt: skip
    for api in plan.apis:
        for workload in workloads:
            if workload not in (PAPI_WORKLOADS if api == "papi" else DSL_WORKLOADS):
                continue
            for threads, cache in plan.ks_variants:
                out.append({"system": "kafka-streams", "variant": f"{api} {threads}t cache {cache}",
                            "workload": workload, "api": api, "threads": threads, "cache": cache,
                            "cores": most})  # fmt: skip
            for cores in plan.cores:
                if cores != most:
                    out.append({"system": "kafka-streams", "variant": f"{api} 1t cache off", "workload": workload,
                                "api": api, "threads": 1, "cache": "off", "cores": cores})  # fmt: skip
    for workload in (w for w in workloads if w in WORKLOADS):
        for cores in plan.cores:
            out.append({"system": "quix-streams", "variant": "quix", "workload": workload, "api": "quix",
                        "cores": cores})  # fmt: skip
    for workload in (w for w in workloads if w in SSS_APIS):
        for api in SSS_APIS[workload]:
            for cores in plan.cores:
                out.append({"system": SSS, "variant": sss_variant(api, cores), "workload": workload, "api": api,
                            "cores": cores})  # fmt: skip
    return out


def run_one(bench: Bench, data: generator.DataSet, spec: dict[str, Any]) -> dict[str, Any]:
    system, workload, cores, api = spec["system"], spec["workload"], spec["cores"], spec["api"]
    if system == "streamproc":
        master = spec.get("master", STREAMPROC_MASTER)
        return bench.streamproc(data, workload, cores, api, master, spec.get("record_cache", "off"))
    if system == "streamproc-engine":
        return bench.engine_only(data, workload, api)
    if system == "kafka-streams":
        return bench.kafka_streams(data, workload, api, spec["threads"], spec["cache"], cores)
    if system == SSS:
        return bench.spark_structured_streaming(data, workload, api, cores)
    return bench.quix(data, workload, cores)


KEY = ("system", "variant", "workload", "records", "partitions", "cores")


def summarise(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The median of the repeats of each configuration (by wall time), failures apart."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in runs:
        if "error" not in r:
            groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    out = []
    for rows in groups.values():
        rows = sorted(rows, key=lambda r: r["wall_s"])
        median = rows[len(rows) // 2]
        out.append({**median, "repeats": len(rows), "wall_s_spread": [rows[0]["wall_s"], rows[-1]["wall_s"]]})
    return out


def _find(summary: list[dict[str, Any]], **where: Any) -> dict[str, Any] | None:
    for row in summary:
        if all(row.get(k) == v for k, v in where.items()):
            return row
    return None


def _streamproc_run(
    summary: list[dict[str, Any]],
    api: str,
    workload: str,
    cores: int,
    base: dict[str, Any],
    record_cache: str = "off",
) -> dict[str, Any] | None:
    """``streamproc run``'s row for the goals: as a user runs it (no ``--master``) where measured, else Spark's."""
    for master in ("default", "local"):
        variant = streamproc_variant(api, cores, master, record_cache)
        row = _find(summary, system="streamproc", variant=variant, workload=workload, **base)
        if row is not None:
            return row
    return None


def goals(summary: list[dict[str, Any]], records: int, partitions: int, cores: int) -> list[dict[str, Any]]:
    """The issue's ratio goals that this comparison measures, met or not (per CPU-second)."""
    out = []
    base = {"records": records, "partitions": partitions}

    def add(goal: str, mine: dict[str, Any] | None, field: str, theirs: dict[str, Any] | None, their_field: str,
            target: float) -> None:  # fmt: skip
        if mine is None or theirs is None:
            return
        ratio = mine[field] / theirs[their_field]
        out.append({"goal": goal, "streamproc": mine[field], "other": theirs[their_field], "ratio": round(ratio, 3),
                    "target": target, "met": ratio >= target})  # fmt: skip

    for workload, target_off, target_default in (("pass_through", 0.5, None), ("count", 0.8, 0.5)):
        engine = _find(summary, system="streamproc-engine", variant="engine papi", workload=workload, **base)
        off = _find(summary, system="kafka-streams", variant="papi 1t cache off", workload=workload, cores=cores,
                    **base)  # fmt: skip
        add(f"engine {workload} ≥ {target_off}× KS stream thread, cache off", engine, "records_per_cpu_s", off,
            "records_per_stream_thread_cpu_s", target_off)  # fmt: skip
        if target_default is not None:
            default = _find(summary, system="kafka-streams", variant="papi 1t cache default", workload=workload,
                            cores=cores, **base)  # fmt: skip
            add(f"engine {workload} ≥ {target_default}× KS stream thread, default cache", engine,
                "records_per_cpu_s", default, "records_per_stream_thread_cpu_s", target_default)  # fmt: skip
    # issue #16: the DSL's processors per CPU-second against Kafka Streams' DSL, its stream threads, with its default
    # settings (the words: the 10 MiB cache) and with the cache off (what a replay reproduces): ≥ 2× where no
    # user code runs (count, the windowed count), ≥ 1× with Python lambdas (the window's select_key and aggregator too;
    # its engine figure runs both stages, as the stream thread runs both sub-topologies)
    targets = (
        ("pass_through", 1.0), ("count", 2.0), ("filter_count", 1.0), ("window", 1.0), ("window_count", 2.0),
        ("aggregate", 1.0),
    )  # fmt: skip
    for workload, target in targets:
        engine = _find(summary, system="streamproc-engine", variant="engine dsl", workload=workload, **base)
        for cache, settings in (("off", "cache off"), ("default", "default cache")):
            ks = _find(summary, system="kafka-streams", variant=f"dsl 1t cache {cache}", workload=workload,
                       cores=cores, **base)  # fmt: skip
            add(f"DSL engine {workload} ≥ {target}× KS DSL stream thread, {settings}", engine, "records_per_cpu_s", ks,
                "records_per_stream_thread_cpu_s", target)  # fmt: skip
    for workload, target in (("window", 1.0),):  # two stages: streamproc run end to end too
        run = _streamproc_run(summary, "dsl", workload, cores, base)
        off = _find(summary, system="kafka-streams", variant="dsl 1t cache off", workload=workload, cores=cores,
                    **base)  # fmt: skip
        add(f"DSL streamproc run {workload} ≥ {target}× KS DSL reset + restart, cache off (all its CPU)", run,
            "records_per_cpu_s", off, "records_per_cpu_s", target)  # fmt: skip
    # issue #28: the DSL run end to end, as a user runs it, against Kafka Streams' reset + restart with its default
    # cache: ≥ 2× where no user code runs, ≥ 1× with Python lambdas; ≥ 1.5× Spark Structured Streaming's SQL
    targets = (
        ("count", 2.0), ("window_count", 2.0), ("pass_through", 1.0),
        ("filter_count", 1.0), ("window", 1.0), ("aggregate", 1.0),
    )  # fmt: skip
    for workload, target in targets:
        run = _streamproc_run(summary, "dsl", workload, cores, base)
        ks = _find(summary, system="kafka-streams", variant="dsl 1t cache default", workload=workload, cores=cores,
                   **base)  # fmt: skip
        add(f"DSL streamproc run {workload} ≥ {target}× KS DSL reset + restart, default cache (all its CPU)", run,
            "records_per_cpu_s", ks, "records_per_cpu_s", target)  # fmt: skip
        sss = _find(summary, system=SSS, variant=sss_variant("dsl", cores), workload=workload, **base)
        add(f"DSL streamproc run {workload} ≥ 1.5× Spark Structured Streaming", run, "records_per_cpu_s", sss,
            "records_per_cpu_s", 1.5)  # fmt: skip
        if workload in RECORD_CACHE_WORKLOADS:  # the same app's outputs as Kafka Streams' cache folds them
            cached = _streamproc_run(summary, "dsl", workload, cores, base, FLUSH_AT_END)
            goal = f"DSL streamproc run {workload}, --record-cache {FLUSH_AT_END}, ≥ {target}× KS DSL reset + restart"
            add(f"{goal}, default cache (all its CPU)", cached, "records_per_cpu_s", ks, "records_per_cpu_s", target)
            add(f"DSL streamproc run {workload}, --record-cache {FLUSH_AT_END}, ≥ 1.5× Spark Structured Streaming",
                cached, "records_per_cpu_s", sss, "records_per_cpu_s", 1.5)  # fmt: skip
    for workload in WORKLOADS:
        run = _streamproc_run(summary, "papi", workload, cores, base)
        ks = _find(summary, system="kafka-streams", variant="papi 1t cache default", workload=workload, cores=cores,
                   **base)  # fmt: skip
        quix = _find(summary, system="quix-streams", workload=workload, cores=cores, **base)
        add(f"streamproc run {workload} ≥ 1.0× KS reset + restart (all its CPU)", run, "records_per_cpu_s", ks,
            "records_per_cpu_s", 1.0)  # fmt: skip
        add(f"streamproc run {workload} ≥ 3× Quix Streams", run, "records_per_cpu_s", quix, "records_per_cpu_s", 3.0)
        # issue #28: against the peer a Spark user would write, each of its versions of the workload
        for api in SSS_APIS[workload]:
            sss = _find(summary, system=SSS, variant=sss_variant(api, cores), workload=workload, **base)
            peer = "Spark Structured Streaming" + (" transformWithStateInPandas" if api == "papi" else "")
            add(f"streamproc run {workload} ≥ 1.5× {peer}", run, "records_per_cpu_s", sss, "records_per_cpu_s", 1.5)
    return out


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"# streamproc, Kafka Streams 4.2.2, Quix Streams 3.28.1, Spark Structured Streaming 4.2.0 on the same records "
        f"— {results['date']}",
        "",
        f"Machine: {m['cpu_model']}, {m['cpus']} CPUs, {m.get('memory_gb', '?')} GB, Python {m['python']}, "
        f"{m['platform']}; load average (1 min) at the start {results['load_average_start']}, at the end "
        f"{m['load_average_1m']} (shared with other work: wall figures are disturbed, CPU-second figures much less). "
        f"Plan: {results['plan']}. Data: "
        + "; ".join(
            f"`{d['topic']}` ({d['records']:,} records, {d['partitions']} partitions, {d['users']:,} "
            f"Zipf-{d['zipf_s']} keys, {d['value_bytes']}-byte values, {'reused' if d['reused'] else 'produced'})"
            for d in results["data_sets"]
        ),
        "",
        "rec/CPU-s counts every process the run started (Kafka Streams: the reset tool's JVM and the app's JVM, JIT "
        "and GC included; streamproc run: the CLI, Spark's JVM and Python workers; Spark Structured Streaming: its "
        "Python driver, Spark's JVM and, for transformWithStateInPandas, its Python workers); *no JIT/GC* leaves out "
        "the JVM's compiler and GC threads, *stream thr.* counts only the stream threads' CPU (Kafka Streams' steady "
        "state). "
        "Peak RSS: the largest process / the sum of every process's peak. Disk: bytes the run's processes read and "
        "wrote through the block layer (the broker's own writes apart).",
        "",
        "| records | part. | workload | system | variant | cores | wall s | rec/s | CPU s | rec/CPU-s "
        "| rec/CPU-s no JIT/GC | rec/CPU-s stream thr. | peak RSS MiB | disk r/w MiB | broker CPU s "
        "| steps s; engine stages |",
        "|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    order = {s: i for i, s in enumerate(SYSTEM_ORDER)}
    rows = sorted(results["summary"], key=lambda r: (r["records"], r["partitions"], _ORDER.index(r["workload"]),
                                                     order[r["system"]], r["variant"], r["cores"]))  # fmt: skip
    for r in rows:
        steps = " ".join(f"{k} {v}" for k, v in r.get("steps_s", {}).items()) or "; ".join(
            f"stage {n}: {st['records']:,} rec, {st['cpu_s']} CPU-s, {st['wall_s']} s"
            for n, st in enumerate(r.get("stages", ()), start=1)
        )
        if "batches" in r:  # Spark Structured Streaming: update mode sends a key's last value per micro-batch
            steps = f"{r['batches']} batch(es), {r['output_records']:,} records out, query {r['processing_s']} s"
        lines.append(
            f"| {r['records']:,} | {r['partitions']} | {r['workload']} | {r['system']} | {r['variant']} | {r['cores']} "
            f"| {r['wall_s']} | {r['records_per_s']:,} | {r['cpu_s']} | {r['records_per_cpu_s']:,} "
            f"| {_opt(r, 'records_per_cpu_s_without_jit_gc')} | {_opt(r, 'records_per_stream_thread_cpu_s')} "
            f"| {r['peak_rss_mb_largest']:.0f}{_opt_sum(r)} "
            f"| {r.get('disk_read_mb', '')} / {r.get('disk_write_mb', '')} | {r.get('broker_cpu_s', '')} | {steps} |"
        )
    lines += ["", "## The issue's goals (per CPU-second)", "", "| data | goal | streamproc | other | ratio | met |",
              "|---|---|---:|---:|---:|---|"]  # fmt: skip
    for g in results["goals"]:
        lines.append(f"| {g['data']} | {g['goal']} | {g['streamproc']:,} | {g['other']:,} | {g['ratio']:.2f}× "
                     f"| {'yes' if g['met'] else '**no**'} |")  # fmt: skip
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {note}" for note in results["notes"]]
    if any("from" in r for r in results["runs"]):
        lines += ["", "## Which invocation measured which row", ""]
        lines += [f"- {r['system']} {r['variant']} {r['workload']} {r['records']:,} cores={r['cores']}: `{r['from']}`"
                  for r in results["runs"] if "error" not in r]  # fmt: skip
    failures = [r for r in results["runs"] if "error" in r]
    if failures:
        lines += ["", "## Runs that failed", ""]
        lines += [f"- {r['system']} {r['variant']} {r['workload']} {r['records']:,}: {r['error']}" for r in failures]
    return "\n".join(lines) + "\n"


def _opt_sum(row: dict[str, Any]) -> str:
    return f" / {row['peak_rss_mb_sum']:.0f}" if "peak_rss_mb_sum" in row else ""


def _opt(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:,}" if key in row else ""


def override(
    plan: Plan,
    *,
    sizes: str | None = None,
    partitions: str | None = None,
    cores: str | None = None,
    repeats: int | None = None,
    apis: str | None = None,
    ks_variants: str | None = None,
) -> Plan:
    """``plan`` narrowed or widened by the command line's comma-separated lists (``--sizes 10000000 --partitions
    32 --cores 2 --ks-variants 1:off,2:off``): one point of a curve without the plan's other points."""

    def numbers(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(int(n) for n in text.split(",")) if text else default

    variants = plan.ks_variants
    if ks_variants:
        variants = tuple((int(t), c) for t, c in (v.split(":") for v in ks_variants.split(",")))
    return Plan(numbers(sizes, plan.sizes), numbers(partitions, plan.partitions), repeats or plan.repeats,
                numbers(cores, plan.cores), variants, tuple(apis.split(",")) if apis else plan.apis)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--full", action="store_true", help="every size, partition count, core count (make bench)")
    parser.add_argument("--quick", action="store_true", help="1 M records, 8 partitions, one repeat (default)")
    parser.add_argument("--scaling", action="store_true",
                        help="the scaling curves: count at 1 M and 3 M, 1 and 2 cores, streamproc run and Kafka "
                        "Streams 1/2 threads (results under --label, default 'scaling')")  # fmt: skip
    parser.add_argument("--attach", action="store_true",
                        help="use the bench broker another invocation started (and leave it running): two "
                        "invocations share one broker and its data sets")  # fmt: skip
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--systems", default=SYSTEMS)
    parser.add_argument("--streamproc-master", default=STREAMPROC_MASTER,
                        help="streamproc run's master: 'default' (none given, as a user runs it), 'local' (Spark's "
                        "local[c]) or a master such as processes[2] or inline")  # fmt: skip
    parser.add_argument("--apis", default=None, help="papi,dsl: the workloads' APIs (overrides the plan's)")
    parser.add_argument("--ks-variants", default=None, help="Kafka Streams' THREADS:CACHE, e.g. 1:off,2:default")
    parser.add_argument("--label", default="", help="results under <date>-<machine>-<label>-compare.* (a subset's)")
    parser.add_argument("--only", default=None,
                        help="run only the plan's runs whose '<system> <variant> <workload> cores=<c>' matches this "
                        "regular expression (points missing from an earlier run)")  # fmt: skip
    parser.add_argument("--merge", nargs="+", default=None, metavar="FILE.json",
                        help="no runs: one results file (and plots) from these runs' results, the later file's "
                        "run replacing a failed one of the same configuration")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--sizes", default=None, help="records per data set, comma-separated (overrides the plan)")
    parser.add_argument("--partitions", default=None, help="partitions per data set, comma-separated (e.g. 32)")
    parser.add_argument("--cores", default=None, help="cores per run, comma-separated (e.g. 2: no 1-core points)")
    args = parser.parse_args(argv)
    plan = FULL if args.full else SCALING if args.scaling else QUICK
    if args.scaling:
        args.workloads = "count" if args.workloads == ",".join(WORKLOADS) else args.workloads
        args.systems = "streamproc,kafka-streams" if args.systems == SYSTEMS else args.systems
        args.label = args.label or "scaling"
    plan = override(plan, sizes=args.sizes, partitions=args.partitions, cores=args.cores, repeats=args.repeats,
                    apis=args.apis, ks_variants=args.ks_variants)  # fmt: skip
    if args.merge:  # no runs: no peer's venv needed
        return merge([Path(f) for f in args.merge], _stamp(args.label))
    if "quix-streams" in args.systems and not QUIX_PYTHON.exists():
        print(f"Quix Streams' venv {QUIX_PYTHON.parent.parent} is missing: run `make bench-venv`", file=sys.stderr)
        return 2
    if SSS in args.systems and not SSS_PYTHON.exists():
        print(f"Spark Structured Streaming's venv {SSS_PYTHON.parent.parent} is missing: run `make bench-venv`",
              file=sys.stderr)  # fmt: skip
        return 2
    workloads = tuple(args.workloads.split(","))
    systems = set(args.systems.split(","))
    become_subreaper()
    stamp = _stamp(args.label)
    RESULTS.mkdir(exist_ok=True)
    log = RESULTS / f"{stamp}-compare.log"
    log.write_text("")
    plan_name = "full" if args.full else "scaling" if args.scaling else "quick"
    results: dict[str, Any] = {"date": stamp[:10], "plan": plan_name, "data_sets": [],
                               "load_average_start": round(os.getloadavg()[0], 2), "runs": []}  # fmt: skip
    handle = generator.attach_broker() if args.attach else generator.start_broker()
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="streamproc-bench-"))
    bench: Bench | None = None
    try:
        bench = Bench(handle.address, handle.pid, work, log)
        for records in plan.sizes:
            for partitions in plan.partitions:
                data = generator.DataSet(records, partitions)
                started = time.perf_counter()
                results["data_sets"].append(generator.ensure(handle.address, data))
                print(f"data set {data.topic}: ready in {time.perf_counter() - started:.0f} s", flush=True)
                for repeat in range(plan.repeats):
                    for spec in runs_for(plan, workloads, args.streamproc_master):
                        name = f"{spec['system']} {spec['variant']} {spec['workload']} cores={spec['cores']}"
                        if spec["system"] not in systems or (args.only and not re.search(args.only, name)):
                            continue
                        row = {**spec, "records": records, "partitions": partitions, "repeat": repeat}
                        try:
                            row.update(run_one(bench, data, spec))
                        except Exception as e:  # noqa: BLE001 - one failed run is reported, the others still run
                            row["error"] = str(e).splitlines()[0][:300]
                        results["runs"].append(row)
                        print(f"{records:,} {partitions}p {spec['system']} {spec['variant']} {spec['workload']} "
                              f"cores={spec['cores']}: " + (row.get("error") or
                              f"{row['wall_s']} s, {row['records_per_cpu_s']:,} rec/CPU-s"), flush=True)  # fmt: skip
                        write(results, stamp)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        del bench  # its admin client must not outlive the broker (librdkafka would log every reconnect)
        if not args.attach:
            generator.stop_broker()
    results["total_wall_s"] = round(time.perf_counter() - began, 1)
    results["load_average_end"] = round(os.getloadavg()[0], 2)
    write(results, stamp)
    from bench import plots

    for path in plots.draw(results, RESULTS, stamp):
        print(f"plot: {path}")
    return 0


def _stamp(label: str) -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d") + "-" + os.uname().nodename + (f"-{label}" if label else "")


def merge(files: list[Path], stamp: str) -> int:
    """One results file from several invocations' (a run interrupted by a broker restart, completed by ``--only``):
    every successful run, and a failure only while no file has that configuration measured; each file's plan, load
    and wall time in the notes, so that a figure can be traced to its invocation. A ``streamproc run`` measured
    before :mod:`bench.measure` counted its CPU in a cgroup (no ``cpu_s_rusage``) is left out: its figure lacks
    the Spark Python workers' CPU, which ``getrusage`` never sees."""
    runs: list[dict[str, Any]] = []
    merged: dict[str, Any] = {"date": stamp[:10], "plan": "merged", "data_sets": [], "notes": [], "runs": runs}
    undercounted = 0
    for f in files:
        part = json.loads(f.read_text())
        for run in part["runs"]:
            if run["system"] == "streamproc" and "error" not in run and "cpu_s_rusage" not in run:
                undercounted += 1  # measured before bench.measure's cgroup: its Spark workers' CPU is missing
                continue
            runs.append({**run, "from": f.name})
        for data in part["data_sets"]:
            if data["topic"] not in {d["topic"] for d in merged["data_sets"]}:
                merged["data_sets"].append(data)
        merged["notes"].append(f"`{f.name}`: plan {part['plan']}, load average {part['load_average_start']} at the "
                               f"start, {part.get('load_average_end', part['machine']['load_average_1m'])} at the end, "
                               f"{part.get('total_wall_s', '?')} s in all")  # fmt: skip
    if undercounted:
        merged["notes"].append(f"{undercounted} `streamproc run` row(s) left out: measured with getrusage alone, "
                               "which misses the CPU of Spark's Python workers (bench/measure.py)")  # fmt: skip
    measured = {tuple(r[k] for k in KEY) for r in runs if "error" not in r}
    merged["runs"] = [r for r in runs if "error" not in r or tuple(r[k] for k in KEY) not in measured]
    merged["load_average_start"] = json.loads(files[0].read_text())["load_average_start"]
    write(merged, stamp)
    from bench import plots

    for path in plots.draw(merged, RESULTS, stamp):
        print(f"plot: {path}")
    return 0


def _memory_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def write(results: dict[str, Any], stamp: str) -> None:
    results["machine"] = {**machine(), "memory_gb": _memory_gb()}
    results["summary"] = summarise(results["runs"])
    results["goals"] = []
    for records in sorted({r["records"] for r in results["summary"]}):
        for partitions in sorted({r["partitions"] for r in results["summary"]}):
            for cores in sorted({r["cores"] for r in results["summary"]}, reverse=True)[:1]:
                for g in goals(results["summary"], records, partitions, cores):
                    results["goals"].append({"data": f"{records:,} × {partitions}p", **g})
    (RESULTS / f"{stamp}-compare.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{stamp}-compare.md").write_text(markdown(results))


if __name__ == "__main__":
    sys.exit(main())
