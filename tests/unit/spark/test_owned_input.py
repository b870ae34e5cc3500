"""The owners of a shard reading only its own records (``spark/owned_input.py``): key buckets balanced over the
shards by their records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamproc.engine.partitioner import partition_for_key
from streamproc.spark.owned_input import OWNER_BUCKETS, balanced_owners


@given(loads=st.lists(st.integers(0, 10_000), min_size=1, max_size=300), count=st.integers(1, 9))
def test_every_bucket_goes_to_one_shard_and_no_shard_ends_a_bucket_above_another(loads: list[int], count: int) -> None:
    """Largest first, each to the least loaded shard: a shard's records exceed another's by at most one bucket's, and
    the assignment is a function of the loads alone (each shard of a task computes it for itself)."""
    array = np.array(loads, np.int64)
    owner = balanced_owners(array, count)
    assert owner.shape == array.shape and set(owner.tolist()) <= set(range(count))
    totals = np.bincount(owner, weights=array, minlength=count)
    assert totals.sum() == array.sum()
    assert totals.max() - totals.min() <= array.max()
    assert np.array_equal(owner, balanced_owners(array.copy(), count))


def test_skewed_keys_are_shared_out_where_murmur2_modulo_the_shards_is_not() -> None:
    """Zipf-distributed keys (the bench's shape): ``partition_for_key(key, 2)`` leaves one shard with several percent
    more records than the other; the buckets balanced leave them within a hot bucket's records of each other."""
    rng = np.random.default_rng(29)
    ranks = rng.zipf(1.1, 200_000)
    keys = [b"user-%06d" % rank for rank in ranks[ranks < 100_000].tolist()]
    distinct, counts = np.unique(np.array(keys, dtype=object), return_counts=True)
    modulo = np.bincount([partition_for_key(k, 2) for k in distinct.tolist()], weights=counts, minlength=2)
    buckets = np.array([partition_for_key(k, OWNER_BUCKETS) for k in distinct.tolist()])
    loads = np.bincount(buckets, weights=counts, minlength=OWNER_BUCKETS).astype(np.int64)
    balanced = np.bincount(balanced_owners(loads, 2), weights=loads, minlength=2)
    assert balanced.sum() == modulo.sum() == len(keys)
    assert abs(balanced[0] - balanced[1]) <= loads.max()
    assert abs(balanced[0] - balanced[1]) < abs(modulo[0] - modulo[1]) / 10


@given(values=st.lists(st.one_of(st.none(), st.binary(max_size=6), st.text(max_size=4).map(str.encode)), max_size=20))
def test_the_prefix_reads_a_column_as_the_source_deserializes_each_value(values: list[bytes | None]) -> None:
    """A shard running a filter over the records it does not own (``_passing_others``) reads their keys and values
    as the source's deserializer would: ``String`` over Arrow where the column is valid UTF-8, Java's replacement
    characters where it is not, ``ByteArray`` as it is; a value another deserializer raises on reaches nothing."""
    from streamproc.engine.serdes import ByteArrayDeserializer, LongDeserializer, StringDeserializer
    from streamproc.spark.owned_input import _UNREADABLE, _deserialized

    column = pa.array(values, pa.binary())
    for deserializer in (StringDeserializer(), ByteArrayDeserializer()):
        expected = [deserializer.deserialize("in", v) for v in values]
        assert _deserialized(column, deserializer.deserialize, "in") == expected
    longs = LongDeserializer()
    read = _deserialized(column, longs.deserialize, "in")
    assert read == [_UNREADABLE if v is not None and len(v) != 8 else longs.deserialize("in", v) for v in values]


def test_keys_bucketed_many_batches_at_once_own_the_rows_that_bucketing_each_batch_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``owned_input`` buckets the key bytes of consecutive batches together (``HASHED_ROWS``), and a batch whose
    String keys are not UTF-8 through the source's deserializer, between them: every row's owner is the one that
    bucketing each batch on its own gives (the rule before), in the rows' order. Segments of 3 records: a batch of
    valid keys, then one with ``b"\\xff"`` (Java's replacement character, which ``user-1\\ufffd`` shares), then
    valid ones again, null keys among them."""
    from streamproc.dsl import Consumed, StreamsBuilder
    from streamproc.engine.key_shards import ShardSpec
    from streamproc.engine.records import ConsumerRecord
    from streamproc.engine.serdes import serde_for
    from streamproc.engine.stream_task import TaskConfig
    from streamproc.engine.topology_builder import build_processor_topology, build_stores
    from streamproc.intervals import to_intervals
    from streamproc.spark import owned_input as module
    from streamproc.spark.task_input import staged_range
    from streamproc.storage import LocalObjectStore
    from streamproc.storage.manifest import SegmentProof
    from streamproc.storage.staging import SegmentLimits, stage_range

    text = serde_for("String")
    builder = StreamsBuilder()
    builder.stream("in", Consumed.with_(text, text)).group_by_key().count().to_stream().to("out")
    topology = builder.build()
    keys = [b"user-1", b"user-2", None, b"user-3", b"user-1\xff", b"user-1", b"user-1\xef\xbf\xbd", b"user-4"]
    keys += [f"user-{i % 7}".encode() for i in range(30)] + [None, b"\xfe\xff", b"user-5"]
    rows = [ConsumerRecord.raw("in", 0, i, 1_000 + i, key, b"v") for i, key in enumerate(keys)]
    store = LocalObjectStore(tmp_path)
    proof = SegmentProof(to_intervals(range(len(rows))), {})
    stage_range(store, "in", 0, 0, len(rows), rows, proof, SegmentLimits(max_segment_records=3))
    staged = staged_range(store, "in", 0, 0, len(rows), task="0_0")
    graph = build_processor_topology(topology, 0, application_id="app")
    stores = build_stores(topology, 0)

    def owned(shard: ShardSpec) -> Any:
        result = module.owned_input(
            store=store, staged=staged, appended=(), graph=graph, config=TaskConfig(),
            first_store=stores[min(stores)], shard=shard, task="0_0",
        )  # fmt: skip
        assert not isinstance(result, str), result
        return result

    for count in (2, 3):
        batched = [owned(ShardSpec(i, count)) for i in range(count)]
        monkeypatch.setattr(module, "HASHED_ROWS", 1)  # each batch bucketed on its own
        alone = [owned(ShardSpec(i, count)) for i in range(count)]
        monkeypatch.undo()
        for a, b in zip(batched, alone, strict=True):
            assert a.owned.tolist() == b.owned.tolist()
            assert a.positions.tolist() == b.positions.tolist()
            assert a.key_owners is not None and b.key_owners is not None
            assert a.key_owners.shard_of.tolist() == b.key_owners.shard_of.tolist()
        assert sum(int(a.owned.sum()) for a in batched) == len(rows)  # every row one shard's (nulls: each's)
