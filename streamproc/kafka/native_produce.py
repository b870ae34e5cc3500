"""A hand-off's output records produced without a Python call per record: Arrow's buffers handed to librdkafka.

confluent-kafka's ``Producer.produce`` is one Python call per record, with a ``bytes`` key and value made from the
output object's columns and a per-message state allocated for a delivery callback. Output records have no delivery
report (a record the broker refuses fails the transaction, and the commit says so), so none of that is needed: the
compiled kernel (``_message_kernel.c``'s ``produce``) calls ``rd_kafka_producev`` on the producer's own
``rd_kafka_t`` for every row of a batch, straight from the timestamp, key and value buffers, with the same copy,
timestamp and partition ``Producer.produce`` would give librdkafka, and no message opaque (confluent-kafka's
delivery callback skips such a message).

:func:`column_producer` is ``None`` where the kernel is not built or librdkafka cannot be reached (the Python loop
produces then); records with headers go through the Python loop too.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from streamproc.kafka.librdkafka import LibrdkafkaUnavailable, client_handle, librdkafka
from streamproc.kafka.native_consume import native_kernel

if TYPE_CHECKING:
    import pyarrow as pa

#: librdkafka's ``RD_KAFKA_RESP_ERR__QUEUE_FULL``: the producer's local queue is full until deliveries are served.
QUEUE_FULL = -184
#: How long a full queue waits for deliveries before the batch goes on, as the Python loop's ``poll`` does.
QUEUE_FULL_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class ColumnProducer:
    """One confluent-kafka Producer's ``rd_kafka_t`` and the bound kernel that produces columns through it."""

    producer: Any
    handle: int
    kernel: ModuleType

    def produce(self, topic: str, partition: int, batch: pa.RecordBatch) -> int:
        """Produce every row of ``batch`` (``timestamp``, ``key``, ``value`` columns: int64, binary, binary) to
        ``topic``/``partition`` (-1: the producer chooses), in row order; returns how many.

        A full local queue is served with the producer's ``poll`` and the batch goes on from the row refused; any
        other refusal raises what ``Producer.produce`` raises for it (``KafkaException`` with the error's code).
        """
        from confluent_kafka import KafkaError, KafkaException

        rows: int = batch.num_rows
        timestamps = batch.column("timestamp")
        stamps = (timestamps.buffers()[1], timestamps.offset)
        keys, values = _binary(batch.column("key")), _binary(batch.column("value"))
        name = topic.encode()
        first = 0
        while first < rows:
            first, error = self.kernel.produce(self.handle, name, partition, first, rows, stamps, keys, values)
            if error == QUEUE_FULL:
                self.producer.poll(QUEUE_FULL_POLL_S)
            elif error:
                reason = (librdkafka().rd_kafka_err2str(error) or b"").decode("utf-8", "replace")
                raise KafkaException(KafkaError(error, f"Unable to produce message: {reason}"))
        return rows


def _binary(column: pa.Array) -> tuple[Any, Any, Any, int]:
    """A binary column as the kernel reads it: (validity or None, int32 offsets, data, array offset); a column with
    no data bytes (every cell null or empty) has no data buffer, and reads an empty one."""
    validity, offsets, data = column.buffers()
    return validity, offsets, data if data is not None else b"", column.offset


def column_producer(producer: Any) -> ColumnProducer | None:
    """The compiled produce loop bound to ``producer``'s ``rd_kafka_t``, or ``None`` (produce through
    confluent-kafka, as where the kernel is not built)."""
    kernel = native_kernel()
    if kernel is None:
        return None
    try:
        return ColumnProducer(producer, client_handle(producer, "producer"), kernel)
    except LibrdkafkaUnavailable:
        return None
