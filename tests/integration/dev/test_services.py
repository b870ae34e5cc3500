"""The launchers against the real processes: restart on old data, a failed start explained, S3 semantics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamproc.errors import DevServiceError
from streamproc_dev import broker
from streamproc_dev.service_process import is_alive
from tests.conftest import S3Server


def test_broker_restarts_on_its_data_and_ports_and_a_failed_start_shows_the_log(tmp_path: Path) -> None:
    workdir = tmp_path / "kafka"
    first = broker.start(workdir)
    try:
        admin = AdminClient({"bootstrap.servers": first.address})
        for future in admin.create_topics([NewTopic("kept", num_partitions=1, replication_factor=1)]).values():
            future.result(timeout=30)
        producer = Producer({"bootstrap.servers": first.address})
        producer.produce("kept", value=b"survives", partition=0)
        assert producer.flush(30) == 0
        del admin, producer  # a client alive when its broker stops prints librdkafka's reconnect errors
    finally:
        assert broker.stop(workdir)
    assert not is_alive(first.pid)
    assert "stopped" in broker.status(workdir)

    second = broker.start(workdir)
    try:
        assert second.address == first.address
        assert second.pid != first.pid
        consumer = Consumer({"bootstrap.servers": second.address, "group.id": "reader"})
        consumer.assign([TopicPartition("kept", 0, 0)])
        msg = consumer.poll(20)
        consumer.close()
        assert msg is not None and msg.value() == b"survives"
    finally:
        broker.stop(workdir)

    with pytest.raises(DevServiceError, match="exited during start; last lines of") as failed:
        broker.start(workdir, heap="nonsense", timeout_s=60)
    assert "Invalid maximum heap size: -Xmxnonsense" in str(failed.value)


def test_s3_server_is_real_s3(s3_server: S3Server, unique: Callable[[str], str]) -> None:
    s3 = s3_server.client()
    bucket = unique("bkt")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="topics/a/part-0", Body=b"segment", IfNoneMatch="*")

    with pytest.raises(ClientError) as conflict:  # conditional create: a second writer must not overwrite
        s3.put_object(Bucket=bucket, Key="topics/a/part-0", Body=b"other", IfNoneMatch="*")
    assert conflict.value.response["Error"]["Code"] == "PreconditionFailed"

    listed = s3.list_objects_v2(Bucket=bucket, Prefix="topics/")
    assert [o["Key"] for o in listed["Contents"]] == ["topics/a/part-0"]
    assert s3.get_object(Bucket=bucket, Key="topics/a/part-0")["Body"].read() == b"segment"
