"""docker-compose.yml's healthcheck of an Airflow component: healthy when the API server's monitor says so.

``python healthcheck.py scheduler|triggerer|dag_processor``. The API server's ``/api/v2/monitor/health`` reports
each component's last heartbeat from the metadata database; ``airflow jobs check`` would answer the same but takes
more than 30 s to start its interpreter and CLI on a busy two-core machine, longer than a healthcheck's timeout.
"""

import json
import os
import sys
import urllib.request

#: the compose network's API server; AIRFLOW_HEALTH_URL elsewhere (the Docker-less topology test runs this script)
URL = os.environ.get("AIRFLOW_HEALTH_URL", "http://airflow-apiserver:8080/api/v2/monitor/health")


def main(component: str) -> int:
    try:
        with urllib.request.urlopen(URL, timeout=10) as response:  # noqa: S310 - the API server
            health = json.load(response)
    except OSError as exc:
        print(f"{component}: the API server does not answer: {exc}")
        return 1
    status = (health.get(component) or {}).get("status")
    print(f"{component}: {status}")
    return 0 if status == "healthy" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
