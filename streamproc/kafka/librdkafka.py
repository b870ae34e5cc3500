"""librdkafka's C API through ctypes, where confluent-kafka gets offset metadata's bytes wrong.

Kafka Streams keeps each task's partition time in its committed offsets' metadata (12 Base64 characters).
confluent-kafka 2.16 cannot carry those bytes exactly either way: on the write it hands librdkafka ``metadata_size =
strlen + 1`` (a NUL Kafka Streams cannot decode), and on the read it takes librdkafka's copy of the listed metadata,
which is not NUL-terminated, as a C string (bytes past the end: ``UnicodeDecodeError`` at position 12, or silently
longer text).
Both directions therefore go through librdkafka itself, with ``rd_kafka_topic_partition_t.metadata_size``:

- :func:`list_committed_offsets` (``rd_kafka_ListConsumerGroupOffsets``) reads a group's offsets and metadata;
- :func:`alter_committed_offsets` (``rd_kafka_AlterConsumerGroupOffsets``) sets them outside a transaction (the
  reset-tool oracle's groups);
- ``streamproc.handoff.txn_offsets`` writes them inside the hand-off's transaction.

Both use the very library and the very ``rd_kafka_t`` of the caller's confluent-kafka client (its configuration,
connections and credentials), found under the client object and checked by name before use; this module refuses
(never guesses) when it cannot find them. The library handle, the structs and the error conversion live here once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from streamproc.errors import StreamprocError

#: ``RD_KAFKA_OFFSET_INVALID``: "no offset" (a partition named in a request, or one without a committed offset).
_OFFSET_INVALID = -1001


class TopicPartitionStruct(ctypes.Structure):
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


class TopicPartitionListStruct(ctypes.Structure):
    """``rd_kafka_topic_partition_list_t``."""

    _fields_ = (
        ("cnt", ctypes.c_int),
        ("size", ctypes.c_int),
        ("elems", ctypes.POINTER(TopicPartitionStruct)),
    )


class LibrdkafkaUnavailable(StreamprocError):
    """confluent-kafka's own librdkafka, or its client's ``rd_kafka_t``, could not be reached."""


_P = ctypes.c_void_p
#: ``rd_kafka_admin_op_t``: ``RD_KAFKA_ADMIN_OP_ANY`` (every option may be set on the options object).
_ADMIN_OP_ANY = 0


def _declare(lib: ctypes.CDLL, name: str, restype: Any, *argtypes: Any) -> None:
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)


@functools.cache
def librdkafka() -> ctypes.CDLL:
    """The librdkafka that confluent-kafka's extension is linked against (its wheel bundles one)."""
    import confluent_kafka

    package = os.path.dirname(confluent_kafka.__file__)
    candidates = sorted(glob.glob(os.path.join(package, "..", "confluent_kafka.libs", "librdkafka*.so*")))
    if not candidates:
        raise LibrdkafkaUnavailable(
            f"librdkafka was not found next to confluent-kafka ({package}): streamproc reads and writes Kafka "
            "Streams' offset metadata through the wheel's bundled librdkafka; reinstall confluent-kafka from its wheel"
        )
    lib = ctypes.CDLL(candidates[0])
    _declare(lib, "rd_kafka_name", ctypes.c_char_p, _P)
    _declare(lib, "rd_kafka_err2name", ctypes.c_char_p, ctypes.c_int)
    _declare(lib, "rd_kafka_err2str", ctypes.c_char_p, ctypes.c_int)
    # partition lists
    _declare(lib, "rd_kafka_topic_partition_list_new", _P, ctypes.c_int)
    _declare(
        lib, "rd_kafka_topic_partition_list_add", ctypes.POINTER(TopicPartitionStruct), _P, ctypes.c_char_p,
        ctypes.c_int32,
    )  # fmt: skip
    _declare(lib, "rd_kafka_topic_partition_list_destroy", None, _P)
    # transactions
    _declare(lib, "rd_kafka_consumer_group_metadata_read", _P, ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_size_t)
    _declare(lib, "rd_kafka_consumer_group_metadata_destroy", None, _P)
    _declare(lib, "rd_kafka_send_offsets_to_transaction", _P, _P, _P, _P, ctypes.c_int)
    # rd_kafka_error_t
    for name, restype in (
        ("rd_kafka_error_code", ctypes.c_int),
        ("rd_kafka_error_string", ctypes.c_char_p),
        ("rd_kafka_error_is_fatal", ctypes.c_int),
        ("rd_kafka_error_is_retriable", ctypes.c_int),
        ("rd_kafka_error_txn_requires_abort", ctypes.c_int),
    ):
        _declare(lib, name, restype, _P)
    _declare(lib, "rd_kafka_error_destroy", None, _P)
    # the Admin API: ListConsumerGroupOffsets on a queue of our own
    _declare(lib, "rd_kafka_queue_new", _P, _P)
    _declare(lib, "rd_kafka_queue_destroy", None, _P)
    _declare(lib, "rd_kafka_queue_poll", _P, _P, ctypes.c_int)
    # a partition's own queue (the fetch's native consume, kafka/native_consume.py)
    _declare(lib, "rd_kafka_queue_get_partition", _P, _P, ctypes.c_char_p, ctypes.c_int32)
    _declare(lib, "rd_kafka_queue_forward", None, _P, _P)
    _declare(lib, "rd_kafka_event_destroy", None, _P)
    _declare(lib, "rd_kafka_event_error", ctypes.c_int, _P)
    _declare(lib, "rd_kafka_event_error_string", ctypes.c_char_p, _P)
    _declare(lib, "rd_kafka_AdminOptions_new", _P, _P, ctypes.c_int)
    _declare(lib, "rd_kafka_AdminOptions_destroy", None, _P)
    _declare(
        lib, "rd_kafka_AdminOptions_set_request_timeout", ctypes.c_int, _P, ctypes.c_int, ctypes.c_char_p,
        ctypes.c_size_t,
    )  # fmt: skip
    _declare(lib, "rd_kafka_AdminOptions_set_require_stable_offsets", _P, _P, ctypes.c_int)
    _declare(lib, "rd_kafka_ListConsumerGroupOffsets_new", _P, ctypes.c_char_p, _P)
    _declare(lib, "rd_kafka_ListConsumerGroupOffsets_destroy", None, _P)
    _declare(lib, "rd_kafka_ListConsumerGroupOffsets", None, _P, ctypes.POINTER(_P), ctypes.c_size_t, _P, _P)
    _declare(lib, "rd_kafka_event_ListConsumerGroupOffsets_result", _P, _P)
    _declare(
        lib, "rd_kafka_ListConsumerGroupOffsets_result_groups", ctypes.POINTER(_P), _P,
        ctypes.POINTER(ctypes.c_size_t),
    )  # fmt: skip
    _declare(lib, "rd_kafka_AlterConsumerGroupOffsets_new", _P, ctypes.c_char_p, _P)
    _declare(lib, "rd_kafka_AlterConsumerGroupOffsets_destroy", None, _P)
    _declare(lib, "rd_kafka_AlterConsumerGroupOffsets", None, _P, ctypes.POINTER(_P), ctypes.c_size_t, _P, _P)
    _declare(lib, "rd_kafka_event_AlterConsumerGroupOffsets_result", _P, _P)
    _declare(
        lib, "rd_kafka_AlterConsumerGroupOffsets_result_groups", ctypes.POINTER(_P), _P,
        ctypes.POINTER(ctypes.c_size_t),
    )  # fmt: skip
    _declare(lib, "rd_kafka_group_result_error", _P, _P)
    _declare(lib, "rd_kafka_group_result_partitions", ctypes.POINTER(TopicPartitionListStruct), _P)
    return lib


#: librdkafka's handle names by role: ``<client.id>#producer-<n>`` (confluent-kafka's Producer and AdminClient are
#: both producer handles) and ``<client.id>#consumer-<n>``.
_HANDLE_NAMES = {"producer": re.compile(r".*#producer-\d+"), "consumer": re.compile(r".*#consumer-\d+")}


def client_handle(client: Any, role: str = "producer") -> int:
    """The ``rd_kafka_t *`` of a confluent-kafka client: the first field after ``PyObject_HEAD`` of confluent-kafka's
    ``Handle``, accepted only when librdkafka names it a handle of ``role`` (``producer`` for a Producer or an
    AdminClient, ``consumer`` for a Consumer)."""
    lib = librdkafka()
    pointer = ctypes.c_void_p.from_address(id(client) + object.__basicsize__).value
    name = lib.rd_kafka_name(pointer) if pointer else None
    if pointer is None or name is None or not _HANDLE_NAMES[role].fullmatch(name.decode("utf-8", "replace")):
        raise LibrdkafkaUnavailable(
            f"could not reach librdkafka under this confluent-kafka {type(client).__name__} (found {name!r}, "
            f"expected <client.id>#{role}-<n>); streamproc needs it to read and write Kafka Streams' offset "
            "metadata exactly and to fetch without a Python object per record: use the confluent-kafka version in "
            "requirements.lock"
        )
    return pointer


def raise_error(error: int, *, destroy: bool = True) -> None:
    """Raise an ``rd_kafka_error_t`` as confluent-kafka does (``KafkaException(KafkaError)``); ``destroy`` frees it
    (an error the caller owns; not one a result object holds)."""
    from confluent_kafka import KafkaError, KafkaException

    lib = librdkafka()
    try:
        kafka_error = KafkaError(
            lib.rd_kafka_error_code(error),
            (lib.rd_kafka_error_string(error) or b"").decode("utf-8", "replace"),
            fatal=bool(lib.rd_kafka_error_is_fatal(error)),
            retriable=bool(lib.rd_kafka_error_is_retriable(error)),
            txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error)),
        )
    finally:
        if destroy:
            lib.rd_kafka_error_destroy(error)
    raise KafkaException(kafka_error)


def _raise_code(code: int, message: bytes | None) -> None:
    from confluent_kafka import KafkaError, KafkaException

    text = (message or librdkafka().rd_kafka_err2str(code) or b"").decode("utf-8", "replace")
    raise KafkaException(KafkaError(code, text))


@dataclass(frozen=True, slots=True)
class ListedOffset:
    """One partition of a group's ListConsumerGroupOffsets answer: the offset (negative: none committed), the
    metadata exactly as stored (UTF-8 decoded, never past ``metadata_size``), and the partition's error (0: none)."""

    topic: str
    partition: int
    offset: int
    metadata: str
    error: int

    @property
    def error_name(self) -> str:
        """librdkafka's name of the error (``UNSTABLE_OFFSET_COMMIT``), ``""`` without one."""
        return "" if not self.error else (librdkafka().rd_kafka_err2name(self.error) or b"").decode()


def list_committed_offsets(
    admin: Any,
    group_id: str,
    *,
    require_stable: bool,
    timeout_s: float,
    partitions: Sequence[tuple[str, int]] | None = None,
) -> list[ListedOffset]:
    """``rd_kafka_ListConsumerGroupOffsets`` of every partition ``group_id`` committed, or of the ``partitions``
    named (each answered, a negative offset where nothing is committed), on ``admin``'s handle.

    Only named partitions answer ``UNSTABLE_OFFSET_COMMIT`` for a pending transactional commit the group never
    committed before: the coordinator's list of all partitions holds committed ones only.

    Raises ``KafkaException`` as confluent-kafka's ``list_consumer_group_offsets`` future does: for the request
    (timeout, transport) and for the group (``GROUP_ID_NOT_FOUND``, ``UNSTABLE_OFFSET_COMMIT``, coordinator errors).
    A partition's own error is returned in its :class:`ListedOffset`.
    """
    lib = librdkafka()

    def configure(options: int) -> None:
        error = lib.rd_kafka_AdminOptions_set_require_stable_offsets(options, int(require_stable))
        if error:
            raise_error(error)

    def call(parts: int | None) -> list[ListedOffset]:
        return _group_offsets_call(
            admin, group_id, parts, timeout_s, "ListConsumerGroupOffsets", configure=configure,
            new=lib.rd_kafka_ListConsumerGroupOffsets_new, destroy=lib.rd_kafka_ListConsumerGroupOffsets_destroy,
            call=lib.rd_kafka_ListConsumerGroupOffsets, result=lib.rd_kafka_event_ListConsumerGroupOffsets_result,
            groups=lib.rd_kafka_ListConsumerGroupOffsets_result_groups,
        )  # fmt: skip

    if partitions is None:
        return call(None)
    with partition_list([(topic, partition, _OFFSET_INVALID, "") for topic, partition in partitions]) as parts:
        return call(parts)


def alter_committed_offsets(
    admin: Any, group_id: str, offsets: Sequence[tuple[str, int, int, str]], *, timeout_s: float
) -> list[ListedOffset]:
    """``rd_kafka_AlterConsumerGroupOffsets``: commit ``(topic, partition, offset, metadata)`` for an inactive
    group, each metadata byte for byte (confluent-kafka's ``alter_consumer_group_offsets`` appends a NUL). Raises
    ``KafkaException`` for the request or the group; returns each partition's answer (its error, 0 when committed).
    """
    lib = librdkafka()
    with partition_list(offsets) as parts:
        return _group_offsets_call(
            admin, group_id, parts, timeout_s, "AlterConsumerGroupOffsets", configure=lambda _options: None,
            new=lib.rd_kafka_AlterConsumerGroupOffsets_new, destroy=lib.rd_kafka_AlterConsumerGroupOffsets_destroy,
            call=lib.rd_kafka_AlterConsumerGroupOffsets, result=lib.rd_kafka_event_AlterConsumerGroupOffsets_result,
            groups=lib.rd_kafka_AlterConsumerGroupOffsets_result_groups,
        )  # fmt: skip


@contextlib.contextmanager
def partition_list(offsets: Sequence[tuple[str, int, int, str]]) -> Iterator[int]:
    """An ``rd_kafka_topic_partition_list_t`` of ``(topic, partition, offset, metadata)``, each metadata's
    ``metadata_size`` its UTF-8 length (no NUL); the buffers are ours and stay alive until the list is destroyed."""
    lib = librdkafka()
    parts = lib.rd_kafka_topic_partition_list_new(len(offsets))
    keep: list[ctypes.Array[ctypes.c_char]] = []
    elements = []
    try:
        for topic, partition, offset, metadata in offsets:
            element = lib.rd_kafka_topic_partition_list_add(parts, topic.encode(), partition).contents
            element.offset = offset
            if metadata:
                data = metadata.encode("utf-8")
                buffer = ctypes.create_string_buffer(data, len(data))
                keep.append(buffer)
                element.metadata = ctypes.cast(buffer, ctypes.c_void_p)
                element.metadata_size = len(data)
            elements.append(element)
        yield parts
    finally:
        for element in elements:  # ours, not librdkafka's to free
            element.metadata = None
            element.metadata_size = 0
        lib.rd_kafka_topic_partition_list_destroy(parts)


def _group_offsets_call(
    admin: Any,
    group_id: str,
    partitions: int | None,
    timeout_s: float,
    what: str,
    *,
    configure: Callable[[int], None],
    new: Any,
    destroy: Any,
    call: Any,
    result: Any,
    groups: Any,
) -> list[ListedOffset]:
    """One group's offsets request (List or Alter) on a queue of our own: the answer's partitions, as copied out of
    librdkafka's result before it is freed."""
    lib = librdkafka()
    rk = client_handle(admin)
    timeout_ms = max(1, int(timeout_s * 1000))
    queue = lib.rd_kafka_queue_new(rk)
    options = lib.rd_kafka_AdminOptions_new(rk, _ADMIN_OP_ANY)
    request = new(group_id.encode(), partitions)  # copies the partition list
    event = None
    try:
        errstr = ctypes.create_string_buffer(512)
        if lib.rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, errstr, len(errstr)):
            raise LibrdkafkaUnavailable(f"librdkafka refused a request timeout of {timeout_ms} ms: {errstr.value!r}")
        configure(options)
        call(rk, (_P * 1)(request), 1, options, queue)
        deadline = time.monotonic() + timeout_s + 5.0  # librdkafka answers a timed-out request with an event
        while event is None:
            event = lib.rd_kafka_queue_poll(queue, 200)
            if event is None and time.monotonic() > deadline:
                raise LibrdkafkaUnavailable(
                    f"librdkafka gave no answer to {what} of group '{group_id}' in {timeout_s:.0f} s"
                )
        code = lib.rd_kafka_event_error(event)
        if code:
            _raise_code(code, lib.rd_kafka_event_error_string(event))
        answer = result(event)
        if not answer:
            raise LibrdkafkaUnavailable(f"librdkafka answered {what} of group '{group_id}' with no result")
        count = ctypes.c_size_t()
        answered = groups(answer, ctypes.byref(count))
        if count.value != 1:
            raise LibrdkafkaUnavailable(f"librdkafka answered {what} of group '{group_id}' for {count.value} groups")
        group = answered[0]
        group_error = lib.rd_kafka_group_result_error(group)
        if group_error:
            raise_error(group_error, destroy=False)  # owned by the result
        listed = lib.rd_kafka_group_result_partitions(group)
        return [] if not listed else [_listed(listed.contents.elems[i]) for i in range(listed.contents.cnt)]
    finally:
        if event is not None:
            lib.rd_kafka_event_destroy(event)
        destroy(request)
        lib.rd_kafka_AdminOptions_destroy(options)
        lib.rd_kafka_queue_destroy(queue)


def _listed(element: TopicPartitionStruct) -> ListedOffset:
    topic = (element.topic or b"").decode("utf-8")
    raw = ctypes.string_at(element.metadata, element.metadata_size) if element.metadata else b""
    try:
        metadata = raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # Kafka's clients write metadata as a Java String in UTF-8: not Kafka's
        raise StreamprocError(
            f"the committed offset of {topic}-{element.partition} carries metadata that is not UTF-8 ({raw!r}: "
            f"{exc}); it was not written by a Kafka client: commit the offset again with Kafka's tools"
        ) from exc
    return ListedOffset(topic, element.partition, element.offset, metadata, element.err)
