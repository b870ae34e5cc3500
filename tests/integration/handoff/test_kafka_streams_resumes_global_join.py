"""The issue's proof for a stream–global-table join (DSL ``globalTable`` + ``join``), with live Kafka Streams 4.2.2.

Two applications read the same orders and products, in three phases; before each phase new product rows (updates, a
tombstone) and new orders are produced:

- ``resumed``: ``GlobalJoinResumeApp`` runs phase 1 and stops; ``streamproc run`` (plan, fetch, process on Spark,
  hand-off into the app's state dir) runs phase 2, each worker bootstrapping the global store from the products
  topic (from the app's own ``global/.checkpoint`` and a copy of its global store, to the planned end); the app
  restarts for phase 3.
- ``alone``: the same app runs every phase itself.

Each phase starts after its products were written, so a live app bootstraps its global store to them first, as the
batch's plan does. The resumed app's outputs equal the alone app's, key by key (same partition, same joined value:
phase 2's orders joined with phase 2's products), and so does its global store. The hand-off writes nothing of the
global store: the restarted app restores it from its own checkpoint, exactly the product rows written since phase 1.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import create_topic, wait_for_leaders
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import read_all, run
from tests.integration.state.test_kafka_streams_opens_state import app_classpath, compile_beside, run_java_app

pytestmark = pytest.mark.integration
__all__ = ["app_classpath"]

JAVA = Path(__file__).resolve().parent / "java"
SOURCES = [JAVA / "GlobalJoinResumeApp.java", JAVA / "RekeyResumeApp.java"]
PARTITIONS = topologies.GLOBAL_JOIN_PARTITIONS
ORDERS, PRODUCTS, OUTPUT = topologies.GLOBAL_JOIN_ORDERS, topologies.GLOBAL_JOIN_PRODUCTS, topologies.GLOBAL_JOIN_OUTPUT
PRODUCT_IDS = [f"p{i}" for i in range(6)]


@pytest.fixture(scope="module")
def global_classpath(app_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``GlobalJoinResumeApp`` compiled beside ``StateResumeApp`` (it reuses its run protocol and
    ``RekeyResumeApp``'s wait for committed offsets)."""
    classes = tmp_path_factory.mktemp("global-join-app")
    return compile_beside(app_classpath, SOURCES, classes)


def run_app(classpath: str, bootstrap: str, app_id: str, state_dir: Path, end: int, output: str) -> dict[str, Any]:
    return run_java_app(
        classpath,
        [
            "dev.streamproc.oracle.GlobalJoinResumeApp",
            bootstrap,
            app_id,
            str(state_dir),
            ORDERS,
            str(end),
            PRODUCTS,
            output,
            str(PARTITIONS),
        ],
    )


def produce(bootstrap: str, topic: str, records: Sequence[tuple[str, str | None, int]], *, by_index: bool) -> None:
    """Orders go to partition ``i % PARTITIONS``; products to the producer's choice (a global table reads all)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, (key, value, timestamp) in enumerate(records):
        partition = {"partition": i % PARTITIONS} if by_index else {}
        producer.produce(topic, key=key.encode(), value=None if value is None else value.encode(),
                         timestamp=timestamp, **partition)  # fmt: skip
    assert producer.flush(60) == 0


def joined(bootstrap: str, topic: str) -> dict[str, tuple[int, str]]:
    """Each order's (partition, joined value); an order joined twice would be a duplicate the test refuses."""
    out: dict[str, tuple[int, str]] = {}
    for message in read_all(bootstrap, topic, PARTITIONS):
        key = message.key().decode()
        assert key not in out, f"{topic}: order {key} was output twice"
        out[key] = (message.partition(), message.value().decode())
    return out


def test_kafka_streams_resumes_a_global_table_join_after_handoff(
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    global_classpath: str,
) -> None:
    alone_output = f"{OUTPUT}-alone"
    for topic in (ORDERS, PRODUCTS, OUTPUT, alone_output):
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, ORDERS, PRODUCTS, OUTPUT, alone_output)
    resumed_id, alone_id = unique("global-resumed"), unique("global-alone")
    resumed_dir, alone_dir = tmp_path / "state", tmp_path / "alone"
    rng = random.Random(16)
    base = int(time.time() * 1000) - 3_600_000
    products: list[list[tuple[str, str | None, int]]] = [
        [(p, f"name{k}-{p}", base + k * 10_000 + i) for i, p in enumerate(PRODUCT_IDS) if k == 0 or rng.random() < 0.5]
        for k in range(3)
    ]
    products[1].append(("p5", None, base + 10_999))  # a tombstone: phase 2's orders of p5 find no product
    orders = [
        [(f"o{k}-{i}", rng.choice([*PRODUCT_IDS, "p9"]), base + k * 10_000 + 100 + i) for i in range(30 + 5 * k)]
        for k in range(3)
    ]
    ends = [sum(len(o) for o in orders[: k + 1]) for k in range(3)]

    def phase(k: int) -> None:
        produce(kafka_broker, PRODUCTS, products[k], by_index=False)
        produce(kafka_broker, ORDERS, orders[k], by_index=True)

    phase(0)
    first = run_app(global_classpath, kafka_broker, resumed_id, resumed_dir, ends[0], OUTPUT)
    run_app(global_classpath, kafka_broker, alone_id, alone_dir, ends[0], alone_output)
    assert (resumed_dir / resumed_id / "global" / ".checkpoint").is_file(), first["events"]

    phase(1)
    work = tmp_path / "work"
    out = run("run", "--bootstrap", kafka_broker, "--application-id", resumed_id,
              "--topology", "tests.integration.handoff.topologies:global_join", "--store", str(tmp_path / "staging"),
              "--work-dir", str(work), "--master", "local[1]", "--state-dir", str(resumed_dir), "--yes")  # fmt: skip
    assert f"published {PARTITIONS} task(s)" in out.output, out.output
    run_app(global_classpath, kafka_broker, alone_id, alone_dir, ends[1], alone_output)

    phase(2)
    resumed = run_app(global_classpath, kafka_broker, resumed_id, resumed_dir, ends[2], OUTPUT)
    alone = run_app(global_classpath, kafka_broker, alone_id, alone_dir, ends[2], alone_output)

    # The global store was rebuilt from the app's own phase-1 checkpoint: exactly the product rows written since.
    assert resumed["restored"] == len(products[1]) + len(products[2]), resumed["events"]
    assert resumed["store"] == alone["store"]
    assert resumed["store"].keys() == set(PRODUCT_IDS) - ({"p5"} if all(p != "p5" for p, *_ in products[2]) else set())
    resumed_out, alone_out = joined(kafka_broker, OUTPUT), joined(kafka_broker, alone_output)
    differing = {k: (v, alone_out.get(k)) for k, v in resumed_out.items() if v != alone_out.get(k)}
    assert resumed_out == alone_out, f"differing orders (resumed, alone): {differing}"
    phase_two = {k: v for k, v in resumed_out.items() if k.startswith("o1-")}
    assert phase_two and all(value.split("|")[1].startswith("name") for _, value in phase_two.values())
    # Phase 2's orders saw phase 2's products (the batch bootstrapped the store to the plan's end), not phase 3's.
    latest_before_3 = {p: v for k in (0, 1) for p, v, _ in products[k]}
    product_of = {o: v for o, v, _ in orders[1]}
    for key, (_, value) in phase_two.items():
        assert value == f"{product_of[key]}|{latest_before_3[product_of[key]]}", (key, value)
