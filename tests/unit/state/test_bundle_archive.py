"""A store bundle unpacks the same with and without PEP 706's filters (Python < 3.11.4 has none: Debian 12's 3.11.2),
and an entry outside the target is named before anything is unpacked."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from streamproc.state import bundle_archive


def _bundle(*entries: tarfile.TarInfo, data: bytes = b"sst") -> tarfile.TarFile:
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            tar.addfile(entry, io.BytesIO(data) if entry.isfile() else None)
    return tarfile.open(fileobj=io.BytesIO(sink.getvalue()))


def _entry(name: str, kind: bytes = tarfile.REGTYPE, size: int = 3) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size if kind == tarfile.REGTYPE else 0
    if kind == tarfile.SYMTYPE:
        info.linkname = "/etc/passwd"
    return info


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


#: Both ways where this Python has the filters (the project's own 3.11.7 does), the fallback alone where it has none.
WAYS = [True, False] if hasattr(tarfile, "data_filter") else [False]


@pytest.mark.parametrize("filters", WAYS, ids=[f"filters-{w}" for w in WAYS])
def test_a_bundle_unpacks_the_same_with_or_without_tarfile_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    monkeypatch.setattr(bundle_archive, "HAS_FILTERS", filters)
    tar = _bundle(_entry("rocksdb", tarfile.DIRTYPE), _entry("rocksdb/counts", tarfile.DIRTYPE),
                  _entry("rocksdb/counts/000001.sst"))  # fmt: skip
    members = tar.getmembers()
    assert bundle_archive.outside_entries(members) == []
    bundle_archive.extract(tar, tmp_path, members)
    assert _tree(tmp_path) == {"rocksdb": None, "rocksdb/counts": None, "rocksdb/counts/000001.sst": b"sst"}


def test_entries_outside_the_target_are_named() -> None:
    tar = _bundle(_entry("ok.sst"), _entry("/abs.sst"), _entry("rocksdb/../../up.sst"),
                  _entry("link", tarfile.SYMTYPE), _entry("fifo", tarfile.FIFOTYPE))  # fmt: skip
    assert bundle_archive.outside_entries(tar.getmembers()) == ["/abs.sst", "rocksdb/../../up.sst", "link", "fifo"]
