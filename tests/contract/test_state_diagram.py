"""The phases and transitions are declared once (``hooks.core.lifecycle.ARROWS``): the README's state
diagram is that table rendered (``lifecycle.mermaid``), and the table is the phases ``decide`` moves
a Job through, no more and no fewer, each by the move the table names.

Each case starts a Job in one phase, with what would move it on (a pod that runs, a JobSet that
completed or failed, ``spec.suspend`` set or unset, the deadline passed, Kueue's admission or
eviction, the Job deleted, the last attempt reached), and feeds the hooks' answers back as
Metacontroller would for a few calls: a JobSet the answer keeps stays observed as it was, one it
asks for is then observed (not yet started), one it leaves out is gone with its pods. Every phase
change seen must be an arrow of the table, and every arrow of the table must be seen in some
case, so an arrow added to the code and not the table (or the other way round) fails here; a
decision that names its move (``Decision.transition``) must take an arrow made by that move.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from hooks.core import lifecycle
from hooks.core.decide import Decision, decide
from hooks.core.observed import parse_request
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child
from tests.support.requests import checkpoint_request, mounting

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
NOW = datetime(2026, 1, 1, tzinfo=UTC)
EARLIER = "2025-12-31T22:00:00Z"
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}
START = lifecycle.START
DEADLINE = job_spec() | {"activeDeadlineSeconds": 60}
PAST_DEADLINE = [{"type": "DeadlineExceeded", "status": "True", "reason": "DeadlineExceeded", "message": "",
                  "lastTransitionTime": EARLIER}]


def readme_diagram() -> str:
    """The body of the README's mermaid state diagram."""
    return README.split("```mermaid\n", 1)[1].split("```", 1)[0]


def diagram_arrows() -> set[tuple[str, str]]:
    """The arrows ``A --> B`` of the lifecycle's table, self-loops left out."""
    return {(a.source, a.target) for a in lifecycle.ARROWS if a.source != a.target}


def pod(attempt: int, phase: str = "Running") -> dict[str, Any]:
    return make_pod(f"train-{attempt}-worker-0-0", job="train", workload=f"train-{attempt}", replicated_job="worker",
                    phase=phase)


def status(phase: str, attempt: int = 0, **more: Any) -> dict[str, Any]:
    """A status in ``phase`` as the hooks write it (``startTime`` long past: a deadline counts from it)."""
    workload = f"train-{attempt}" if phase in ("Pending", "Running") else ""
    return {"phase": phase, "attempt": attempt, "restarts": 0, "workload": workload, "startTime": EARLIER} | more


def walk(spec: Mapping[str, Any], prior: Mapping[str, Any], jobsets: Sequence[dict[str, Any]] = (),
         pods: Sequence[dict[str, Any]] = (), workloads: list[dict[str, Any]] | None = None,
         labels: Mapping[str, str] | None = None, finalizing: bool = False,
         calls: int = 3) -> Iterator[tuple[str, str, Decision]]:
    """The phase changes of ``calls`` answers fed back (the module doc), each with its decision
    (``Decision.transition``: the move it names, ``""``: none yet); ``[*]`` before a Job's first
    status and after it is finalized."""
    current: dict[str, Any] = copy.deepcopy(dict(prior))
    observed, alive = list(jobsets), list(pods)
    for call in range(calls):
        body = job_request(spec=spec, status=current or None, jobsets=observed, workloads=workloads, labels=labels,
                           finalizing=finalizing, deleting=EARLIER if finalizing else "")
        decision = decide(parse_request(body, "finalize" if finalizing else "sync"), FakeReader(alive),
                          NOW + timedelta(seconds=call))
        answer = decision.response
        before, after = current.get("phase") or START, answer["status"]["phase"]
        yield before, after, decision
        if answer.get("finalized"):
            yield after, START, decision
            return
        current = answer["status"]
        kept = {child["metadata"]["name"] for child in answer["children"] if child.get("kind") == "JobSet"}
        by_name = {jobset["metadata"]["name"]: jobset for jobset in observed}
        observed = [by_name.get(name) or jobset_child("train", int(name.rsplit("-", 1)[1])) for name in sorted(kept)]
        alive = alive if kept else []


CASES: dict[str, dict[str, Any]] = {
    "a new Job": dict(spec=job_spec(), prior={}),
    "a new Job created suspended": dict(spec=job_spec(suspend=True), prior={}),
    "a new queue-managed Job": dict(spec=job_spec(), prior={}, workloads=[], labels=QUEUE),
    "Queued, admitted": dict(spec=job_spec(), prior=status("Queued"),
                             workloads=[workload_child("train", state="admitted")], labels=QUEUE),
    "Queued, suspended": dict(spec=job_spec(suspend=True), prior=status("Queued"),
                              workloads=[workload_child("train", state="pending")], labels=QUEUE),
    "Queued, suspended, a pod of the last attempt still running": dict(
        spec=job_spec(suspend=True), prior=status("Queued"), pods=[pod(0)],
        workloads=[workload_child("train", state="pending")], labels=QUEUE),
    "Queued after an eviction, past the deadline": dict(spec=DEADLINE, prior=status("Queued"),
                                                        workloads=[workload_child("train", state="pending")],
                                                        labels=QUEUE),
    "Queued, deleted": dict(spec=job_spec(), prior=status("Queued"),
                            workloads=[workload_child("train", state="pending")], labels=QUEUE, finalizing=True),
    "Pending, a pod runs": dict(spec=job_spec(), prior=status("Pending"), jobsets=[jobset_child("train", 0)],
                                pods=[pod(0)]),
    "Pending, the JobSet completed": dict(spec=job_spec(), prior=status("Pending"),
                                          jobsets=[jobset_child("train", 0, state="Completed")]),
    "Pending, the JobSet failed, a restart left": dict(spec=job_spec(max_restarts=1), prior=status("Pending"),
                                                       jobsets=[jobset_child("train", 0, state="Failed")]),
    "Pending, the JobSet failed, none left": dict(spec=job_spec(max_restarts=0), prior=status("Pending"),
                                                  jobsets=[jobset_child("train", 0, state="Failed")]),
    "Pending, suspended": dict(spec=job_spec(suspend=True), prior=status("Pending"),
                               jobsets=[jobset_child("train", 0)]),
    "Pending, evicted by Kueue": dict(spec=job_spec(), prior=status("Pending"), jobsets=[jobset_child("train", 0)],
                                      workloads=[workload_child("train", state="evicted")], labels=QUEUE),
    "Pending, past the deadline": dict(spec=DEADLINE, prior=status("Pending"), jobsets=[jobset_child("train", 0)]),
    "Pending, deleted": dict(spec=job_spec(), prior=status("Pending"), jobsets=[jobset_child("train", 0)],
                             finalizing=True),
    "Running, every pod finished, the JobSet silent": dict(spec=job_spec(), prior=status("Running"),
                                                           jobsets=[jobset_child("train", 0)],
                                                           pods=[pod(0, "Succeeded")]),
    "Running, the JobSet completed": dict(spec=job_spec(), prior=status("Running"),
                                          jobsets=[jobset_child("train", 0, state="Completed")]),
    "Running, the JobSet failed, a restart left": dict(spec=job_spec(max_restarts=1), prior=status("Running"),
                                                       jobsets=[jobset_child("train", 0, state="Failed")],
                                                       pods=[pod(0, "Failed")]),
    "Running, the JobSet failed, a restart left, at the last attempt": dict(
        spec=job_spec(max_restarts=1), prior=status("Running", 9999),
        jobsets=[jobset_child("train", 9999, state="Failed")]),
    "Running, the JobSet failed, none left": dict(spec=job_spec(max_restarts=0), prior=status("Running"),
                                                  jobsets=[jobset_child("train", 0, state="Failed")]),
    "Running, suspended": dict(spec=job_spec(suspend=True), prior=status("Running"),
                               jobsets=[jobset_child("train", 0)], pods=[pod(0)]),
    "Running, evicted by Kueue": dict(spec=job_spec(), prior=status("Running"), jobsets=[jobset_child("train", 0)],
                                      pods=[pod(0)], workloads=[workload_child("train", state="evicted")],
                                      labels=QUEUE),
    "Running, past the deadline": dict(spec=DEADLINE, prior=status("Running"), jobsets=[jobset_child("train", 0)],
                                       pods=[pod(0)]),
    "Running, deleted": dict(spec=job_spec(), prior=status("Running"), jobsets=[jobset_child("train", 0)],
                             pods=[pod(0)], finalizing=True),
    "Restarting, drained": dict(spec=job_spec(max_restarts=1), prior=status("Restarting", restarts=1)),
    "Restarting at the last attempt": dict(spec=job_spec(max_restarts=1), prior=status("Restarting", 9999, restarts=1)),
    "Restarting, suspended": dict(spec=job_spec(max_restarts=1, suspend=True), prior=status("Restarting", restarts=1)),
    "Restarting, suspended, a pod still running": dict(spec=job_spec(max_restarts=1, suspend=True),
                                                       prior=status("Restarting", restarts=1), pods=[pod(0)]),
    "Restarting, past the deadline": dict(spec=DEADLINE | {"maxRestarts": 1}, prior=status("Restarting", restarts=1),
                                          jobsets=[jobset_child("train", 0, state="Failed")]),
    "Restarting, deleted": dict(spec=job_spec(max_restarts=1), prior=status("Restarting", restarts=1),
                                finalizing=True),
    "Suspending, drained": dict(spec=job_spec(suspend=True), prior=status("Suspending")),
    "Suspending, resumed": dict(spec=job_spec(), prior=status("Suspending")),
    "Suspending, resumed while the checkpoint gate waits": dict(
        spec=job_spec() | {"checkpoint": {}}, jobsets=[mounting(jobset_child("train", 0))], pods=[pod(0)],
        prior=status("Suspending", checkpoint=checkpoint_request(0, "suspend", EARLIER, grace=3600))),
    "Suspending after an eviction, drained": dict(spec=job_spec(), prior=status("Suspending"),
                                                  workloads=[workload_child("train", state="evicted")], labels=QUEUE),
    "Suspending, resumed at the last attempt": dict(spec=job_spec(), prior=status("Suspending", 9999)),
    "Suspending, resumed past the deadline": dict(spec=DEADLINE, prior=status("Suspending")),
    "Suspending, resumed past the deadline, a pod still running": dict(spec=DEADLINE, prior=status("Suspending"),
                                                                       pods=[pod(0)]),
    "Suspended, resumed past the deadline, a pod still running": dict(spec=DEADLINE, prior=status("Suspended"),
                                                                      pods=[pod(0)]),
    "Suspending, deleted": dict(spec=job_spec(suspend=True), prior=status("Suspending"), finalizing=True),
    "Suspended, resumed": dict(spec=job_spec(), prior=status("Suspended")),
    "Suspended, resumed, queue-managed": dict(spec=job_spec(), prior=status("Suspended"), workloads=[], labels=QUEUE),
    "Suspended, resumed past the deadline": dict(spec=DEADLINE, prior=status("Suspended")),
    "Suspended, resumed at the last attempt": dict(spec=job_spec(), prior=status("Suspended", 9999)),
    "Suspended, deleted": dict(spec=job_spec(suspend=True), prior=status("Suspended"), finalizing=True),
    "Terminating past the deadline, drained": dict(spec=DEADLINE,
                                                   prior=status("Terminating", conditions=PAST_DEADLINE)),
    "Terminating past the deadline, suspended": dict(spec=DEADLINE | {"suspend": True},
                                                     prior=status("Terminating", conditions=PAST_DEADLINE)),
    "Terminating past the deadline, suspended, a pod still running": dict(
        spec=DEADLINE | {"suspend": True}, prior=status("Terminating", conditions=PAST_DEADLINE), pods=[pod(0)]),
    "Succeeded, deleted": dict(spec=job_spec(), prior=status("Succeeded", completionTime=EARLIER),
                               jobsets=[jobset_child("train", 0, state="Completed")], finalizing=True),
    "Failed, deleted": dict(spec=job_spec(max_restarts=0), prior=status("Failed", completionTime=EARLIER),
                            jobsets=[jobset_child("train", 0, state="Failed")], finalizing=True),
}


def moves() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Every phase change the cases show, with the cases that show it and the move each named."""
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name, case in CASES.items():
        for before, after, decision in walk(**case):
            if before != after:
                found.setdefault((before, after), []).append((name, decision.transition))
    return found


def test_the_readme_diagram_is_the_lifecycle_table() -> None:
    """The README's diagram is ``lifecycle.mermaid()``, line for line: change the table, then paste it."""
    assert readme_diagram() == lifecycle.mermaid()


def test_every_phase_of_the_table_is_a_phase_and_the_terminal_ones_are_the_vocabulary_s() -> None:
    named = {a.source for a in lifecycle.ARROWS} | {a.target for a in lifecycle.ARROWS}
    assert named - {START} == set(lifecycle.PHASES) == set(lifecycle.Phase)
    assert {rule.phase for rule in lifecycle.PHASES.values() if rule.terminal} == lifecycle.TERMINAL


def test_every_phase_change_the_hooks_make_is_an_arrow_of_the_table() -> None:
    missing = {move: names for move, names in moves().items() if move not in diagram_arrows()}
    assert not missing, f"phase changes the lifecycle's table does not show: {missing}"


def test_every_arrow_of_the_table_is_a_phase_change_the_hooks_make() -> None:
    never = diagram_arrows() - set(moves())
    assert not never, f"arrows of the lifecycle's table no case takes: {sorted(never)}"


def test_a_named_move_takes_an_arrow_that_move_makes() -> None:
    """Each decision that names its move (a row that returns a ``Step``) changes the phase along an
    arrow the table says that move makes; the teardowns and the attempt limit all name theirs."""
    wrong, named = [], set()
    for (before, after), seen in moves().items():
        made_by = {move for arrow in lifecycle.arrows(before, after) for move in arrow.by}
        for name, move in seen:
            if move:
                named.add(move)
                if move not in made_by:
                    wrong.append((name, before, after, move, sorted(made_by)))
    assert not wrong, wrong
    assert named >= {"delete", "suspend", "evict", "deadline", "next-attempt", "attempt-limit"}, named


def test_each_decision_names_its_phase_change_along_arrows_of_the_table() -> None:
    """``Decision.transitions`` (what the Events are rendered from, ``hooks.core.events``): each along
    an arrow of the table made by its move, chained from the phase before to the phase after (to
    ``[*]`` once finalized); none when the phase stays, but along a self-loop the table declares."""
    wrong, seen = [], set()
    for name, case in CASES.items():
        for _, _, decision in walk(**case):
            if id(decision) in seen:
                continue
            seen.add(id(decision))
            source = decision.phase_before or START
            end = START if decision.response.get("finalized") else decision.phase_after
            steps = decision.transitions
            chain = [source, *(step.target for step in steps)]
            along = all(step.arrow is not None and step.move in step.arrow.by
                        and (step.arrow.source, step.arrow.target) == (step.source, step.target) for step in steps)
            linked = all(a.target == b.source for a, b in pairwise(steps))
            if not (along and linked and (not steps or steps[0].source == source) and chain[-1] == end):
                wrong.append((name, source, end, [(s.move, s.source, s.target) for s in steps]))
    assert not wrong, wrong


@pytest.mark.parametrize("prior", ["Running", "Pending"])
def test_an_attempt_whose_pods_all_finished_never_goes_back_to_pending(prior: str) -> None:
    """Running stays Running while the JobSet has not said how it ended; Pending stays Pending."""
    case = dict(spec=job_spec(), prior=status(prior), jobsets=[jobset_child("train", 0)], pods=[pod(0, "Succeeded")])
    assert {after for _, after, _ in walk(**case)} == {prior}
