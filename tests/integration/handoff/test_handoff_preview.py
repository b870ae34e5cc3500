"""The hand-off preview lists every irreversible action the hand-off then takes (issue 26, point 3).

A re-key → repartition → count application is taken through ``streamproc run`` twice on the real broker: a first
run (nothing committed yet) and a second one after more input, whose repartition partitions have no backlog (their
ranges are empty at the committed offset) yet receive the records stage 0 writes. Each time the confirmation prompt
is answered, and what it showed, and what the plan file's ``handoff_preview`` says, are compared with the steps the
ledger recorded: every commit (per partition, with its offset), every purge (with its offset), every task directory
written must be in the preview, with the same offsets where the preview gives exact ones (the prompt always does).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger, LedgerStep
from streamproc.plan.run_plan import RunPlan, plan_id
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import answer_list_offsets
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORDS_PER_RUN = 300
TOPOLOGY = "tests.integration.handoff.topologies:preview_rekey_count"

COMMIT = re.compile(r"^\s+commit (?P<partition>\S+): (?P<before>\S+) -> (?P<after>\d+)(?: \(.*\))?$", re.M)
PURGE = re.compile(r"^\s+delete records of (?P<partition>\S+) before offset (?P<offset>\d+)$", re.M)
REPLACE = re.compile(
    r"^\s+replace (?P<dir>\S+) with the process step's stores, then write (?P=dir)/\.checkpoint$", re.M
)


def produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    rng = random.Random(first)
    for i in range(first, first + count):
        customer = f"c{rng.randint(0, 20)}"
        producer.produce(topologies.PREVIEW_INPUT, key=f"o{i}".encode(), value=customer.encode(), timestamp=9_000 + i)
    assert producer.flush(60) == 0


def ledger_actions(steps: list[LedgerStep]) -> tuple[dict[str, int], dict[str, int], set[str]]:
    """(commits: partition → offset, purges: partition → offset, task directories written) the ledger recorded."""
    commits = {name: int(o) for s in steps if s.kind == "publish" for name, o in s.detail["offsets"].items()}
    purges = {s.subject: int(s.detail["before_offset"]) for s in steps if s.kind == "purge"}
    task_dirs = {str(s.detail["task_dir"]) for s in steps if s.kind == "checkpoint"}
    return commits, purges, task_dirs


def test_the_preview_shows_every_commit_purge_and_task_directory_the_hand_off_records(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("preview-rekey")
    repartition = f"{app_id}-{topologies.REKEYED}"
    changelog = f"{app_id}-counts-changelog"
    for topic in (topologies.PREVIEW_INPUT, topologies.PREVIEW_OUTPUT, repartition):
        create_topic(admin, topic, partitions=PARTITIONS)
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.PREVIEW_INPUT, topologies.PREVIEW_OUTPUT, repartition, changelog)
    answer_list_offsets(kafka_broker, [topologies.PREVIEW_INPUT, repartition, changelog], PARTITIONS)
    state = tmp_path / "state"

    for run_number in (1, 2):
        produce(kafka_broker, (run_number - 1) * RECORDS_PER_RUN, RECORDS_PER_RUN)
        work = tmp_path / f"run-{run_number}"
        result = CliRunner().invoke(
            main,
            ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", TOPOLOGY,
             "--store", str(tmp_path / f"staging-{run_number}"), "--work-dir", str(work), "--master", "local[1]",
             "--state-dir", str(state)],
            input="y\n",
            catch_exceptions=False,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        prompt = result.stderr[result.stderr.index("Hand-off of plan") : result.stderr.index("Hand off?")]
        plan = RunPlan.read(work / "plan.json")
        with Ledger(work / "ledger.sqlite") as ledger:
            steps = ledger.steps(plan_id(plan))
        commits, purges, task_dirs = ledger_actions(steps)
        internal = {r.name: r for r in plan.ranges if r.internal}
        assert set(purges) == set(internal)  # every repartition partition received records and was purged
        if run_number == 2:  # the case: no backlog, yet committed and purged past this run's records
            assert all(r.empty and r.committed_offset == r.start for r in internal.values())
            assert all(commits[name] > r.end for name, r in internal.items())

        # the confirmation: exactly the ledger's actions, with the same offsets
        shown_commits = {m["partition"]: int(m["after"]) for m in COMMIT.finditer(prompt)}
        shown_purges = {m["partition"]: int(m["offset"]) for m in PURGE.finditer(prompt)}
        shown_dirs = {m["dir"] for m in REPLACE.finditer(prompt)}
        assert shown_commits == commits, prompt
        assert shown_purges == purges, prompt
        assert shown_dirs == task_dirs == {str(state / app_id / f"1_{p}") for p in range(PARTITIONS)}, prompt

        # the plan file: every action, exact where it can be, else named as growing by stage 0's records
        preview = json.loads((work / "plan.json").read_text())["handoff_preview"]
        planned = {c["partition"]: c for c in preview["commit_offsets"]}
        assert set(planned) == set(commits)
        for partition, offset in commits.items():
            entry = planned[partition]
            if partition in internal:
                assert entry["plus_appended_by_stage"] == 0 and entry["after"] < offset, entry
            else:
                assert entry["plus_appended_by_stage"] is None and entry["after"] == offset, entry
        deletes = {d["partition"]: d for d in preview["delete_records"]}
        assert set(deletes) == set(purges)
        for partition, offset in purges.items():
            assert deletes[partition]["plus_appended_by_stage"] == 0 and deletes[partition]["before_offset"] < offset
            assert offset == commits[partition]  # purged exactly to the committed offset
        assert {str(state / d) for d in preview["task_directories"]} == task_dirs

        committed, _ = read_committed_offsets(admin, app_id)
        assert {str(tp): c.offset for tp, c in committed.items()} == commits
