"""``TaskId``: the identity of a Kafka Streams task (``org.apache.kafka.streams.processor.TaskId``, 4.2).

A task is one sub-topology applied to one partition number of its co-partitioned source topics. Kafka Streams
prints it as ``<subtopology>_<partition>`` (``<subtopology>_<partition>_<topology name>`` for named topologies is
not printed that way; the named form keeps the name separately), and uses that text as the task directory name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from streamproc.errors import TopologyError

_TASK_ID = re.compile(r"^(\d+)_(\d+)$")


@total_ordering
@dataclass(frozen=True, slots=True)
class TaskId:
    """``subtopology`` and ``partition`` are Kafka Streams' ``subtopology()`` and ``partition()``."""

    subtopology: int
    partition: int
    topology_name: str | None = None

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TaskId):
            return NotImplemented
        return (self.topology_name or "", self.subtopology, self.partition) < (
            other.topology_name or "",
            other.subtopology,
            other.partition,
        )

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """Parse ``<subtopology>_<partition>`` as ``TaskId.parse`` does, with a specific error."""
        match = _TASK_ID.match(text)
        if match is None:
            raise TopologyError(f"Task id cannot be parsed correctly from {text!r}: expected <subtopology>_<partition>")
        return cls(int(match.group(1)), int(match.group(2)))
