"""Golden payloads: every tests/payloads/<scenario>/request.json, run through the real app, gives
response.json, and its status is a fixed point when fed back as parent.status."""

from __future__ import annotations

import copy
import pathlib

import pytest

from tests.record_payloads import load, post, scenario_dirs

SCENARIOS = scenario_dirs()


def test_there_are_enough_scenarios_in_both_keyings() -> None:
    names = [folder.name for folder in SCENARIOS]
    assert len(names) >= 24
    assert sum(name.startswith("v1-") for name in names) >= 12
    assert sum(name.startswith("v2-") for name in names) >= 12


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_scenario(folder: pathlib.Path) -> None:
    assert (folder / "response.json").is_file(), "record it: .venv/bin/python -m tests.record_payloads"
    status, body = post(folder)
    assert status == 200
    assert body == load(folder, "response"), f"re-record with: .venv/bin/python -m tests.record_payloads {folder.name}"
    fed = copy.deepcopy(load(folder, "request"))
    fed["parent"]["status"] = body["status"]
    status, again = post(folder, fed)
    assert status == 200 and again["status"] == body["status"]
