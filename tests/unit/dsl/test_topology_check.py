"""``streamproc topology check``: identical texts pass, the first difference is shown, copy artefacts are ignored."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamproc.cli import main
from streamproc.engine.describe_diff import first_difference
from streamproc_dev.conformance.dsl_programs import count

GOLDEN_COUNT = Path(__file__).resolve().parents[3] / "conformance" / "golden" / "count.txt"
REFERENCE = "streamproc_dev.conformance.dsl_programs:count"


def test_identical_describe_passes() -> None:
    result = CliRunner().invoke(main, ["topology", "check", "--describe", str(GOLDEN_COUNT), "--topology", REFERENCE])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "identical"


def test_the_first_difference_is_reported(tmp_path: Path) -> None:
    changed = GOLDEN_COUNT.read_text("utf-8").replace("(stores: [counts])", "(stores: [totals])")
    path = tmp_path / "app.txt"
    path.write_text(changed, "utf-8")
    result = CliRunner().invoke(
        main, ["--output", "json", "topology", "check", "--describe", str(path), "--topology", REFERENCE]
    )
    assert result.exit_code == 1
    payload = json.loads(result.output)
    assert payload["line"] == 5
    assert "totals" in payload["expected"] and "counts" in payload["actual"]
    assert payload["same_structure"] is False


def test_line_ends_and_trailing_blanks_of_a_copied_text_do_not_count() -> None:
    text = GOLDEN_COUNT.read_text("utf-8")
    copied = text.replace("\n", "  \r\n") + "\r\n\r\n"
    assert first_difference(copied, str(count().describe())) is None


def test_same_nodes_in_another_order_is_a_difference_that_says_so() -> None:
    text = str(count().describe())
    lines = text.split("\n")
    # swap the two processor blocks (3 lines each) of the sub-topology
    reordered = "\n".join(lines[:4] + lines[7:10] + lines[4:7] + lines[10:])
    difference = first_difference(reordered, text)
    assert difference is not None and difference.line == 5 and difference.same_structure
    assert "only their order differs" in str(difference)


def test_a_factory_that_cannot_be_imported_is_one_error_line() -> None:
    result = CliRunner().invoke(
        main, ["topology", "check", "--describe", str(GOLDEN_COUNT), "--topology", "no_such_module:build"]
    )
    assert result.exit_code == 1
    assert "cannot import no_such_module" in result.output
    assert "Traceback" not in result.output
