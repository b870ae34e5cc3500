"""``streamproc.storage.object_store``: the local store's atomic put, and choosing a store by URI scheme."""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streamproc.errors import ConfigError
from streamproc.storage import LocalObjectStore, ObjectNotFoundError, ObjectStore, S3ObjectStore, load_store
from tests.unit.storage.store_contract import StoreContract


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return LocalObjectStore(tmp_path / "staging")


class TestLocalStoreContract(StoreContract):
    pass


def test_crash_between_temp_write_and_rename_leaves_no_visible_object(tmp_path: Path) -> None:
    """A process that dies after writing and fsyncing the temp file, before the rename, publishes nothing."""
    root = tmp_path / "staging"
    LocalObjectStore(root).put("seg/old.parquet", b"old")
    script = textwrap.dedent(
        f"""
        import os
        from streamproc.storage import LocalObjectStore

        def crash(src, dst):
            os._exit(17)

        os.replace = crash
        store = LocalObjectStore({str(root)!r})
        store.put("seg/new.parquet", b"new bytes")
        store.put("seg/old.parquet", b"replacement")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[3], check=False)
    assert result.returncode == 17
    store = LocalObjectStore(root)
    assert not store.exists("seg/new.parquet")
    assert store.list("") == ["seg/old.parquet"]
    assert store.get("seg/old.parquet") == b"old"
    leftovers = [p.name for p in (root / "seg").iterdir() if p.name != "old.parquet"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".new.parquet.tmp-")  # the temp file, never listed


def test_failed_rename_removes_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalObjectStore(tmp_path)

    def fail(src: object, dst: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk gone"):
        store.put("a/b", b"data")
    monkeypatch.undo()
    assert not store.exists("a/b")
    assert list((tmp_path / "a").iterdir()) == []


def test_temp_file_names_are_reserved(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        LocalObjectStore(tmp_path).put("a/.b.tmp-123", b"x")


def test_list_of_a_store_whose_directory_does_not_exist_yet(tmp_path: Path) -> None:
    assert LocalObjectStore(tmp_path / "missing").list("") == []


def test_get_of_a_directory_is_not_found(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    store.put("dir/file", b"x")
    assert not store.exists("dir")
    with pytest.raises(FileNotFoundError):
        store.get("dir")


# ------------------------------------------------------------------------------------------------ load_store
def test_bare_path_and_file_uri_are_local(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="streamproc.storage.object_store"):
        bare = load_store(str(tmp_path))
    assert isinstance(bare, LocalObjectStore) and bare.root == tmp_path
    assert f"Using LocalObjectStore for {tmp_path.as_uri()}" in caplog.text
    uri = load_store(tmp_path.as_uri())
    assert isinstance(uri, LocalObjectStore) and uri.root == tmp_path
    relative = load_store("staging-dir")
    assert isinstance(relative, LocalObjectStore) and relative.root == Path.cwd() / "staging-dir"


def test_s3_uri_is_s3(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))  # no network, no developer's ~/.aws
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with caplog.at_level(logging.INFO, logger="streamproc.storage.object_store"):
        store = load_store("s3://my-bucket/runs/r1/", region="eu-west-1", endpoint_url="http://127.0.0.1:1")
    assert isinstance(store, S3ObjectStore)
    assert store.bucket == "my-bucket"
    assert store.uri == "s3://my-bucket/runs/r1/"
    assert "Using S3ObjectStore for s3://my-bucket/runs/r1/" in caplog.text


def test_unknown_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown storage scheme 'gs://'.*file://.*s3://"):
        load_store("gs://bucket/x")


@pytest.mark.parametrize("uri", ["", "s3:///no-bucket", "file://otherhost/dir"])
def test_malformed_uris_are_config_errors(uri: str) -> None:
    with pytest.raises(ConfigError):
        load_store(uri)


def test_s3_options_on_a_local_store_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="endpoint_url"):
        load_store(str(tmp_path), endpoint_url="http://x")


def test_not_found_error_survives_pickling(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    with pytest.raises(ObjectNotFoundError) as error:
        store.get("a/missing")
    copy = pickle.loads(pickle.dumps(error.value))
    assert isinstance(copy, ObjectNotFoundError) and isinstance(copy, FileNotFoundError)
    assert (copy.store_uri, copy.name, str(copy)) == (store.uri, "a/missing", str(error.value))


def test_list_never_leaves_the_root(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_bytes(b"x")
    store = LocalObjectStore(tmp_path / "root")
    store.put("in/side", b"x")
    assert store.list("../") == []
    assert store.list("in/../") == []
    assert store.list("in/") == ["in/side"]


# -------------------------------------------------------------------------------------------- S3 timeouts
def test_s3_calls_have_bounded_timeouts_and_attempts_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamproc.storage.object_store import S3Timeouts

    for var in ("STREAMPROC_S3_CONNECT_TIMEOUT", "STREAMPROC_S3_READ_TIMEOUT", "STREAMPROC_S3_MAX_ATTEMPTS"):
        monkeypatch.delenv(var, raising=False)
    store = S3ObjectStore("b", endpoint_url="http://127.0.0.1:9", access_key_id="k", secret_access_key="s",
                          region="us-east-1")  # fmt: skip
    config = store._client.meta.config

    assert store.timeouts == S3Timeouts(connect_timeout=10.0, read_timeout=20.0, max_attempts=3)
    assert (config.connect_timeout, config.read_timeout) == (10.0, 20.0)
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}


def test_s3_timeouts_come_from_options_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamproc.storage.object_store import S3Timeouts

    monkeypatch.setenv("STREAMPROC_S3_READ_TIMEOUT", "2.5")
    monkeypatch.setenv("STREAMPROC_S3_MAX_ATTEMPTS", "7")
    assert S3Timeouts.from_env(max_attempts=1) == S3Timeouts(connect_timeout=10.0, read_timeout=2.5, max_attempts=1)
    monkeypatch.setenv("STREAMPROC_S3_MAX_ATTEMPTS", "many")
    with pytest.raises(ConfigError, match="STREAMPROC_S3_MAX_ATTEMPTS='many' is not a number"):
        S3Timeouts.from_env()
    with pytest.raises(ConfigError, match="must be positive"):
        S3Timeouts(read_timeout=0)
