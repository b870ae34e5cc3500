"""The DAG files parse cleanly, as Airflow's DAG processor parses them, and do no work when parsed."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import PROJECT_ROOT
from tests.integration.airflow.conftest import BACKFILL, INCREMENTAL

pytestmark = pytest.mark.integration


def test_every_dag_imports_cleanly(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert {BACKFILL, INCREMENTAL} <= set(dagbag.dag_ids)
    backfill, incremental = dagbag.get_dag(BACKFILL), dagbag.get_dag(INCREMENTAL)
    assert "approve_handoff" in backfill.task_dict
    assert backfill.params["dry_run"] is True
    assert incremental.max_active_runs == 1
    assert backfill.task_dict["fetch"].map_index_template == "{{ range_label }}"


# Parses the DAG folder with every socket refused and no connection, Variable or broker defined: a DAG file that
# reached for Kafka, S3, Spark, a connection or a Variable at parse time would fail to import here.
_PARSE_OFFLINE = """
import json, os, socket, sys
for key in [k for k in os.environ if k.startswith(("AIRFLOW_CONN_", "AIRFLOW_VAR_", "STREAMPROC_"))]:
    del os.environ[key]
def refuse(*args, **kwargs):
    raise OSError("parse-time network access")
socket.socket.connect = refuse
socket.create_connection = refuse
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": sorted(bag.dag_ids)}))
"""


def test_parsing_the_dags_does_no_work(dagbag: Any, tmp_path: Any) -> None:
    import json

    before = set(tmp_path.iterdir())
    result = subprocess.run(
        [sys.executable, "-c", _PARSE_OFFLINE, str(PROJECT_ROOT / "dags")],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed == {"errors": {}, "dags": sorted([BACKFILL, INCREMENTAL])}
    assert set(tmp_path.iterdir()) == before  # nothing written where it ran


def test_a_bad_param_is_refused_before_a_run_exists(dagbag: Any) -> None:
    from airflow.sdk.definitions.param import ParamsDict
    from airflow.sdk.exceptions import ParamValidationError

    params = ParamsDict(dagbag.get_dag(BACKFILL).params)
    good = {"application_id": "app", "topology": "pkg.module:factory", "store": "s3://bucket/x"}
    params.update(good)
    params.validate()
    for bad, message in (
        ({"start_offset": -5}, "minimum"),
        ({"start": "yesterday"}, "is not one of"),
        ({"topology": "not a reference"}, "does not match"),
        ({"dry_run": "maybe"}, "is not of type"),
        ({"wait_for_empty_group": "60 s"}, "does not match"),
    ):
        attempt = ParamsDict(dagbag.get_dag(BACKFILL).params)
        with pytest.raises(ParamValidationError, match=message):
            attempt.update({**good, **bad})
            attempt.validate()
