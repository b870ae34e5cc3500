"""An Airflow AWS connection supplies the S3 store's endpoint and credentials (real MinIO)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from streamproc.errors import ConfigError
from streamproc.storage import load_store
from streamproc.storage.airflow_connection import s3_options_from_connection
from tests.conftest import S3Server


def test_a_store_built_from_an_airflow_connection_reads_and_writes_minio(
    s3_server: S3Server, unique: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = unique("conn")
    s3_server.client().create_bucket(Bucket=bucket)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)  # only the connection may supply them
    connection = {
        "conn_type": "aws",
        "login": s3_server.access_key,
        "password": s3_server.secret_key,
        "extra": {"endpoint_url": s3_server.endpoint, "region_name": s3_server.region},
    }
    monkeypatch.setenv("AIRFLOW_CONN_STAGING_S3", json.dumps(connection))

    options = s3_options_from_connection("staging_s3")
    store = load_store(f"s3://{bucket}/runs", **options)
    store.put("topics/x/object", b"staged")

    assert options["endpoint_url"] == s3_server.endpoint and options["region"] == s3_server.region
    assert store.get("topics/x/object") == b"staged"
    assert s3_server.client().get_object(Bucket=bucket, Key="runs/topics/x/object")["Body"].read() == b"staged"


def test_a_missing_connection_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_NOPE", raising=False)
    with pytest.raises(ConfigError, match="Airflow connection 'nope' cannot be used for S3"):
        s3_options_from_connection("nope")
