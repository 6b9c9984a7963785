"""``hooks.core.evidence.jobset_state``: a JobSet's end from its conditions or ``terminalState``; one
without conditions (a running one, as often as not) is answered without building a set of them
(issue 32 item 4). Failed wins over Completed, a condition counts only when its status is "True"."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.core.evidence import COMPLETED, FAILED, jobset_state


def _condition(type_: str, status: str = "True") -> dict[str, str]:
    return {"type": type_, "status": status}


@pytest.mark.parametrize(("status", "state"), [
    (None, ""),
    ({}, ""),
    ({"conditions": None}, ""),
    ({"conditions": []}, ""),
    ({"conditions": [], "terminalState": "Failed"}, FAILED),
    ({"terminalState": "Completed"}, COMPLETED),
    ({"terminalState": ""}, ""),
    ({"conditions": [_condition("Failed")]}, FAILED),
    ({"conditions": [_condition("Completed")]}, COMPLETED),
    ({"conditions": [_condition("Failed", "False")]}, ""),
    ({"conditions": [_condition("Completed", "Unknown")], "terminalState": "Failed"}, FAILED),
    ({"conditions": [_condition("Completed"), _condition("Failed")]}, FAILED),
    ({"conditions": [_condition("Failed")], "terminalState": "Completed"}, FAILED),
    ({"conditions": [_condition("StartupPolicyCompleted"), _condition("Suspended")]}, ""),
    ({"conditions": [{"status": "True"}, {"type": "Completed"}]}, ""),
])
def test_the_state_of_a_jobset(status: dict[str, Any] | None, state: str) -> None:
    jobset: dict[str, Any] = {"metadata": {"name": "j-0"}}
    if status is not None:
        jobset["status"] = status
    assert jobset_state(jobset) == state
