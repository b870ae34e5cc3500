#!/bin/sh
# docker-compose.yml's airflow-init: Airflow's schema on PostgreSQL, then the simple auth manager's password file
# (the admin from AIRFLOW_ADMIN_USER / AIRFLOW_ADMIN_PASSWORD), which the api-server reads from the shared volume.
set -eu
airflow db migrate
umask 077
python - <<'PY'
import json, os
path = os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
with open(path, "w", encoding="utf-8") as out:
    json.dump({os.environ["AIRFLOW_ADMIN_USER"]: os.environ["AIRFLOW_ADMIN_PASSWORD"]}, out)
PY
