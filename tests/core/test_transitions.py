"""The named transition (issue 32): a decision says which arrows of the lifecycle's table it took
(``Decision.transitions``, ``hooks.core.lifecycle.path``); the Events of a phase change are rendered
from them (``hooks.core.events``), never from a diff of two statuses' phases; the history records
how the teardown's move ends the attempt (``lifecycle.ENDS``), the one home of ``Teardown.ends``."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from hooks.core import history, lifecycle
from hooks.core.decide import decide
from hooks.core.events import transition_events
from hooks.core.lifecycle import START, Move, Transition, path
from hooks.core.observed import parse_request
from hooks.core.rows import current, deadline, kueue, teardown
from hooks.core.vocab import EndCause, Phase
from hooks.core.work import Context, Work
from tests.core.test_decide_policies import NOW
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod

ROOT = Path(__file__).resolve().parents[2]


def workers(attempt: int, n: int = 2, phase: str = "Running") -> list[dict[str, Any]]:
    """Worker pods of ``train-<attempt>`` with every label the real ones carry."""
    pods = [make_pod(f"train-{attempt}-worker-0-{i}", job="train", workload=f"train-{attempt}",
                     replicated_job="worker", phase=phase) for i in range(n)]
    for pod in pods:
        pod["metadata"]["labels"]["nvcre.nvidia.com/attempt"] = str(attempt)
    return pods


def moves(transitions: tuple[Transition, ...]) -> list[tuple[str, str, str, tuple[int, int]]]:
    return [(t.move, t.source, t.target, t.attempts) for t in transitions]


# ---- the path: the arrows one decision took -------------------------------------------------------------

def test_a_fixed_point_takes_no_arrow_and_a_declared_self_loop_is_one() -> None:
    assert path(("Suspended", 0), ("Suspended", 0), Move.SUSPEND, ("Suspended", 0), False) == ()
    assert path(("Pending", 0), ("Pending", 0), Move.RUN, ("Pending", 0), False) == ()
    assert path(("Pending", 0), ("Pending", 0), "", ("Running", 0), False) == (), "a row that names no move"
    (loop,) = path(("Running", 0), ("Running", 0), Move.RUN, ("Running", 0), False)
    assert loop.arrow is not None and loop.arrow.words.startswith("every pod finished")


def test_a_teardown_whose_barrier_passed_at_once_takes_both_of_its_arrows() -> None:
    """Running -> Suspended in one call is the table's Running -> Suspending -> Suspended."""
    steps = path(("Running", 2), ("Running", 2), Move.SUSPEND, ("Suspended", 2), False)
    assert moves(steps) == [(Move.SUSPEND, "Running", "Suspending", (2, 2)), (Move.SUSPEND, "Suspending", "Suspended",
                                                                            (2, 2))]
    assert all(step.arrow is not None for step in steps)
    finalized = path(("Pending", 0), ("Pending", 0), Move.DELETE, ("Terminating", 0), True)
    assert moves(finalized) == [(Move.DELETE, "Pending", "Terminating", (0, 0)),
                                (Move.DELETE, "Terminating", START, (0, 0))]


def test_a_lost_step_to_the_next_attempt_is_named_before_the_row_s_move() -> None:
    steps = path(("Restarting", 1), ("Pending", 2), Move.FAIL, ("Restarting", 2), False)
    assert moves(steps) == [(Move.NEXT_ATTEMPT, "Restarting", "Pending", (1, 2)),
                            (Move.FAIL, "Pending", "Restarting", (2, 2))]


def test_a_status_the_hooks_did_not_write_makes_a_transition_the_table_does_not_show() -> None:
    """No status beside a JobSet that already failed, a phase written by hand: still the row's move,
    said as such (``arrow`` ``None``), so its Event is not lost."""
    (lost,) = path(("", 0), ("", 0), Move.FAIL, ("Restarting", 0), False)
    assert (lost.source, lost.target, lost.arrow) == (START, "Restarting", None)
    (forged,) = path(("x", 0), ("x", 0), Move.COMPLETE, ("Succeeded", 0), False)
    assert (forged.source, forged.arrow) == ("x", None)


# ---- the Events, rendered from the transition ---------------------------------------------------------

def test_the_events_read_no_phase_of_the_prior_status() -> None:
    """``hooks.core.events`` compares no two statuses' phases: it reads the prior status' conditions
    and workload only, and a phase change's Event from the decision's named transitions."""
    tree = ast.parse((ROOT / "hooks/core/events.py").read_text())
    read = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "phase"]
    assert read == [], f"hooks/core/events.py reads a .phase at lines {read}"
    assert "transitions" in {arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                             and node.name == "transition_events" for arg in node.args.kwonlyargs}


def test_a_phase_change_no_move_names_makes_no_event() -> None:
    """The same two statuses, with and without the move: the Event is the transition's, not the diff's."""
    prior = parse_request(job_request(status={"phase": "Running", "attempt": 0}), "sync").status
    status = {"phase": "Succeeded", "attempt": 0, "conditions": []}
    assert transition_events(prior, status) == []
    completed = path(("Running", 0), ("Running", 0), Move.COMPLETE, ("Succeeded", 0), False)
    assert [e.reason for e in transition_events(prior, status, transitions=completed)] == ["Succeeded"]


def test_an_adopted_attempt_that_failed_restarts_with_its_own_event() -> None:
    """Restarting at attempt 1, its write to attempt 2 lost, and attempt 2's JobSet failed too: the
    status says Restarting before and after (no phase differs), but the decision made two moves, the
    lost next attempt and attempt 2's failure, so attempt 2's restart has its Event (a diff of the
    two phases saw none)."""
    request = job_request(spec=job_spec(max_restarts=3), jobsets=[jobset_child("train", 2, state="Failed")],
                          status={"phase": "Restarting", "attempt": 1, "restarts": 1, "workload": "",
                                  "startTime": "2025-12-31T23:31:00Z"})
    observed = parse_request(request, "sync")
    decision = decide(observed, FakeReader(live_pods=workers(2, phase="Failed")), NOW)
    status = decision.response["status"]
    assert (observed.status.phase, status["phase"], status["attempt"]) == ("Restarting", "Restarting", 2)
    assert moves(decision.transitions) == [(Move.NEXT_ATTEMPT, "Restarting", "Pending", (1, 2)),
                                           (Move.FAIL, "Pending", "Restarting", (2, 2))]
    events = transition_events(observed.status, status, decision.actions, transitions=decision.transitions)
    restarting = [e for e in events if e.reason == "Restarting"]
    assert [(e.key, e.note.split(" because")[0]) for e in restarting] == [("Restarting/2", "restarting attempt 2")]


def test_a_resume_whose_write_was_lost_is_named_and_keeps_its_key() -> None:
    """Suspended at attempt 0, its resume to attempt 1 happened (train-1 runs): the lost move is the
    next attempt, and its Event has the key the lost answer's had (``Resumed/1``: one Event)."""
    request = job_request(spec=job_spec(), jobsets=[jobset_child("train", 1)],
                          status={"phase": "Suspended", "attempt": 0, "workload": "",
                                  "startTime": "2025-12-31T23:31:00Z"})
    observed = parse_request(request, "sync")
    decision = decide(observed, FakeReader(workers(1), live_pods=workers(1)), NOW)
    assert decision.response["status"]["attempt"] == 1
    assert moves(decision.transitions)[0] == (Move.NEXT_ATTEMPT, "Suspended", "Pending", (0, 1))
    events = transition_events(observed.status, decision.response["status"], transitions=decision.transitions)
    assert [(e.reason, e.key) for e in events][:1] == [("Resumed", "Resumed/1")]


# ---- the history records the teardown's move ---------------------------------------------------------

def test_how_a_teardown_ends_the_attempt_is_its_move_s_in_the_table() -> None:
    declared = (teardown.DELETE, teardown.SUSPEND, kueue.EVICTION, deadline.DEADLINE, current.NEXT_ATTEMPT)
    assert [t.ends for t in declared] == [lifecycle.ENDS.get(t.move) for t in declared] == [
        EndCause.DELETED, EndCause.SUSPENDED, EndCause.EVICTED, EndCause.DEADLINE_EXCEEDED, None]
    assert "ends" not in {f for f in lifecycle.Teardown.__dataclass_fields__}, "declared once: lifecycle.ENDS"


@pytest.mark.parametrize(("move", "outcome"), [(Move.SUSPEND, "Suspended"), (Move.DELETE, "Deleted"), (None, None)])
def test_the_history_ends_the_attempt_as_the_move_that_ended_it(move: Move | None, outcome: str | None) -> None:
    request = job_request(spec=job_spec(), jobsets=[jobset_child("train", 0)],
                          status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    ctx = Context(parse_request(request, "sync"), FakeReader(), NOW)
    work = Work.of(ctx.observed.status, phase=Phase.SUSPENDING, attempts=[])
    history.update(ctx, work, attempt=0, ended_by=move)
    assert [entry.get("outcome") for entry in work.attempts] == [outcome]


def test_a_lost_resume_is_said_even_when_the_adopted_attempt_already_ended() -> None:
    """The resume happened (train-1 exists) and train-1 completed before the hooks saw it: both
    moves are said, the lost answer's ``Resumed/1`` (one Event if it was sent) and ``Succeeded/1``;
    the diff of the two phases (Suspended, Succeeded) said only the second."""
    request = job_request(spec=job_spec(), jobsets=[jobset_child("train", 1, state="Completed")],
                          status={"phase": "Suspended", "attempt": 0, "workload": "",
                                  "startTime": "2025-12-31T23:31:00Z"})
    observed = parse_request(request, "sync")
    done = workers(1, phase="Succeeded")
    decision = decide(observed, FakeReader(done, live_pods=done), NOW)
    assert (decision.response["status"]["phase"], decision.response["status"]["attempt"]) == ("Succeeded", 1)
    assert moves(decision.transitions) == [(Move.NEXT_ATTEMPT, "Suspended", "Pending", (0, 1)),
                                           (Move.COMPLETE, "Pending", "Succeeded", (1, 1))]
    events = transition_events(observed.status, decision.response["status"], transitions=decision.transitions)
    assert [(e.reason, e.key) for e in events] == [("Resumed", "Resumed/1"), ("Succeeded", "Succeeded/1")]
