"""``send_offsets_to_transaction`` with each offset's metadata exactly as given: no trailing NUL byte.

confluent-kafka (2.16, ``py_to_c_parts``) hands librdkafka every offset's metadata with ``metadata_size =
strlen(metadata) + 1``, so the group stores Kafka Streams' 12-character commit metadata followed by a NUL. Kafka
Streams' ``TopicPartitionMetadata.decode`` then fails (``Base64`` rejects the NUL), logs "Unsupported offset
metadata found" and starts the task with partition time -1 and no processor metadata: after the hand-off the
resumed app's stream time starts from nothing (a late record is accepted, emit-final windows re-emit;
conformance/FINDINGS.md). Python readers do not notice (they read the metadata as a C string).

This module calls librdkafka (the very library, and the very ``rd_kafka_t``, of the caller's confluent-kafka
``Producer``: ``streamproc.kafka.librdkafka``, which also reads the metadata back exactly) with a partition list it
builds itself, ``metadata_size`` the string's length.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from streamproc.errors import HandoffError
from streamproc.kafka.librdkafka import LibrdkafkaUnavailable, client_handle, librdkafka, partition_list, raise_error


def send_offsets_to_transaction(producer: Any, offsets: Sequence[Any], group_metadata: bytes, timeout_s: float) -> None:
    """``producer.send_offsets_to_transaction(offsets, group_metadata, timeout_s)``, each ``offsets[i].metadata``
    committed byte for byte (UTF-8, no NUL appended). Raises ``KafkaException`` as confluent-kafka does."""
    try:
        lib = librdkafka()
        rk = client_handle(producer)
    except LibrdkafkaUnavailable as exc:
        raise HandoffError(f"the hand-off cannot commit Kafka Streams' offset metadata: {exc}") from exc
    cgmd = ctypes.c_void_p()
    error = lib.rd_kafka_consumer_group_metadata_read(ctypes.byref(cgmd), group_metadata, len(group_metadata))
    if error:
        raise_error(error)
    try:
        entries = [(tp.topic, tp.partition, tp.offset, tp.metadata or "") for tp in offsets]
        with partition_list(entries) as parts:
            error = lib.rd_kafka_send_offsets_to_transaction(rk, parts, cgmd, int(timeout_s * 1000))
            if error:
                raise_error(error)
    finally:
        lib.rd_kafka_consumer_group_metadata_destroy(cgmd)
