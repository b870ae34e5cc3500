"""Conformance runner for ``scenarios/state/*.json`` (state.md): one function per scenario ``operation``.

``run_scenario`` returns the result in the shape of the scenario's ``expected``, or ``{"error": {...}}`` with the
streamproc error class as ``type``, its message, and the Java exception Kafka Streams throws in the same situation.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streamproc.engine.deserialization_handler import LogAndFailExceptionHandler
from streamproc.engine.dropped_records import DroppedRecordsSensor
from streamproc.engine.internal_topics import repartition_topic, store_changelog_topic
from streamproc.engine.processor_topology import SourceNode
from streamproc.engine.record_deserializer import RecordDeserializer
from streamproc.engine.record_queue import RecordQueue
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import ByteArrayDeserializer
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import LogAndSkipOnInvalidTimestamp
from streamproc.errors import ConfigError, StateError
from streamproc.state import changelog as changelog_mod
from streamproc.state.commit_metadata import ProcessorMetadata, TopicPartitionMetadata
from streamproc.state.committable_offsets import (
    PartitionCommitState,
    TaskState,
    commit_offsets,
    purge_offsets,
)
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.offsets_column_family import changelog_offset_entry, status_entry
from streamproc.state.restore_plan import ChangelogState, ProcessingGuarantee, plan_restore
from streamproc.state.store_layout import store_layout
from streamproc.state.store_registration import (
    KS_VERSION_4_2,
    StateStoreMetadata,
    StoreSpec,
    register_stores,
)
from streamproc.state.store_type import StoreType

Scenario = dict[str, Any]


def parse_partition(text: str) -> TopicPartition:
    """``"<topic>-<p>"``, split at the last ``-`` (scenarios README)."""
    try:
        return TopicPartition.parse(text)
    except ValueError:
        raise ConfigError(f"partition {text!r} is not '<topic>-<partition>'") from None


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def _unhex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def _error(exc: StateError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    for attribute in ("kafka_exception", "kafka_message"):
        value = getattr(exc, attribute, None)
        if value is not None:
            error[attribute] = value
    return {"error": error}


def _checkpoint_write(inp: Scenario) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="streamproc-cw-") as tmp:
        path = Path(tmp) / ".checkpoint"
        if inp["existing_content"] is not None:
            path.write_bytes(inp["existing_content"].encode("utf-8"))
        offsets = {parse_partition(e["partition"]): int(e["offset"]) for e in inp["entries"]}
        OffsetCheckpoint(path).write(offsets)
        if not path.exists():
            return {"file_exists": False, "content": None}
        return {"file_exists": True, "content": path.read_bytes().decode("utf-8")}


def _checkpoint_read(inp: Scenario) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="streamproc-cr-") as tmp:
        path = Path(tmp) / ".checkpoint"
        if inp["content"] is not None:
            path.write_bytes(inp["content"].encode("utf-8"))
        offsets = OffsetCheckpoint(path).read()
    return {"offsets": {str(tp): offset for tp, offset in offsets.items()}}


def _restore_plan(inp: Scenario, ks_version: str) -> dict[str, Any]:
    store_in = inp["store"]
    tp = parse_partition(inp["changelog_partition"])
    store = StateStoreMetadata(
        store_in["name"],
        bool(store_in["persistent"]),
        tp if store_in["logged"] else None,
        source_topic_changelog=bool(store_in.get("source_topic_changelog", False)),
    )
    cl = inp["changelog"]
    state = ChangelogState(
        log_start_offset=cl["log_start_offset"],
        log_end_offset=cl["log_end_offset"],
        control_offsets=frozenset(cl.get("control_offsets", [])),
        aborted_offsets=frozenset(cl.get("aborted_offsets", [])),
        null_key_offsets=frozenset(cl.get("null_key_offsets", [])),
        group_committed_offset=inp.get("group_committed_offset"),
    )
    checkpoint_in = inp["checkpoint"]
    checkpoint: dict[TopicPartition, int] | None = None
    if checkpoint_in["file_present"]:
        entry = checkpoint_in["entry"]
        checkpoint = {} if entry is None else {tp: int(entry)}
    plan = plan_restore(
        ProcessingGuarantee(inp["processing_guarantee"]),
        [store],
        checkpoint,
        {tp: state},
        task_dir_empty=bool(inp["task_dir_empty"]),
        ks_version=ks_version,
    )
    restore = plan.restore_for(store.name)
    return {
        "task_corrupted": plan.task_corrupted,
        "local_state_wiped": plan.local_state_wiped,
        "checkpoint_deleted_at_init": plan.checkpoint_deleted_at_init,
        "start_offset": None if restore is None else restore.start_offset,
        "restore_end_offset": None if restore is None else restore.restore_end_offset,
        "records_restored": 0 if restore is None else restore.records_restored,
    }


def _processor_metadata(entries: list[dict[str, Any]]) -> ProcessorMetadata:
    return ProcessorMetadata.of((e["key"], int(e["value"])) for e in entries)


def _commit_metadata_encode(inp: Scenario) -> dict[str, Any]:
    metadata = TopicPartitionMetadata(int(inp["partition_time"]), _processor_metadata(inp["processor_metadata"]))
    return {"metadata": metadata.encode()}


def _commit_metadata_decode(inp: Scenario) -> dict[str, Any]:
    decoded = TopicPartitionMetadata.decode(inp["metadata"])
    return {"partition_time": decoded.partition_time, "processor_metadata": decoded.processor_metadata.as_dict()}


def _commit_offsets(inp: Scenario) -> dict[str, Any]:
    partitions = {
        parse_partition(name): PartitionCommitState(
            processed_any=bool(p["processed_any"]),
            head_buffered_offset=p["head_buffered_offset"],
            next_offset_to_consume=p["next_offset_to_consume"],
            partition_time=int(p["partition_time"]),
        )
        for name, p in inp["partitions"].items()
    }
    offsets = commit_offsets(
        partitions,
        _processor_metadata(inp["processor_metadata"]),
        processor_metadata_needs_commit=bool(inp["processor_metadata_needs_commit"]),
    )
    return {"offsets": {str(tp): {"offset": om.offset, "metadata": om.metadata} for tp, om in offsets.items()}}


def _partition_time(inp: Scenario) -> dict[str, Any]:
    """Through the engine's own ``RecordQueue`` (the one rule): the restored time, then the dropped records
    (negative timestamps, skipped by ``LogAndSkipOnInvalidTimestamp``) and the processed ones, each polled."""
    log = logging.LoggerAdapter(logging.getLogger(__name__), {})
    dropped = DroppedRecordsSensor(lambda: 0)
    source = SourceNode("source", ["t"], ByteArrayDeserializer(), ByteArrayDeserializer())
    deserializer = RecordDeserializer(source, LogAndFailExceptionHandler(), "0_0", dropped, log)
    queue = RecordQueue(TopicPartition("t", 0), deserializer, LogAndSkipOnInvalidTimestamp(), dropped, log)
    queue.set_partition_time(int(inp["committed_partition_time"]))
    timestamps = [*inp["dropped_record_timestamps"], *inp["processed_record_timestamps"]]
    queue.add_raw_records(
        ConsumerRecord.raw("t", 0, offset, int(ts), b"k", b"v") for offset, ts in enumerate(timestamps)
    )
    while not queue.is_empty():
        queue.poll()
    return {"partition_time": queue.partition_time}


def _purge_offsets(inp: Scenario) -> dict[str, Any]:
    committed = {parse_partition(name): int(offset) for name, offset in inp["task_committed_offsets"].items()}
    purged = purge_offsets(committed, inp["repartition_topics"], task_state=TaskState(inp["task_state"]))
    return {"records_to_delete": {str(tp): offset for tp, offset in purged.items()}}


def _internal_topic_name(inp: Scenario) -> dict[str, Any]:
    kind = inp["topic_kind"]
    if kind == "changelog":
        return {"topic": store_changelog_topic(inp["application_id"], inp["name"], inp.get("named_topology"))}
    if kind == "repartition":
        return {"topic": repartition_topic(inp["application_id"], inp["name"], inp.get("named_topology"))}
    raise ConfigError(f"unknown topic_kind {kind!r}")


def _register_stores(inp: Scenario, ks_version: str) -> dict[str, Any]:
    specs = [StoreSpec(s["name"], logged=bool(s["logged"]), persistent=bool(s["persistent"])) for s in inp["stores"]]
    registered = register_stores(inp["application_id"], TaskId.parse(inp["task"]), specs, ks_version=ks_version)
    return {
        "changelog_partitions": {name: str(tp) for name, tp in registered.changelog_partitions.items()},
        "checkpointed_stores": registered.checkpointed_stores,
    }


def _store_layout(inp: Scenario) -> dict[str, Any]:
    store_type = StoreType(inp["store_type"])
    layout = store_layout(
        inp["state_dir"],
        inp["application_id"],
        TaskId.parse(inp["task"]),
        inp["store_name"],
        store_type,
        retention_ms=inp.get("retention_ms"),
        segment_interval_ms=inp.get("segment_interval_ms"),
        segment_timestamp=inp.get("segment_timestamp"),
    )
    result: dict[str, Any] = {
        "db_path": str(layout.db_path),
        "column_families": list(layout.column_families),
        "data_column_family": layout.data_column_family,
    }
    if store_type.segmented:
        result["segment_interval_ms"] = layout.segment_interval_ms
        result["segment_id"] = layout.segment_id
    else:
        result["checkpoint_path"] = str(layout.checkpoint_path)
    return result


def _changelog_record(inp: Scenario) -> dict[str, Any]:
    store_type = StoreType(inp["store_type"])
    value = _unhex(inp.get("value_hex")) if inp["operation"] == "put" else None
    key = _unhex(inp["key_hex"])
    if key is None:
        raise ConfigError("changelog_record scenario without key_hex")
    window_logger = None
    if store_type.windowed:
        puts_before = int(inp.get("puts_before", 0))
        window_logger = changelog_mod.WindowStoreChangeLogger(
            retain_duplicates=bool(inp.get("retain_duplicates", False)),
            timestamped=store_type.timestamped,
            store_seqnum=puts_before if inp.get("retain_duplicates") else 0,
            changelog_seqnum=puts_before if inp.get("retain_duplicates") else 0,
        )
    change = changelog_mod.logged_change(
        store_type,
        key,
        value,
        int(inp["record_context_timestamp"]),
        value_timestamp=inp.get("value_timestamp"),
        window_start=inp.get("window_start"),
        session_start=inp.get("session_start"),
        session_end=inp.get("session_end"),
        window_logger=window_logger,
    )
    store_write = change.store_write
    return {
        "store_key_hex": _hex(store_write.key) if store_write is not None else None,
        "store_value_hex": _hex(store_write.value) if store_write is not None else None,
        "changelog_key_hex": _hex(change.changelog.key),
        "changelog_value_hex": _hex(change.changelog.value),
        "changelog_timestamp": change.changelog.timestamp,
        "changelog_headers": [{"key": k, "value_hex": _hex(v)} for k, v in change.changelog.headers],
    }


def _offsets_cf_entry(inp: Scenario) -> dict[str, Any]:
    if inp["entry"] == "status":
        entry = status_entry(open_=inp["state"] == "open")
    elif inp["entry"] == "changelog_offset":
        entry = changelog_offset_entry(parse_partition(inp["partition"]), int(inp["offset"]))
    else:
        raise ConfigError(f"unknown offsets column family entry {inp['entry']!r}")
    return {"column_family": entry.column_family, "key_hex": entry.key.hex(), "value_hex": entry.value.hex()}


_SIMPLE: dict[str, Callable[[Scenario], dict[str, Any]]] = {
    "checkpoint_write": _checkpoint_write,
    "checkpoint_read": _checkpoint_read,
    "commit_metadata_encode": _commit_metadata_encode,
    "commit_metadata_decode": _commit_metadata_decode,
    "commit_offsets": _commit_offsets,
    "partition_time": _partition_time,
    "purge_offsets": _purge_offsets,
    "internal_topic_name": _internal_topic_name,
    "store_layout": _store_layout,
    "changelog_record": _changelog_record,
    "offsets_cf_entry": _offsets_cf_entry,
}


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    """Run one state scenario; state errors become ``{"error": {...}}``."""
    operation = scenario.get("operation")
    ks_version = str(scenario.get("ks_version", KS_VERSION_4_2))
    inp: Scenario = scenario["input"]
    try:
        if operation == "restore_plan":
            return _restore_plan(inp, ks_version)
        if operation == "register_stores":
            return _register_stores(inp, ks_version)
        handler = _SIMPLE.get(str(operation))
        if handler is None:
            raise ConfigError(f"scenario {scenario.get('id')}: unknown state operation {operation!r}")
        return handler(inp)
    except StateError as exc:
        return _error(exc)
