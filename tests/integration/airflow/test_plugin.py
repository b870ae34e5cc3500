"""The monitoring plugin in a running Airflow: loaded, behind Airflow's auth, showing the ledger's figures escaped.

The ledger is the one the session's Airflow reads (``STREAMPROC_LEDGER_URL``); the tests write runs into it through
the ledger's own API, then read the pages as Airflow users do: a token from ``POST /auth/token``, sent as the
``_token`` cookie (what the run page's iframe sends) or as a bearer token.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import quote

import httpx
import pytest

from streamproc.ledger import Ledger, RunDetail
from streamproc_dev.service_process import tail
from tests.integration.airflow.conftest import AirflowUI
from tests.integration.ledger.sample_run import sample_fetch, sample_plan, sample_reports

pytestmark = pytest.mark.integration

HOSTILE_APP = '<script>alert("app")</script>'
HOSTILE_ERROR = "plan refused: <img src=x onerror=alert(1)> & more"
DAG_ID = "streamproc_backfill"


@dataclass(frozen=True, slots=True)
class Recorded:
    """Two runs in the ledger: a finished one of a DAG run, and a failed CLI run of a hostile application id."""

    dag_run: RunDetail
    dag_run_id: str
    failed: RunDetail


@pytest.fixture(autouse=True)
def _airflow_log_on_failure(airflow_ui: AirflowUI) -> Iterator[None]:
    """Printed after each test; pytest shows it only for a failed one."""
    yield
    print(f"--- last lines of {airflow_ui.log_path}:\n{tail(airflow_ui.log_path, 80)}")


@pytest.fixture(scope="module")
def recorded(airflow_ui: AirflowUI) -> Recorded:
    suffix = os.urandom(4).hex()
    dag_run_id = f"manual__2026-11-24T14:00:00+00:00-{suffix}"
    with Ledger(airflow_ui.setup.ledger_url) as ledger:
        app = f"orders-{suffix}"
        run_id = ledger.begin_run(application_id=app, trigger="manual", dag_id=DAG_ID, dag_run_id=dag_run_id)
        plan = sample_plan(app)
        ledger.record_plan(run_id, plan, f"plan-{suffix}")
        ledger.record_fetch(run_id, sample_fetch(plan))
        ledger.record_tasks(run_id, sample_reports())
        ledger.record_lag_after(
            run_id, {c.partition: c.after for c in plan.commits}, {"orders-0": 5000, "orders-1": 310}
        )
        ledger.record(f"plan-{suffix}", "publish", "0_0", {"records": 12})
        ledger.finish_run(run_id, "succeeded")
        hostile = ledger.begin_run(application_id=HOSTILE_APP + suffix, trigger="cli")
        ledger.record_plan(hostile, sample_plan(HOSTILE_APP + suffix), f"plan-h-{suffix}")
        ledger.finish_run(hostile, "failed", HOSTILE_ERROR)
        dag_run, failed = ledger.run(run_id), ledger.run(hostile)
    assert dag_run is not None and failed is not None
    return Recorded(dag_run, dag_run_id, failed)


def routes(recorded: Recorded) -> list[str]:
    run_id, dag_run = quote(recorded.dag_run.summary.run_id, safe=""), quote(recorded.dag_run_id, safe="")
    pages = ["/runs", f"/runs/{run_id}", f"/dags/{DAG_ID}/runs/{dag_run}"]
    return ["/streamproc/", *(f"/streamproc{p}" for p in pages), *(f"/streamproc/api{p}" for p in pages)]


def get(
    airflow_ui: AirflowUI, path: str, *, user: str | None = "admin", bearer: bool = False, token: str | None = None
) -> httpx.Response:
    """GET as ``user`` (its token as the ``_token`` cookie, or as a bearer token), or with ``token`` as given."""
    if user is not None and token is None:
        token = airflow_ui.token(user)
    cookies = {"_token": token} if token is not None and not bearer else {}
    headers = {"Authorization": f"Bearer {token}"} if token is not None and bearer else {}
    with httpx.Client(base_url=airflow_ui.url, cookies=cookies, headers=headers, timeout=30) as client:
        return client.get(path)


class PageReader(HTMLParser):
    """The text of every element with an ``id``, and of every ``data-field`` cell by its row's ``data-*`` key."""

    ROW_KEYS = ("data-task", "data-partition", "data-run-id", "data-reason")
    VOID = frozenset({"meta", "link", "br", "img", "input", "hr"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, str] = {}
        self.cells: dict[tuple[str, str], str] = {}
        self._stack: list[tuple[str, str | None, list[str]]] = []  # (tag, what its text is, its text so far)
        self._rows: list[str | None] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        found = dict(attrs)
        if tag == "tr":
            self._rows.append(next((found[k] or "" for k in self.ROW_KEYS if k in found), None))
        row = self._rows[-1] if self._rows else None
        target = None
        if "id" in found:
            target = "id\x00" + (found["id"] or "")
        elif "data-field" in found and row is not None:
            target = f"cell\x00{row}\x00{found['data-field']}"
        self._stack.append((tag, target, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID or not self._stack:
            return
        open_tag, target, text = self._stack.pop()
        assert open_tag == tag, f"unbalanced HTML: <{open_tag}> closed by </{tag}>"
        if tag == "tr" and self._rows:
            self._rows.pop()
        if target is not None:
            kind, *key = target.split("\x00")
            if kind == "id":
                self.by_id[key[0]] = "".join(text).strip()
            else:
                self.cells[(key[0], key[1])] = "".join(text).strip()

    def handle_data(self, data: str) -> None:
        for _, target, text in self._stack:
            if target is not None:
                text.append(data)


def test_the_plugin_is_loaded_with_its_app_and_views(airflow_ui: AirflowUI) -> None:
    response = get(airflow_ui, "/api/v2/plugins", bearer=True)
    assert response.status_code == 200, response.text
    plugins = {p["name"]: p for p in response.json()["plugins"]}
    assert "streamproc" in plugins, f"plugins loaded: {sorted(plugins)}"
    plugin = plugins["streamproc"]
    assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == ["/streamproc"]
    views = {v["destination"]: v for v in plugin["external_views"]}
    assert views["dag_run"]["href"] == "/streamproc/dags/{DAG_ID}/runs/{RUN_ID}"
    assert views["nav"]["href"] == "/streamproc/runs"
    errors = get(airflow_ui, "/api/v2/plugins/importErrors", bearer=True).json()
    assert not [e for e in errors["import_errors"] if "streamproc" in json.dumps(e)], errors


def test_every_route_refuses_an_anonymous_or_forged_request(airflow_ui: AirflowUI, recorded: Recorded) -> None:
    for path in routes(recorded):
        anonymous = get(airflow_ui, path, user=None)
        assert anonymous.status_code in (401, 403), (path, anonymous.status_code, anonymous.text[:200])
        assert recorded.dag_run.summary.application_id not in anonymous.text
        for bearer in (False, True):
            forged = get(airflow_ui, path, user=None, token="not-a-token", bearer=bearer)
            assert forged.status_code in (401, 403), (path, bearer, forged.status_code)


@pytest.mark.parametrize("user", ["viewer", "admin"])
def test_a_user_who_may_read_dag_runs_sees_the_ledgers_figures(
    airflow_ui: AirflowUI, recorded: Recorded, user: str
) -> None:
    run = recorded.dag_run
    by_id = get(airflow_ui, f"/streamproc/runs/{quote(run.summary.run_id, safe='')}", user=user)
    by_dag_run = get(airflow_ui, f"/streamproc/dags/{DAG_ID}/runs/{quote(recorded.dag_run_id, safe='')}", user=user)
    for response in (by_id, by_dag_run):
        assert response.status_code == 200, response.text[:500]
        page = PageReader(response.text)
        assert page.by_id["run-id"] == run.summary.run_id
        assert page.by_id["status"] == run.summary.status
        assert int(page.by_id["records-planned"]) == run.summary.records_planned
        assert int(page.by_id["records-processed"]) == run.summary.records_processed
        assert int(page.by_id["records-dropped"]) == run.summary.records_dropped
        for task in run.tasks:
            assert int(page.cells[(task.task_id, "records_processed")]) == task.records_processed
        for lag in run.lag:
            assert int(page.cells[(lag.partition, "lag_before")]) == lag.lag_before
            assert page.cells[(lag.partition, "lag_after")] == ("–" if lag.lag_after is None else str(lag.lag_after))
        dropped: dict[str, int] = {}
        for task in run.tasks:
            for reason, count in task.dropped.items():
                dropped[reason] = dropped.get(reason, 0) + count
        assert {r: int(page.cells[(r, "dropped")]) for r in dropped} == dropped
        assert "<svg" in response.text  # the charts
    listing = PageReader(get(airflow_ui, "/streamproc/runs", user=user).text)
    assert int(listing.cells[(run.summary.run_id, "records_processed")]) == run.summary.records_processed


def test_the_json_routes_give_what_the_ledger_holds(airflow_ui: AirflowUI, recorded: Recorded) -> None:
    run = recorded.dag_run
    expected = json.loads(json.dumps(dataclasses.asdict(run)))
    assert (
        get(airflow_ui, f"/streamproc/api/runs/{quote(run.summary.run_id, safe='')}", user="viewer").json() == expected
    )
    dag_run = get(airflow_ui, f"/streamproc/api/dags/{DAG_ID}/runs/{quote(recorded.dag_run_id, safe='')}")
    assert dag_run.json() == expected
    listed = get(airflow_ui, "/streamproc/api/runs", user="viewer").json()["runs"]
    assert json.loads(json.dumps(dataclasses.asdict(run.summary))) in listed


def test_hostile_values_from_the_ledger_are_shown_escaped_and_a_failed_run_says_why(
    airflow_ui: AirflowUI, recorded: Recorded
) -> None:
    failed = recorded.failed.summary
    page = get(airflow_ui, f"/streamproc/runs/{quote(failed.run_id, safe='')}")
    listing = get(airflow_ui, "/streamproc/runs")
    for response in (page, listing):
        assert response.status_code == 200
        assert "<script>alert" not in response.text and "<img src=x" not in response.text
        assert "&lt;script&gt;alert(" in response.text
    reader = PageReader(page.text)
    assert reader.by_id["application-id"] == failed.application_id  # shown as text, exactly
    assert reader.by_id["status"] == "failed"
    assert reader.by_id["error"] == HOSTILE_ERROR


def test_an_unknown_run_is_a_clear_404(airflow_ui: AirflowUI) -> None:
    page = get(airflow_ui, "/streamproc/dags/streamproc_backfill/runs/no-such-run")
    assert page.status_code == 404
    assert "no streamproc run for DAG 'streamproc_backfill' run 'no-such-run'" in PageReader(page.text).by_id["error"]
    api = get(airflow_ui, "/streamproc/api/runs/no-such-run")
    assert api.status_code == 404 and api.json() == {"detail": "no run 'no-such-run' in the run ledger"}
