"""Hooks on the providers' own connections: Kafka (``kafka_default``), S3 (``aws_default``), Spark (``spark_default``),
and an HTTP connection for a Schema Registry (none by default).

streamproc adds no connection type of its own. The apache-kafka provider's connection already holds the librdkafka
configuration in its extra (``bootstrap.servers``, ``security.protocol``, ``sasl.*``); :class:`KafkaClusterHook`
reads it through the provider's ``KafkaBaseHook`` and offers what streamproc's plan, fetch and hand-off need beyond
the provider's create/delete topic: the client configuration itself, committed offsets, the group's state and
members, end offsets and DeleteRecords, each by calling the library's own Kafka adapter
(:mod:`streamproc.kafka.cluster`, :mod:`streamproc.handoff.purge`) rather than a second implementation.

A connection that is not defined is one :class:`~streamproc.errors.ConfigError` naming it and where to define it;
the connection's values (a SASL password, an S3 secret key) are never put into a message or a log line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamproc.errors import ConfigError
from streamproc.plan.cluster_snapshot import CommittedOffset, GroupState, IsolationLevel, TopicPartition

KAFKA_CONN_ID = "kafka_default"
AWS_CONN_ID = "aws_default"
SPARK_CONN_ID = "spark_default"


def missing_connection(conn_id: str, what: str) -> ConfigError:
    """The one error for a connection Airflow does not know."""
    env = "AIRFLOW_CONN_" + conn_id.upper()
    return ConfigError(
        f"Airflow connection '{conn_id}' ({what}) is not defined: create it under Admin → Connections, "
        f"with `airflow connections add {conn_id} …`, or as the environment variable {env}"
    )


def require_connection(conn_id: str, what: str) -> Any:
    """The connection ``conn_id``, or :func:`missing_connection`'s error (never Airflow's traceback)."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise missing_connection(conn_id, what) from None


def _kafka_base_hook() -> type[Any]:
    from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

    base: type[Any] = KafkaBaseHook
    return base


class KafkaClusterHook(_kafka_base_hook()):  # type: ignore[misc]
    """The Kafka cluster of a ``kafka`` connection, as streamproc's client configuration and admin reads.

    ``client_config()`` is the connection's librdkafka configuration after the provider resolved it (allow-listed
    callbacks, managed-cloud OAuth); every read below goes through streamproc's shared Admin client for that
    configuration (:func:`streamproc.kafka.clients.admin`), which fails in seconds, naming the bootstrap address,
    when the cluster cannot be reached.
    """

    hook_name = "streamproc Kafka cluster"

    def __init__(self, kafka_config_id: str = KAFKA_CONN_ID) -> None:
        super().__init__(kafka_config_id=kafka_config_id)

    def client_config(self) -> dict[str, object]:
        """The librdkafka configuration of the connection (with ``bootstrap.servers``); a secret stays in it only."""
        require_connection(self.kafka_config_id, "the Kafka cluster")
        try:
            config: dict[str, object] = dict(self._build_config())
        except ValueError as exc:  # the provider's refusals: no bootstrap.servers, a callback not allow-listed
            raise ConfigError(f"Airflow connection '{self.kafka_config_id}': {exc}") from None
        return config

    def admin(self) -> Any:
        """streamproc's shared Admin client for this cluster (connected, or a one-line error)."""
        from streamproc.kafka import clients

        return clients.admin(self.client_config())

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets with their metadata (a transactional commit still pending is refused)."""
        from streamproc.errors import PlanError
        from streamproc.kafka.cluster import read_committed_offsets

        committed, unstable = read_committed_offsets(self.admin(), group_id)
        if unstable:
            raise PlanError(f"group '{group_id}' has a transactional offset commit in progress; try again shortly")
        return committed

    def group_state(self, group_id: str) -> GroupState | None:
        """The group's state and members; ``None`` when no group has the id."""
        from streamproc.kafka.cluster import read_group

        return read_group(self.admin(), group_id)

    def end_offsets(
        self, partitions: Iterable[TopicPartition], isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    ) -> dict[TopicPartition, int]:
        """ListOffsets LATEST per partition: the high watermark, or the last stable offset under read_committed."""
        from streamproc.kafka.cluster import end_offsets  # the planner's ListOffsets, retries included

        return end_offsets(self.admin(), partitions, isolation)

    def delete_records(self, partition: TopicPartition, before_offset: int) -> int:
        """DeleteRecords up to ``before_offset``; returns the partition's new log start."""
        from streamproc.handoff.purge import purge_partition

        return purge_partition(self.admin(), partition, before_offset)


def store_options(store_uri: str, aws_conn_id: str = AWS_CONN_ID) -> dict[str, Any]:
    """``load_store`` options for ``store_uri``: from the AWS connection for ``s3://``, none for a directory."""
    if not store_uri.lower().startswith(("s3://", "s3a://")):
        return {}
    from streamproc.storage.airflow_connection import s3_options_from_connection

    require_connection(aws_conn_id, "S3 endpoint and credentials")
    return s3_options_from_connection(aws_conn_id)


def s3_environment(options: Mapping[str, Any]) -> dict[str, str]:
    """The same S3 settings as boto3's environment variables, for a process streamproc starts (spark-submit)."""
    names = {
        "endpoint_url": "AWS_ENDPOINT_URL",
        "access_key_id": "AWS_ACCESS_KEY_ID",
        "secret_access_key": "AWS_SECRET_ACCESS_KEY",
        "session_token": "AWS_SESSION_TOKEN",
        "region": "AWS_REGION",
    }
    return {names[key]: str(value) for key, value in options.items() if key in names and value is not None}


def schema_registry_settings(conn_id: str | None) -> dict[str, str]:
    """The application's settings for a Schema Registry from an HTTP connection: ``schema.registry.url`` from its
    host (a URL, or a host name with the connection's port: ``http``, or ``https`` where the schema says so),
    basic auth from its login and password, and its extra's entries as further settings by Confluent's names
    (``auto.register.schemas``, ``value.subject.name.strategy``). No connection id: no settings."""
    if not conn_id:
        return {}
    conn = require_connection(conn_id, "Schema Registry URL and credentials")
    host = str(conn.host or "").strip()
    if not host:
        raise ConfigError(f"Airflow connection '{conn_id}' (Schema Registry) has no host: give the registry's URL")
    if "://" not in host:
        scheme = "https" if (conn.schema or "").lower() == "https" else "http"
        host = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
    settings = {str(key): str(value) for key, value in (conn.extra_dejson or {}).items()}
    settings["schema.registry.url"] = host
    if conn.login:
        settings["basic.auth.credentials.source"] = "USER_INFO"
        settings["basic.auth.user.info"] = f"{conn.login}:{conn.password or ''}"
    return settings
