"""The streamproc Airflow plugin: the monitoring app inside Airflow's API server, and links to it in the UI.

Airflow 3 loads it from the ``airflow.plugins`` entry point (``pip install streamproc`` is enough) or from
``$AIRFLOW_HOME/plugins/streamproc_plugin.py``. It adds:

* the monitoring app (``fastapi_apps``) under ``/streamproc``, behind Airflow's auth manager;
* a "streamproc" tab on every DAG run's page (``external_views`` with destination ``dag_run``): an iframe of the
  run's page, authenticated by the same-origin ``_token`` cookie;
* a "streamproc runs" entry in the Browse menu: the run list across runs and applications.
"""

from __future__ import annotations

from typing import Any

from airflow.plugins_manager import AirflowPlugin

from streamproc.airflow.monitoring import URL_PREFIX, create_app

PLUGIN_NAME = "streamproc"


class StreamprocPlugin(AirflowPlugin):
    """Registers the monitoring app and its two entry points in the UI."""

    name = PLUGIN_NAME
    fastapi_apps: list[Any] = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "streamproc monitoring"},
    ]
    external_views: list[Any] = [
        {
            "name": "streamproc",
            "href": URL_PREFIX + "/dags/{DAG_ID}/runs/{RUN_ID}",
            "destination": "dag_run",
            "url_route": "streamproc-run",
        },
        {
            "name": "streamproc runs",
            "href": URL_PREFIX + "/runs",
            "destination": "nav",
            "category": "browse",
            "url_route": "streamproc-runs",
        },
    ]
