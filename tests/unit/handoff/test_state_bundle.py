"""``streamproc handoff install-state``: a bundle's tasks are written, and a task the bundle says has no state loses
its old directory (Kafka Streams 4.3 under exactly_once_v2 with an empty changelog: an old directory left there
would describe stores from before the run, FINDINGS rp42)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from click.testing import CliRunner

from streamproc.cli import main
from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.handoff.state_bundle import task_object, task_tar, write_manifest
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import checkpoint_path
from streamproc.storage import load_store

CHANGELOG = "app-counts-changelog"


def stores_tar() -> bytes:
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w") as tar:
        data = b"MANIFEST-000001\n"
        info = tarfile.TarInfo("rocksdb/counts/CURRENT")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return sink.getvalue()


def test_install_state_writes_tasks_and_removes_the_no_state_tasks_directories(tmp_path: Path) -> None:
    bundle = load_store(str(tmp_path / "bundle"))
    bundle.put(task_object("0_0"), task_tar(stores_tar(), {TopicPartition(CHANGELOG, 0): 41}))
    write_manifest(bundle, "app", "plan-1", ["0_0"], no_state=["0_1", "0_2"])
    state_dir = tmp_path / "state"
    directory = StateDirectory(state_dir, "app")
    old = directory.task_dir(TaskId(0, 1))  # from an earlier run: stores and a checkpoint
    (old / "rocksdb" / "counts").mkdir(parents=True)
    (old / "rocksdb" / "counts" / "CURRENT").write_text("MANIFEST-000001\n")
    OffsetCheckpoint(checkpoint_path(old)).write({TopicPartition(CHANGELOG, 1): 7})

    result = CliRunner().invoke(
        main, ["handoff", "install-state", "--bundle", str(tmp_path / "bundle"), "--state-dir", str(state_dir)]
    )

    assert result.exit_code == 0, result.output
    written = state_dir / "app" / "0_0"
    assert f"wrote {written}" in result.output
    assert f"removed {old} (the task starts without local state" in result.output
    assert "0_2" not in result.output  # no directory there: nothing to remove
    assert not old.exists()
    assert OffsetCheckpoint(checkpoint_path(written)).read() == {TopicPartition(CHANGELOG, 0): 41}
    assert (written / "rocksdb" / "counts" / "CURRENT").read_text() == "MANIFEST-000001\n"


def test_a_bundle_written_before_no_state_existed_installs_as_before(tmp_path: Path) -> None:
    bundle = load_store(str(tmp_path / "bundle"))
    bundle.put(task_object("0_0"), task_tar(stores_tar(), {TopicPartition(CHANGELOG, 0): 3}))
    bundle.put("bundle.json", b'{"application_id": "app", "plan_id": "p", "tasks": ["0_0"]}\n')
    result = CliRunner().invoke(
        main, ["handoff", "install-state", "--bundle", str(tmp_path / "bundle"), "--state-dir", str(tmp_path / "s")]
    )
    assert result.exit_code == 0, result.output
    assert OffsetCheckpoint(checkpoint_path(tmp_path / "s" / "app" / "0_0")).read() == {TopicPartition(CHANGELOG, 0): 3}
