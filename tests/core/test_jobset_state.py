"""``hooks.core.evidence.jobset_state`` builds no set of a JobSet's conditions when it has none (issue
32 item 4): held equal to the former reading (kept here) on random JobSet statuses, with and without
conditions, ``terminalState`` or a status at all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.core.evidence import COMPLETED, FAILED, jobset_state


def _former(jobset: Mapping[str, Any]) -> str:
    status = jobset.get("status") or {}
    true_types = {c.get("type") for c in status.get("conditions") or () if c.get("status") == "True"}
    terminal = status.get("terminalState")
    if "Failed" in true_types or terminal == "Failed":
        return FAILED
    if "Completed" in true_types or terminal == "Completed":
        return COMPLETED
    return ""


CONDITION = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["Failed", "Completed", "StartupPolicyCompleted", "Suspended", None]),
    "status": st.sampled_from(["True", "False", "Unknown", None])})
STATUS = st.one_of(st.none(), st.just({}), st.fixed_dictionaries({}, optional={
    "conditions": st.one_of(st.none(), st.just([]), st.lists(CONDITION, max_size=4)),
    "terminalState": st.sampled_from(["Failed", "Completed", "", None]), "restarts": st.integers(0, 2)}))


@settings(max_examples=600, deadline=None)
@given(status=STATUS)
def test_the_state_is_the_former_reading(status: dict[str, Any] | None) -> None:
    jobset: dict[str, Any] = {"metadata": {"name": "j-0"}}
    if status is not None:
        jobset["status"] = status
    assert jobset_state(jobset) == _former(jobset)
