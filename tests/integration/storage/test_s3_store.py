"""``S3ObjectStore`` against the session's real MinIO, and the store contract on both backends.

The contract tests (``StoreContract``: put/get/list/delete/size, names, a large object, staging, verify, retry) run
once on a local directory and once on a fresh MinIO bucket, so the fetch and process steps can rely on the same
behaviour whichever URI the run is given.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import ConfigError
from streamproc.storage import LocalObjectStore, ObjectStore, S3ObjectStore, load_store
from streamproc.storage.staging import range_status, stage_range
from streamproc.storage.verify import verify
from tests.unit.storage.store_contract import DELIVERED, PROOF, StoreContract, records

MIB = 1024 * 1024


def s3_options(s3_server: Any) -> dict[str, Any]:
    return {
        "endpoint_url": s3_server.endpoint,
        "access_key_id": s3_server.access_key,
        "secret_access_key": s3_server.secret_key,
        "region": s3_server.region,
    }


@pytest.fixture
def bucket(s3_server: Any, unique: Callable[[str], str]) -> str:
    name = unique("bkt")
    s3_server.client().create_bucket(Bucket=name)
    return name


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalObjectStore(tmp_path / "staging")
    s3_server = request.getfixturevalue("s3_server")
    bucket = request.getfixturevalue("bucket")
    # 5 MiB parts (S3's minimum) so that the contract's 11 MiB object is a three-part multipart upload
    return S3ObjectStore(
        bucket, "runs/r1", multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, **s3_options(s3_server)
    )


class TestStoreContract(StoreContract):
    pass


def test_load_store_keeps_objects_under_the_uri_prefix(s3_server: Any, bucket: str) -> None:
    store = load_store(f"s3://{bucket}/runs/2026-11-22/", **s3_options(s3_server))
    assert isinstance(store, S3ObjectStore) and store.uri == f"s3://{bucket}/runs/2026-11-22/"
    store.put("topics/a/x", b"payload")
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["runs/2026-11-22/topics/a/x"]
    assert store.list("topics/") == ["topics/a/x"]
    assert load_store(f"s3://{bucket}/runs", **s3_options(s3_server)).list() == ["2026-11-22/topics/a/x"]
    assert load_store(f"s3://{bucket}/runs/2026-11-2", **s3_options(s3_server)).list() == []  # a folder, not a string


def test_settings_from_the_standard_aws_environment(
    s3_server: Any, bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_REGION", s3_server.region)
    store = load_store(f"s3://{bucket}")
    store.put("from-env", b"ok")
    assert s3_server.client().get_object(Bucket=bucket, Key="from-env")["Body"].read() == b"ok"


def test_large_objects_go_as_multipart_uploads(s3_server: Any, bucket: str) -> None:
    store = S3ObjectStore(bucket, multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, **s3_options(s3_server))
    store.put("small", b"x" * (5 * MIB - 1))
    store.put("big", b"y" * (11 * MIB))
    client = s3_server.client()
    assert "-" not in client.head_object(Bucket=bucket, Key="small")["ETag"]
    assert client.head_object(Bucket=bucket, Key="big")["ETag"].strip('"').endswith("-3")  # three parts


def test_a_failed_multipart_upload_leaves_no_object(s3_server: Any, bucket: str) -> None:
    client = s3_server.client()
    store = S3ObjectStore(bucket, multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, client=client)
    store.put("seg", b"old")
    parts: list[int] = []

    def fail_second_part(params: dict[str, Any], **_: Any) -> None:
        parts.append(params["PartNumber"])
        if params["PartNumber"] == 2:
            raise ConnectionError("network dropped mid-upload")

    client.meta.events.register("before-parameter-build.s3.UploadPart", fail_second_part)
    with pytest.raises(ConnectionError, match="network dropped"):
        store.put("seg", b"z" * (11 * MIB))
    client.meta.events.unregister("before-parameter-build.s3.UploadPart", fail_second_part)
    assert 2 in parts
    assert store.get("seg") == b"old"
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_missing_bucket_is_a_config_error(s3_server: Any, unique: Callable[[str], str]) -> None:
    store = load_store(f"s3://{unique('absent')}/x", **s3_options(s3_server))
    with pytest.raises(ConfigError, match="NoSuchBucket"):
        store.put("a", b"x")


def test_wrong_credentials_are_a_config_error(s3_server: Any, bucket: str) -> None:
    options = {**s3_options(s3_server), "secret_access_key": "wrong"}
    with pytest.raises(ConfigError, match="SignatureDoesNotMatch"):
        load_store(f"s3://{bucket}", **options).list()


def test_verify_and_retry_across_backends_agree(s3_server: Any, bucket: str, tmp_path: Path) -> None:
    """The same records give the same objects, byte for byte, in a directory and in a bucket."""
    local = LocalObjectStore(tmp_path)
    remote = load_store(f"s3://{bucket}/staging", **s3_options(s3_server))
    for store in (local, remote):
        stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
        assert verify(store).ok
        assert range_status(store, "orders", 0, 0, 10).is_complete
    assert local.list() == remote.list()
    assert all(local.get(n) == remote.get(n) for n in local.list())
