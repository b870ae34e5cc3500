"""``make demo``: a local broker, a seeded input topic, and the pipeline: plan, fetch, process and hand-off.

The demo keeps its broker in ``~/.cache/streamproc/run/broker`` and leaves it running, so that a user can look at
what it did (``python -m streamproc_dev broker status``) and a second ``make demo`` reuses it.
"""

from __future__ import annotations

import logging
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

from streamproc_dev import broker
from streamproc_dev.service_process import ServiceHandle, is_alive
from streamproc_dev.versions import cache_dir

log = logging.getLogger("streamproc.demo")

TOPIC = "demo-orders"
PARTITIONS = 4
RECORDS = 2_000
BASE_TIMESTAMP_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: fixed, so every run seeds the same data


def ensure_broker(workdir: Path) -> ServiceHandle:
    handle = ServiceHandle.load(workdir)
    if handle is not None and is_alive(handle.pid):
        log.info("Reusing the demo broker at %s (pid %d)", handle.address, handle.pid)
        return handle
    return broker.start(workdir)


def seed(bootstrap: str) -> Counter[int]:
    """Create ``demo-orders`` afresh and produce keyed records with slightly out-of-order timestamps."""
    from streamproc.kafka import clients

    _recreate_topics(bootstrap, {TOPIC: {}})
    rng = random.Random(42)
    # murmur2_random is the Java client's partitioner; librdkafka's default (crc32) would place keys differently
    # from a Kafka Streams producer and break co-partitioning with anything Java wrote.
    producer = clients.producer(
        {"bootstrap.servers": bootstrap},
        **{"enable.idempotence": True, "linger.ms": 20, "partitioner": "murmur2_random"},
    )
    per_partition: Counter[int] = Counter()

    def delivered(err: object, msg: object) -> None:
        if err is None:
            per_partition[msg.partition()] += 1  # type: ignore[attr-defined]

    for i in range(RECORDS):
        customer = f"customer-{rng.randrange(50):02d}"
        jitter = rng.randrange(-5_000, 5_000)
        producer.produce(
            TOPIC,
            key=customer.encode(),
            value=f'{{"order": {i}, "amount": {rng.randrange(1, 500)}}}'.encode(),
            timestamp=BASE_TIMESTAMP_MS + i * 1_000 + jitter,
            on_delivery=delivered,
        )
    producer.flush(60)
    return per_partition


APPLICATION_ID = "demo-order-totals"


def _recreate_topics(bootstrap: str, topics: dict[str, dict[str, str]]) -> None:
    """Delete ``topics`` if they exist and create them afresh (with their configs), so every demo starts clean:
    a deleted input topic also takes the group's committed offsets on it, and the hand-off's output, changelog and
    state directory of the previous demo go with it. Returns once every new partition answers ListOffsets."""
    import time

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import NewTopic, OffsetSpec

    from streamproc.kafka import clients

    admin = clients.admin({"bootstrap.servers": bootstrap})
    existing = [name for name in topics if name in admin.list_topics(timeout=10).topics]
    for future in admin.delete_topics(existing).values() if existing else ():
        future.result(timeout=30)
    if existing:
        log.info("Deleted the previous %s", ", ".join(existing))
    new = [NewTopic(name, PARTITIONS, 1, config=config) for name, config in topics.items()]
    wanted = {TopicPartition(name, p): OffsetSpec.earliest() for name in topics for p in range(PARTITIONS)}
    for attempt in range(150):  # the deletion is asynchronous, and a new partition answers once its leader is ready
        try:
            for future in admin.create_topics(new).values() if new else ():
                future.result(timeout=30)
            new = []
            for offsets in admin.list_offsets(wanted).values():
                offsets.result(timeout=10)
            return
        except Exception:
            if attempt == 149:
                raise
            time.sleep(0.2)


def run_pipeline(bootstrap: str, workdir: Path | None = None) -> None:
    """Plan, fetch, process and hand off the demo application's run: the whole pipeline as it has landed."""
    from streamproc.fetch import fetch_ranges, planned_ranges
    from streamproc.handoff.procedure import handoff
    from streamproc.kafka import clients
    from streamproc.kafka.cluster import read_committed_offsets
    from streamproc.kafka.planner import plan_run
    from streamproc.ledger import Ledger
    from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
    from streamproc.plan.run_plan import plan_id
    from streamproc.spark.job import process
    from streamproc.storage import load_store
    from streamproc.storage.verify import verify
    from streamproc_dev import demo_topology

    workdir = workdir or cache_dir() / "run" / "demo"
    workdir.mkdir(parents=True, exist_ok=True)
    client = {"bootstrap.servers": bootstrap}
    changelog = f"{APPLICATION_ID}-{demo_topology.STORE}-changelog"
    _recreate_topics(bootstrap, {demo_topology.TOTALS: {}, changelog: {"cleanup.policy": "compact"}})
    state_dir = workdir / "state"
    ledger_path = workdir / "plan.ledger.sqlite"
    shutil.rmtree(state_dir, ignore_errors=True)
    ledger_path.unlink(missing_ok=True)
    topology = demo_topology.order_totals()
    plan = plan_run(client, APPLICATION_ID, PlanRequest(), topology=str(topology.describe()))
    plan_path = workdir / "plan.json"
    plan.write(plan_path)
    print()
    print(f"1. Plan ({plan_path}):")
    print("   " + plan.report().replace("\n", "\n   "))
    staging = workdir / "staging"
    # The demo re-creates its topic on every run: the plan's topic id differs from the one in the manifests the
    # previous run staged, so those segments are fetched again rather than taken for this topic's.
    store = load_store(str(staging))
    ranges = planned_ranges(plan)
    results = fetch_ranges(client, store, ranges, isolation=IsolationLevel(plan.isolation_level))
    print()
    print(f"2. Fetch into {staging}:")
    for result in results:
        state = "already staged" if result.skipped else f"{result.segments_written} segment(s) written"
        print(f"   {result.range}: {result.records} records, {state}")
    report = verify(store, planned=ranges)
    print(
        f"   verify: {report.segments_ok} of {report.segments_checked} segment(s) match their manifests; "
        f"{report.ranges_covered} of {report.ranges_checked} planned range(s) staged"
    )
    reports = process(
        plan,
        store_uri=str(staging),
        topology="streamproc_dev.demo_topology:order_totals",
        master="local[2]",
        partitions={demo_topology.TOTALS: PARTITIONS},
    )
    print()
    print(f"3. Process on Spark local[2] (one Spark task per Kafka Streams task), outputs in {staging}/process:")
    for task in reports:
        outputs = sum(task["outputs"].values())
        print(
            f"   task {task['task_id']}: {task['records_processed']} records processed, {outputs} totals written, "
            f"dropped {sum(task['dropped'].values())}, stream time {task['stream_time']}"
        )
    with Ledger(ledger_path) as ledger:
        summary = handoff(plan, plan_id(plan), client_config=client, store=store, ledger=ledger, state_dir=state_dir)
    committed, _ = read_committed_offsets(clients.admin(client), APPLICATION_ID)
    print()
    print(f"4. Hand-off (ledger {ledger_path}):")
    print(
        f"   published {len(summary.published)} task(s) in one transaction each (totals, changelog records and the "
        f"group's offsets with partition time), wrote {len(summary.checkpointed)} state directories under {state_dir}"
    )
    for tp, offset in sorted(committed.items()):
        print(f"   committed {tp.topic}-{tp.partition} at {offset.offset}")
    for task_dir in sorted(p for p in (state_dir / APPLICATION_ID).iterdir() if p.is_dir()):
        checkpoint = task_dir / ".checkpoint"
        print(f"   {task_dir.name}/.checkpoint: " + " | ".join(checkpoint.read_text().splitlines()[2:]))
    print()
    print(
        f"A Kafka Streams app with application.id={APPLICATION_ID} and state.dir={state_dir} now resumes from these "
        "offsets with its stores restored from nothing (tests/integration/handoff prove it with a real app)."
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    workdir = cache_dir() / "run" / "broker"
    handle = ensure_broker(workdir)
    per_partition = seed(handle.address)
    print()
    print(f"Kafka broker: {handle.address} (pid {handle.pid}, log {handle.log_path})")
    print(f"Seeded {sum(per_partition.values())} records into {TOPIC} (keyed by customer, Java's murmur2 partitioner):")
    for partition in sorted(per_partition):
        print(f"  {TOPIC}-{partition}: {per_partition[partition]} records, offsets [0, {per_partition[partition]})")
    run_pipeline(handle.address)
    print("Stop the broker with: .venv/bin/python -m streamproc_dev broker stop   (or make it fresh: --fresh on start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
