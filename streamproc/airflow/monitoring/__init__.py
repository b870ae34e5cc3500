"""The monitoring page: a FastAPI app, served inside Airflow's API server by the streamproc plugin.

It reads the run ledger (``streamproc.ledger``) and shows, per run, what was planned, fetched, processed and handed
off, and a list of runs across applications. Served HTML with inline SVG: nothing to build, nothing fetched from
the internet, every value escaped by the templates. Every route asks Airflow's auth manager first.
"""

from streamproc.airflow.monitoring.app import URL_PREFIX, create_app

__all__ = ["URL_PREFIX", "create_app"]
