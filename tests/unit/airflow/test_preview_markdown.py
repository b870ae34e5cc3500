"""The approval form's body: the hand-off preview as Markdown the form renders one action per line."""

from __future__ import annotations

from pathlib import Path

from streamproc.airflow.steps import preview_markdown
from streamproc.handoff.preview import preview
from streamproc.plan.run_plan import OffsetCommitPreview, PlannedTask, PurgePreview, RunPlan


def _plan() -> RunPlan:
    commits = (OffsetCommitPreview("orders_in-0", None, 216), OffsetCommitPreview("orders_in-1", 40, 184))
    purges = (PurgePreview("orders_app-KSTREAM-REPARTITION-0000000003-repartition-0", 12),)
    task = PlannedTask("0_0", 0, 0, ("orders_in-0",))
    return RunPlan("orders_app", "read_uncommitted", "committed", "latest", "committed", (), (task,), ((0,),),
                   commits, ("orders_app/0_0/.checkpoint",), purges)  # fmt: skip


def test_every_action_of_the_preview_is_one_literal_list_item() -> None:
    text = preview(_plan(), "abc123", Path("/state"))
    lines = preview_markdown(text).splitlines()
    assert lines[0] == text.splitlines()[0]
    assert lines[1] == ""
    items = lines[2:]
    assert len(items) == len(text.splitlines()) - 1 == 4
    assert all(item.startswith("- `") and item.endswith("`") for item in items)
    assert "- `commit orders_in-0: none -> 216" in items[0]  # underscores stay literal inside the backticks
