"""A range reader's consume without a Python object per record: librdkafka's messages read in place.

confluent-kafka's ``Consumer.consume`` turns every record into a ``Message`` holding a ``bytes`` key and value; a
fetch then copies those bytes again into its segment's columns. Building and freeing those objects cost a fetch more
CPU than librdkafka's own fetching and decompression. The compiled kernel (``_message_kernel.c``) instead takes the
``rd_kafka_message_t`` pointers that ``rd_kafka_consume_batch_queue`` returns and copies their fields straight into
the columns.

It consumes from the partition's *own* queue, unforwarded before the assignment
(``rd_kafka_queue_forward(queue, NULL)``, librdkafka's documented way to consume a partition on its own). Only that
partition's messages and events (end of partition, offset out of range) are on it. The consumer's queue keeps
everything that calls back into Python (logs, client errors), and the caller serves it with the consumer's own
``poll(0)``. So the kernel calls librdkafka without the GIL and no confluent-kafka callback runs outside
confluent-kafka's own calls.

Where the kernel is not built, librdkafka cannot be reached, or :data:`~streamproc.kafka.message_kernel.
PURE_PYTHON_FETCH_ENV` is set, :func:`native_kernel` is ``None`` and the reader consumes through confluent-kafka as
before.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from streamproc.kafka.librdkafka import LibrdkafkaUnavailable, client_handle, librdkafka
from streamproc.kafka.message_kernel import message_kernel

log = logging.getLogger(__name__)

#: librdkafka's functions the kernel calls, in the order of its ``rk`` struct (the last three for the hand-off's
#: produce, ``kafka/native_produce.py``).
LIBRDKAFKA_FUNCTIONS = (
    "rd_kafka_consume_batch_queue",
    "rd_kafka_message_destroy",
    "rd_kafka_message_timestamp",
    "rd_kafka_message_headers",
    "rd_kafka_header_cnt",
    "rd_kafka_header_get_all",
    "rd_kafka_message_leader_epoch",
    "rd_kafka_message_errstr",
    "rd_kafka_producev",
    "rd_kafka_topic_new",
    "rd_kafka_topic_destroy",
)


@functools.cache
def _bound_kernel() -> ModuleType | None:
    kernel = message_kernel()
    if kernel is None:
        return None
    try:
        lib = librdkafka()
        addresses = tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in LIBRDKAFKA_FUNCTIONS)
    except (LibrdkafkaUnavailable, AttributeError, OSError) as exc:
        log.info("fetching through confluent-kafka's Message objects: %s", exc)
        return None
    from confluent_kafka import KafkaError

    kernel.bind(addresses, KafkaError)
    return kernel


def native_kernel() -> ModuleType | None:
    """The compiled kernel bound to confluent-kafka's librdkafka, or ``None`` (consume through confluent-kafka)."""
    if message_kernel() is None:  # not built, or the Python loops asked for (checked at every call)
        return None
    return _bound_kernel()


@contextlib.contextmanager
def partition_queue(consumer: Any, topic: str, partition: int) -> Iterator[int]:
    """The ``rd_kafka_queue_t *`` of ``topic``-``partition`` on ``consumer``, forwarding nowhere.

    Enter it *before* the consumer's ``assign``: librdkafka's fetcher keeps an application's choice of forwarding
    (``RD_KAFKA_Q_F_FWD_APP``), so every message of the assignment lands on this queue; messages fetched before it
    was unforwarded would sit on the consumer's. The queue is destroyed on exit, which must come before the
    consumer's ``close`` (librdkafka's rule for partition queues).
    """
    lib = librdkafka()
    handle = client_handle(consumer, "consumer")
    queue = lib.rd_kafka_queue_get_partition(handle, topic.encode(), partition)
    if not queue:
        raise LibrdkafkaUnavailable(f"librdkafka has no queue for {topic}-{partition}")
    try:
        lib.rd_kafka_queue_forward(queue, None)
        yield int(queue)
    finally:
        lib.rd_kafka_queue_destroy(queue)


def offsets_of(batch: Sequence[Any]) -> Sequence[int]:
    """A batch's offsets in order: the kernel's ``Batch.offsets()`` (no message view per record), else each
    confluent-kafka ``Message``'s."""
    native = getattr(batch, "offsets", None)
    return native() if native is not None else [message.offset() for message in batch]
