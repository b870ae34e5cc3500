"""``read_group`` puts each member's session timeout on it, from the group's metadata record, read once per member
while a wait describes the group twice a second (``kafka/group_metadata`` is read only for members not seen)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from streamproc.kafka import cluster

CONFIG = {"bootstrap.servers": "127.0.0.1:1"}


def description(*member_ids: str, state: str = "STABLE") -> Any:
    members = [SimpleNamespace(member_id=m, client_id=f"{m}-client", host="/10.0.0.7") for m in member_ids]
    return SimpleNamespace(state=SimpleNamespace(name=state), type=SimpleNamespace(name="CLASSIC"), members=members)


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The group ids whose metadata record was read; the record gives m-1 6 s and m-2 10 s, never m-3."""
    read: list[str] = []

    def session_timeouts(client_config: object, group_id: str) -> dict[str, int]:
        read.append(group_id)
        return {"m-1": 6_000, "m-2": 10_000}

    monkeypatch.setattr(cluster, "_session_timeouts", session_timeouts)
    return read


def test_members_get_their_session_timeout_and_the_time_they_were_described(
    records: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "_describe_group", lambda *a: description("m-1", "m-3"))
    group = cluster.read_group(object(), "app", client_config=CONFIG)
    assert group is not None and group.described_at_ms is not None
    assert [(m.member_id, m.client_id, m.session_timeout_ms) for m in group.members] == [
        ("m-1", "m-1-client", 6_000), ("m-3", "m-3-client", None)
    ]  # fmt: skip
    assert records == ["app"]


def test_without_a_client_config_or_members_no_record_is_read(
    records: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "_describe_group", lambda *a: description("m-1"))
    group = cluster.read_group(object(), "app")
    assert group is not None and group.members[0].session_timeout_ms is None
    monkeypatch.setattr(cluster, "_describe_group", lambda *a: description(state="EMPTY"))
    assert cluster.read_group(object(), "app", client_config=CONFIG) is not None
    assert records == []


def test_the_cache_reads_the_record_again_only_for_new_members(
    records: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache: dict[str, int | None] = {}
    described = iter([description("m-3"), description("m-3"), description("m-3", "m-2"), description("m-2")])
    monkeypatch.setattr(cluster, "_describe_group", lambda *a: next(described))
    timeouts = []
    for _ in range(4):
        group = cluster.read_group(object(), "app", client_config=CONFIG, session_timeouts=cache)
        assert group is not None
        timeouts.append([m.session_timeout_ms for m in group.members])
    assert timeouts == [[None], [None], [None, 10_000], [10_000]]
    assert records == ["app", "app"]  # m-3, unknown to the record, is not asked for again
