"""``docs/formats.md``: its examples are what streamproc writes, and its tables name every field and ledger column.

Each example is parsed with the real validators (``RunPlan.from_dict``, ``Manifest.from_json``) and must
re-serialise to exactly the text in the doc, so an example can neither drift from the format nor be hand-made.
"""

from __future__ import annotations

import json
import re

from streamproc.plan.run_plan import RunPlan
from streamproc.storage.manifest import Manifest
from tests.conftest import PROJECT_ROOT

DOC = (PROJECT_ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
EXAMPLE = re.compile(r"<!-- example: (?P<kind>[a-z-]+)(?: (?P<name>\S+))? -->\n```json\n(?P<body>.*?)```", re.S)


def examples(kind: str) -> list[tuple[str | None, str]]:
    found = [(m["name"], m["body"]) for m in EXAMPLE.finditer(DOC) if m["kind"] == kind]
    assert found, f"docs/formats.md has no {kind} example"
    return found


def test_the_run_plan_example_is_a_valid_plan_written_by_streamproc() -> None:
    for _, body in examples("run-plan"):
        plan = RunPlan.from_dict(json.loads(body))
        assert plan.to_json() == body
        assert plan.ranges and plan.restores and plan.tasks  # the example shows every part of a plan
        # and a hand-off that commits and purges repartition partitions by what stage 0 of the run appends
        assert plan.version == 2 and plan.task_directories
        appended = [c.partition for c in plan.commits if c.plus_appended_by_stage == 0]
        assert appended and [p.partition for p in plan.purges] == appended


def test_the_manifest_example_is_a_valid_manifest_written_by_streamproc() -> None:
    for name, body in examples("manifest"):
        assert name is not None
        manifest = Manifest.from_json(body.encode(), name=name)
        assert manifest.to_json().decode() == body
        assert manifest.proof.explained  # the example shows an explained offset


def test_the_tables_name_every_field() -> None:
    [(_, plan_body)] = examples("run-plan")
    [(_, manifest_body)] = examples("manifest")
    plan, manifest = json.loads(plan_body), json.loads(manifest_body)
    preview = plan["handoff_preview"]
    fields = set(plan) | set(plan["ranges"][0]) | set(manifest) | set(manifest["proof"])
    fields |= set(preview) | set(preview["commit_offsets"][0]) | set(preview["delete_records"][0])
    tables = "\n".join(line for line in DOC.splitlines() if line.startswith("|"))
    missing = sorted(f for f in fields if f"`{f}`" not in tables)
    assert not missing, f"fields not described in docs/formats.md: {missing}"


def test_the_ledger_section_names_every_table_and_column() -> None:
    from streamproc.ledger.tables import metadata

    ledger = DOC[DOC.index("## The run ledger") :]
    missing = [f"table {t.name}" for t in metadata.sorted_tables if f"#### `{t.name}`" not in ledger]
    for table in metadata.sorted_tables:
        start = ledger.index(f"#### `{table.name}`")
        end = ledger.find("\n#### ", start + 1)
        text = ledger[start : end if end != -1 else None]
        missing += [f"{table.name}.{c.name}" for c in table.columns if f"| `{c.name}` |" not in text]
    assert not missing, f"not described in docs/formats.md's ledger section: {missing}"
