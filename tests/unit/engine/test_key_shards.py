"""Which shard owns a record (``engine/key_shards.ShardGate.owner``): Kafka's murmur2 of the key as the store
serializes it, round-robin by position where there are no bytes to hash, the same answer whether the gate remembers
the key's owner or not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.engine import key_shards
from streamproc.engine.key_shards import ShardGate, ShardSpec
from streamproc.engine.partitioner import partition_for_key


def _gate(index: int, count: int) -> ShardGate:
    gate = ShardGate(ShardSpec(index, count))
    gate._shard_key = lambda key: None if key in ("null", 0) else (key if isinstance(key, bytes) else str(key).encode())
    return gate


def _expected(key: object, position: int, count: int) -> int:
    if key is None or key == "null" or (type(key) is int and key == 0):
        return position % count
    data = key if isinstance(key, bytes) else str(key).encode()
    return partition_for_key(data, count)


#: ``"null"`` and ``0`` serialize to null (a serde may), so they go round-robin
_KEYS = st.one_of(st.none(), st.text(max_size=6), st.binary(max_size=6), st.integers(-3, 3), st.just("null"))


@settings(max_examples=200)
@given(count=st.integers(1, 5), rows=st.lists(st.tuples(_KEYS, st.integers(0, 10_000)), max_size=60),
       cache=st.sampled_from([0, 1, 3, 1 << 20]))  # fmt: skip
def test_a_records_owner_is_murmur2_of_its_serialized_key_or_round_robin(
    count: int, rows: list[tuple[object, int]], cache: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(key_shards, "OWNER_CACHE_KEYS", cache)
        gate = _gate(0, count)
        for key, position in rows:
            assert gate.owner(key, position) == _expected(key, position, count)
        assert len(gate._owners) <= cache


def test_a_key_the_serializer_rejects_goes_round_robin() -> None:
    gate = ShardGate(ShardSpec(0, 3))

    def rejects(key: object) -> bytes:
        raise ValueError(f"cannot serialize {key!r}")

    gate._shard_key = rejects
    assert [gate.owner("k", p) for p in range(6)] == [0, 1, 2, 0, 1, 2]
