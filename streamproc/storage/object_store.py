"""Object storage for staged segments and manifests: a local directory or an S3 bucket, chosen by URI scheme.

Shaped after PyIceberg's ``pyiceberg.io`` (``SCHEMA_TO_FILE_IO``, ``load_file_io``): one small interface, one class
per backend, the URI scheme picks the backend and the choice is logged. Both backends give the one guarantee the
fetch step relies on: an object is written completely or not at all, so a manifest that is visible always sits
beside a complete segment (DESIGN.md §1 step 2). Object names are ``/``-separated relative keys such as
``topics/orders/partition=0/…parquet``; a store's root (directory, or bucket plus key prefix) is not part of them.
"""

from __future__ import annotations

import abc
import io
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from streamproc.errors import ConfigError, StorageError

logger = logging.getLogger(__name__)

_T = TypeVar("_T", int, float)

#: Objects at least this large go to S3 as a multipart upload (boto3's own default threshold).
DEFAULT_MULTIPART_THRESHOLD = 8 * 1024 * 1024
#: Part size of a multipart upload (S3's minimum part is 5 MiB).
DEFAULT_MULTIPART_CHUNKSIZE = 8 * 1024 * 1024

#: S3 timeouts and attempts (boto's own defaults, 60 s + 60 s and 5 attempts, let a silent endpoint hang a step for
#: three minutes). Each can be changed per store (``load_store`` options) or by the environment variable named.
DEFAULT_S3_CONNECT_TIMEOUT_S = 10.0
DEFAULT_S3_READ_TIMEOUT_S = 20.0
DEFAULT_S3_MAX_ATTEMPTS = 3
S3_CONNECT_TIMEOUT_ENV = "STREAMPROC_S3_CONNECT_TIMEOUT"
S3_READ_TIMEOUT_ENV = "STREAMPROC_S3_READ_TIMEOUT"
S3_MAX_ATTEMPTS_ENV = "STREAMPROC_S3_MAX_ATTEMPTS"

#: Local temp files are named ``.<name>.tmp-<random>`` beside their target; listings never show them.
_TEMP_MARKER = ".tmp-"


class ObjectNotFoundError(StorageError, FileNotFoundError):
    """A named object does not exist in the store (also a ``FileNotFoundError``, as PyIceberg's ``InputFile``)."""

    def __init__(self, store_uri: str, name: str) -> None:
        self.store_uri = store_uri
        self.name = name
        super().__init__(f"object '{name}' does not exist in {store_uri}; fetch the range again or check the URI")

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[type[ObjectNotFoundError], tuple[str, str]]:
        """Rebuild from the store and name, so the error survives pickling (e.g. from a Spark executor)."""
        return type(self), (self.store_uri, self.name)


def check_name(name: str) -> str:
    """Reject names that would escape the store root or that the local store could not map to one path."""
    parts = name.split("/")
    if not name or name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"'{name}' is not a valid object name (relative, '/'-separated, no '.', '..' or '//')")
    if any(p.startswith(".") and _TEMP_MARKER in p for p in parts):
        raise ConfigError(f"'{name}' looks like a temporary file of the local store; choose another name")
    return name


class ObjectStore(abc.ABC):
    """Where segments and manifests live. ``put`` is atomic: readers see the whole object or none of it."""

    @property
    @abc.abstractmethod
    def uri(self) -> str:
        """The store's root as a URI (``file:///…`` or ``s3://bucket/prefix``), for logs and messages."""

    @abc.abstractmethod
    def put(self, name: str, data: bytes) -> None:
        """Write ``data`` as ``name``, replacing any existing object, completely or not at all."""

    @abc.abstractmethod
    def get(self, name: str) -> bytes:
        """The bytes of ``name``; :class:`ObjectNotFoundError` if there is no such object."""

    @abc.abstractmethod
    def exists(self, name: str) -> bool:
        """Whether ``name`` exists."""

    @abc.abstractmethod
    def list(self, prefix: str = "") -> list[str]:
        """Names starting with ``prefix`` (a plain string prefix, as S3's), sorted by code point."""

    @abc.abstractmethod
    def delete(self, name: str) -> None:
        """Remove ``name``; removing a missing object is not an error (retries may repeat a delete)."""

    @abc.abstractmethod
    def size(self, name: str) -> int:
        """Size of ``name`` in bytes; :class:`ObjectNotFoundError` if there is no such object."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"


class LocalObjectStore(ObjectStore):
    """A directory. ``put`` writes a temp file in the target's directory, fsyncs it, renames it over the target and
    fsyncs the directory: POSIX ``rename`` is atomic, so a crash leaves the old object, or the new one, never half.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root).absolute()

    @property
    def root(self) -> Path:
        return self._root

    @property
    def uri(self) -> str:
        return self._root.as_uri()

    def _path(self, name: str) -> Path:
        return self._root.joinpath(*check_name(name).split("/"))

    def put(self, name: str, data: bytes) -> None:
        target = self._path(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}{_TEMP_MARKER}{uuid.uuid4().hex}")
        try:
            with open(temp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)

    def get(self, name: str) -> bytes:
        try:
            return self._path(name).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFoundError(self.uri, name) from None

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()

    def list(self, prefix: str = "") -> list[str]:
        if not self._root.is_dir():
            return []
        # Walk only the deepest directory the prefix names completely.
        parts = prefix.rpartition("/")[0].split("/")
        escapes = any(p in ("", ".", "..") for p in parts)
        start = self._root if escapes else self._root.joinpath(*parts)
        if not start.is_dir():
            return []
        names: list[str] = []
        for dirpath, _dirnames, filenames in os.walk(start):
            rel = Path(dirpath).relative_to(self._root).as_posix()
            for filename in filenames:
                if filename.startswith(".") and _TEMP_MARKER in filename:
                    continue
                name = filename if rel == "." else f"{rel}/{filename}"
                if name.startswith(prefix):
                    names.append(name)
        return sorted(names)

    def delete(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def size(self, name: str) -> int:
        path = self._path(name)
        if not path.is_file():
            raise ObjectNotFoundError(self.uri, name)
        return path.stat().st_size


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (the directory entry is data too); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


#: S3 error codes that mean "the configuration is wrong", not "this object is missing".
_CONFIG_ERROR_CODES = frozenset(
    {"NoSuchBucket", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AllAccessDisabled"}
)
#: Error codes of a missing object. A HEAD answer has no body, so S3 reports a missing object as a bare "404";
#: that only counts when the answer carries S3's request id (any HTTP server can answer 404).
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "NotFound"})
_BARE_NOT_FOUND = "404"
_S3_RESPONSE_HEADERS = ("x-amz-request-id", "x-amz-id-2")


@dataclass(frozen=True, slots=True)
class S3Timeouts:
    """How long an S3 call may wait and how often it is tried: seconds to connect, seconds per read, attempts in
    all (botocore's ``standard`` retry mode). ``from_env`` fills what is not given from ``STREAMPROC_S3_*``."""

    connect_timeout: float = DEFAULT_S3_CONNECT_TIMEOUT_S
    read_timeout: float = DEFAULT_S3_READ_TIMEOUT_S
    max_attempts: int = DEFAULT_S3_MAX_ATTEMPTS

    def __post_init__(self) -> None:
        if not (self.connect_timeout > 0 and self.read_timeout > 0 and self.max_attempts >= 1):
            raise ConfigError(
                f"S3 timeouts must be positive and attempts at least 1, not connect {self.connect_timeout}s, "
                f"read {self.read_timeout}s, {self.max_attempts} attempt(s)"
            )

    @classmethod
    def from_env(
        cls,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        max_attempts: int | None = None,
    ) -> S3Timeouts:
        return cls(
            connect_timeout=_setting(connect_timeout, S3_CONNECT_TIMEOUT_ENV, float, DEFAULT_S3_CONNECT_TIMEOUT_S),
            read_timeout=_setting(read_timeout, S3_READ_TIMEOUT_ENV, float, DEFAULT_S3_READ_TIMEOUT_S),
            max_attempts=_setting(max_attempts, S3_MAX_ATTEMPTS_ENV, int, DEFAULT_S3_MAX_ATTEMPTS),
        )


def _setting(given: _T | None, env: str, parse: Callable[[str], _T], default: _T) -> _T:
    if given is not None:
        return given
    text = os.environ.get(env)
    if text is None or not text.strip():
        return default
    try:
        return parse(text.strip())
    except ValueError:
        raise ConfigError(f"{env}={text!r} is not a number; unset it or give one") from None


class S3ObjectStore(ObjectStore):
    """An S3 bucket (or a key prefix in it), through boto3.

    Endpoint, credentials and region come from boto3's standard chain (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_REGION``, ``~/.aws/config`` …) unless given explicitly, so that an Airflow connection can supply them.
    A single ``PutObject`` is atomic; objects of ``multipart_threshold`` bytes or more go through boto3's transfer
    manager as a multipart upload, which S3 makes visible only when ``CompleteMultipartUpload`` succeeds (the
    transfer manager aborts the upload on failure), so both paths are all-or-nothing. Every failure of a call is a
    one-line :class:`~streamproc.errors.StreamprocError` naming the endpoint and object, never a botocore traceback.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        addressing_style: str | None = None,
        multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
        multipart_chunksize: int = DEFAULT_MULTIPART_CHUNKSIZE,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        max_attempts: int | None = None,
        client: Any = None,
    ) -> None:
        if not bucket:
            raise ConfigError("an S3 object store needs a bucket name (s3://<bucket>/<prefix>)")
        self._bucket = bucket
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._multipart_threshold = multipart_threshold
        self._multipart_chunksize = multipart_chunksize
        self.timeouts = S3Timeouts.from_env(connect_timeout, read_timeout, max_attempts)
        if client is None:
            client = _make_client(
                endpoint_url=endpoint_url,
                access_key_id=access_key_id,
                secret_access_key=secret_access_key,
                session_token=session_token,
                region=region,
                profile=profile,
                addressing_style=addressing_style,
                timeouts=self.timeouts,
            )
        self._client = client

    @property
    def bucket(self) -> str:
        return self._bucket

    @property
    def uri(self) -> str:
        return f"s3://{self._bucket}/{self._prefix}"

    @property
    def endpoint_url(self) -> str:
        return str(self._client.meta.endpoint_url)

    def _key(self, name: str) -> str:
        return self._prefix + check_name(name)

    def _call(self, name: str, operation: Callable[[], Any]) -> Any:
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
            ReadTimeoutError,
        )

        where = f"'{name}' in {self.uri} (endpoint {self.endpoint_url})"
        try:
            return operation()
        except ClientError as e:
            raise self._client_error(name, where, e) from None
        except (ConnectTimeoutError, ReadTimeoutError) as e:
            t = self.timeouts
            raise StorageError(
                f"S3 did not answer for {where}: {e} (connect timeout {t.connect_timeout:g}s, read timeout "
                f"{t.read_timeout:g}s, {t.max_attempts} attempt(s)); check that the endpoint is an S3 server that "
                f"runs, or raise {S3_READ_TIMEOUT_ENV} / {S3_MAX_ATTEMPTS_ENV}"
            ) from None
        except EndpointConnectionError as e:
            raise StorageError(
                f"cannot connect to S3 for {where}: {e}; check the endpoint (AWS_ENDPOINT_URL, the Airflow "
                f"connection's endpoint_url) and that the server runs"
            ) from None
        except (NoCredentialsError, PartialCredentialsError) as e:
            raise ConfigError(
                f"no usable S3 credentials for {where}: {e}; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                f"AWS_PROFILE, or use an Airflow AWS connection"
            ) from None
        except S3UploadFailedError as e:
            raise StorageError(f"uploading {where} failed: {e}; fetch again (finished segments are kept)") from None
        except BotoCoreError as e:
            raise StorageError(f"S3 call for {where} failed: {e}") from None

    def _client_error(self, name: str, where: str, e: Any) -> Exception:
        error = e.response.get("Error", {})
        code = str(error.get("Code", ""))
        meta = e.response.get("ResponseMetadata", {})
        status = meta.get("HTTPStatusCode")
        headers = {k.lower() for k in meta.get("HTTPHeaders", {})}
        if code in _NOT_FOUND_CODES or (code == _BARE_NOT_FOUND and any(h in headers for h in _S3_RESPONSE_HEADERS)):
            return ObjectNotFoundError(self.uri, name)
        if code in _CONFIG_ERROR_CODES:
            return ConfigError(
                f"S3 refused access to '{name}' in {self.uri} ({code}: {e}); check that the bucket exists and "
                f"the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE or the Airflow connection) may use it"
            )
        if code.isdigit():  # no S3 error code in the answer: whatever answered is not speaking S3
            return StorageError(
                f"the endpoint answered HTTP {status or code} without an S3 error code for {where}; it is not an "
                f"S3 server or the endpoint URL is wrong (AWS_ENDPOINT_URL, the Airflow connection's endpoint_url)"
            )
        return StorageError(f"S3 answered {code} (HTTP {status}) for {where}: {error.get('Message', e)}")

    def put(self, name: str, data: bytes) -> None:
        key = self._key(name)
        if len(data) < self._multipart_threshold:
            self._call(name, lambda: self._client.put_object(Bucket=self._bucket, Key=key, Body=data))
            return
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(
            multipart_threshold=self._multipart_threshold,
            multipart_chunksize=self._multipart_chunksize,
            use_threads=True,
        )
        logger.debug("Uploading %s (%s bytes) to %s as a multipart upload", name, len(data), self.uri)
        self._call(name, lambda: self._client.upload_fileobj(io.BytesIO(data), self._bucket, key, Config=config))

    def get(self, name: str) -> bytes:
        key = self._key(name)

        def read() -> bytes:
            response = self._client.get_object(Bucket=self._bucket, Key=key)
            body = response["Body"]
            try:
                data: bytes = body.read()
            finally:
                body.close()
            return data

        data: bytes = self._call(name, read)
        return data

    def exists(self, name: str) -> bool:
        try:
            self.size(name)
        except ObjectNotFoundError:
            return False
        return True

    def list(self, prefix: str = "") -> list[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        names: list[str] = []

        def collect() -> None:
            for page in paginator.paginate(Bucket=self._bucket, Prefix=self._prefix + prefix):
                names.extend(item["Key"][len(self._prefix) :] for item in page.get("Contents", ()))

        self._call(prefix or "/", collect)
        return sorted(names)

    def delete(self, name: str) -> None:
        key = self._key(name)
        self._call(name, lambda: self._client.delete_object(Bucket=self._bucket, Key=key))

    def size(self, name: str) -> int:
        key = self._key(name)
        response = self._call(name, lambda: self._client.head_object(Bucket=self._bucket, Key=key))
        return int(response["ContentLength"])


def _make_client(
    *,
    endpoint_url: str | None,
    access_key_id: str | None,
    secret_access_key: str | None,
    session_token: str | None,
    region: str | None,
    profile: str | None,
    addressing_style: str | None,
    timeouts: S3Timeouts,
) -> Any:
    from streamproc import extras

    extras.require(extras.S3, "an s3:// store")
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.session.Session(profile_name=profile) if profile else boto3.session.Session()
    except BotoCoreError as e:
        raise ConfigError(f"cannot set up S3 access: {e}; check AWS_PROFILE and ~/.aws/config") from None
    config = Config(
        connect_timeout=timeouts.connect_timeout,
        read_timeout=timeouts.read_timeout,
        retries={"total_max_attempts": timeouts.max_attempts, "mode": "standard"},
        s3={"addressing_style": addressing_style} if addressing_style else None,
    )
    return session.client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=secret_access_key,
        aws_session_token=session_token,
        region_name=region,
        config=config,
    )


def _local(uri: str, options: dict[str, Any]) -> ObjectStore:
    if options:
        raise ConfigError(f"options {sorted(options)} do not apply to a local store ({uri})")
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ConfigError(f"'{uri}' names a remote host; a file:// URI must be file:///absolute/path")
        from urllib.request import url2pathname

        return LocalObjectStore(url2pathname(parsed.path))
    return LocalObjectStore(uri)


def _s3(uri: str, options: dict[str, Any]) -> ObjectStore:
    parsed = urlparse(uri)
    return S3ObjectStore(parsed.netloc, parsed.path, **options)


#: URI scheme → backend, as PyIceberg's ``SCHEMA_TO_FILE_IO``; ``""`` is a bare path.
SCHEME_TO_STORE: dict[str, Callable[[str, dict[str, Any]], ObjectStore]] = {
    "": _local,
    "file": _local,
    "s3": _s3,
    "s3a": _s3,
}


def load_store(uri: str, **options: Any) -> ObjectStore:
    """The store for ``uri``: ``file:///dir`` or a bare path → :class:`LocalObjectStore`, ``s3://bucket/prefix``
    → :class:`S3ObjectStore` (``options`` go to its constructor: ``endpoint_url``, ``access_key_id``, ``region``…).
    """
    if not uri:
        raise ConfigError("no storage URI given; use a directory, file:///dir or s3://bucket/prefix")
    scheme = urlparse(uri).scheme.lower()
    if len(scheme) == 1:  # a Windows drive letter, C:\staging
        scheme = ""
    factory = SCHEME_TO_STORE.get(scheme)
    if factory is None:
        known = ", ".join(f"{s}://" for s in sorted(SCHEME_TO_STORE) if s)
        raise ConfigError(f"unknown storage scheme '{scheme}://' in '{uri}'; use {known} or a bare directory path")
    store = factory(uri, dict(options))
    logger.info("Using %s for %s", type(store).__name__, store.uri)
    return store
