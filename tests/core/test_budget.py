"""The restart budget (issue 32, item 3): ``hooks.core.budget.spend`` is the one rule that says whether
an ended attempt's ``Charge`` may be paid and what ``restarts`` and ``restartsByCause`` become; the
failure row, ``lifecycle.apply``, the eviction and both invariants (evidence: ``restarts``; claims:
``restartsByCause``) ask it. ``vocab.EndCause`` is the one vocabulary of why an attempt ended, and
``failurepolicy`` classifies a failure once (``ended_as``)."""

from __future__ import annotations

import ast
import pathlib
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.core import budget, claims, evidence, failurepolicy, history
from hooks.core import conditions as cond
from hooks.core.budget import Charge, Counters, Spent
from hooks.core.lifecycle import Step, apply
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from hooks.core.rows import current, kueue
from hooks.core.rows.teardown import teardown
from hooks.core.vocab import EndCause, Outcome, Phase, Reason
from hooks.core.work import Context, Work
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ACTIONS = failurepolicy.ACTIONS
CAUSES = ("default", "preempted", "oom")


def context(reader: Any = None, **request: Any) -> Context:
    return Context(parse_request(job_request(**request), "sync"), reader or FakeReader(), NOW)


def work_of(ctx: Context) -> Work:
    prior = ctx.observed.status
    return Work.of(prior, conditions=cond.sort_conditions(prior.conditions))


def failure(cause: str = "default", *, counted: bool = True) -> Charge:
    return Charge(cause, EndCause.FAILED, counted)


# ---- the rule ---------------------------------------------------------------------------------------------

def test_a_counted_restart_spends_one_of_max_restarts_and_counts_its_cause() -> None:
    assert budget.spend(read_spec({"maxRestarts": 2}), Counters(1, {"oom": 1}), failure("oom")) == Spent(
        True, Counters(2, {"oom": 2}))
    assert budget.spend(read_spec({"maxRestarts": 2}), Counters(), failure()) == Spent(
        True, Counters(1, {"default": 1}))


def test_a_counted_restart_is_refused_once_max_restarts_is_used_up_and_nothing_moves() -> None:
    spent = Counters(2, {"default": 2})
    assert budget.spend(read_spec({"maxRestarts": 2}), spent, failure()) == Spent(False, spent)
    assert budget.spend(read_spec({}), Counters(), failure()) == Spent(False, Counters()), "maxRestarts unset is 0"
    assert budget.spend(read_spec({"maxRestarts": None}), Counters(), failure()).allowed is False


def test_the_policy_s_uncounted_restart_is_allowed_past_the_budget_and_counts_only_its_cause() -> None:
    """``RestartJobIgnoreMaxRestarts``: the verdict's charge is not counted, so it is paid at
    ``maxRestarts`` 0 (or used up): ``restarts`` unchanged, ``restartsByCause`` +1."""
    verdict = failurepolicy.Verdict(failurepolicy.RESTART_IGNORE, "preempted", "rule preempted matched")
    charge = verdict.charge
    assert charge == Charge("preempted", EndCause.FAILED, counted=False)
    assert budget.spend(read_spec({"maxRestarts": 0}), Counters(3, {"default": 3}), charge) == Spent(
        True, Counters(3, {"default": 3, "preempted": 1}))


def test_an_eviction_is_a_charge_that_moves_neither_counter() -> None:
    evicted = Charge("Preempted", EndCause.EVICTED, counted=False)
    assert not evicted.restart
    assert budget.spend(read_spec({"maxRestarts": 0}), Counters(0, {}), evicted) == Spent(True, Counters(0, {}))
    assert budget.spend(read_spec({"maxRestarts": 1}), Counters(1, {"x": 1}), evicted) == Spent(
        True, Counters(1, {"x": 1}))


def test_every_failure_class_is_a_restart_and_no_other_end_is() -> None:
    assert {end for end in EndCause if Charge("c", end, True).restart} == {EndCause.FAILED, EndCause.PREEMPTED}


def test_the_verdict_says_its_charge_fail_job_has_none() -> None:
    charges = [failurepolicy.Verdict(action, "c", "m").charge for action in ACTIONS]
    assert charges == [None, Charge("c", EndCause.FAILED, True), Charge("c", EndCause.FAILED, False)]


def test_most_spent_is_what_paying_that_many_counted_charges_adds() -> None:
    for charged in range(5):
        counters = Counters()
        for _ in range(charged):
            counters = budget.spend(read_spec({"maxRestarts": 99}), counters, failure()).counters
        assert budget.most_spent(charged) == counters.restarts == sum(counters.by_cause.values())


# ---- one classification, one vocabulary -------------------------------------------------------------------

def preempted_pod() -> dict[str, Any]:
    pod = make_pod("train-0-worker-0-0", job="train", workload="train-0", replicated_job="worker", phase="Failed")
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                                    "lastTransitionTime": "2025-12-31T23:00:00Z"}]
    return pod


def test_a_failure_is_classified_once_and_the_verdict_and_the_history_agree() -> None:
    jobset = jobset_child("train", 0, state="Failed")
    for pods, ended in (([], EndCause.FAILED), ([preempted_pod()], EndCause.PREEMPTED)):
        assert failurepolicy.ended_as(pods) == ended
        assert failurepolicy.judge([], jobset, pods).ended == ended
        assert history.failure_facts(jobset, pods)["outcome"] == ended
        charge = failurepolicy.judge([], jobset, pods).charge
        assert charge is not None and charge.ended == ended and charge.restart


def test_the_end_words_are_the_history_s_outcomes_byte_for_byte() -> None:
    assert [str(end) for end in EndCause] == ["Succeeded", "Failed", "Preempted", "Evicted", "DeadlineExceeded",
                                              "Suspended", "Deleted"]
    assert (kueue.EVICTION.ends, current.NEXT_ATTEMPT.ends) == (EndCause.EVICTED, None)


# ---- the rows ask it ------------------------------------------------------------------------------------

def test_apply_pays_a_charge_by_the_budget_and_refuses_one_it_refuses() -> None:
    ctx = context(spec=job_spec(max_restarts=1), status={"phase": "Running", "attempt": 0, "restarts": 1,
                                                          "restartsByCause": {"default": 1}})
    work = work_of(ctx)
    with pytest.raises(ValueError, match="refuses"):
        apply(ctx, Step(Outcome.HELD, charge=failure()), work)
    assert (work.restarts, work.restarts_by_cause) == (1, {"default": 1})
    apply(ctx, Step(Outcome.HELD, charge=failure("oom", counted=False)), work)
    assert (work.restarts, work.restarts_by_cause) == (1, {"default": 1, "oom": 1})


def test_the_eviction_row_charges_an_eviction_that_leaves_the_counters_alone() -> None:
    ctx = context(status={"phase": "Running", "attempt": 2, "restarts": 1, "restartsByCause": {"default": 1}},
                  spec=job_spec(max_restarts=1), labels={"kueue.x-k8s.io/queue-name": "team"},
                  workloads=[workload_child("train", state="evicted", reason="Preempted")])
    work = work_of(ctx)
    step = teardown(ctx, work, kueue.EVICTION)
    assert (step.phase, step.attempt, step.charge) == (Phase.QUEUED, 3, Charge("Preempted", EndCause.EVICTED, False))
    apply(ctx, step, work)
    assert (work.attempt, work.restarts, work.restarts_by_cause) == (3, 1, {"default": 1})
    queued = context(status={"phase": "Queued", "attempt": 2}, labels={"kueue.x-k8s.io/queue-name": "team"},
                     workloads=[workload_child("train", state="evicted", reason="Preempted")])
    assert teardown(queued, work_of(queued), kueue.EVICTION).charge is None, "nothing ran since: nothing ended"


def failed_job(max_restarts: int | None, action: str, restarts: int, by_cause: dict[str, int]) -> Context:
    spec = job_spec(max_restarts=max_restarts) | {
        "failurePolicy": {"rules": [{"name": "every", "action": action}]}}
    status = {"phase": "Running", "attempt": restarts, "workload": f"train-{restarts}", "restarts": restarts,
              "restartsByCause": by_cause}
    return context(FakeReader(), spec=spec, status=status, jobsets=[jobset_child("train", restarts, state="Failed")])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(max_restarts=st.one_of(st.none(), st.integers(0, 4)), action=st.sampled_from(ACTIONS),
       restarts=st.integers(0, 5), by_cause=st.dictionaries(st.sampled_from(CAUSES), st.integers(1, 3), max_size=3))
def test_the_failure_row_restarts_exactly_when_the_budget_allows_and_apply_pays_what_it_says(
        max_restarts: int | None, action: str, restarts: int, by_cause: dict[str, int]) -> None:
    ctx = failed_job(max_restarts, action, restarts, by_cause)
    work = work_of(ctx)
    step = current.steady(ctx, work)
    charge = failurepolicy.Verdict(action, "every", "").charge
    said = None if charge is None else budget.spend(ctx.observed.spec, Counters(restarts, by_cause), charge)
    if said is None or not said.allowed:
        assert (step.phase, step.charge) == (Phase.FAILED, None)
        (failed,) = step.conditions
        assert failed.reason == (Reason.FAILURE_POLICY if charge is None else Reason.MAX_RESTARTS_REACHED)
        return
    assert (step.phase, step.charge) == (Phase.RESTARTING, charge)
    apply(ctx, step, work)
    assert Counters(work.restarts, work.restarts_by_cause) == said.counters


# ---- the invariants ask it -------------------------------------------------------------------------------

def running_status(attempt: int, counters: Counters) -> Any:
    return parse_request(job_request(spec=job_spec(max_restarts=99), jobsets=[jobset_child("train", attempt)], status={
        "phase": "Running", "attempt": attempt, "workload": f"train-{attempt}", "restarts": counters.restarts,
        "restartsByCause": dict(counters.by_cause)}), "sync")


def held(observed: Any, attempt: int) -> set[str]:
    """Which invariant holds the status: evidence's (``restarts``) and claims' (``restartsByCause``)."""
    found = set()
    if evidence.status_mismatch(observed, attempt, Phase.RUNNING) is not None:
        found.add("evidence")
    if claims.restarts_by_cause(observed, attempt, Phase.RUNNING, NOW) is not None:
        found.add("claims")
    return found


ENDS = st.sampled_from((EndCause.FAILED, EndCause.PREEMPTED, EndCause.EVICTED))


@settings(max_examples=80, deadline=None)
@given(charges=st.lists(st.tuples(st.sampled_from(CAUSES), ENDS, st.booleans()), max_size=6))
def test_counters_the_budget_can_reach_pass_both_invariants_and_one_past_them_is_held(
        charges: list[tuple[str, EndCause, bool]]) -> None:
    """Each paid charge ends an attempt (the next one follows), so after them the Job runs attempt
    ``len(charges)``: whatever counters ``spend`` reached pass evidence and claims; one past
    ``most_spent`` of that attempt is held by the invariant of that counter."""
    counters = Counters()
    for cause, ended, counted in charges:
        spent = budget.spend(read_spec({"maxRestarts": 99}), counters, Charge(cause, ended, counted))
        assert spent.allowed
        counters = spent.counters
    attempt = len(charges)
    assert held(running_status(attempt, counters), attempt) == set()
    most = budget.most_spent(evidence.charged_attempts(running_status(attempt, counters), attempt, Phase.RUNNING))
    assert most == attempt
    assert held(running_status(attempt, Counters(most + 1, {})), attempt) == {"evidence"}
    assert held(running_status(attempt, Counters(0, {"default": most + 1})), attempt) == {"claims"}


def test_a_restart_paid_but_not_begun_is_within_both_invariants_while_restarting() -> None:
    """The failure row pays the charge when Restarting begins: attempt 0, restarts 1 stands."""
    failed = jobset_child("train", 0, state="Failed")
    observed = parse_request(job_request(spec=job_spec(max_restarts=1), jobsets=[failed], status={
        "phase": "Restarting", "attempt": 0, "restarts": 1, "restartsByCause": {"default": 1}}), "sync")
    assert evidence.restarts_allowed(observed, 0, Phase.RESTARTING) == budget.most_spent(1) == 1
    assert evidence.status_mismatch(observed, 0, Phase.RESTARTING) is None
    assert claims.restarts_by_cause(observed, 0, Phase.RESTARTING, NOW) is None


# ---- one home ---------------------------------------------------------------------------------------------

def restart_arithmetic(source: str) -> list[int]:
    """The lines of ``source`` that count restarts themselves: ``x.restarts += ...``, an assignment
    into ``restarts_by_cause[...]``, or a comparison with ``restarts`` and ``maxRestarts`` read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AugAssign) and "restarts" in ast.unparse(node.target):
            found.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and "restarts_by_cause" in ast.unparse(t.value) for t in targets):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare) and "restarts" in ast.unparse(node) and "max_restarts" in ast.unparse(node):
            found.append(node.lineno)
    return found


def test_restarts_are_counted_only_by_the_budget() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    found = {str(path.relative_to(root)): lines for path in sorted((root / "hooks" / "core").rglob("*.py"))
             if (lines := restart_arithmetic(path.read_text()))}
    assert list(found) == ["hooks/core/budget.py"], found


def test_the_planted_arithmetic_is_found() -> None:
    planted = ("work.restarts += 1\nwork.restarts_by_cause[c] = 2\nok = work.restarts < max_restarts\n"
               "work.restarts_by_cause = {}\n")
    assert restart_arithmetic(planted) == [1, 2, 3]
