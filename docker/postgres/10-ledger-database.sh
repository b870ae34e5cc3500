#!/bin/sh
# The postgres image runs this once, on an empty data directory: the run ledger's database beside Airflow's
# (POSTGRES_DB). streamproc creates the ledger's tables itself (Alembic) on first use.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -c "CREATE DATABASE \"$STREAMPROC_LEDGER_DB\" OWNER \"$POSTGRES_USER\""
