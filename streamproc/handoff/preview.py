"""The hand-off preview: what a hand-off will do, shown before the user confirms it (the CLI's prompt, the Airflow
approval form), from the plan alone, so it can be shown before anything is touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def preview(plan: Any, plan_id: str, state_dir: Path | None) -> str:
    """The plan's hand-off section: commits, checkpoints (where), purges."""
    lines = [f"Hand-off of plan {plan_id} for application '{plan.application_id}':"]
    for c in plan.commits:
        before = "none" if c.before is None else str(c.before)
        appended = plan.appended_note(c.partition)
        lines.append(
            f"  commit {c.partition}: {before} -> {c.after}{appended} (with the tasks' output and changelog records)"
        )
    if state_dir is not None:
        lines.extend(f"  write {state_dir / f}" for f in plan.checkpoint_files)
    else:
        lines.append("  no state directory (--state-dir not given): the application restores from the changelogs")
    lines.extend(f"  delete records of {p.partition} before offset {p.before_offset}" for p in plan.purges)
    return "\n".join(lines)
