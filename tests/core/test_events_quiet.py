"""``hooks.core.events.quiet``: the first check that an answer makes no Event (issue 32 item 4).
``transition_events`` answers ``[]`` at once when it holds; it must never hide an Event, so it is
held to the Events made in full (``_events``) on every recorded payload (and its fixed point fed
back) and on random statuses."""

from __future__ import annotations

import copy
import pathlib
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import podread
from hooks.core import events
from hooks.core.actions import DeleteJob, ForceDeletePod
from hooks.core.decide import decide
from hooks.core.lifecycle import Move, Transition
from hooks.core.observed import parse_request
from hooks.core.status import Condition, Status
from hooks.core.vocab import Phase
from tests.record_payloads import load, scenario_dirs

SCENARIOS = scenario_dirs()


def _same_events(prior: Status, status: dict[str, Any], actions: tuple[Any, ...], children: tuple[str, ...] | None,
                 transitions: tuple[Transition, ...]) -> list[events.Event]:
    """Asserts that ``transition_events`` is what ``_events`` makes, and that ``quiet`` holds only
    when that is none; returns the Events."""
    full = events._events(prior, status, actions, children, transitions)
    assert events.transition_events(prior, status, actions, children, transitions=transitions) == full
    if events.quiet(prior, status, actions, transitions):
        assert full == []
    return full


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_quiet_hides_no_event_of_a_recorded_payload(folder: pathlib.Path) -> None:
    meta = load(folder, "meta")
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
    request = load(folder, "request")
    for _ in ("as recorded", "its answer fed back"):
        observed = parse_request(request, meta["hook"])
        decision = decide(observed, podread.reader_from_snapshot(load(folder, "pods")), now)
        status = decision.response["status"]
        children = tuple(str(c["metadata"]["name"]) for c in decision.response.get("children") or ())
        _same_events(observed.status, status, decision.actions, children, decision.transitions)
        request = copy.deepcopy(request)
        request["parent"]["status"] = status


def test_the_typical_answer_is_quiet() -> None:
    """A running Job's answer that changes no phase, condition or workload: no Event, said at once."""
    prior = Status(phase="Running", workload="llama-0")
    transitions = (Transition(Move.RUN, "Running", "Running", (0, 0), None),)
    assert events.quiet(prior, {"phase": "Running", "workload": "llama-0", "conditions": []}, (), transitions)


def test_an_event_of_a_turn_quiet_does_not_watch_cannot_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """``WATCHED`` is the one list of the conditions whose turn makes an Event: ``_events`` refuses to
    ask about a turn of any other type, so an Event added there without ``quiet`` seeing it fails
    every answer that is not quiet instead of being hidden by ``quiet`` in production."""
    monkeypatch.setattr(events, "WATCHED", events.WATCHED - {"DrainStuck"})
    prior = Status(phase="Running", workload="llama-0")
    with pytest.raises(ValueError, match="DrainStuck"):
        events._events(prior, {"phase": "Running", "workload": "llama-1", "conditions": []}, (), None, ())


TYPES = ("Drained", "DrainStuck", "DeadlineExceeded", "GangScheduled", "Ready", "StatusMismatch")
STATUSES = ("True", "False", "Unknown")
WORDS = ("", "a", "Unschedulable", "GangUnavailable", "GangMismatch")
PHASES = [phase.value for phase in Phase] + ["Weird"]


def _condition_values() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.sampled_from(TYPES), "status": st.sampled_from(STATUSES)},
                                 optional={"reason": st.sampled_from(WORDS), "message": st.sampled_from(WORDS),
                                           "lastTransitionTime": st.sampled_from(("2026-01-01T00:00:00Z",
                                                                                  "2026-01-02T00:00:00Z"))})


def _checkpoint_values() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={
        "id": st.sampled_from(("", "r1", "r2")), "outcome": st.sampled_from(("", "Acknowledged", "GraceExpired",
                                                                              "Cancelled", "WorkloadEnded", "Other")),
        "ignored": st.sampled_from(("", "r0", "r9")), "attempt": st.integers(0, 2)})


TRANSITIONS = st.builds(Transition, st.sampled_from(list(Move)), st.sampled_from(PHASES), st.sampled_from(PHASES),
                        st.tuples(st.integers(0, 2), st.integers(0, 2)), st.none())
ACTIONS = st.sampled_from([(), (), (), (DeleteJob("ns", "j", "u", "ttl"),),
                           (ForceDeletePod("ns", "p", "u", "n", "gone"),)])


@settings(max_examples=600, deadline=None)
@given(prior_conditions=st.lists(_condition_values(), max_size=4), conditions=st.lists(_condition_values(), max_size=4),
       prior_workload=st.sampled_from(("", "j-0", "j-1")), workload=st.sampled_from(("", "j-0", "j-1")),
       phase=st.sampled_from(PHASES), prior_checkpoint=_checkpoint_values(), checkpoint=_checkpoint_values(),
       transitions=st.lists(TRANSITIONS, max_size=2), actions=ACTIONS, held=st.booleans())
def test_quiet_hides_no_event_of_random_statuses(prior_conditions: list[dict[str, Any]],
                                                 conditions: list[dict[str, Any]], prior_workload: str, workload: str,
                                                 phase: str, prior_checkpoint: dict[str, Any],
                                                 checkpoint: dict[str, Any], transitions: list[Transition],
                                                 actions: tuple[Any, ...], held: bool) -> None:
    prior = Status(phase="Running", workload=prior_workload, checkpoint=prior_checkpoint,
                   conditions=tuple(Condition(type=c["type"], status=c["status"], reason=c.get("reason", ""),
                                              message=c.get("message", "")) for c in prior_conditions))
    status = {"phase": phase, "attempt": 1, "workload": workload, "conditions": conditions, "checkpoint": checkpoint}
    _same_events(prior, status, actions, (workload,) if held else (), tuple(transitions))
