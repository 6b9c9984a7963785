"""Golden payloads: every tests/payloads/<scenario>/request.json, run through the real app, gives
response.json (and effects.json: the writes it asks for besides its answer), and its status is a
fixed point when fed back as parent.status, one that emits no Event."""

from __future__ import annotations

import copy
import pathlib

import pytest

from tests.record_payloads import load, post_with_effects, scenario_dirs

SCENARIOS = scenario_dirs()


def test_there_are_enough_scenarios_in_both_keyings() -> None:
    names = [folder.name for folder in SCENARIOS]
    assert len(names) >= 24
    assert sum(name.startswith("v1-") for name in names) >= 12
    assert sum(name.startswith("v2-") for name in names) >= 12


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_scenario(folder: pathlib.Path) -> None:
    assert (folder / "response.json").is_file(), "record it: .venv/bin/python -m tests.record_payloads"
    status, body, writes = post_with_effects(folder)
    assert status == 200
    assert body == load(folder, "response"), f"re-record with: .venv/bin/python -m tests.record_payloads {folder.name}"
    recorded = load(folder, "effects") if (folder / "effects.json").is_file() else []
    assert writes == recorded, f"re-record with: .venv/bin/python -m tests.record_payloads {folder.name}"
    fed = copy.deepcopy(load(folder, "request"))
    fed["parent"]["status"] = body["status"]
    status, again, writes_again = post_with_effects(folder, fed)
    assert status == 200 and again["status"] == body["status"]
    first = {detail["metadata"]["name"] for kind, detail in writes if kind == "event"}
    again_names = {detail["metadata"]["name"] for kind, detail in writes_again if kind == "event"}
    # A fixed point makes no new Event: at most a write it asks for again (a TTL delete, a force
    # delete not yet observed) names its Event again, under the same name, which the server refuses.
    assert again_names <= first, "a fixed point emits no new Event"
    assert all(kind != "event" or detail["reason"] in ("Deleting", "ForceDeletingPod") for kind, detail in writes_again)
