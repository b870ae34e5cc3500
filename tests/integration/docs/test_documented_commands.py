"""The commands the README and the docs show really work.

- Every ``streamproc`` (and ``python -m streamproc_dev``) command line in the shell blocks of the README, the user
  guide, ``docs/operations.md`` and ``docs/semantics.md`` parses with click, with the options it shows: an option
  that was renamed or removed, a wrong choice or a missing required option fails.
- The user guide's ``run`` blocks are executed in order, in one shell, in an empty directory, against the session's
  real broker holding the guide's example application (``orders`` with 200 orders, ``customer-totals``): plan with
  a first run's internal topics, fetch, verify, process on Spark, hand off, the hand-off's status and re-run, a
  ``streamproc run`` dry run and the run ledger. The results are then checked on the broker and the state dir.

Blocks that need what a test cannot give (a cluster of yours, a running Airflow, ``make demo``) are marked ``parse``
with the reason (``doc_blocks``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROJECT_ROOT
from tests.integration.docs.doc_blocks import Block, blocks, command_lines, parse

pytestmark = pytest.mark.integration

README = PROJECT_ROOT / "README.md"
GUIDE = PROJECT_ROOT / "docs" / "user-guide.md"
#: the documents whose command lines are parsed; only the guide's ``run`` blocks are executed
DOCS = (README, GUIDE, PROJECT_ROOT / "docs" / "operations.md", PROJECT_ROOT / "docs" / "semantics.md")


def shell_blocks(path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.lang in ("sh", "bash", "shell")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_shell_block_is_run_or_parsed(doc: Path) -> None:
    found = shell_blocks(doc)
    assert found, f"{doc.name} has no shell block"
    unmarked = [f"{doc.name}:{b.line}" for b in found if b.marker not in ("run", "parse")]
    assert not unmarked, f"shell blocks without <!-- run --> or <!-- parse: reason --> above them: {unmarked}"
    reasonless = [f"{doc.name}:{b.line}" for b in found if b.marker == "parse" and not b.note]
    assert not reasonless, f"<!-- parse --> blocks must say why they cannot run: {reasonless}"
    if doc != GUIDE:  # the runnable commands are the guide's; the other pages' blocks start services or name yours
        assert not [b for b in found if b.marker == "run"], f"{doc.name}: run blocks belong in docs/user-guide.md"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_line_parses_with_the_options_it_shows(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # files the commands name are created here, never in the repository
    monkeypatch.setenv("STREAMPROC_BOOTSTRAP", "127.0.0.1:9")  # what `export STREAMPROC_BOOTSTRAP=…` gives
    monkeypatch.setenv("STREAMPROC_LEDGER_URL", "ledger.sqlite")
    parsed: dict[str, int] = defaultdict(int)
    failures = []
    for block in shell_blocks(doc):
        for program, module, argv in command_lines(block.body):
            group = importlib.import_module(module).main
            try:
                path = parse(program, group, argv, tmp_path)
            except Exception as exc:  # click's UsageError, BadParameter, …: the doc shows a command that fails
                failures.append(f"{doc.name}:{block.line}: {' '.join(argv)}: {type(exc).__name__}: {exc}")
            else:
                parsed[" ".join(path)] += 1
    assert not failures, "\n".join(failures)
    assert parsed or doc not in (README, GUIDE), f"{doc.name} shows no command line"
    if doc == GUIDE:  # the guide shows every command at least once
        expected = {
            "streamproc plan", "streamproc fetch", "streamproc verify", "streamproc process", "streamproc handoff",
            "streamproc handoff install-state", "streamproc run", "streamproc ledger runs", "streamproc ledger show",
        }  # fmt: skip
        assert expected <= set(parsed), f"commands the guide never shows: {sorted(expected - set(parsed))}"


# --------------------------------------------------------------------------------------- the guide's run blocks
APPLICATION = "orders-app"
ORDERS, TOTALS = "orders", "customer-totals"


def seed_the_example_application(kafka_broker: str, admin: Any) -> dict[str, int]:
    """The guide's example: ``orders`` (2 partitions, 200 orders keyed by customer, JSON amounts) and the output
    topic; returns the expected total per customer."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    for future in admin.create_topics([NewTopic(ORDERS, 2, 1), NewTopic(TOTALS, 2, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random"})
    totals: dict[str, int] = defaultdict(int)
    for i in range(200):
        customer, amount = f"customer-{i % 7}", i % 13 + 1
        producer.produce(ORDERS, key=customer, value=json.dumps({"amount": amount}),
                         timestamp=1_700_000_000_000 + i * 1000)  # fmt: skip
        totals[customer] += amount
    assert producer.flush(30) == 0
    return dict(totals)


def last_total_per_customer(kafka_broker: str) -> dict[str, int]:
    """The last total per customer on ``customer-totals``, read_committed, to the end of both partitions."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka_broker, "group.id": "docs-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})  # fmt: skip
    try:
        consumer.assign([TopicPartition(TOTALS, p, 0) for p in (0, 1)])
        totals: dict[str, int] = {}
        at_end: set[int] = set()
        while at_end != {0, 1}:
            message = consumer.poll(30)
            assert message is not None, f"{TOTALS}: nothing within 30 s, partitions at their end: {at_end}"
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            elif error is None:
                totals[message.key().decode()] = int.from_bytes(message.value(), "big", signed=True)
        return totals
    finally:
        consumer.close()


def committed_offsets(admin: Any) -> dict[str, int]:
    # streamproc's exact read: confluent-kafka's list_consumer_group_offsets reads Kafka Streams' metadata past its end
    from streamproc.kafka.cluster import read_committed_offsets

    committed, pending = read_committed_offsets(admin, APPLICATION, wait_s=30)
    assert not pending, "the hand-off's transaction is still pending"
    return {f"{tp.topic}-{tp.partition}": c.offset for tp, c in committed.items()}


def test_the_user_guides_commands_run_against_a_real_broker(kafka_broker: str, admin: Any, tmp_path: Path) -> None:
    expected_totals = seed_the_example_application(kafka_broker, admin)
    found = blocks(GUIDE)
    for block in (b for b in found if b.marker == "file"):
        (tmp_path / block.note).write_text(block.body, encoding="utf-8")
    script = "set -euo pipefail\n" + "".join(
        f"echo '>>> docs/user-guide.md:{b.line}'\n{b.body}" for b in found if b.marker == "run"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMPROC_", "AWS_", "PYTHONPATH"))}
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    environment["STREAMPROC_BOOTSTRAP"] = kafka_broker  # what the guide's `export STREAMPROC_BOOTSTRAP=…` sets
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True,
                            timeout=600)  # fmt: skip
    assert result.returncode == 0, f"the guide's commands failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"

    out = result.stdout
    assert "2 task(s), 200 records" in out  # process: every order processed
    assert "published 2 task(s), wrote 2 checkpoint(s)" in out  # the hand-off
    assert "4 step(s) already done" in out  # its re-run did nothing
    assert f"{APPLICATION}  cli       dry_run" in out  # the run ledger lists the dry run
    ends = {f"{ORDERS}-{p}": admin_end(kafka_broker, p) for p in (0, 1)}
    assert sum(ends.values()) == 200
    assert committed_offsets(admin) == ends  # the application would resume at the end of what was processed
    for task in ("0_0", "0_1"):
        assert (tmp_path / "state" / APPLICATION / task / ".checkpoint").is_file()
    assert last_total_per_customer(kafka_broker) == expected_totals


def admin_end(kafka_broker: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka_broker, "group.id": "docs-ends"})
    try:
        end: int = consumer.get_watermark_offsets(TopicPartition(ORDERS, partition), timeout=30)[1]
        return end
    finally:
        consumer.close()
