"""A killed ``streamproc run`` is recovered by running the same command again (issue 27, point 1).

The run is killed with SIGKILL of its whole process session (the CLI, Spark's JVM and its Python workers) in its
process step, or by the hand-off's own kill points inside a task's transaction, after a task's transaction was
committed and recorded, and after a task's checkpoint. Then the very command that was killed runs again, with no
``ledger finish`` and no ``handoff --plan``: it takes the interrupted run over (its process is gone), resumes it
at the step it died in with its plan, and ends in the state a clean run ends in: the group's offsets at the input's
ends, every key's read_committed outputs exactly 1..n, a ``.checkpoint`` per task, and one run in the ledger,
succeeded, with its lag after the hand-off.

``test_run_chaos.py`` draws the kill at random.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.ledger.takeover import Kill, killed_and_run_again

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "kill",
    [Kill(stage="process"), Kill(point="in-transaction:0_1"), Kill(point="publish:0_0"), Kill(point="checkpoint:0_1")],
    ids=str,
)
def test_the_same_command_run_again_finishes_a_killed_run_exactly_once(
    kill: Kill, kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    killed = killed_and_run_again(kill, kafka_broker, admin, unique("takeover"), tmp_path, seed=len(str(kill)))
    assert killed, f"the run finished before it could be killed at {kill}"
