"""Chaos: ``streamproc run`` killed at a point drawn at random across its steps, then the same command run again,
ends in the state a clean run ends in (issue 27).

The kill is the whole session at a random moment of plan, fetch, process or hand-off, or one of the hand-off's kill
points on a random task, or (one trial in :data:`BROKER_KILLS`) the broker, a dedicated one, killed at one of those
hand-off points and restarted after a short outage or once the run gave up; exactly-once or at-least-once (whose
outputs may repeat a count but never miss one).
``make test`` runs a few trials, printing the seed (shown with a failure); ``make chaos TRIALS=N [SEED=S]`` runs
many, or replays one.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.ledger.takeover import PARTITIONS, Kill, dedicated_broker, killed_and_run_again

pytestmark = pytest.mark.integration

#: ``make chaos TRIALS=N`` sets these; ``make test`` runs a few trials, each seed printed (and shown on failure)
CHAOS_TRIALS = int(os.environ.get("STREAMPROC_CHAOS_TRIALS", "2"))
CHAOS_SEED = int(os.environ.get("STREAMPROC_CHAOS_SEED") or random.SystemRandom().randrange(2**32))
#: The share of trials that kill the broker rather than the run (each starts a broker of its own and waits out the
#: run's client timeouts, so they are the dearest trials).
BROKER_KILLS = 0.25


def _drawn_kill(rng: random.Random) -> Kill:
    """A kill drawn across the steps: the whole session at a random moment of plan, fetch, process or hand-off,
    or one of the hand-off's kill points on a random task, or the broker at one of those points; exactly-once or
    at-least-once."""
    guarantee = rng.choice(["exactly_once_v2", "at_least_once"])
    point = f"{rng.choice(['in-transaction', 'publish', 'checkpoint'])}:0_{rng.randrange(PARTITIONS)}"
    if rng.random() < BROKER_KILLS:
        outage_s = rng.choice([rng.uniform(0.5, 5.0), None])  # a short outage, or down until the run gave up
        return Kill(point=point, broker=True, outage_s=outage_s, guarantee=guarantee)
    if rng.random() < 0.5:
        return Kill(stage=rng.choice(["plan", "fetch", "process", "handoff"]), delay_s=rng.uniform(0, 1.5),
                    guarantee=guarantee)  # fmt: skip
    return Kill(point=point, guarantee=guarantee)


@pytest.mark.parametrize("trial", range(CHAOS_TRIALS))
def test_chaos_a_run_killed_at_a_random_point_is_finished_by_the_same_command(
    trial: int, kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    rng = random.Random(f"{CHAOS_SEED}/{trial}")
    kill = _drawn_kill(rng)
    print(f"chaos trial {trial}: STREAMPROC_CHAOS_SEED={CHAOS_SEED}, kill at {kill}")  # noqa: T201 - the seed
    seed = rng.randrange(2**32)
    if not kill.broker:
        killed_and_run_again(kill, kafka_broker, admin, unique("chaos"), tmp_path, seed=seed)
        return
    with dedicated_broker(tmp_path) as broker:
        killed_and_run_again(kill, broker.address, broker.admin, unique("chaos"), tmp_path, seed=seed,
                             broker_workdir=broker.workdir)  # fmt: skip
