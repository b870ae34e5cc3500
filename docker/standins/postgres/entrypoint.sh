#!/bin/sh
# The postgres image's first start, in short: initdb (UTF-8, as the image's en_US.utf8; Debian's default in a bare
# container would be SQL_ASCII, whose text psycopg 3 returns as bytes) with the password, the database, the init
# scripts on a server on a private socket (so pg_isready, the healthcheck, fails until the real server runs); then
# the server on every interface.
set -eu
export POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
	initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=trust \
		--encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
	rm -f "$pwfile"
	printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
	init_socket=$(mktemp -d)
	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=$init_socket" -w start >/dev/null
	export PGHOST="$init_socket"
	if [ "$POSTGRES_DB" != postgres ]; then
		psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -c "CREATE DATABASE \"$POSTGRES_DB\""
	fi
	for f in /docker-entrypoint-initdb.d/*.sh; do
		[ -e "$f" ] && sh "$f"
	done
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	unset PGHOST
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
