"""The restart budgets (issue 32, item 3; per failure class since issue 34): ``hooks.core.budget.spend``
is the one rule that says whether an ended attempt's ``Charge`` may be paid and what ``restarts``,
``restartsByCause`` and ``restartsByClass`` become; the failure row, ``lifecycle.apply``, the eviction
and the invariants (evidence: ``restarts``; claims: ``restartsByCause``, ``restartsByClass``) ask it.
``failureclass`` names a failure's class once; only that class's budget is spent, and no written
class or counter frees a budget the evidence did not."""

from __future__ import annotations

import ast
import pathlib
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.core import budget, claims, evidence, failureclass, failurepolicy, history
from hooks.core import conditions as cond
from hooks.core.budget import Charge, Counters, Spent
from hooks.core.lifecycle import Step, apply
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from hooks.core.rows import current, kueue
from hooks.core.rows.teardown import teardown
from hooks.core.vocab import BUDGETED, EndCause, FailureClass, Outcome, Phase, Reason
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


def failure(cause: str = "default", *, counted: bool = True, klass: FailureClass = FailureClass.USER) -> Charge:
    return Charge(cause, EndCause.FAILED, counted, klass)


USER = {"user": 1}


# ---- the rule ---------------------------------------------------------------------------------------------

def test_a_counted_restart_spends_one_of_max_restarts_and_counts_its_cause() -> None:
    assert budget.spend(read_spec({"maxRestarts": 2}), Counters(1, {"oom": 1}, {"user": 1}), failure("oom")) == Spent(
        True, Counters(2, {"oom": 2}, {"user": 2}))
    assert budget.spend(read_spec({"maxRestarts": 2}), Counters(), failure()) == Spent(
        True, Counters(1, {"default": 1}, {"user": 1}))


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
    assert charge == Charge("preempted", EndCause.FAILED, counted=False, klass=FailureClass.UNKNOWN)
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
    unknown = FailureClass.UNKNOWN
    assert charges == [None, Charge("c", EndCause.FAILED, True, unknown), Charge("c", EndCause.FAILED, False, unknown)]


def test_most_spent_is_what_paying_that_many_counted_charges_adds() -> None:
    for charged in range(5):
        counters = Counters()
        for _ in range(charged):
            counters = budget.spend(read_spec({"maxRestarts": 99}), counters, failure()).counters
        assert budget.most_spent(charged) == counters.restarts == sum(counters.by_cause.values()) == sum(
            counters.by_class.values())


# ---- one classification, one vocabulary -------------------------------------------------------------------

def preempted_pod() -> dict[str, Any]:
    pod = make_pod("train-0-worker-0-0", job="train", workload="train-0", replicated_job="worker", phase="Failed")
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                                    "lastTransitionTime": "2025-12-31T23:00:00Z"}]
    return pod


def test_a_failure_is_classified_once_and_the_verdict_and_the_history_agree() -> None:
    jobset = jobset_child("train", 0, state="Failed")
    for pods, ended, klass in (([], EndCause.FAILED, FailureClass.UNKNOWN),
                               ([preempted_pod()], EndCause.PREEMPTED, FailureClass.PREEMPTED)):
        named = failureclass.classify(pods)
        assert (named.klass, failureclass.outcome(named.klass)) == (klass, ended)
        assert failurepolicy.judge([], jobset, pods).ended == ended
        assert history.failure_facts(jobset, pods)["outcome"] == ended
        assert history.failure_facts(jobset, pods)["class"] == klass
        charge = failurepolicy.judge([], jobset, pods).charge
        assert charge is not None and (charge.ended, charge.klass) == (ended, klass) and charge.restart


def test_the_end_words_are_the_history_s_outcomes_byte_for_byte() -> None:
    assert [str(end) for end in EndCause] == ["Succeeded", "Failed", "Preempted", "Evicted", "DeadlineExceeded",
                                              "Suspended", "Deleted"]
    assert (kueue.EVICTION.ends, current.NEXT_ATTEMPT.ends) == (EndCause.EVICTED, None)


# ---- the rows ask it ------------------------------------------------------------------------------------

def test_apply_pays_a_charge_by_the_budget_and_refuses_one_it_refuses() -> None:
    ctx = context(spec=job_spec(max_restarts=1), status={"phase": "Running", "attempt": 1, "restarts": 1,
                                                          "restartsByCause": {"default": 1}})
    work = work_of(ctx)
    with pytest.raises(ValueError, match="refuses"):
        apply(ctx, Step(Outcome.HELD, charge=failure()), work)
    assert (work.restarts, work.restarts_by_cause, work.restarts_by_class) == (1, {"default": 1}, {})
    apply(ctx, Step(Outcome.HELD, charge=failure("oom", counted=False)), work)
    assert (work.restarts, work.restarts_by_cause) == (1, {"default": 1, "oom": 1})
    apply(ctx, Step(Outcome.HELD, charge=failure("lost", klass=FailureClass.NODE)), work)
    assert (work.restarts, work.restarts_by_class) == (2, {"node": 1}), "the node budget, not the user's"


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
    assert charge is None or charge.klass == FailureClass.UNKNOWN, "no pod read: unknown, the user budget's"
    if said is None or not said.allowed:
        assert (step.phase, step.charge) == (Phase.FAILED, None)
        (failed,) = step.conditions
        assert failed.reason == (Reason.FAILURE_POLICY if charge is None else Reason.MAX_RESTARTS_REACHED)
        return
    assert (step.phase, step.charge) == (Phase.RESTARTING, charge)
    apply(ctx, step, work)
    assert Counters(work.restarts, work.restarts_by_cause, work.restarts_by_class) == said.counters


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
    """The lines of ``source`` that count restarts themselves: ``x.restarts += ...``, ``restarts + ...``,
    an assignment into a ``by_cause``/``by_class`` map (``restarts_by_cause[...]``, ``by_class[...]``),
    or a comparison with ``restarts`` and ``maxRestarts`` read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        counted = isinstance(node, ast.AugAssign) and "restarts" in ast.unparse(node.target)
        added = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and "restarts" in ast.unparse(node)
        if counted or added:
            found.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and ("by_cause" in ast.unparse(t.value)
                                                     or "by_class" in ast.unparse(t.value)) for t in targets):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare) and "restarts" in ast.unparse(node) and "max_restarts" in ast.unparse(node):
            found.append(node.lineno)
    return sorted(set(found))


def test_restarts_are_counted_only_by_the_budget() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    found = {str(path.relative_to(root)): lines for path in sorted((root / "hooks" / "core").rglob("*.py"))
             if (lines := restart_arithmetic(path.read_text()))}
    assert list(found) == ["hooks/core/budget.py"], found


def test_the_planted_arithmetic_is_found() -> None:
    planted = ("work.restarts += 1\nwork.restarts_by_cause[c] = 2\nok = work.restarts < max_restarts\n"
               "work.restarts_by_cause = {}\nwork.restarts_by_class[k] = 1\nn = work.restarts + 1\n")
    assert restart_arithmetic(planted) == [1, 2, 3, 5, 6]


# ---- per class (issue 34) -----------------------------------------------------------------------------------

def test_each_class_spends_its_own_budget_and_the_defaults_keep_existing_jobs_as_they_were() -> None:
    spec = read_spec({"maxRestarts": 1})
    assert [budget.budget_of(spec, klass) for klass in BUDGETED] == [1, None, 10, 10, 1]
    assert budget.budget_of(spec, FailureClass.DEADLINE) == 0, "a deadline ends the Job"
    used = Counters(1, {"default": 1}, {"user": 1})
    assert not budget.spend(spec, used, failure()).allowed, "maxRestarts is the user budget"
    assert not budget.spend(spec, used, failure(klass=FailureClass.UNKNOWN)).allowed, "unknown shares it"
    node = budget.spend(spec, used, failure("lost", klass=FailureClass.NODE))
    assert node == Spent(True, Counters(2, {"default": 1, "lost": 1}, {"node": 1, "user": 1}))
    preempted = Counters(1, {}, {"user": 1})
    for _ in range(50):
        spent = budget.spend(spec, preempted, failure(klass=FailureClass.PREEMPTED))
        assert spent.allowed, "preempted is unlimited"
        preempted = spent.counters
    own = read_spec({"maxRestarts": 1, "failurePolicy": {"budgets": {"unknown": 2, "node": 0, "preempted": 1}}})
    assert budget.spend(own, used, failure(klass=FailureClass.UNKNOWN)).allowed, "an unknown budget of its own"
    assert not budget.spend(own, Counters(), failure(klass=FailureClass.NODE)).allowed
    assert not budget.spend(own, Counters(1, {}, {"preempted": 1}), failure(klass=FailureClass.PREEMPTED)).allowed


def test_a_status_from_before_the_classes_spent_its_restarts_from_the_user_budget() -> None:
    """No ``restartsByClass``: every counted restart was the user's (the Job behaves as before)."""
    spec = read_spec({"maxRestarts": 2})
    legacy = Counters(2, {"default": 2})
    assert budget.spent_of(spec, legacy, FailureClass.USER) == 2
    assert not budget.spend(spec, legacy, failure()).allowed
    assert budget.spend(spec, legacy, failure(klass=FailureClass.NODE)).counters == Counters(
        3, {"default": 3}, {"node": 1})


def test_a_counter_written_down_frees_nothing_that_restarts_or_the_history_records() -> None:
    spec = read_spec({"maxRestarts": 2})
    assert budget.spent_of(spec, Counters(2, {}, {"user": 0}), FailureClass.USER) == 2
    entries = [{"attempt": n, "class": "node", "cause": "default"} for n in range(3)]
    floor = budget.floor(read_spec({"failurePolicy": {"budgets": {"node": 3}}}), entries)
    assert floor == {"node": 3}
    assert not budget.spend(read_spec({"failurePolicy": {"budgets": {"node": 3}}}),
                            Counters(3, {}, {"node": 0}, floor), failure(klass=FailureClass.NODE)).allowed
    ignored = read_spec({"failurePolicy": {"rules": [{"name": "free", "action": "RestartJobIgnoreMaxRestarts"}]}})
    assert budget.floor(ignored, [{"attempt": 0, "class": "user", "cause": "free"}]) == {}, "spent no budget"
    assert budget.floor(spec, [{"attempt": 0, "class": "user"}]) == {}, "no cause: it did not restart"


SIGNAL_PODS = {
    FailureClass.USER: {"containerStatuses": [{"name": "t", "state": {"terminated": {"exitCode": 1}}}]},
    FailureClass.PREEMPTED: {"conditions": [{"type": "DisruptionTarget", "status": "True",
                                             "reason": "PreemptionByScheduler"}]},
    FailureClass.NODE: {"conditions": [{"type": "DisruptionTarget", "status": "True",
                                        "reason": "DeletionByTaintManager"}]},
    FailureClass.INFRASTRUCTURE: {"reason": "UnexpectedAdmissionError"},
    FailureClass.UNKNOWN: None,
}
"""The status of a failed pod carrying each class's signal (``None``: no pod at all)."""


def classed_job(klass: FailureClass, budgets: dict[str, int], max_restarts: int, by_class: dict[str, int],
                action: str) -> Context:
    attempt = sum(by_class.values())
    spec = job_spec(max_restarts=max_restarts) | {"failurePolicy": {"budgets": budgets, "rules": [
        {"name": "every", "action": action}]}}
    status = {"phase": "Running", "attempt": attempt, "workload": f"train-{attempt}", "restarts": attempt,
              "restartsByCause": {"every": attempt} if attempt else {}, "restartsByClass": by_class}
    pods = []
    if SIGNAL_PODS[klass] is not None:
        pod = make_pod(f"train-{attempt}-worker-0-0", job="train", workload=f"train-{attempt}",
                       replicated_job="worker", phase="Failed")
        pod["status"].update(SIGNAL_PODS[klass])
        pods.append(pod)
    return context(FakeReader(pods), spec=spec, status=status,
                   jobsets=[jobset_child("train", attempt, state="Failed")])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(klass=st.sampled_from(list(SIGNAL_PODS)), action=st.sampled_from(ACTIONS), max_restarts=st.integers(0, 3),
       budgets=st.dictionaries(st.sampled_from([k.value for k in BUDGETED]), st.integers(0, 3), max_size=5),
       by_class=st.dictionaries(st.sampled_from([k.value for k in BUDGETED]), st.integers(1, 3), max_size=5))
def test_the_failure_row_spends_only_the_class_s_budget_on_a_grid(
        klass: FailureClass, action: str, max_restarts: int, budgets: dict[str, int], by_class: dict[str, int]) -> None:
    """Whatever the class, the budgets and what each class spent: the row restarts exactly when the
    class's budget allows (``budget.spend``), ``apply`` moves that class's count (and ``restarts``)
    only, and a refusal says which budget, in the reason and the words."""
    ctx = classed_job(klass, budgets, max_restarts, by_class, action)
    work = work_of(ctx)
    step = current.steady(ctx, work)
    charge = failurepolicy.Verdict(action, "every", "", failureclass.Classified(klass, "e")).charge
    spec = ctx.observed.spec
    said = None if charge is None else budget.spend(spec, budget.counters(spec, work), charge)
    if said is None or not said.allowed:
        assert (step.phase, step.charge) == (Phase.FAILED, None)
        (failed,) = step.conditions
        assert failed.reason == (Reason.FAILURE_POLICY if charge is None else budget.exhausted_reason(klass))
        assert charge is None or f"class {klass.value} (" in failed.message
        assert step.last_failure is not None and step.last_failure["class"] == klass
        return
    assert step.phase == Phase.RESTARTING and step.charge is not None and step.charge.klass == klass
    before = dict(work.restarts_by_class)
    apply(ctx, step, work)
    assert Counters(work.restarts, work.restarts_by_cause, work.restarts_by_class) == Counters(
        said.counters.restarts, said.counters.by_cause, said.counters.by_class)
    moved = {name for name in set(before) | set(work.restarts_by_class)
             if before.get(name, 0) != work.restarts_by_class.get(name, 0)}
    assert moved == ({klass.value} if charge.counted else set()), "only the class's own budget is spent"


def test_a_node_failure_restarts_a_job_whose_user_budget_is_used_up_and_its_budget_ending_says_so() -> None:
    ctx = classed_job(FailureClass.NODE, {}, 0, {"user": 0}, "RestartJob")
    step = current.steady(ctx, work_of(ctx))
    assert step.phase == Phase.RESTARTING
    spent = classed_job(FailureClass.NODE, {"node": 2}, 0, {"node": 2}, "RestartJob")
    ended = current.steady(spent, work_of(spent))
    (failed,) = ended.conditions
    assert (ended.phase, failed.reason) == (Phase.FAILED, Reason.BUDGET_EXHAUSTED)
    assert failed.message.endswith("class node (pod train-2-worker-0-0: DisruptionTarget/DeletionByTaintManager): "
                                   "the node budget (2) is used up")


# ---- lying statuses ----------------------------------------------------------------------------------------

def exit_code_pod(attempt: int) -> dict[str, Any]:
    pod = make_pod(f"train-{attempt}-worker-0-0", job="train", workload=f"train-{attempt}", replicated_job="worker",
                   phase="Failed")
    pod["status"]["containerStatuses"] = [{"name": "t", "state": {"terminated": {"exitCode": 1}}}]
    return pod


def test_a_status_fed_back_claiming_preempted_for_a_user_failure_restarts_nothing_past_the_user_budget() -> None:
    """The attempt being judged is classed again from its pods; what the status says of it (its entry,
    ``lastFailure``, ``restartsByClass``) is never read for the charge."""
    status = {"phase": "Running", "attempt": 1, "workload": "train-1", "restarts": 1,
              "restartsByCause": {"default": 1}, "restartsByClass": {"user": 1},
              "lastFailure": {"attempt": 1, "class": "preempted", "action": "RestartJob"},
              "attempts": [{"attempt": 0, "jobSet": "train-0", "class": "user", "cause": "default"},
                           {"attempt": 1, "jobSet": "train-1", "class": "preempted"}]}
    ctx = context(FakeReader([exit_code_pod(1)]), spec=job_spec(max_restarts=1), status=status,
                  jobsets=[jobset_child("train", 1, state="Failed")])
    step = current.steady(ctx, work_of(ctx))
    (failed,) = step.conditions
    assert (step.phase, failed.reason) == (Phase.FAILED, Reason.MAX_RESTARTS_REACHED)
    assert step.last_failure is not None and step.last_failure["class"] == FailureClass.USER


def test_restarts_by_class_written_down_gains_no_restart() -> None:
    status = {"phase": "Running", "attempt": 2, "workload": "train-2", "restarts": 2,
              "restartsByCause": {"default": 2}, "restartsByClass": {"user": 0}}
    ctx = context(FakeReader([exit_code_pod(2)]), spec=job_spec(max_restarts=2), status=status,
                  jobsets=[jobset_child("train", 2, state="Failed")])
    step = current.steady(ctx, work_of(ctx))
    assert step.phase == Phase.FAILED, "restarts still records the user budget spent"


def lying(restarts: int, by_class: dict[str, int], attempts: list[dict[str, Any]] | None = None,
          phase: str = Phase.RUNNING) -> Any:
    attempt = 2
    return parse_request(job_request(spec=job_spec(max_restarts=3), jobsets=[jobset_child("train", attempt)], status={
        "phase": phase, "attempt": attempt, "workload": f"train-{attempt}", "restarts": restarts,
        "restartsByClass": by_class, "attempts": attempts or []}), "sync")


def test_the_invariants_hold_a_restarts_by_class_the_evidence_refutes() -> None:
    user_history = [{"attempt": n, "jobSet": f"train-{n}", "class": "user", "cause": "default"} for n in range(2)]
    honest = lying(2, {"user": 2}, user_history)
    assert claims.restarts_by_class(honest, 2, Phase.RUNNING, NOW) is None
    assert evidence.status_mismatch(honest, 2, Phase.RUNNING) is None
    shifted = lying(2, {"node": 2}, user_history)  # the user's restarts moved to the node budget
    spec = shifted.spec
    assert budget.spent_of(spec, budget.counters(spec, shifted.status), FailureClass.USER) == 2, "the history's"
    too_many = lying(2, {"node": 3})
    found = claims.restarts_by_class(too_many, 2, Phase.RUNNING, NOW)
    assert found is not None and found[0] == Reason.RESTARTS_BY_CLASS_DISAGREE
    past_restarts = lying(1, {"node": 1, "user": 1})
    found = evidence.status_mismatch(past_restarts, 2, Phase.RUNNING)
    assert found is not None and found[0] == Reason.RESTARTS_DISAGREE and "restartsByClass" in found[1]
    assert parse_request(job_request(status={"restartsByClass": {"user": 1, "cosmic": 4}}),
                         "sync").status.restarts_by_class == {"user": 1}, "the CRD prunes any other key"


@settings(max_examples=80, deadline=None)
@given(charges=st.lists(st.tuples(st.sampled_from(CAUSES), st.sampled_from(list(BUDGETED)), st.booleans()),
                        max_size=6))
def test_class_counters_the_budget_can_reach_pass_every_invariant_and_one_past_is_held(
        charges: list[tuple[str, FailureClass, bool]]) -> None:
    counters = Counters()
    big = read_spec({"maxRestarts": 99, "failurePolicy": {"budgets": {k.value: 99 for k in BUDGETED}}})
    for cause, klass, counted in charges:
        spent = budget.spend(big, counters, Charge(cause, EndCause.FAILED, counted, klass))
        assert spent.allowed
        counters = spent.counters
    attempt = len(charges)
    observed = parse_request(job_request(spec=job_spec(max_restarts=99), jobsets=[jobset_child("train", attempt)],
                                         status={"phase": "Running", "attempt": attempt, "workload": f"train-{attempt}",
                                                 "restarts": counters.restarts,
                                                 "restartsByCause": dict(counters.by_cause),
                                                 "restartsByClass": dict(counters.by_class)}), "sync")
    assert evidence.status_mismatch(observed, attempt, Phase.RUNNING) is None
    assert claims.restarts_by_class(observed, attempt, Phase.RUNNING, NOW) is None
    assert sum(counters.by_class.values()) == counters.restarts
    past = parse_request(job_request(spec=job_spec(max_restarts=99), jobsets=[jobset_child("train", attempt)],
                                     status={"phase": "Running", "attempt": attempt, "workload": f"train-{attempt}",
                                             "restarts": attempt, "restartsByClass": {"node": attempt + 1}}), "sync")
    assert claims.restarts_by_class(past, attempt, Phase.RUNNING, NOW) is not None


def test_the_user_s_restarts_shifted_to_another_class_under_their_history_gain_no_restart() -> None:
    history_ = [{"attempt": n, "jobSet": f"train-{n}", "outcome": "Failed", "class": "user", "cause": "default"}
                for n in range(2)]
    status = {"phase": "Running", "attempt": 2, "workload": "train-2", "restarts": 2,
              "restartsByCause": {"default": 2}, "restartsByClass": {"node": 2}, "attempts": history_}
    ctx = context(FakeReader([exit_code_pod(2)]), spec=job_spec(max_restarts=2), status=status,
                  jobsets=[jobset_child("train", 2, state="Failed")])
    step = current.steady(ctx, work_of(ctx))
    assert step.phase == Phase.FAILED, "the history still records two restarts on the user budget"
