"""Airflow's REST API as the deployment tests drive it: the admin's calls, and waiting for what a call returns."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Api:
    """Airflow's REST API (``/api/v2``) as the admin of ``.env.example``, with its bearer token."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.url}/api/v2{path}", method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback or the published port
            return json.load(answer)


def wait_for(what: str, check: Callable[[], Any], timeout_s: float, logs: Path | None = None) -> Any:
    """``check()``'s first true answer (a 404 counts as not yet); fails after ``timeout_s`` naming ``what`` and, when
    given, where Airflow's logs are."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = check()
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            found = None
        if found:
            return found
        where = f"; Airflow's logs are in {logs}" if logs is not None else ""
        assert time.monotonic() < deadline, f"timed out waiting for {what}{where}"
        time.sleep(1)
