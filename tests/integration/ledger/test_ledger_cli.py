"""``streamproc ledger``: the runs, one run's detail, and ending a run whose process died (its lock is freed)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamproc.cli import main
from streamproc.ledger import Ledger
from tests.integration.ledger.sample_run import sample_fetch, sample_plan, sample_reports


def _cli(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


def test_runs_show_and_finish_a_dead_run(ledger_url: str, tmp_path: Path) -> None:
    plan = sample_plan()
    with Ledger(ledger_url) as ledger:
        dead = ledger.begin_run(application_id=plan.application_id, trigger="cli")
        ledger.record_plan(dead, plan, "plan-1")
        ledger.record_fetch(dead, sample_fetch(plan))
        ledger.record_tasks(dead, sample_reports())

    listed = json.loads(_cli("--output", "json", "ledger", "runs", "--ledger", ledger_url))
    assert [(r["run_id"], r["status"], r["records_processed"]) for r in listed["runs"]] == [(dead, "running", 4090)]
    shown = _cli("ledger", "show", dead, "--ledger", ledger_url)
    assert f"run {dead} of orders-app (cli): running at stage plan" in shown
    assert "  input   orders-0 [1200, 5000): planned 3800, staged 3790" in shown
    assert "  task 0_0: 3790 processed, dropped 10" in shown
    assert "has no run nope" in _cli("ledger", "show", "nope", "--ledger", ledger_url, ok=False)

    # a run without a recorded owner process (begun by an older streamproc, or by Airflow) cannot be seen to be dead:
    # the next run is refused, naming its step and the command that ends it in this very ledger
    busy = _cli("run", "--bootstrap", "127.0.0.1:1", "--application-id", plan.application_id, "--topology",
                "tests.integration.ledger.topologies:count", "--store", str(tmp_path / "s"), "--work-dir",
                str(tmp_path / "w"), "--ledger", ledger_url, ok=False)  # fmt: skip
    with Ledger(ledger_url) as ledger:
        shown_url = ledger.url  # the password masked
    assert "(it is in its plan step); if that run is dead (its process was killed), end it with " in busy
    assert f"`streamproc ledger finish {dead} --status failed --ledger {shown_url}`" in busy
    assert f"run {dead} marked failed" in _cli("ledger", "finish", dead, "--ledger", ledger_url)
    with Ledger(ledger_url) as ledger:
        [summary] = ledger.runs()
        assert (summary.status, summary.error) == ("failed", "ended by hand with `streamproc ledger finish`")
        ledger.finish_run(ledger.begin_run(application_id=plan.application_id, trigger="cli"), "dry_run")
