"""The backfill form: typed Params (JSON Schema) and the one rule that turns their values into a ``PlanRequest``.

The form mirrors ``streamproc plan`` (the reset tool's start modes, the end modes, ``--on-data-loss``). Each field
is typed, so Airflow refuses a bad value (a negative offset, a date that is not a date) with the JSON-schema message
before a run exists. The form cannot express "this field only with that choice", so :func:`run_settings` checks
the combinations in the plan task and names both fields of a contradiction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamproc.errors import ConfigError
from streamproc.plan import cluster_snapshot as cs

START_MODES: dict[str, str] = {
    "committed": "The group's committed offsets (continue where the application is)",
    "earliest": "The log start (--to-earliest)",
    "latest": "The latest offset (--to-latest: an empty run that moves the group)",
    "to_datetime": "The first record at or after a date-time (--to-datetime)",
    "by_duration": "A duration before now (--by-duration)",
    "to_offset": "One offset for every partition (--to-offset)",
    "shift_by": "The committed offset plus N (--shift-by)",
    "to_current": "The committed offset, the latest where none is committed (--to-current)",
    "from_file": "Offsets per partition from CSV topic,partition,offset (--from-file)",
}
#: Kafka Streams' ``group.protocol`` values (``StreamsConfig``, case-insensitive).
GROUP_PROTOCOLS: tuple[str, ...] = ("classic", "streams")
END_MODES: dict[str, str] = {
    "latest": "The latest offset at plan time",
    "to_datetime": "Before the first record at or after a date-time",
    "to_offset": "One offset for every partition",
}
#: start mode → the one field it needs; every other start field must then be empty
START_FIELDS: dict[str, str] = {
    "to_datetime": "start_datetime",
    "by_duration": "start_duration",
    "to_offset": "start_offset",
    "shift_by": "shift_by",
    "from_file": "start_file",
}
END_FIELDS: dict[str, str] = {"to_datetime": "end_datetime", "to_offset": "end_offset"}

_TOPOLOGY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$"
_SECTION_APP = "Application"
_SECTION_START = "Start"
_SECTION_END = "End"
_SECTION_RUN = "Run"
_SECTION_CONN = "Connections"


def backfill_params() -> dict[str, Any]:
    """The manual DAG's Params (``airflow.sdk.Param``), built when the DAG file is parsed (no I/O)."""
    from airflow.sdk import Param

    def optional(kind: str, title: str, description: str, section: str, **schema: Any) -> Any:
        return Param(None, type=["null", kind], title=title, description=description, section=section, **schema)

    return {
        "application_id": Param(
            type="string", minLength=1, title="Application id", section=_SECTION_APP,
            description="The Kafka Streams application.id (its consumer group).",
        ),
        "topology": Param(
            type="string", pattern=_TOPOLOGY_PATTERN, title="Topology factory", section=_SECTION_APP,
            description="MODULE:FUNCTION returning the application's Topology (importable on the Airflow workers).",
        ),
        "processing_guarantee": Param(
            "at_least_once", type="string", enum=["at_least_once", "exactly_once_v2"], section=_SECTION_APP,
            values_display={"at_least_once": "at_least_once", "exactly_once_v2": "exactly_once_v2 (read_committed)"},
            title="Processing guarantee", description="The application's processing.guarantee.",
        ),
        "group_protocol": Param(
            "classic", type="string", enum=list(GROUP_PROTOCOLS), title="Group protocol", section=_SECTION_APP,
            description="The application's group.protocol: with 'streams' (KIP-1071) the plan first asks the cluster "
            "for the streams group protocol and refuses a cluster without it.",
        ),
        "start": Param(
            "committed", type="string", enum=list(START_MODES), values_display=START_MODES, title="Start at",
            section=_SECTION_START, description="Where each input partition's range starts (the reset tool's modes).",
        ),
        "start_datetime": optional("string", "Start date-time", "With 'to_datetime'.", _SECTION_START,
                                   format="date-time"),
        "start_duration": optional("string", "Start duration", "With 'by_duration': ISO-8601, e.g. PT6H.",
                                   _SECTION_START, pattern=r"^-?P"),
        "start_offset": optional("integer", "Start offset", "With 'to_offset'.", _SECTION_START, minimum=0),
        "shift_by": optional("integer", "Shift by", "With 'shift_by': negative moves back.", _SECTION_START),
        "start_file": optional("string", "Start offsets (CSV)", "With 'from_file': lines topic,partition,offset.",
                               _SECTION_START, format="multiline"),
        "on_data_loss": Param(
            "fail", type="string", enum=["fail", "clamp"], section=_SECTION_START, title="On data loss",
            values_display={"fail": "Fail, naming the lost offsets", "clamp": "Clamp to the log start"},
            description="A start before the log start (records deleted by retention).",
        ),
        "end": Param(
            "latest", type="string", enum=list(END_MODES), values_display=END_MODES, title="End at",
            section=_SECTION_END, description="Where each input partition's range ends (exclusive).",
        ),
        "end_datetime": optional("string", "End date-time", "With 'to_datetime'.", _SECTION_END, format="date-time"),
        "end_offset": optional("integer", "End offset", "With 'to_offset'.", _SECTION_END, minimum=0),
        "store": Param(
            type="string", minLength=1, title="Staging store", section=_SECTION_RUN,
            description="Where fetched segments and task results go: s3://bucket/prefix (aws connection) or a "
            "directory every worker can read.",
        ),
        "spark_master": optional("string", "Spark master", "Overrides the Spark connection's master.", _SECTION_RUN),
        "split": Param(
            "auto", type="string", pattern=r"^(auto|off|[1-9][0-9]*)$", title="Key shards per task",
            section=_SECTION_RUN,
            description="The process step's --split: N key shards per task, 'off' one, 'auto' as many as keep the "
            "cores busy where they pay (time- and session-windowed aggregates processed per record; sub-topologies "
            "that cannot be split run whole).",
        ),
        "record_cache": Param(
            "off", type="string", enum=["off", "flush-at-end"], title="Record cache", section=_SECTION_RUN,
            description="The process step's --record-cache: 'off' sends every update of the DSL's stores; "
            "'flush-at-end' what Kafka Streams' record cache, large enough for the window and flushed once at its "
            "end, sends (each key's last update; count, aggregate and reduce, windowed by TimeWindows too).",
        ),
        "state_dir": optional("string", "State directory", "The application's state.dir on this host: the hand-off "
                              "writes each task's stores and .checkpoint there.", _SECTION_RUN),
        "wait_for_empty_group": optional(
            "string", "Wait for an empty group", "While the application's group still has members (an instance "
            "stopped with KafkaStreams#close(), which does not leave the group, or crashed: they leave "
            "session.timeout.ms after their last heartbeat), wait up to this ISO-8601 duration (e.g. PT60S) for it "
            "to empty, then plan. Empty: refuse at once.", _SECTION_RUN, pattern=r"^P"),
        "dry_run": Param(
            True, type="boolean", title="Dry run", section=_SECTION_RUN,
            description="Stop after the plan and show the hand-off preview (nothing is fetched or changed).",
        ),
        "kafka_conn_id": Param("kafka_default", type="string", minLength=1, title="Kafka connection",
                               section=_SECTION_CONN),
        "aws_conn_id": Param("aws_default", type="string", minLength=1, title="S3 connection", section=_SECTION_CONN),
        "spark_conn_id": Param("spark_default", type="string", minLength=1, title="Spark connection",
                               section=_SECTION_CONN),
        "schema_registry_conn_id": optional(
            "string", "Schema Registry connection", "An HTTP connection to the Schema Registry the topology's serdes "
            "use (host: its URL; login/password: basic auth; extra: serde settings by Confluent's names).",
            _SECTION_CONN, minLength=1),
    }  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunSettings:
    """One run's settings after the cross-field checks: what every step of the DAG reads."""

    application_id: str
    topology: str
    store: str
    request: cs.PlanRequest
    processing_guarantee: str = "at_least_once"
    spark_master: str | None = None
    #: ``--split`` of the process step (``auto``, ``off`` or a shard count).
    split: str = "auto"
    #: ``--record-cache`` of the process step (``off`` or ``flush-at-end``).
    record_cache: str = "off"
    state_dir: str | None = None
    dry_run: bool = False
    kafka_conn_id: str = "kafka_default"
    aws_conn_id: str = "aws_default"
    spark_conn_id: str = "spark_default"
    schema_registry_conn_id: str | None = None
    wait_for_empty_group: str | None = None
    #: The application's ``group.protocol`` (``None``: not said, as ``classic``): ``streams`` makes the plan ask the
    #: cluster for the streams group protocol, as ``streamproc plan --streams-setting group.protocol=streams``.
    group_protocol: str | None = None

    def wait_for_empty_group_ms(self) -> int | None:
        """``wait_for_empty_group`` in milliseconds (``None``: refuse a group with members at once)."""
        return None if self.wait_for_empty_group is None else _duration_ms(self.wait_for_empty_group)


def _duration_ms(value: str) -> int:
    """An ISO-8601 duration as ``--wait-for-empty-group`` reads it (Java's ``Duration.parse``), in ms."""
    from streamproc.plan.refusals import BadRequest
    from streamproc.plan.reset_formats import NANOS_PER_MILLI, parse_duration

    try:
        return parse_duration(value, what="param 'wait_for_empty_group'") // NANOS_PER_MILLI
    except BadRequest as exc:
        raise ConfigError(str(exc)) from None


def _given(params: Mapping[str, Any], name: str) -> bool:
    value = params.get(name)
    return value is not None and value != ""


def _required(params: Mapping[str, Any], name: str) -> Any:
    if not _given(params, name):
        raise ConfigError(f"param '{name}' is required")
    return params[name]


def _mode_field(params: Mapping[str, Any], mode_param: str, fields: Mapping[str, str], default: str) -> Any:
    """The value of the field the chosen mode needs; a missing one, or a field of another mode, names both."""
    mode = params.get(mode_param) or default
    needed = fields.get(str(mode))
    for field_name in fields.values():
        if field_name != needed and _given(params, field_name):
            raise ConfigError(
                f"param '{field_name}' is set but '{mode_param}' is '{mode}': choose {mode_param}="
                f"'{next(m for m, f in fields.items() if f == field_name)}' or clear {field_name}"
            )
    if needed is None:
        return None
    if not _given(params, needed):
        raise ConfigError(f"'{mode_param}' is '{mode}' but param '{needed}' is empty: give {needed}")
    return params[needed]


def _start(params: Mapping[str, Any]) -> cs.StartSpec:
    mode = params.get("start") or "committed"
    value = _mode_field(params, "start", START_FIELDS, "committed")
    if mode == "committed":
        return cs.CommittedStart()
    if mode == "earliest":
        return cs.EarliestStart()
    if mode == "latest":
        return cs.LatestStart()
    if mode == "to_datetime":
        return cs.ToDatetimeStart(_kafka_datetime(str(value)))
    if mode == "by_duration":
        return cs.ByDurationStart(str(value))
    if mode == "to_offset":
        return cs.ToOffsetStart(offset=int(value))
    if mode == "shift_by":
        return cs.ShiftByStart(int(value))
    if mode == "from_file":
        return cs.FromFileStart(str(value), file_name="param 'start_file'")
    if mode == "to_current":
        return cs.ToCurrentStart()
    raise ConfigError(f"param 'start' is '{mode}': use one of {', '.join(START_MODES)}")


def _end(params: Mapping[str, Any]) -> cs.EndSpec:
    mode = params.get("end") or "latest"
    value = _mode_field(params, "end", END_FIELDS, "latest")
    if mode == "latest":
        return cs.LatestEnd()
    if mode == "to_datetime":
        return cs.ToDatetimeEnd(_kafka_datetime(str(value)))
    if mode == "to_offset":
        return cs.ToOffsetEnd(offset=int(value))
    raise ConfigError(f"param 'end' is '{mode}': use one of {', '.join(END_MODES)}")


def _kafka_datetime(value: str) -> int:
    """The form's ISO-8601 date-time (with an offset, or UTC) as epoch milliseconds, which the planner accepts."""
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"'{value}' is not an ISO-8601 date-time (e.g. 2026-11-24T12:00:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def run_settings(params: Mapping[str, Any]) -> RunSettings:
    """The DAG run's params as :class:`RunSettings`, refusing contradictory combinations (naming both fields)."""
    request = cs.PlanRequest(
        start=_start(params),
        end=_end(params),
        start_policy=cs.StartPolicy.from_on_data_loss(str(params.get("on_data_loss", "fail"))),
    )
    if isinstance(request.start, cs.LatestStart) and not isinstance(request.end, cs.LatestEnd):
        raise ConfigError(
            f"'start' is 'latest' but 'end' is '{params.get('end')}': a run from the latest offset has nothing "
            "before an earlier end; choose another start or end='latest'"
        )
    start_offset, end_offset = params.get("start_offset"), params.get("end_offset")
    if start_offset is not None and end_offset is not None and int(end_offset) < int(start_offset):
        raise ConfigError(f"'end_offset' {end_offset} is before 'start_offset' {start_offset}: ranges are [start, end)")
    start_at, end_at = request.start, request.end
    if isinstance(start_at, cs.ToDatetimeStart) and isinstance(end_at, cs.ToDatetimeEnd):
        if int(end_at.datetime) < int(start_at.datetime):
            raise ConfigError(
                f"'end_datetime' {params['end_datetime']} is before 'start_datetime' {params['start_datetime']}"
            )
    return RunSettings(
        application_id=str(_required(params, "application_id")),
        topology=str(_required(params, "topology")),
        store=str(_required(params, "store")),
        request=request,
        processing_guarantee=str(params.get("processing_guarantee") or "at_least_once"),
        spark_master=params.get("spark_master") or None,
        split=str(params.get("split") or "auto"),
        record_cache=str(params.get("record_cache") or "off"),
        state_dir=params.get("state_dir") or None,
        dry_run=bool(params.get("dry_run", False)),
        kafka_conn_id=str(params.get("kafka_conn_id") or "kafka_default"),
        aws_conn_id=str(params.get("aws_conn_id") or "aws_default"),
        spark_conn_id=str(params.get("spark_conn_id") or "spark_default"),
        schema_registry_conn_id=params.get("schema_registry_conn_id") or None,
        wait_for_empty_group=_wait_for_empty_group(params),
        group_protocol=_group_protocol(params),
    )


def _group_protocol(params: Mapping[str, Any]) -> str | None:
    """The param in lower case (Kafka Streams reads it case-insensitively); another value refused naming it."""
    if not _given(params, "group_protocol"):
        return None
    value = str(params["group_protocol"]).strip().lower()
    if value not in GROUP_PROTOCOLS:
        raise ConfigError(
            f"param 'group_protocol' is '{params['group_protocol']}': use {' or '.join(GROUP_PROTOCOLS)} (the "
            "application's group.protocol)"
        )
    return value


def _wait_for_empty_group(params: Mapping[str, Any]) -> str | None:
    """The param when given, refused at once (one line naming it) when it is not a duration."""
    if not _given(params, "wait_for_empty_group"):
        return None
    value = str(params["wait_for_empty_group"])
    _duration_ms(value)
    return value


#: The Airflow Variable (JSON object) holding the incremental DAG's settings: the params' names and values.
INCREMENTAL_VARIABLE = "STREAMPROC_INCREMENTAL"
_INCREMENTAL_KEYS = ("application_id", "topology", "store", "processing_guarantee", "spark_master", "state_dir",
                     "kafka_conn_id", "aws_conn_id", "spark_conn_id", "schema_registry_conn_id",
                     "wait_for_empty_group", "group_protocol")  # fmt: skip


def incremental_params() -> dict[str, Any]:
    """The scheduled DAG's Params: each defaults to empty (a scheduled DAG needs valid defaults), and an empty one
    is taken from the Airflow Variable ``STREAMPROC_INCREMENTAL`` at run time."""
    from airflow.sdk import Param

    described = {
        "application_id": "The Kafka Streams application.id (its consumer group).",
        "topology": "MODULE:FUNCTION returning the application's Topology.",
        "store": "Staging store: s3://bucket/prefix or a shared directory.",
        "processing_guarantee": "at_least_once or exactly_once_v2.",
        "spark_master": "Overrides the Spark connection's master.",
        "state_dir": "The application's state.dir on this host.",
        "kafka_conn_id": "The Kafka connection (default kafka_default).",
        "aws_conn_id": "The S3 connection (default aws_default).",
        "spark_conn_id": "The Spark connection (default spark_default).",
        "schema_registry_conn_id": "The Schema Registry connection (default none).",
        "wait_for_empty_group": "An ISO-8601 duration (e.g. PT60S) to wait for the group to empty (default: none).",
        "group_protocol": "The application's group.protocol, classic or streams (default classic).",
    }
    return {
        key: Param("", type="string", title=key.replace("_", " ").capitalize(), section="Application",
                   description=f"{text} Empty: the {INCREMENTAL_VARIABLE} Variable's value.")
        for key, text in described.items()
    }  # fmt: skip


def incremental_values(params: Mapping[str, Any], variable: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's values: a non-empty param over the Variable's value of the same name."""
    values = {key: (variable or {}).get(key) for key in _INCREMENTAL_KEYS}
    values.update({key: params[key] for key in _INCREMENTAL_KEYS if _given(params, key)})
    unknown = sorted(set(variable or {}) - set(_INCREMENTAL_KEYS))
    if unknown:
        raise ConfigError(
            f"Variable {INCREMENTAL_VARIABLE} has unknown key(s) {', '.join(unknown)}; "
            f"use {', '.join(_INCREMENTAL_KEYS)}"
        )
    for key in ("application_id", "topology", "store"):
        if not _given(values, key):
            raise ConfigError(
                f"no '{key}' for the incremental run: set the param or the {INCREMENTAL_VARIABLE} Variable"
            )
    return values


def incremental_settings(values: Mapping[str, Any]) -> RunSettings:
    """From the committed offsets to the latest, never a dry run."""
    return run_settings({**values, "start": "committed", "end": "latest", "dry_run": False})
