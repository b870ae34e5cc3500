"""The development PostgreSQL server: a private cluster on a loopback port, password logins, stopped by its PID."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from streamproc_dev import postgres, service_process


def test_a_private_server_starts_serves_databases_and_stops(tmp_path: Path) -> None:
    handle = postgres.start(tmp_path)
    home = Path(handle.extra["home"])
    try:
        assert handle.address.startswith("127.0.0.1:")
        assert "running" in postgres.status(tmp_path) and "accepting logins" in postgres.status(tmp_path)
        with pytest.raises(Exception, match="already running"):
            postgres.start(tmp_path)
        url = postgres.create_database(handle, "Some test[name]")
        database = url.rsplit("/", 1)[1]
        assert database.startswith("some_test_name_")
        host, port = handle.address.split(":")
        with psycopg.connect(host=host, port=int(port), user=postgres.USER, password=postgres.PASSWORD,
                             dbname=database) as connection:  # fmt: skip
            assert connection.execute("SELECT current_database()").fetchone() == (database,)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(host=host, port=int(port), user=postgres.USER, password="wrong", dbname="postgres")
        # the socket is in the cluster's own directory, not the system's
        assert list((home / "sockets").glob(".s.PGSQL.*"))
    finally:
        assert postgres.stop(tmp_path)
    assert not service_process.is_alive(handle.pid)
    assert postgres.status(tmp_path).startswith("stopped")
    if handle.extra["temporary_home"]:
        assert not home.exists()
    assert postgres.stop(tmp_path) is False
