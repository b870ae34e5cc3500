"""ordering.md §11 q7 (PE-1): a ``ClassCastException`` in a child node, Kafka Streams 4.2.2 vs streamproc.

``ClassCastRouting`` (``conformance/``) runs ``source -> parent -> [cast, sibling]`` and ``source -> [cast,
sibling]`` on Kafka's own ``TopologyTestDriver`` with a recording wrapper around the real processing handlers;
:func:`streamproc_dev.conformance.ordering.class_cast_routing` runs the same topology on streamproc's driver, where a
``ClassCastError`` plays the ``ClassCastException``. The two must agree on who handles what, with which exception, and
what runs afterwards. Java and Python names differ by design and are mapped: ``StreamsException`` =
``StreamsError``, ``ClassCastException`` = ``ClassCastError``, ``java.lang.String`` = ``str``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from streamproc_dev.conformance.oracle import ensure_oracle_jar
from streamproc_dev.conformance.ordering import class_cast_routing

CASES = {
    "child_of_processor_continue": {"with_parent": True, "resume": True},
    "child_of_processor_fail": {"with_parent": True, "resume": False},
    "child_of_source_continue": {"with_parent": False, "resume": True},
}
JAVA_TO_PYTHON = {"StreamsException": "StreamsError", "ClassCastException": "ClassCastError", None: None}


@pytest.fixture(scope="module")
def kafka_answer() -> dict[str, Any]:
    java = shutil.which("java")
    assert java is not None, "java is not on PATH; install a JDK 17"
    jar = ensure_oracle_jar()
    proc = subprocess.run(
        [java, "-cp", str(jar), "dev.streamproc.oracle.ClassCastRouting"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


def _python_message(message: str) -> str:
    return message.replace("java.lang.String", "str")


def _root_cause(error: dict[str, Any]) -> str | None:
    cause: str | None = error["cause_cause"] or error["cause"]
    return cause


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamproc_routes_like_kafka_streams(kafka_answer: dict[str, Any], case: str) -> None:
    kafka = kafka_answer[case]
    mine = class_cast_routing(**CASES[case])
    assert mine["events"] == kafka["events"]
    assert mine["dropped_records_total"] == kafka["dropped_records_total"]
    expected_calls = [
        call
        | {
            "exception": JAVA_TO_PYTHON[call["exception"]],
            "cause": JAVA_TO_PYTHON[call["cause"]],
            "message": _python_message(call["message"]),
        }
        for call in kafka["handler_calls"]
    ]
    assert mine["handler_calls"] == expected_calls
    assert [(e["value"], JAVA_TO_PYTHON[e["exception"]], _python_message(e["message"])) for e in kafka["errors"]] == [
        (e["value"], e["exception"], e["message"]) for e in mine["errors"]
    ]
    # The innermost cause is the cast itself. (streamproc adds the task id to a StreamsError by wrapping it once
    # more, so its chain for a child of the source is one link longer than Kafka's, which sets the id in place.)
    assert [JAVA_TO_PYTHON[_root_cause(e)] for e in kafka["errors"]] == [_root_cause(e) for e in mine["errors"]]


def test_kafka_streams_hands_the_cast_to_the_parent_as_a_streams_exception(kafka_answer: dict[str, Any]) -> None:
    """The facts of q7 as Kafka Streams 4.2.2 shows them (they fail if a Kafka upgrade changes the routing)."""
    resume = kafka_answer["child_of_processor_continue"]
    assert {(c["processor_node_id"], c["exception"], c["cause"], c["response"]) for c in resume["handler_calls"]} == {
        ("parent", "StreamsException", "ClassCastException", "RESUME")
    }
    assert resume["handler_calls"][0]["message"].startswith("ClassCastException invoking processor: cast.")
    assert "sibling:a" not in resume["events"] and "parent-after-forward:a" not in resume["events"]
    fail = kafka_answer["child_of_processor_fail"]
    assert fail["errors"][0]["message"] == (
        "Exception caught in process. taskId=0_0, processor=parent, topic=input, partition=0, offset=0"
    )
    assert kafka_answer["child_of_source_continue"]["handler_calls"] == []
