"""Object storage for staged data: the store (local directory or S3, by URI scheme), Parquet segments, manifests.

Shaped after PyIceberg's ``pyiceberg.io``: :func:`load_store` picks the backend from the URI. Segment schema and
object names are a contract (DESIGN.md §3); see :mod:`streamproc.storage.segments`,
:mod:`streamproc.storage.manifest` and :mod:`streamproc.storage.staging`.
"""

from streamproc.storage.object_store import (
    LocalObjectStore,
    ObjectNotFoundError,
    ObjectStore,
    S3ObjectStore,
    load_store,
)

__all__ = ["LocalObjectStore", "ObjectNotFoundError", "ObjectStore", "S3ObjectStore", "load_store"]
