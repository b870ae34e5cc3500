"""The Kafka cluster hook on the provider's kafka_default, and the S3/Spark connections, against the real broker."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.airflow.hooks import KafkaClusterHook, require_connection, schema_registry_settings, store_options
from streamproc.errors import ConfigError
from streamproc.plan.cluster_snapshot import TopicPartition
from tests.integration.airflow.conftest import AirflowSetup
from tests.integration.airflow.test_backfill_refusals import commit_offsets
from tests.integration.conftest import create_topic
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration


def test_the_kafka_hook_reads_offsets_groups_and_deletes_records(
    airflow_setup: AirflowSetup, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic, group = create_topic(admin, unique("hook"), partitions=2), unique("hook-group")
    wait_for_leaders(admin, topic)
    producer = Producer({"bootstrap.servers": airflow_setup.bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"x", partition=i % 2)
    producer.flush(30)
    commit_offsets(airflow_setup.bootstrap, group, {(topic, 0): 3})
    hook = KafkaClusterHook()

    assert hook.client_config()["bootstrap.servers"] == airflow_setup.bootstrap
    assert {tp: c.offset for tp, c in hook.committed_offsets(group).items()} == {TopicPartition(topic, 0): 3}
    state = hook.group_state(group)
    assert state is not None and (state.state, state.members) == ("Empty", ())
    assert hook.group_state(unique("nobody")) is None
    ends = hook.end_offsets([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    assert ends == {TopicPartition(topic, 0): 5, TopicPartition(topic, 1): 5}
    assert hook.delete_records(TopicPartition(topic, 1), 4) == 4


def test_missing_connections_are_named(airflow_setup: AirflowSetup, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="Airflow connection 'kafka_nowhere' \\(the Kafka cluster\\) is not defined"):
        KafkaClusterHook("kafka_nowhere").client_config()
    with pytest.raises(ConfigError, match="Airflow connection 'aws_nowhere' \\(S3 endpoint and credentials\\)"):
        store_options("s3://bucket/prefix", "aws_nowhere")
    assert store_options("/a/local/directory", "aws_nowhere") == {}  # a directory needs no connection
    with pytest.raises(ConfigError, match="'spark_nowhere' \\(the Spark master\\) is not defined"):
        require_connection("spark_nowhere", "the Spark master")
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_EMPTY", json.dumps({"conn_type": "kafka", "extra": {}}))
    with pytest.raises(ConfigError, match="Airflow connection 'kafka_empty': .*bootstrap.servers"):
        KafkaClusterHook("kafka_empty").client_config()


def test_a_schema_registry_connection_gives_the_applications_registry_settings(
    airflow_setup: AirflowSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_REGISTRY_TEST",
        json.dumps({"conn_type": "http", "host": "registry.example", "port": 8081, "login": "svc",
                    "password": "s3cr3t", "extra": {"auto.register.schemas": False}}),
    )  # fmt: skip
    assert schema_registry_settings("registry_test") == {
        "schema.registry.url": "http://registry.example:8081",
        "basic.auth.credentials.source": "USER_INFO",
        "basic.auth.user.info": "svc:s3cr3t",
        "auto.register.schemas": "False",
    }
    monkeypatch.setenv("AIRFLOW_CONN_REGISTRY_URL", json.dumps({"conn_type": "http", "host": "https://r.example/x"}))
    assert schema_registry_settings("registry_url") == {"schema.registry.url": "https://r.example/x"}
    assert schema_registry_settings(None) == {}
    with pytest.raises(ConfigError, match="'registry_nowhere' \\(Schema Registry URL and credentials\\)"):
        schema_registry_settings("registry_nowhere")
