"""Print the RunPlan and manifest examples of ``docs/formats.md`` from a real run on a private broker.

``python tools/docs/formats_examples.py`` starts a throw-away KRaft broker, creates a small word-count application
in two stages, as Kafka Streams' WordCountDemo (split and re-key, a repartition topic, count), with an input topic,
a committed offset, a repartition partition without backlog and one with, a store changelog with a task checkpoint
and a transaction; plans it, fetches one range, and prints the plan JSON and one manifest exactly as streamproc
wrote them. Topic ids differ per run; ``tests/unit/test_formats_doc.py`` checks that the examples in the doc parse
and re-serialise unchanged.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.fetch import fetch_ranges, planned_ranges
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.storage import load_store
from streamproc_dev import broker

APP = "wordcount"
STORE = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
REPARTITION = f"{STORE}-repartition"
TOPOLOGY = f"""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [words])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> {REPARTITION}-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: {REPARTITION}-filter (stores: [])
      --> {REPARTITION}-sink
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: {REPARTITION}-sink (topic: {REPARTITION})
      <-- {REPARTITION}-filter

  Sub-topology: 1
    Source: {REPARTITION}-source (topics: [{REPARTITION}])
      --> KSTREAM-AGGREGATE-0000000004
    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [{STORE}])
      --> KTABLE-TOSTREAM-0000000005
      <-- {REPARTITION}-source
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KSTREAM-AGGREGATE-0000000004
    Sink: KSTREAM-SINK-0000000006 (topic: counts)
      <-- KTABLE-TOSTREAM-0000000005

"""


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="formats-"))
    handle = broker.start(work / "kafka")
    try:
        client = {"bootstrap.servers": handle.address}
        admin = AdminClient(client)
        changelog = f"{APP}-{STORE}-changelog"
        repartition = f"{APP}-{REPARTITION}"
        topics = (("words", {}), ("counts", {}), (changelog, {"cleanup.policy": "compact"}), (repartition, {}))
        for name, config in topics:
            for future in admin.create_topics([NewTopic(name, 2, 1, config=config)]).values():
                future.result(30)
        producer = Producer({**client, "transactional.id": "formats"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(3):
            producer.produce("words", key=f"w{i}".encode(), value=b"hello", partition=0, timestamp=1_000 + i)
        producer.commit_transaction(30)
        plain = Producer(client)
        for i in range(4):
            plain.produce("words", key=f"w{i}".encode(), value=b"world", partition=1, timestamp=2_000 + i)
            plain.produce(changelog, key=f"w{i}".encode(), value=(i + 1).to_bytes(8, "big"), partition=i % 2)
        for i in range(3):  # an earlier run's repartition records: partition 0 all consumed, partition 1 not yet
            plain.produce(repartition, key=b"hello", value=b"hello", partition=0 if i < 2 else 1, timestamp=900 + i)
        plain.flush(30)
        offsets = [TopicPartition("words", 0, 1), TopicPartition(repartition, 0, 2), TopicPartition(repartition, 1, 0)]
        [future] = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(APP, offsets)]).values()
        future.result(30)
        state = work / "state"
        (state / APP / "1_0").mkdir(parents=True)
        OffsetCheckpoint(state / APP / "1_0" / ".checkpoint").write({EngineTP(changelog, 0): 1})
        plan = plan_run(client, APP, PlanRequest(), topology=TOPOLOGY, processing_guarantee="exactly_once_v2",
                        state_dir=state)  # fmt: skip
        store = load_store(str(work / "staging"))
        fetch_ranges(client, store, planned_ranges(plan), isolation=IsolationLevel(plan.isolation_level))
        [manifest] = [n for n in store.list("topics/words/partition=0/") if n.endswith(".manifest.json")]
        sys.stdout.write("--- plan.json\n" + plan.to_json())
        sys.stdout.write(f"--- {manifest}\n" + store.get(manifest).decode())
    finally:
        broker.stop(work / "kafka")
    return 0


if __name__ == "__main__":
    sys.exit(main())
