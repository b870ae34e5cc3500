"""Create a new application's internal topics (``InternalTopicManager#makeReady``'s CreateTopics, nothing more).

The plan (:mod:`streamproc.plan.internal_topics`) decides names, partition counts, replication factor and configs;
this adapter sends one CreateTopics request and checks every topic's result. A topic that another client created
meanwhile (``TOPIC_ALREADY_EXISTS``, e.g. the application started after all) is accepted only with the planned
partition count, which is what Kafka Streams itself validates (``InternalTopicManager#validateTopics``); the plan
re-reads the cluster afterwards, so nothing else is assumed about it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from streamproc.errors import PlanError
from streamproc.kafka.clients import no_answer
from streamproc.plan.internal_topics import NewInternalTopic

log = logging.getLogger(__name__)

_TIMEOUT_S = 30.0


def create_internal_topics(admin: Any, topics: Sequence[NewInternalTopic]) -> list[str]:
    """Create ``topics``; returns the names this call created (others existed with the planned count)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    if not topics:
        return []
    requests = [
        NewTopic(t.name, num_partitions=t.partitions, replication_factor=t.replication_factor, config=dict(t.configs))
        for t in topics
    ]
    futures = admin.create_topics(requests, request_timeout=_TIMEOUT_S, operation_timeout=_TIMEOUT_S)
    created, raced = [], []
    for topic in topics:
        try:
            futures[topic.name].result(timeout=_TIMEOUT_S)
            created.append(topic.name)
            log.info("Created internal topic %s", topic.describe())
        except TimeoutError:
            raise PlanError(
                no_answer(f"creating internal topic {topic.name} ({len(created)} of {len(topics)} created)", _TIMEOUT_S)
            ) from None
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is not None and error.name() == "TOPIC_ALREADY_EXISTS":
                raced.append(topic)
                continue
            raise PlanError(
                f"could not create internal topic {topic.name} ({topic.partitions} partition(s), replication "
                f"{topic.replication_factor}): {exc}; {len(created)} of {len(topics)} were created "
                f"({', '.join(created) or 'none'}); fix the cause and plan again (existing ones are kept)"
            ) from exc
    if raced:
        metadata = admin.list_topics(timeout=_TIMEOUT_S).topics
        for topic in raced:
            found = metadata.get(topic.name)
            count = None if found is None else len(found.partitions)
            if count != topic.partitions:
                raise PlanError(
                    f"internal topic {topic.name} was created by someone else while planning, with {count} "
                    f'partition(s) instead of {topic.partitions}; Kafka Streams would fail with "Existing internal '
                    f'topic {topic.name} has invalid partitions: expected: {topic.partitions}; actual: {count}"; '
                    "delete it (StreamsResetter) and plan again"
                )
            log.warning("internal topic %s was created by someone else meanwhile; kept", topic.name)
    _await_leaders(admin, topics)
    return created


def _await_leaders(admin: Any, topics: Sequence[NewInternalTopic]) -> None:
    """Until the metadata shows every topic with all its partitions led (the plan reads their offsets next)."""
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        metadata = admin.list_topics(timeout=_TIMEOUT_S).topics
        waiting = [
            t.name
            for t in topics
            if t.name not in metadata
            or len(metadata[t.name].partitions) != t.partitions
            or any(p.leader < 0 for p in metadata[t.name].partitions.values())
        ]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise PlanError(
                f"internal topic(s) {', '.join(waiting)} were created but have no leader for every partition after "
                f"{_TIMEOUT_S:.0f} s; check the brokers and plan again (the topics are kept)"
            )
        time.sleep(0.2)
