"""``make demo``: the whole product on one machine, end to end, with a real Kafka Streams app on both sides.

1. A local broker (started, or the one a previous demo left running) and the application "orders": three weeks of
   orders keyed by customer (skewed: a few customers order a lot), 8 partitions, some out-of-order timestamps, a few
   orders days late, and some corrupt values (not JSON: the app's LogAndContinue handler drops them).
2. The real Kafka Streams app (``DemoOrdersApp``, the oracle's Java project) processes the first week and stops.
3. The backlog (weeks two and three) is reprocessed by the backfill DAG, ``airflow dags test streamproc_backfill``:
   plan → fetch → verify → process (Spark ``local[2]``) → approval (answered by the demo) → hand-off.
4. The Kafka Streams app restarts on the hand-off (same application.id and state.dir) and processes new orders.
5. The check: its outputs (final value per key) and stores equal those of a second Kafka Streams app that
   processed everything from the beginning. Exit status 1 when they differ.

The broker stays running (``~/.cache/streamproc/run/broker``); Airflow's home, the run ledger and the app's state
stay under ``~/.cache/streamproc/run/`` for a look afterwards (the UI command is printed at the end).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamproc.errors import StreamprocError
from streamproc_dev import broker
from streamproc_dev.demo_topology import (
    COUNT_STORE,
    CUSTOMER_COUNTS,
    DAILY_REVENUE,
    DAY_MS,
    GRACE_MS,
    ORDERS,
    REPARTITION,
    REVENUE_STORE,
)
from streamproc_dev.service_process import ServiceHandle, is_alive
from streamproc_dev.versions import cache_dir

log = logging.getLogger("streamproc.demo")

APPLICATION_ID = "orders"
#: the second Kafka Streams app of the final check: everything from the beginning, outputs to ``<topic>-reference``
REFERENCE_ID = "orders-reference"
REFERENCE_SUFFIX = "-reference"
TOPOLOGY = "streamproc_dev.demo_topology:orders_app"
JAVA_APP = "dev.streamproc.oracle.DemoOrdersApp"
REGIONS = ("eu-west", "eu-north", "us-east", "us-west", "ap-south", "sa-east")
PRODUCTS = ("espresso-beans", "filter-papers", "grinder", "kettle", "mug", "scale", "tamper", "milk-jug")


@dataclass(frozen=True, slots=True)
class DemoSize:
    """How much data the demo makes: ``orders`` over three weeks, ``new_orders`` after the hand-off, in topics of
    ``partitions`` partitions (the apps read the count from the topics)."""

    orders: int = 24_000
    new_orders: int = 240
    customers: int = 1_500
    corrupt_every: int = 250  # one corrupt value in every N orders
    late_every: int = 800  # one order stamped 50-60 days before its neighbours in every N
    partitions: int = 8
    late_after_handoff: bool = True  # orders 50-60 days late among the new ones too (see generate)


@dataclass(frozen=True, slots=True)
class Order:
    key: bytes
    value: bytes
    timestamp: int
    corrupt: bool = False
    late: bool = False


@dataclass(frozen=True, slots=True)
class Orders:
    """The generated orders in produce order: the first week, the backlog (weeks two and three), the new ones."""

    week1: list[Order]
    backlog: list[Order]
    new: list[Order]
    start_ms: int
    end_ms: int

    @property
    def total(self) -> int:
        return len(self.week1) + len(self.backlog) + len(self.new)


def generate(size: DemoSize, now_ms: int, seed: int = 42) -> Orders:
    """Deterministic orders (for a given ``now_ms``): timestamps spread over the three weeks before the last full
    hour; customers by a Zipf-like weight (the top one orders ~100 times more than the median); 3% of orders
    stamped up to 6 hours before their neighbours (out of order, inside the window's grace), one in ``late_every``
    (after the first week) 50-60 days before, an order of last quarter replayed (past the 28-day grace whatever
    the interleaving: the daily window drops it), one in ``corrupt_every`` a value that is not JSON (half binary
    noise, half a truncated document)."""
    rng = random.Random(seed)
    # Also among the new orders (``late_after_handoff``): the resumed app must drop one as a Kafka Streams run over
    # everything does, which needs the partition times the hand-off commits to reach Kafka Streams (it once did not:
    # a NUL byte after the metadata, conformance/FINDINGS.md). ``late_after_handoff=False`` keeps them out.
    late_allowed = (lambda i: True) if size.late_after_handoff else (lambda i: i < size.orders)  # noqa: E731
    end = now_ms - now_ms % 3_600_000 - 3_600_000
    start = end - 21 * DAY_MS
    customers = [f"cust-{i:04d}" for i in range(size.customers)]
    weights = [1 / (rank + 1) ** 1.1 for rank in range(size.customers)]
    home = {c: REGIONS[rng.randrange(len(REGIONS))] for c in customers}
    stamps = sorted(rng.randrange(start, end) for _ in range(size.orders))
    stamps += sorted(rng.randrange(end, end + 3_000_000) for _ in range(size.new_orders))
    orders: list[Order] = []
    for i, stamp in enumerate(stamps):
        customer = rng.choices(customers, weights)[0]
        value = json.dumps(
            {"order_id": f"o-{i:07d}", "customer": customer, "region": home[customer],
             "product": rng.choice(PRODUCTS), "amount_cents": int(rng.lognormvariate(7.5, 0.8))},
            separators=(",", ":"),
        ).encode()  # fmt: skip
        corrupt = late = False
        if i % size.corrupt_every == size.corrupt_every // 2:
            corrupt = True
            value = bytes([0xFF, 0xFE]) + rng.randbytes(14) if i % 2 else value[: len(value) // 2]
        elif late_allowed(i) and stamp - start > 7 * DAY_MS and i % size.late_every == size.late_every // 3:
            late = True
            stamp -= rng.randrange(50 * DAY_MS, 60 * DAY_MS)
        elif rng.random() < 0.03:
            stamp -= rng.randrange(1, 6 * 3_600_000)
        orders.append(Order(customer.encode(), value, stamp, corrupt, late))
    first_backlog = next(i for i, t in enumerate(stamps) if t >= start + 7 * DAY_MS)
    return Orders(orders[:first_backlog], orders[first_backlog : size.orders], orders[size.orders :], start, end)


# ------------------------------------------------------------------------------------------------ progress
@dataclass
class Progress:
    """One line per step, with the seconds since the demo began."""

    started: float = field(default_factory=time.monotonic)
    steps: list[tuple[str, float]] = field(default_factory=list)

    def step(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        self.steps.append((text, elapsed))
        print(f"[{elapsed:6.1f}s] {text}", flush=True)

    def detail(self, text: str) -> None:
        print(f"          {text}", flush=True)


# -------------------------------------------------------------------------------------------------- Kafka
def ensure_broker(workdir: Path) -> ServiceHandle:
    handle = ServiceHandle.load(workdir)
    if handle is not None and is_alive(handle.pid):
        return handle
    return broker.start(workdir)


def internal_topics(application_id: str) -> list[str]:
    return [
        f"{application_id}-{REPARTITION}-repartition",
        f"{application_id}-{COUNT_STORE}-changelog",
        f"{application_id}-{REVENUE_STORE}-changelog",
    ]


def reset_cluster(bootstrap: str, partitions: int) -> None:
    """Delete what an earlier demo left (topics, the two apps' groups) and create the input and output topics:
    ``partitions`` each, kept forever (the orders are up to three weeks old: the default 7-day retention would delete
    them), so every demo starts the same way. Returns once every new partition answers ListOffsets."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

    from streamproc.kafka import clients

    admin = clients.admin({"bootstrap.servers": bootstrap})
    references = [CUSTOMER_COUNTS + REFERENCE_SUFFIX, DAILY_REVENUE + REFERENCE_SUFFIX]
    ours = [ORDERS, CUSTOMER_COUNTS, DAILY_REVENUE, *references]
    doomed = ours + internal_topics(APPLICATION_ID) + internal_topics(REFERENCE_ID)
    groups = {g.group_id for g in admin.list_consumer_groups().result(timeout=30).valid}
    stale_groups = [g for g in (APPLICATION_ID, REFERENCE_ID) if g in groups]
    existing = [t for t in doomed if t in admin.list_topics(timeout=10).topics]
    futures = [*(admin.delete_consumer_groups(stale_groups).values() if stale_groups else ()),
               *(admin.delete_topics(existing).values() if existing else ())]  # fmt: skip
    for future in futures:
        try:
            future.result(timeout=30)
        except KafkaException as exc:  # gone meanwhile: what we wanted
            if exc.args[0].code() not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.GROUP_ID_NOT_FOUND):
                raise
    new = [NewTopic(name, partitions, 1, config={"retention.ms": "-1"}) for name in ours]
    wanted = {TopicPartition(name, p): OffsetSpec.earliest() for name in ours for p in range(partitions)}
    for attempt in range(300):  # deletion is asynchronous; a new partition answers once its leader is ready
        try:
            for future in admin.create_topics(new).values() if new else ():
                future.result(timeout=30)
            new = []
            for offsets in admin.list_offsets(wanted).values():
                offsets.result(timeout=10)
            return
        except Exception:
            if attempt == 299:
                raise
            if attempt % 25 == 24:  # a client that saw the deleted topics may keep answering from their metadata
                admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            time.sleep(0.2)


def produce(bootstrap: str, orders: Sequence[Order]) -> Counter[int]:
    """Produce ``orders`` keyed by customer with the Java client's partitioner (murmur2), as a Java producer would
    place them; the records per partition."""
    from streamproc.kafka import clients

    producer = clients.producer(
        {"bootstrap.servers": bootstrap},
        **{"enable.idempotence": True, "linger.ms": 20, "partitioner": "murmur2_random"},
    )
    per_partition: Counter[int] = Counter()

    def delivered(err: object, msg: Any) -> None:
        if err is None:
            per_partition[msg.partition()] += 1

    for order in orders:
        producer.produce(ORDERS, key=order.key, value=order.value, timestamp=order.timestamp, on_delivery=delivered)
        producer.poll(0)
    if producer.flush(120) != 0 or sum(per_partition.values()) != len(orders):
        raise RuntimeError(f"only {sum(per_partition.values())} of {len(orders)} orders were delivered to {ORDERS}")
    return per_partition


def committed(bootstrap: str, application_id: str) -> dict[str, int]:
    """The group's committed offsets, summed per topic."""
    from streamproc.kafka import clients
    from streamproc.kafka.cluster import read_committed_offsets

    offsets, _ = read_committed_offsets(clients.admin({"bootstrap.servers": bootstrap}), application_id)
    sums: Counter[str] = Counter()
    for tp, offset in offsets.items():
        sums[tp.topic] += offset.offset
    return dict(sums)


def final_values(bootstrap: str, topic: str) -> dict[str, int]:
    """Each key's last value in ``topic`` (read_committed, every partition to its end): the app's final answer."""
    import struct

    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    from streamproc.kafka import clients

    metadata = clients.admin({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    partitions = len(metadata.partitions)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-reader-{os.getpid()}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})  # fmt: skip
    values: dict[str, int] = {}
    try:
        ends = {p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}  # fmt: skip
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(partitions) if ends[p] > 0])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            positions = {tp.partition: tp.offset for tp in consumer.position(
                [KafkaTopicPartition(topic, p) for p in range(partitions)])}  # fmt: skip
            if all(ends[p] == 0 or positions.get(p, -1) >= ends[p] for p in ends):
                break
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    values[message.key().decode()] = struct.unpack(">q", message.value())[0]
        else:
            raise RuntimeError(f"could not read {topic} to its end in 120 s")
    finally:
        consumer.close()
    return values


# ---------------------------------------------------------------------------------------------- Kafka Streams
def java_classpath() -> str:
    """The oracle jar (Kafka Streams 4.2.2 and ``DemoOrdersApp``), built with Maven when its sources changed."""
    from streamproc_dev.conformance.oracle import ensure_oracle_jar

    if shutil.which("java") is None:
        raise RuntimeError("java is not on PATH: install a JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless)")
    return str(ensure_oracle_jar())


@dataclass(frozen=True, slots=True)
class StreamsRun:
    """What one run of ``DemoOrdersApp`` reported: records restored (restore listener), dropped (task metric),
    its stores' contents (interactive queries) and seconds."""

    restored: int
    restore_events: list[dict[str, Any]]
    dropped: int
    stores: dict[str, Any]
    seconds: float


def run_kafka_streams(classpath: str, bootstrap: str, application_id: str, state_dir: Path, input_end: int,
                      output_suffix: str = "", launcher: Sequence[str] = ()) -> StreamsRun:  # fmt: skip
    """Run the real Kafka Streams app until it committed ``input_end`` records of ``demo-orders`` (and everything
    it repartitioned), then close it cleanly (which writes its task checkpoints).

    ``launcher``: words before ``java`` (``docker run … IMAGE``: the deployment test runs the app in a container on
    the compose network, its state.dir on the compose file's state volume); ``classpath`` and ``state_dir`` are then
    the container's paths.
    """
    started = time.monotonic()
    proc = subprocess.run(
        [*launcher, "java", "-cp", classpath, JAVA_APP, bootstrap, application_id, str(state_dir), str(input_end),
         output_suffix],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [e for e in events if e["event"] == "result"]
    if proc.returncode != 0 or not results:
        raise RuntimeError(f"Kafka Streams app {application_id} failed (exit {proc.returncode}): "
                           f"{[e for e in events if e['event'] == 'error']}\n{proc.stderr[-3000:]}")  # fmt: skip
    dropped = sum(int(e["records"]) for e in events if e["event"] == "dropped")
    restores = [e for e in events if e["event"] in ("restore_start", "restore_end")]
    return StreamsRun(int(results[0]["restored"]), restores, dropped, results[0]["store"], time.monotonic() - started)


# ------------------------------------------------------------------------------------------------ the demo
@dataclass(frozen=True, slots=True)
class DemoPlaces:
    """Where the demo keeps things: the app's state.dir, the reference app's, the staging store (under ``root``),
    and Airflow's home (its SQLite metadata DB, the run ledger and the DAG runs' work directories)."""

    root: Path
    airflow_home: Path

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def reference_state_dir(self) -> Path:
        return self.root / "reference-state"

    @property
    def staging(self) -> Path:
        return self.root / "staging"


@dataclass(frozen=True, slots=True)
class DemoResult:
    """The final check: the keys whose values differ, per output and for the stores (all empty: it passed); the
    records restored when the app resumed (must be 0); records dropped by Kafka Streams in week 1, by streamproc in
    the backlog (the ledger's count), and by the reference run over everything."""

    differences: dict[str, dict[str, tuple[Any, Any]]]
    restored_after_handoff: int
    dropped_week1: int = 0
    dropped_backlog: int = 0
    dropped_reference: int = 0

    @property
    def passed(self) -> bool:
        return not any(self.differences.values()) and self.restored_after_handoff == 0


def _differences(left: Mapping[str, Any], right: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {k: (left.get(k), right.get(k)) for k in sorted(set(left) | set(right)) if left.get(k) != right.get(k)}


def _offsets_line(sums: Mapping[str, int]) -> str:
    return ", ".join(f"{topic} {offset}" for topic, offset in sorted(sums.items())) or "none"


def run_demo(bootstrap: str, places: DemoPlaces, size: DemoSize = DemoSize(), progress: Progress | None = None,
             now_ms: int | None = None) -> DemoResult:  # fmt: skip
    """The demo after the broker: seed, Kafka Streams on week one, the backfill DAG, the restart, the check."""
    from streamproc_dev.demo_airflow import DemoAirflow, run_backfill

    progress = progress or Progress()
    orders = generate(size, int(time.time() * 1000) if now_ms is None else now_ms)
    for path in (places.state_dir, places.reference_state_dir, places.staging):
        shutil.rmtree(path, ignore_errors=True)

    progress.step("Oracle jar: Kafka Streams 4.2.2 with DemoOrdersApp (Maven builds it when its sources changed)")
    classpath = java_classpath()

    progress.step(f"Topics: {ORDERS}, {CUSTOMER_COUNTS}, {DAILY_REVENUE} ({size.partitions} partitions each), fresh")
    reset_cluster(bootstrap, size.partitions)
    week1 = produce(bootstrap, orders.week1)
    _describe_orders("week 1", orders.week1, week1, size.partitions, progress)

    progress.step(f"Kafka Streams app '{APPLICATION_ID}' processes week 1, then closes cleanly")
    first = run_kafka_streams(classpath, bootstrap, APPLICATION_ID, places.state_dir, len(orders.week1))
    progress.detail(f"{len(orders.week1)} orders in {first.seconds:.0f} s; dropped {first.dropped} (corrupt values, "
                    f"LogAndContinue); state.dir {places.state_dir}")  # fmt: skip
    before = committed(bootstrap, APPLICATION_ID)
    progress.detail(f"committed offsets (sum per topic): {_offsets_line(before)}")

    backlog = produce(bootstrap, orders.backlog)
    progress.step("The app stays down while weeks 2 and 3 arrive: the backlog")
    _describe_orders("weeks 2-3", orders.backlog, backlog, size.partitions, progress)

    airflow = DemoAirflow(places.airflow_home, bootstrap)
    progress.step(f"Airflow: metadata DB (SQLite) in {airflow.home}")
    airflow.migrate()

    def approve(detail: Any) -> None:
        progress.step(f"Approval gate: {detail.subject}")
        for line in str(detail.body or "").splitlines():
            progress.detail(f"  {line}")
        progress.detail("auto-approved for the demo (in the UI: Browse → Required Actions → Approve)")

    progress.step("Backfill DAG: airflow dags test streamproc_backfill (plan → fetch → verify → process on Spark "
                  "local[2] → approval → hand-off)")  # fmt: skip
    conf = {"application_id": APPLICATION_ID, "topology": TOPOLOGY, "store": str(places.staging),
            "state_dir": str(places.state_dir), "start": "committed", "end": "latest", "dry_run": False}  # fmt: skip
    outcome = run_backfill(airflow, conf, approve)
    if not outcome.succeeded:
        print(outcome.output[-6000:])
        raise RuntimeError(f"the backfill DAG run {outcome.run_id} did not succeed: {outcome.states}")
    progress.step(f"Backfill DAG run {outcome.run_id}: " + ", ".join(_state_counts(outcome.states)))
    run = _ledger_run(airflow, outcome.run_id)
    if run is not None:
        progress.detail(f"ledger: plan {run.summary.plan_id}, {run.summary.records_planned} records planned, "
                        f"{run.summary.records_processed} processed, {run.summary.records_dropped} dropped "
                        f"(corrupt values, LogAndContinue), status {run.summary.status}")  # fmt: skip
        for rng in run.ranges:
            progress.detail(f"  range {rng.topic}-{rng.partition} [{rng.start}, {rng.end})")
    after = committed(bootstrap, APPLICATION_ID)
    progress.detail(f"committed offsets before: {_offsets_line(before)}")
    progress.detail(f"committed offsets after:  {_offsets_line(after)}")

    new = produce(bootstrap, orders.new)
    progress.step(f"{len(orders.new)} new orders; Kafka Streams app '{APPLICATION_ID}' restarts on the hand-off "
                  f"(same application.id and state.dir)")  # fmt: skip
    del new
    resumed = run_kafka_streams(classpath, bootstrap, APPLICATION_ID, places.state_dir, orders.total)
    restored_events = [e for e in resumed.restore_events if e["event"] == "restore_end"]
    progress.detail(
        f"records restored from changelogs: {resumed.restored} (restore listener; "
        f"{len(restored_events)} restore(s) ended); dropped {resumed.dropped}; {resumed.seconds:.0f} s"
    )

    progress.step(f"Check: a second Kafka Streams app '{REFERENCE_ID}' over all {orders.total} orders from the start")
    reference = run_kafka_streams(classpath, bootstrap, REFERENCE_ID, places.reference_state_dir, orders.total,
                                  REFERENCE_SUFFIX)  # fmt: skip
    differences = {
        CUSTOMER_COUNTS: _differences(final_values(bootstrap, CUSTOMER_COUNTS),
                                      final_values(bootstrap, CUSTOMER_COUNTS + REFERENCE_SUFFIX)),
        DAILY_REVENUE: _differences(final_values(bootstrap, DAILY_REVENUE),
                                    final_values(bootstrap, DAILY_REVENUE + REFERENCE_SUFFIX)),
        "stores": _differences(resumed.stores, reference.stores),
    }  # fmt: skip
    result = DemoResult(
        differences, resumed.restored, first.dropped, run.summary.records_dropped if run else -1, reference.dropped
    )
    _summary(bootstrap, places, airflow, orders, result, progress)
    return result


def _describe_orders(
    label: str, orders: Sequence[Order], per_partition: Counter[int], partitions: int, progress: Progress
) -> None:
    from datetime import UTC, datetime

    stamps = [o.timestamp for o in orders]

    def day(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")

    customers = Counter(o.key for o in orders)
    top = customers.most_common(1)[0] if customers else (b"-", 0)
    progress.detail(
        f"{label}: {len(orders)} orders stamped {day(min(stamps))} .. {day(max(stamps))} UTC; "
        f"{sum(o.corrupt for o in orders)} corrupt, {sum(o.late for o in orders)} stamped 50-60 days back; "
        f"{len(customers)} customers, the busiest ({top[0].decode()}) {top[1]} orders"
    )
    progress.detail("per partition: " + " ".join(f"{p}:{per_partition[p]}" for p in range(partitions)))


def _state_counts(states: Mapping[str, str]) -> list[str]:
    counts = Counter(states.values())
    return [f"{n} task(s) {state}" for state, n in sorted(counts.items())]


def _ledger_run(airflow: Any, dag_run_id: str) -> Any:
    from streamproc.ledger import Ledger

    with Ledger(airflow.ledger_url) as ledger:
        return ledger.run_for_dag_run("streamproc_backfill", dag_run_id)


def _summary(bootstrap: str, places: DemoPlaces, airflow: Any, orders: Orders, result: DemoResult,
             progress: Progress) -> None:  # fmt: skip
    print()
    print(f"Broker        {bootstrap}  (.venv/bin/python -m streamproc_dev broker status)")
    print(f"Outputs       {CUSTOMER_COUNTS}, {DAILY_REVENUE}  (reference: *{REFERENCE_SUFFIX})")
    print(f"State dir     {places.state_dir}")
    print(f"Staging       {places.staging}")
    print(f"Airflow home  {airflow.home}  (SQLite metadata)")
    print(f"Ledger        {airflow.ledger_url}")
    print(f"UI            .venv/bin/python -m streamproc_dev airflow start --workdir {airflow.home.parent}")
    print("              (prints the URL and admin password; the DAG run and Browse → streamproc runs show this run)")
    late = sum(o.late for o in orders.week1 + orders.backlog + orders.new)
    print(f"Drops         corrupt values (not JSON; LogAndContinue): week 1 {result.dropped_week1} (Kafka Streams' "
          f"dropped-records metric), backlog {result.dropped_backlog} (streamproc, in the ledger); the reference run "
          f"over all {orders.total} orders dropped {result.dropped_reference}")  # fmt: skip
    print(f"              {late} orders stamped 50-60 days back are past the {GRACE_MS // DAY_MS}-day grace: the daily "
          "revenue leaves them out (logged by daily-revenue), their customers' counts include them")  # fmt: skip
    print()
    for name, diff in result.differences.items():
        shown = "equal" if not diff else f"{len(diff)} key(s) differ, e.g. {dict(list(diff.items())[:3])}"
        print(f"Check {name:<22} resumed app vs reference: {shown}")
    print(f"Check records restored after the hand-off: {result.restored_after_handoff} (must be 0)")
    progress.step("PASSED: the resumed app equals a Kafka Streams run over everything" if result.passed
                  else "FAILED: the resumed app differs from a Kafka Streams run over everything")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streamproc_dev.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=DemoSize().orders, help="orders over the three weeks")
    parser.add_argument("--fresh-airflow", action="store_true", help="start from an empty AIRFLOW_HOME")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    places = DemoPlaces(cache_dir() / "run" / "demo", cache_dir() / "run" / "demo-airflow" / "home")
    if args.fresh_airflow:
        shutil.rmtree(places.airflow_home, ignore_errors=True)
    # Airflow reads AIRFLOW_HOME when first imported; the approval is answered from this process.
    os.environ["AIRFLOW_HOME"] = str(places.airflow_home)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    places.airflow_home.mkdir(parents=True, exist_ok=True)
    progress = Progress()
    try:
        progress.step("Kafka broker: the demo's, in ~/.cache/streamproc/run/broker (started unless running)")
        handle = ensure_broker(cache_dir() / "run" / "broker")
        progress.detail(f"{handle.address} (pid {handle.pid}, log {handle.log_path})")
        size = DemoSize(orders=args.orders, new_orders=max(20, args.orders // 100))
        result = run_demo(handle.address, places, size, progress)
    except (RuntimeError, StreamprocError) as exc:  # one line that says what failed and where to look, no traceback
        print(f"make demo stopped: {exc}", file=sys.stderr)
        return 2
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
