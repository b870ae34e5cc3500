"""PNG plots of ``bench/compare.py``'s results (matplotlib, no display): records per CPU-second per system and
workload, and the scaling curves over N and cores. Redraw from a results file: ``python -m bench.plots FILE.json``;
``python -m bench.plots FILE.json MORE.json … --scaling OUT.png [--workload W]`` draws the scaling curves of several
runs' points together (the same configuration in two files: the later file's point), of workload W only if given."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

WORKLOADS = ("pass_through", "count", "window", "filter_count", "window_count", "aggregate")


def _label(row: dict[str, Any]) -> str:
    return f"{row['system']} {row['variant']}" + (f" ({row['cores']} cores)" if row["system"] != "streamproc-engine"
                                                   else "")  # fmt: skip


def per_cpu_second(summary: list[dict[str, Any]], records: int, partitions: int, path: Path) -> Path:
    rows = [r for r in summary if r["records"] == records and r["partitions"] == partitions]
    labels = sorted({_label(r) for r in rows})
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(labels) * len(WORKLOADS) + 1.5))
    y, ticks, names = 0.0, [], []
    colours = {"streamproc": "tab:blue", "streamproc-engine": "tab:cyan", "kafka-streams": "tab:orange",
               "quix-streams": "tab:green", "spark-structured-streaming": "tab:red"}  # fmt: skip
    for workload in WORKLOADS:
        for label in labels:
            row = next((r for r in rows if r["workload"] == workload and _label(r) == label), None)
            if row is None:
                continue
            ax.barh(y, row["records_per_cpu_s"], color=colours[row["system"]])
            if "records_per_stream_thread_cpu_s" in row:
                ax.plot(row["records_per_stream_thread_cpu_s"], y, "k|", markersize=12)
            ax.text(row["records_per_cpu_s"], y, f" {row['records_per_cpu_s']:,}", va="center", fontsize=7)
            ticks.append(y)
            names.append(f"{workload}: {label}")
            y += 1
        y += 0.8
    ax.set_yticks(ticks, names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("records per CPU-second (every process of the run; | = Kafka Streams' stream threads alone)")
    ax.set_title(f"{records:,} records, {partitions} partitions")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def scaling(summary: list[dict[str, Any]], path: Path) -> Path:
    fig, (by_n, by_cores) = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax in (by_n, by_cores):
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)  # more than 10 curves: no colour twice
    series: dict[str, list[tuple[int, int]]] = {}
    cores_series: dict[str, list[tuple[int, int]]] = {}
    top = max((r["cores"] for r in summary), default=1)
    for r in summary:
        name = f"{r['system']} {r['variant']} {r['workload']} {r['partitions']}p"
        if r["cores"] == top or r["system"] == "streamproc-engine":  # the engine runs on one core at any N
            series.setdefault(name, []).append((r["records"], r["records_per_cpu_s"]))
            if "records_per_stream_thread_cpu_s" in r:  # Kafka Streams' steady state, set against the engine
                threads = series.setdefault(name + " (stream threads)", [])
                threads.append((r["records"], r["records_per_stream_thread_cpu_s"]))
        if r["system"] != "streamproc-engine":  # Kafka Streams' 2 threads on 2 cores: a point of its own
            variant = r["variant"].replace(f"local[{r['cores']}]", "local[c]")
            cname = f"{r['system']} {variant} {r['workload']} {r['records']:,} {r['partitions']}p"
            # per CPU-second, not wall: on a shared machine a run's wall time is mostly the others' load; what a
            # second core costs or saves in work is what stays comparable (the wall figures are in the table)
            cores_series.setdefault(cname, []).append((r["cores"], r["records_per_cpu_s"]))
    for name, points in sorted(series.items()):
        if len({p[0] for p in points}) < 2 and len(series) > 1:  # a curve needs two sizes; single points clutter
            continue
        points.sort()
        style = "o--" if name.endswith("(stream threads)") else "o-"
        by_n.plot([p[0] for p in points], [p[1] for p in points], style, label=name)
    by_n.set_xscale("log")
    by_n.set_xlabel("records")
    by_n.set_ylabel("records per CPU-second")
    by_n.set_title(f"over N ({top} cores)")
    for name, points in sorted(cores_series.items()):
        if len({p[0] for p in points}) < 2 and len(cores_series) > 1:
            continue
        points.sort()
        by_cores.plot([p[0] for p in points], [p[1] for p in points], "o-", label=name)
    by_cores.set_xlabel("cores (taskset; Spark local[c])")
    by_cores.set_ylabel("records per CPU-second")
    by_cores.set_title("over cores")
    by_cores.set_xticks(sorted({r["cores"] for r in summary}))
    for ax in (by_n, by_cores):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=5, ncol=1)
        else:
            ax.text(0.5, 0.5, "no configuration measured at two points", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def draw(results: dict[str, Any], directory: Path, stamp: str) -> list[Path]:
    summary = results["summary"]
    out = []
    for records in sorted({r["records"] for r in summary}):
        for partitions in sorted({r["partitions"] for r in summary}):
            out.append(per_cpu_second(summary, records, partitions,
                                      directory / f"{stamp}-compare-{records}-{partitions}p.png"))  # fmt: skip
    out.append(scaling(summary, directory / f"{stamp}-compare-scaling.png"))
    return out


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in ("system", "variant", "workload", "records", "partitions", "cores"))


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--scaling" in args:
        out = Path(args[args.index("--scaling") + 1])
        files = [Path(a) for a in args[: args.index("--scaling")]]
        only = args[args.index("--workload") + 1] if "--workload" in args else None
        merged: dict[tuple[Any, ...], dict[str, Any]] = {}
        for f in files:
            rows = json.loads(f.read_text())["summary"]
            merged.update((_key(r), r) for r in rows if only in (None, r["workload"]) and "engine" not in r["system"])
        print(scaling(list(merged.values()), out))
    else:
        file = Path(args[0])
        for drawn in draw(json.loads(file.read_text()), file.parent, file.name.removesuffix("-compare.json")):
            print(drawn)
