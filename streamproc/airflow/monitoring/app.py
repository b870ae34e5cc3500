"""The monitoring app's routes: HTML pages and their JSON twins, each behind Airflow's auth manager.

A plugin's FastAPI route is anonymous unless it asks for a user, so every route here depends on one of Airflow's
own access checks: the page of a DAG run asks for read access to that DAG's runs (``requires_access_dag`` reads the
``dag_id`` from the path); the page of a run found by its ledger id asks for read access to DAG runs in general, and
to its DAG's runs when it has one; the list shows every run to a user with the general read, and to a user with
per-DAG rights (an auth manager other than the simple one) the runs of the DAGs they may read, refusing a user who
may read none. Runs started by the CLI have no DAG and need the general read.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_dag
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from streamproc.airflow.monitoring.source import ledger_location
from streamproc.airflow.monitoring.views import run_page, short_time, stream_time
from streamproc.errors import StreamprocError
from streamproc.ledger import Ledger, RunDetail, RunSummary

log = logging.getLogger(__name__)

#: Where Airflow's API server mounts the app (``fastapi_apps``' ``url_prefix``); the external views link here.
URL_PREFIX = "/streamproc"
#: How many runs the list shows.
RUN_LIST_LIMIT = 200

_READ_RUNS = Depends(requires_access_dag("GET", DagAccessEntity.RUN))

_templates = Environment(
    loader=PackageLoader("streamproc.airflow.monitoring", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_templates.filters["stream_time"] = stream_time
_templates.filters["short_time"] = short_time


def create_app(open_ledger: Callable[[], Ledger] | None = None) -> FastAPI:
    """The app; ``open_ledger`` opens the ledger per request (default: the configured ledger URL)."""
    opener = open_ledger or (lambda: Ledger(ledger_location()))
    app = FastAPI(title="streamproc monitoring", docs_url=None, redoc_url=None, openapi_url=None)

    @contextmanager
    def ledger() -> Iterator[Ledger]:
        try:
            with opener() as opened:
                yield opened
        except StreamprocError as exc:
            log.error("streamproc monitoring: the run ledger cannot be read: %s", exc)
            raise HTTPException(status_code=503, detail=f"the run ledger cannot be read: {exc}") from exc

    def runs_for(user: Any, application: str | None) -> list[RunSummary]:
        """The newest runs the user may see: all with the general read, else those of the DAGs they may read."""
        with ledger() as opened:
            runs = opened.runs(application_id=application or None, limit=RUN_LIST_LIMIT)
        if _may_read_all_runs(user):
            return runs
        readable = _readable_dag_ids(user)
        if not readable:
            raise HTTPException(status_code=403, detail="Forbidden: no DAG whose runs you may read")
        return [r for r in runs if r.dag_id is not None and r.dag_id in readable]

    def by_run_id(run_id: str, user: Any) -> RunDetail:
        with ledger() as opened:
            run = opened.run(run_id)
        if run is None:
            raise HTTPException(status_code=404, detail=f"no run {run_id!r} in the run ledger")
        if run.summary.dag_id is not None and not _may_read_dag_runs(user, run.summary.dag_id):
            raise HTTPException(status_code=403, detail="Forbidden")
        return run

    def by_dag_run(dag_id: str, dag_run_id: str) -> RunDetail:
        with ledger() as opened:
            run = opened.run_for_dag_run(dag_id, dag_run_id)
        if run is None:
            raise HTTPException(
                status_code=404,
                detail=f"the run ledger has no streamproc run for DAG {dag_id!r} run {dag_run_id!r} "
                "(it starts with the plan task; a run that failed before it has none)",
            )
        return run

    @app.exception_handler(HTTPException)
    async def error_page(request: Request, exc: HTTPException) -> HTMLResponse | JSONResponse:
        """One clear line, as JSON for ``/api`` and as a small page otherwise; never a traceback."""
        if request.url.path.startswith(f"{request.scope.get('root_path', '')}/api/"):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        html = _render("error.html", status=exc.status_code, detail=exc.detail)
        return HTMLResponse(html, status_code=exc.status_code, headers=exc.headers)

    @app.get("/", include_in_schema=False)
    def index(request: Request, _user: GetUserDep) -> RedirectResponse:
        return RedirectResponse(str(request.url_for("run_list")))

    @app.get("/runs", response_class=HTMLResponse)
    def run_list(
        request: Request,
        user: GetUserDep,
        application: Annotated[str | None, Query()] = None,
    ) -> HTMLResponse:
        runs = runs_for(user, application)
        return HTMLResponse(_render("runs.html", request=request, runs=runs, application=application))

    @app.get("/runs/{run_id}", response_class=HTMLResponse, dependencies=[_READ_RUNS])
    def run_by_id(request: Request, run_id: str, user: GetUserDep) -> HTMLResponse:
        return HTMLResponse(_render("run.html", request=request, page=run_page(by_run_id(run_id, user))))

    @app.get("/dags/{dag_id}/runs/{dag_run_id}", response_class=HTMLResponse, dependencies=[_READ_RUNS])
    def run_of_dag_run(request: Request, dag_id: str, dag_run_id: str) -> HTMLResponse:
        return HTMLResponse(_render("run.html", request=request, page=run_page(by_dag_run(dag_id, dag_run_id))))

    @app.get("/api/runs")
    def run_list_json(user: GetUserDep, application: Annotated[str | None, Query()] = None) -> JSONResponse:
        runs = runs_for(user, application)
        return JSONResponse({"runs": [dataclasses.asdict(r) for r in runs]})

    @app.get("/api/runs/{run_id}", dependencies=[_READ_RUNS])
    def run_by_id_json(run_id: str, user: GetUserDep) -> JSONResponse:
        return JSONResponse(dataclasses.asdict(by_run_id(run_id, user)))

    @app.get("/api/dags/{dag_id}/runs/{dag_run_id}", dependencies=[_READ_RUNS])
    def run_of_dag_run_json(dag_id: str, dag_run_id: str) -> JSONResponse:
        return JSONResponse(dataclasses.asdict(by_dag_run(dag_id, dag_run_id)))

    return app


def _render(template: str, **context: Any) -> str:
    return _templates.get_template(template).render(**context)


def _may_read_dag_runs(user: Any, dag_id: str) -> bool:
    """Airflow's check for reading one DAG's runs (what ``requires_access_dag`` asks, for a DAG id from the ledger)."""
    from airflow.models.dag import DagModel

    details = DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id))
    allowed: bool = get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.RUN, details=details, user=user
    )
    return allowed


def _may_read_all_runs(user: Any) -> bool:
    """Read access to the runs of every DAG: what a run without a DAG (started by the CLI) needs."""
    allowed: bool = get_auth_manager().is_authorized_dag(method="GET", access_entity=DagAccessEntity.RUN, user=user)
    return allowed


def _readable_dag_ids(user: Any) -> set[str]:
    """The DAGs whose runs the user may read, for an auth manager with per-DAG rights."""
    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))
