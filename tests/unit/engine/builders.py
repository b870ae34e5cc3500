"""Small builders shared by the engine tests: raw records, a String serde that can be corrupted, a recording task."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.records import ConsumerRecord, Headers, Record, TopicPartition
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import TimestampExtractor
from streamproc.engine.wall_clock import VirtualWallClock

CORRUPT = b"\xff\x01"


def raw(
    topic: str,
    partition: int,
    offset: int,
    timestamp: int,
    value: str | None = "v",
    *,
    key: str | None = "k",
    corrupt: bool = False,
    headers: Headers = (),
) -> ConsumerRecord[bytes | None, bytes | None]:
    value_bytes = CORRUPT if corrupt else (None if value is None else value.encode())
    return ConsumerRecord.raw(
        topic, partition, offset, timestamp, None if key is None else key.encode(), value_bytes, headers=headers
    )


def string_deserializer(topic: str, data: bytes | None) -> object:
    if data is None:
        return None
    if data[:1] == b"\xff":
        raise ValueError(f"cannot deserialize {data!r} from {topic}")
    return data.decode()


class Recorder(Processor):
    """Records (topic, partition, offset, stream time) per record; optional hooks for init and process."""

    def __init__(
        self,
        on_init: Callable[[ProcessorContext], None] | None = None,
        on_process: Callable[[ProcessorContext, Record[Any, Any]], None] | None = None,
        forward: bool = False,
    ) -> None:
        self.on_init = on_init
        self.on_process = on_process
        self.forward = forward
        self.seen: list[tuple[str, int, int, int]] = []
        self.records: list[Record[Any, Any]] = []
        self.context: ProcessorContext | None = None
        self.closed = False

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        if self.on_init is not None:
            self.on_init(context)

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        metadata = self.context.record_metadata()
        assert metadata is not None
        self.seen.append((metadata.topic, metadata.partition, metadata.offset, self.context.current_stream_time_ms()))
        self.records.append(record)
        if self.on_process is not None:
            self.on_process(self.context, record)
        if self.forward:
            self.context.forward(record)

    def close(self) -> None:
        self.closed = True


def make_task(
    partitions: Sequence[TopicPartition],
    processor: Processor | None = None,
    *,
    config: TaskConfig | None = None,
    source_extractor: TimestampExtractor | None = None,
    extra_nodes: Iterable[ProcessorNode] = (),
    wall_clock: VirtualWallClock | None = None,
    stores: dict[str, object] | None = None,
) -> tuple[StreamTask, Recorder | Processor]:
    topics = list(dict.fromkeys(tp.topic for tp in partitions))
    source = SourceNode("source", topics, string_deserializer, string_deserializer, source_extractor)
    proc = processor if processor is not None else Recorder()
    node = ProcessorNode("proc", proc)
    source.add_child(node)
    nodes: list[ProcessorNode] = [source, node, *extra_nodes]
    task = StreamTask(
        TaskId(0, 1), ProcessorTopology(nodes), partitions, config=config, wall_clock=wall_clock, stores=stores
    )
    return task, proc


A0 = TopicPartition("a", 0)
B0 = TopicPartition("b", 0)
C0 = TopicPartition("c", 0)
