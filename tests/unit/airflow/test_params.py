"""The backfill form's values → RunSettings: one rule, contradictions refused naming both fields."""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.airflow.params import incremental_settings, incremental_values, run_settings
from streamproc.errors import ConfigError
from streamproc.plan import cluster_snapshot as cs

BASE = {"application_id": "app", "topology": "pkg.mod:build", "store": "s3://bucket/x"}


def settings(**values: Any) -> Any:
    return run_settings({**BASE, **values})


def test_the_defaults_plan_from_the_committed_offsets_to_the_latest() -> None:
    run = settings()
    assert run.request == cs.PlanRequest(cs.CommittedStart(), cs.LatestEnd(), cs.StartPolicy.DEFAULT)
    assert (run.kafka_conn_id, run.aws_conn_id, run.spark_conn_id) == ("kafka_default", "aws_default", "spark_default")


@pytest.mark.parametrize(
    ("values", "start"),
    [
        ({"start": "earliest"}, cs.EarliestStart()),
        ({"start": "to_offset", "start_offset": 12}, cs.ToOffsetStart(offset=12)),
        ({"start": "shift_by", "shift_by": -5}, cs.ShiftByStart(-5)),
        ({"start": "to_current"}, cs.ToCurrentStart()),
        ({"start": "by_duration", "start_duration": "PT6H"}, cs.ByDurationStart("PT6H")),
        ({"start": "to_datetime", "start_datetime": "2026-01-01T00:00:00Z"}, cs.ToDatetimeStart(1_767_225_600_000)),
        ({"start": "to_datetime", "start_datetime": "2026-01-01T01:00:00+01:00"}, cs.ToDatetimeStart(1767225600000)),
    ],
)
def test_each_start_mode_takes_its_own_field(values: dict[str, Any], start: cs.StartSpec) -> None:
    assert settings(**values).request.start == start


def test_on_data_loss_clamp_is_the_clamp_policy() -> None:
    assert settings(on_data_loss="clamp").request.start_policy is cs.StartPolicy.CLAMP


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"start_datetime": "2026-01-01T00:00:00Z"}, "param 'start_datetime' is set but 'start' is 'committed'"),
        ({"start": "to_offset"}, "'start' is 'to_offset' but param 'start_offset' is empty"),
        ({"start": "to_offset", "start_offset": 3, "shift_by": 2}, "param 'shift_by' is set but 'start' is 'to_offse"),
        ({"end_offset": 9}, "param 'end_offset' is set but 'end' is 'latest'"),
        ({"start": "latest", "end": "to_offset", "end_offset": 5}, "'start' is 'latest' but 'end' is 'to_offset'"),
        (
            {"start": "to_offset", "start_offset": 10, "end": "to_offset", "end_offset": 4},
            "'end_offset' 4 is before 'start_offset' 10",
        ),
        ({"start": "to_datetime", "start_datetime": "yesterday"}, "'yesterday' is not an ISO-8601 date-time"),
        ({"store": ""}, "param 'store' is required"),
    ],
)
def test_contradictory_values_are_refused_naming_both(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        settings(**values)


def test_the_incremental_run_takes_empty_params_from_the_variable() -> None:
    values = incremental_values(
        {"application_id": "", "topology": "pkg.mod:other", "store": ""},
        {"application_id": "app", "topology": "pkg.mod:build", "store": "s3://b/x"},
    )
    run = incremental_settings(values)
    assert (run.application_id, run.topology, run.store, run.dry_run) == ("app", "pkg.mod:other", "s3://b/x", False)
    assert run.request == cs.PlanRequest()


def test_the_incremental_run_names_a_setting_nobody_gave() -> None:
    with pytest.raises(ConfigError, match="no 'store' for the incremental run: set the param or the STREAMPROC_INCR"):
        incremental_values({"application_id": "app", "topology": "m:f"}, None)
    with pytest.raises(ConfigError, match="unknown key"):
        incremental_values({}, {**BASE, "storage": "x"})


def test_the_plan_waits_for_an_empty_group_only_when_given_a_duration() -> None:
    assert settings().wait_for_empty_group_ms() is None
    assert settings(wait_for_empty_group="").wait_for_empty_group_ms() is None
    assert settings(wait_for_empty_group="PT90S").wait_for_empty_group_ms() == 90_000
    assert incremental_settings({**BASE, "wait_for_empty_group": "PT1M"}).wait_for_empty_group_ms() == 60_000
    assert incremental_values({}, {**BASE, "wait_for_empty_group": "PT1M"})["wait_for_empty_group"] == "PT1M"


def test_a_wait_that_is_not_a_duration_is_refused_naming_the_param() -> None:
    with pytest.raises(ConfigError, match=r"^param 'wait_for_empty_group' 'soon' is not a duration \(Java's Duration"):
        settings(wait_for_empty_group="soon")


def test_the_applications_group_protocol_reaches_the_plan() -> None:
    """The plan step passes ``group_protocol`` to ``plan_run``, which asks the cluster for the streams protocol."""
    assert settings().group_protocol is None
    assert settings(group_protocol="classic").group_protocol == "classic"
    assert settings(group_protocol="Streams").group_protocol == "streams"  # case-insensitive, as StreamsConfig
    assert incremental_settings(incremental_values({}, {**BASE, "group_protocol": "streams"})).group_protocol == (
        "streams"
    )
    assert incremental_settings(incremental_values({"group_protocol": ""}, BASE)).group_protocol is None


def test_another_group_protocol_is_refused_naming_the_param() -> None:
    with pytest.raises(ConfigError, match=r"^param 'group_protocol' is 'consumer': use classic or streams"):
        settings(group_protocol="consumer")
