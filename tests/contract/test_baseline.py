"""Every golden payload answers byte for byte as it did when tests/payloads/_baseline.json was
recorded (on main just before the declared-core refactor): the raw body, not its parsed form, for
the request and for its status fed back. Re-record with ``python -m tests.record_baseline`` only for
a change meant to alter answers."""

from __future__ import annotations

import json

import pytest

from tests.record_baseline import BASELINE, raw_answers
from tests.record_payloads import scenario_dirs

RECORDED = json.loads(BASELINE.read_text())
SCENARIOS = scenario_dirs()


def test_the_baseline_covers_every_scenario() -> None:
    assert sorted(RECORDED) == [folder.name for folder in SCENARIOS]


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_answers_are_byte_for_byte_the_recorded_ones(folder) -> None:
    assert raw_answers(folder) == RECORDED[folder.name]
