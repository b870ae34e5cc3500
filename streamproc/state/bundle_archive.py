"""A store bundle (the process step's tar of a task's stores) unpacked into a directory.

Bundles are written by streamproc, yet read back from an object store that others can write to: every entry must be a
regular file or a directory below the target. ``tarfile``'s ``filter="data"`` (PEP 706) refuses the rest too, but
Python has it only from 3.11.4 and Debian 12's python3.11 is 3.11.2 (found by the compose deployment's stand-in
image, whose hand-off failed on the keyword). Where the filter is missing, the entries this module has checked are
extracted as they are: regular files and directories with relative paths, all the filter would let through.
"""

from __future__ import annotations

import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

#: Whether this Python's ``tarfile`` has PEP 706's extraction filters.
HAS_FILTERS = hasattr(tarfile, "data_filter")


def outside_entries(members: Sequence[tarfile.TarInfo]) -> list[str]:
    """The names of entries that are not a regular file or directory below the target (absolute, ``..``, links,
    devices): a bundle holding any is refused, never partly unpacked."""
    return [
        m.name
        for m in members
        if PurePosixPath(m.name).is_absolute() or ".." in PurePosixPath(m.name).parts or not (m.isfile() or m.isdir())
    ]


def extract(tar: tarfile.TarFile, target: Path, members: Sequence[tarfile.TarInfo]) -> None:
    """Unpack ``members`` (checked with :func:`outside_entries` by the caller, which names the task) into ``target``."""
    if HAS_FILTERS:
        tar.extractall(target, members=members, filter="data")
    else:  # Python < 3.11.4: the members are regular files and directories, checked by the caller
        tar.extractall(target, members=members)  # noqa: S202 - see the module doc
