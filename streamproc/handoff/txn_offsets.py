"""``send_offsets_to_transaction`` with each offset's metadata exactly as given: no trailing NUL byte.

confluent-kafka (2.16, ``py_to_c_parts``) hands librdkafka every offset's metadata with ``metadata_size =
strlen(metadata) + 1``, so the group stores Kafka Streams' 12-character commit metadata followed by a NUL. Kafka
Streams' ``TopicPartitionMetadata.decode`` then fails (``Base64`` rejects the NUL), logs "Unsupported offset
metadata found" and starts the task with partition time -1 and no processor metadata: after the hand-off the
resumed app's stream time starts from nothing (a late record is accepted, emit-final windows re-emit;
conformance/FINDINGS.md). Python readers do not notice (they read the metadata as a C string).

This module calls librdkafka (the very library, and the very ``rd_kafka_t``, of the caller's confluent-kafka
``Producer``) with a partition list it builds itself, ``metadata_size`` the string's length. It checks that the
handle it found names a producer before using it, and refuses (never guesses) when it does not.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
from collections.abc import Sequence
from typing import Any

from streamproc.errors import HandoffError


class _TopicPartition(ctypes.Structure):
    """``rd_kafka_topic_partition_t`` (librdkafka 2.x, public ABI)."""

    _fields_ = (
        ("topic", ctypes.c_char_p),
        ("partition", ctypes.c_int32),
        ("offset", ctypes.c_int64),
        ("metadata", ctypes.c_void_p),
        ("metadata_size", ctypes.c_size_t),
        ("opaque", ctypes.c_void_p),
        ("err", ctypes.c_int),
        ("_private", ctypes.c_void_p),
    )


@functools.cache
def _librdkafka() -> ctypes.CDLL:
    """The librdkafka that confluent-kafka's extension is linked against (its wheel bundles one)."""
    import confluent_kafka

    package = os.path.dirname(confluent_kafka.__file__)
    candidates = sorted(glob.glob(os.path.join(package, "..", "confluent_kafka.libs", "librdkafka*.so*")))
    if not candidates:
        raise HandoffError(
            f"librdkafka was not found next to confluent-kafka ({package}): the hand-off needs the wheel's bundled "
            "librdkafka to commit Kafka Streams' offset metadata; reinstall confluent-kafka from its wheel"
        )
    lib = ctypes.CDLL(candidates[0])
    lib.rd_kafka_name.restype = ctypes.c_char_p
    lib.rd_kafka_name.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_topic_partition_list_new.restype = ctypes.c_void_p
    lib.rd_kafka_topic_partition_list_new.argtypes = [ctypes.c_int]
    lib.rd_kafka_topic_partition_list_add.restype = ctypes.POINTER(_TopicPartition)
    lib.rd_kafka_topic_partition_list_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32]
    lib.rd_kafka_topic_partition_list_destroy.restype = None
    lib.rd_kafka_topic_partition_list_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_consumer_group_metadata_read.restype = ctypes.c_void_p
    lib.rd_kafka_consumer_group_metadata_read.argtypes = [
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    lib.rd_kafka_consumer_group_metadata_destroy.restype = None
    lib.rd_kafka_consumer_group_metadata_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_send_offsets_to_transaction.restype = ctypes.c_void_p
    lib.rd_kafka_send_offsets_to_transaction.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
    ]
    for name, restype in (
        ("rd_kafka_error_code", ctypes.c_int),
        ("rd_kafka_error_string", ctypes.c_char_p),
        ("rd_kafka_error_is_fatal", ctypes.c_int),
        ("rd_kafka_error_is_retriable", ctypes.c_int),
        ("rd_kafka_error_txn_requires_abort", ctypes.c_int),
    ):
        getattr(lib, name).restype = restype
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.rd_kafka_error_destroy.restype = None
    lib.rd_kafka_error_destroy.argtypes = [ctypes.c_void_p]
    return lib


_PRODUCER_NAME = re.compile(r".*#producer-\d+")


def _handle(producer: Any) -> int:
    """The producer's ``rd_kafka_t *``: the first field after ``PyObject_HEAD`` of confluent-kafka's ``Handle``."""
    lib = _librdkafka()
    pointer = ctypes.c_void_p.from_address(id(producer) + object.__basicsize__).value
    name = lib.rd_kafka_name(pointer) if pointer else None
    if pointer is None or name is None or not _PRODUCER_NAME.fullmatch(name.decode("utf-8", "replace")):
        raise HandoffError(
            f"could not reach librdkafka under this confluent-kafka's Producer (found {name!r}, expected "
            "<client.id>#producer-<n>); the hand-off cannot commit Kafka Streams' offset metadata without it: use "
            "the confluent-kafka version in requirements.lock"
        )
    return pointer


def _raise(lib: ctypes.CDLL, error: int) -> None:
    from confluent_kafka import KafkaError, KafkaException

    try:
        kafka_error = KafkaError(
            lib.rd_kafka_error_code(error),
            (lib.rd_kafka_error_string(error) or b"").decode("utf-8", "replace"),
            fatal=bool(lib.rd_kafka_error_is_fatal(error)),
            retriable=bool(lib.rd_kafka_error_is_retriable(error)),
            txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error)),
        )
    finally:
        lib.rd_kafka_error_destroy(error)
    raise KafkaException(kafka_error)


def send_offsets_to_transaction(producer: Any, offsets: Sequence[Any], group_metadata: bytes, timeout_s: float) -> None:
    """``producer.send_offsets_to_transaction(offsets, group_metadata, timeout_s)``, each ``offsets[i].metadata``
    committed byte for byte (UTF-8, no NUL appended). Raises ``KafkaException`` as confluent-kafka does."""
    lib = _librdkafka()
    rk = _handle(producer)
    cgmd = ctypes.c_void_p()
    error = lib.rd_kafka_consumer_group_metadata_read(ctypes.byref(cgmd), group_metadata, len(group_metadata))
    if error:
        _raise(lib, error)
    parts = lib.rd_kafka_topic_partition_list_new(len(offsets))
    keep: list[ctypes.Array[ctypes.c_char]] = []  # the metadata buffers, alive until librdkafka copied them
    elements = []
    try:
        for tp in offsets:
            element = lib.rd_kafka_topic_partition_list_add(parts, tp.topic.encode(), tp.partition).contents
            element.offset = tp.offset
            if tp.metadata:
                data = tp.metadata.encode("utf-8")
                buffer = ctypes.create_string_buffer(data, len(data))
                keep.append(buffer)
                element.metadata = ctypes.cast(buffer, ctypes.c_void_p)
                element.metadata_size = len(data)
            elements.append(element)
        error = lib.rd_kafka_send_offsets_to_transaction(rk, parts, cgmd, int(timeout_s * 1000))
        if error:
            _raise(lib, error)
    finally:
        for element in elements:  # ours, not librdkafka's to free
            element.metadata = None
            element.metadata_size = 0
        lib.rd_kafka_topic_partition_list_destroy(parts)
        lib.rd_kafka_consumer_group_metadata_destroy(cgmd)
