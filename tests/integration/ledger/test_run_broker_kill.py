"""The BROKER killed while ``streamproc run`` is in its hand-off (issue 27): recovery is still the same command run
again, or nothing at all when the run rode out a short outage, and the final state is a clean run's.

A dedicated broker (not the session's, which other tests share) is SIGKILLed while the run is held at a hand-off
point, the run let go on against it, and the broker restarted on its data on the same port:

- after a short outage: the run either finishes on its own, or gives up with one line saying the step, the cause
  and the one command that resumes it; that command then finishes it;
- once the run gave up (an outage longer than its client timeouts): the run fails with that one line and keeps its
  application's lock (its window is half handed off: it must never be planned anew); the same command, run again
  once the broker is back, takes the run over and finishes its hand-off.

Either way the independent checks of ``takeover.py`` hold: offsets at the input's ends, every key's read_committed
outputs exactly 1..n, a ``.checkpoint`` per task, one run in the ledger, succeeded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.ledger.takeover import Kill, dedicated_broker, killed_and_run_again

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "kill",
    [
        Kill(point="publish:0_0", broker=True, outage_s=3.0),  # (a) a short outage, between two tasks' transactions
        Kill(point="in-transaction:0_1", broker=True, outage_s=None),  # (b) down until the run gave up, mid-transaction
    ],
    ids=str,
)
def test_a_broker_killed_mid_handoff_ends_in_the_clean_runs_state(
    kill: Kill, unique: Callable[[str], str], tmp_path: Path
) -> None:
    with dedicated_broker(tmp_path) as broker:
        killed = killed_and_run_again(kill, broker.address, broker.admin, unique("broker-kill"), tmp_path,
                                      seed=len(str(kill)), broker_workdir=broker.workdir)  # fmt: skip
    assert killed, f"the run finished before the broker could be killed at {kill}"
