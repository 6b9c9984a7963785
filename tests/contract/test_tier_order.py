"""The cluster tier's files are handed to its workers longest first (tests/cluster/order.py), and
``make test-cluster`` keeps that order (``--no-loadscope-reorder``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.order import FILE_SECONDS, TIER, ordered

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Collected:
    path: Path
    name: str


def test_every_tier_file_has_a_figure_and_every_figure_a_file() -> None:
    """A file left out would be handed out last whatever it takes: the tail the order removes."""
    assert set(FILE_SECONDS) == {path.name for path in TIER.glob("test_*.py")}


def test_the_tier_goes_longest_first_and_every_other_test_keeps_its_place() -> None:
    longest = max(FILE_SECONDS, key=FILE_SECONDS.__getitem__)
    shortest = min(FILE_SECONDS, key=FILE_SECONDS.__getitem__)
    elsewhere = ROOT / "tests" / "core" / "test_x.py"
    items = [Collected(elsewhere, "a"), Collected(TIER / shortest, "s1"), Collected(TIER / "test_new.py", "n"),
             Collected(TIER / shortest, "s2"), Collected(elsewhere, "b"), Collected(TIER / longest, "l1"),
             Collected(TIER / longest, "l2")]
    assert [item.name for item in ordered(items)] == ["a", "l1", "l2", "s1", "b", "s2", "n"]


def test_make_test_cluster_keeps_the_collection_order() -> None:
    """Without ``--no-loadscope-reorder`` xdist hands out the files with the most tests first."""
    makefile = (ROOT / "Makefile").read_text()
    command = next(line for line in makefile.splitlines() if "-m cluster" in line and "pytest" in line)
    assert re.search(r"--dist loadfile\b", command) and "--no-loadscope-reorder" in command, command
