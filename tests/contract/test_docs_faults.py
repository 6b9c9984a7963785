"""The fault table of tests/cluster/README.md is the fault suite's own (issue 34 item 6): one row per
fault of ``tests/cluster/faults.py``, in its order, with its provocation and its expected class, and the
goals stated."""

from __future__ import annotations

from pathlib import Path

from tests.cluster.faults import CLASSES, FAULTS

README = Path(__file__).resolve().parents[2] / "tests" / "cluster" / "README.md"
HEADER = "| fault | provoked by | expected class | classified | budget spent |"


def fault_rows() -> list[list[str]]:
    """The cells of the rows of the README's fault table (the table under ``HEADER``)."""
    lines = README.read_text().splitlines()
    assert HEADER in lines, f"{README} has no fault table ({HEADER})"
    rows = []
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_readme_table_lists_every_fault_of_the_suite_with_its_provocation_and_class() -> None:
    rows = fault_rows()
    assert [row[0] for row in rows] == [fault.title for fault in FAULTS]
    assert [row[1] for row in rows] == [fault.provoked_by for fault in FAULTS]
    assert [row[2] for row in rows] == [fault.expected for fault in FAULTS]
    assert all(row[2] in CLASSES for row in rows)
    assert all(len(row) == 5 and row[3] and row[4] for row in rows), "every row says what was classified and spent"


def test_the_readme_states_the_goals() -> None:
    text = README.read_text()
    for goal in ("at least 95 % classified as expected", "at most 5 % `unknown`",
                 "zero preempted or node ends charged to the user budget"):
        assert goal in text, goal
