"""Issue 15's rows: failure-policy rules, the active deadline, TTL after finish, pods stuck on dead nodes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core.actions import DeleteJob, ForceDeletePod
from hooks.core.decide import Decision, decide
from hooks.core.observed import parse_request
from tests.fake_reader import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.test_decide import condition, names, status
from tests.uids import uid

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEYINGS = ("v1", "v2")
FAIL_ON_42 = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
PREEMPTED = {"name": "preempted", "action": "RestartJobIgnoreMaxRestarts",
             "onPodConditions": [{"type": "DisruptionTarget"}]}


def request(**kw: Any) -> dict[str, Any]:
    return job_request(**kw)


def run(body: dict[str, Any], reader: FakeReader | None = None, *, now: datetime = NOW) -> Decision:
    observed = parse_request(body, "finalize" if body.get("finalizing") else "sync")
    return decide(observed, reader if reader is not None else FakeReader(), now)


def fed_back(body: dict[str, Any], decision: Decision) -> dict[str, Any]:
    again = copy.deepcopy(body)
    again["parent"]["status"] = copy.deepcopy(decision.response["status"])
    return again




def spec_with(max_restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {**job_spec(max_restarts=max_restarts), **extra}


def failed_pod(name: str = "train-0-worker-0-0", exit_code: int = 1, disrupted: str = "",
               phase: str = "Failed") -> dict[str, Any]:
    pod = make_pod(name, job="train", workload="train-0", replicated_job="worker", phase=phase)
    pod["status"]["containerStatuses"] = [{"name": "worker", "state": {"terminated": {"exitCode": exit_code}}}]
    if disrupted:
        pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": disrupted}]
    return pod


def running_status(attempt: int = 0, restarts: int = 0, phase: str = "Running", **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "attempt": attempt, "restarts": restarts, "workload": f"train-{attempt}",
            "activePods": 2, "conditions": [], "message": "", **extra}


# ---- failure policy ---------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_exit_code_42_fails_the_job_whatever_max_restarts_says(keying: str) -> None:
    body = request(spec=spec_with(3, failurePolicy={"rules": [FAIL_ON_42, PREEMPTED]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")], keying=keying)
    reader = FakeReader([failed_pod(exit_code=42), failed_pod("train-0-worker-1-0", exit_code=137)])
    d = run(body, reader)
    assert status(d)["phase"] == "Failed" and d.kind == "terminal"
    assert names(d) == ["train-0"], "a Failed Job keeps its JobSet"
    failed = condition(d, "Failed")
    assert failed is not None and failed["reason"] == "FailurePolicy"
    assert "rule bad-config matched" in failed["message"] and "exited with 42" in failed["message"]
    assert status(d)["lastFailure"]["cause"] == "bad-config" and status(d)["restarts"] == 0
    assert ("attempt_failure_pods", "live", ("default", "train-0")) in reader.calls
    assert status(run(fed_back(body, d), reader)) == status(d)


def test_preemption_restarts_without_spending_a_restart_even_with_none_left() -> None:
    body = request(spec=spec_with(0, failurePolicy={"rules": [FAIL_ON_42, PREEMPTED]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")])
    reader = FakeReader([failed_pod(exit_code=143, disrupted="PreemptionByScheduler")])
    d = run(body, reader)
    assert status(d)["phase"] == "Restarting" and status(d)["restarts"] == 0
    assert status(d)["restartsByCause"] == {"preempted": 1}
    assert status(d)["lastFailure"]["action"] == "RestartJobIgnoreMaxRestarts"
    assert names(d) == ["train-0"], "the failed JobSet is kept in this answer (two-call restart)"
    again = run(fed_back(body, d), reader)
    assert status(again)["restartsByCause"] == {"preempted": 1}, "counted once"
    assert names(again) == [] and condition(again, "StatusMismatch") is None
    # once the JobSet and its pods are gone, attempt 1 starts with restarts still 0
    gone = fed_back(body, again)
    gone["children"] = {"JobSet.jobset.x-k8s.io/v2": {}}
    third = run(gone, FakeReader([failed_pod(exit_code=143, disrupted="PreemptionByScheduler")]))
    assert names(third) == ["train-1"] and status(third)["restarts"] == 0 and status(third)["attempt"] == 1


def test_no_rule_matches_counts_against_max_restarts_under_default() -> None:
    body = request(spec=spec_with(1, failurePolicy={"rules": [FAIL_ON_42]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")])
    d = run(body, FakeReader([failed_pod(exit_code=1)]))
    assert status(d)["phase"] == "Restarting" and status(d)["restarts"] == 1
    assert status(d)["restartsByCause"] == {"default": 1}
    assert "no rule matched" in status(d)["lastFailure"]["message"]


def test_restarts_used_up_ends_failed_with_the_reason() -> None:
    body = request(spec=spec_with(1), status=running_status(attempt=1, restarts=1),
                   jobsets=[jobset_child("train", 1, state="Failed")])
    d = run(body)
    assert status(d)["phase"] == "Failed"
    assert condition(d, "Failed")["reason"] == "MaxRestartsReached"


def test_without_pod_rules_no_pod_is_read_for_the_verdict() -> None:
    rule = {"name": "jobset-says", "action": "FailJob", "onJobSetFailure": {"reasons": ["Test"]}}
    body = request(spec=spec_with(2, failurePolicy={"rules": [rule]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")])
    reader = FakeReader()
    d = run(body, reader)
    assert status(d)["phase"] == "Failed" and condition(d, "Failed")["reason"] == "FailurePolicy"
    assert not [c for c in reader.calls if c[0] == "attempt_failure_pods"]


def test_a_failed_evidence_read_holds_and_keeps_the_jobset() -> None:
    body = request(spec=spec_with(2, failurePolicy={"rules": [FAIL_ON_42]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")])
    d = run(body, FakeReader([failed_pod(exit_code=42)], fail=["attempt_failure_pods"]))
    assert d.kind == "held" and status(d)["phase"] == "Running" and names(d) == ["train-0"]
    assert status(d)["restarts"] == 0 and "lastFailure" not in status(d)
    assert d.response["resyncAfterSeconds"] == 5.0


def test_an_invalid_policy_is_invalid_spec_not_a_guess() -> None:
    bad = {"name": "x", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [0]}}
    d = run(request(spec=spec_with(1, failurePolicy={"rules": [bad]})))
    assert condition(d, "InvalidSpec")["reason"] == "InvalidFailurePolicy" and names(d) == []


# ---- active deadline ----------------------------------------------------------------------------------

def test_start_time_is_recorded_once_from_the_jobset_creation() -> None:
    """The first JobSet's answer was lost (status still Pending, no startTime): startTime comes from
    its creationTimestamp. (A Running status without startTime is a claim that disagrees: issue 20.)"""
    child = jobset_child("train", 0)
    child["metadata"]["creationTimestamp"] = "2025-12-31T23:00:00Z"
    body = request(spec=spec_with(activeDeadlineSeconds=7200), status=running_status(phase="Pending"),
                   jobsets=[child])
    d = run(body, FakeReader([make_pod("train-0-worker-0-0", job="train")]))
    assert status(d)["startTime"] == "2025-12-31T23:00:00Z"
    assert d.response["resyncAfterSeconds"] == 3600.0, "woken when the deadline passes"
    later = run(fed_back(body, d), FakeReader([make_pod("train-0-worker-0-0", job="train")]),
                now=NOW + timedelta(minutes=10))
    assert status(later)["startTime"] == "2025-12-31T23:00:00Z"
    assert later.response["resyncAfterSeconds"] == 3000.0


def test_past_the_deadline_tears_down_then_fails() -> None:
    start = {"startTime": "2025-12-31T22:00:00Z"}
    body = request(spec=spec_with(3, activeDeadlineSeconds=3600), status=running_status(**start),
                   jobsets=[jobset_child("train", 0)])
    pods = [make_pod("train-0-worker-0-0", job="train", workload="train-0")]
    d = run(body, FakeReader(pods))
    assert names(d) == [] and status(d)["phase"] == "Terminating" and d.kind == "held"
    assert condition(d, "DeadlineExceeded")["status"] == "True"
    assert "deadline exceeded" in status(d)["message"]
    assert status(run(fed_back(body, d), FakeReader(pods))) == status(d), "a fixed point while draining"
    drained = fed_back(body, d)
    drained["children"] = {"JobSet.jobset.x-k8s.io/v2": {}}
    done = run(drained, FakeReader())
    assert status(done)["phase"] == "Failed" and condition(done, "Failed")["reason"] == "DeadlineExceeded"
    assert names(done) == [] and status(done)["completionTime"] == "2026-01-01T00:00:00Z"
    assert status(run(fed_back(drained, done), FakeReader())) == status(done)


def test_raising_the_deadline_after_it_passed_does_not_bring_the_workload_back() -> None:
    marked = {"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds", "message": "m",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}
    body = request(spec=spec_with(activeDeadlineSeconds=999999),
                   status={**running_status(phase="Terminating", startTime="2025-12-31T22:00:00Z"), "workload": "",
                           "conditions": [marked]})
    d = run(body, FakeReader())
    assert status(d)["phase"] == "Failed" and names(d) == []


# ---- TTL after finished --------------------------------------------------------------------------------

def test_a_finished_job_is_deleted_after_its_ttl() -> None:
    finished = running_status(phase="Succeeded", completionTime="2025-12-31T23:00:00Z")
    body = request(spec=spec_with(ttlSecondsAfterFinished=7200), status=finished,
                   jobsets=[jobset_child("train", 0, state="Completed")])
    early = run(body)
    assert early.actions == () and early.response["resyncAfterSeconds"] == 3600.0
    late = run(body, now=NOW + timedelta(hours=1))
    assert late.actions == (DeleteJob("default", "train", uid("job/train"), status(late)["message"]),)
    assert "ttlSecondsAfterFinished passed at 2026-01-01T01:00:00Z" in status(late)["message"]
    assert status(run(fed_back(body, late), now=NOW + timedelta(hours=1))) == status(late)


def test_completion_time_is_recorded_once_when_the_job_finishes() -> None:
    body = request(spec=spec_with(ttlSecondsAfterFinished=0), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Completed")])
    d = run(body)
    assert status(d)["phase"] == "Succeeded" and status(d)["completionTime"] == "2026-01-01T00:00:00Z"
    assert len(d.actions) == 1, "TTL 0: deleted at once"
    assert status(run(fed_back(body, d), now=NOW + timedelta(hours=3)))["completionTime"] == "2026-01-01T00:00:00Z"


# ---- pods stuck terminating -----------------------------------------------------------------------------

def node(name: str, ready: str = "True", since: str = "2025-12-31T23:00:00Z", taints: tuple[str, ...] = ()
         ) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": [{"key": t, "effect": "NoExecute"} for t in taints]},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]}}


def draining(since: str = "2025-12-31T23:00:00Z", **spec: Any) -> dict[str, Any]:
    drained = {"type": "Drained", "status": "False", "reason": "PodsActive", "message": "w",
               "lastTransitionTime": since}
    return request(spec=spec_with(**spec), finalizing=True, deleting="2025-12-31T22:59:00Z",
                   status={**running_status(phase="Terminating"), "workload": "", "conditions": [drained]})


def stuck_pod(name: str = "train-0-worker-0-0", on: str = "gpu-1") -> dict[str, Any]:
    pod = make_pod(name, job="train", workload="train-0", node=on, deleting="2025-12-31T23:00:00Z")
    pod["metadata"]["uid"] = uid(f"pod/{name}")
    return pod


def test_a_pod_on_a_deleted_node_is_named_in_drain_stuck_and_the_wait_holds() -> None:
    d = run(draining(), FakeReader([stuck_pod()], nodes=[]))
    assert d.response["finalized"] is False
    stuck = condition(d, "DrainStuck")
    assert stuck["status"] == "True" and stuck["reason"] == "PodsOnLostNodes"
    assert "train-0-worker-0-0 (node gpu-1 deleted)" in stuck["message"]
    assert d.actions == (), "no force delete unless opted in"
    assert d.stuck_pods == 1


def test_not_ready_nodes_count_from_their_ready_transition() -> None:
    recent = node("gpu-1", ready="Unknown", since="2025-12-31T23:58:00Z")
    d = run(draining(), FakeReader([stuck_pod()], nodes=[recent]))
    assert condition(d, "DrainStuck") is None, "unreachable for 2 minutes only"
    old = node("gpu-1", ready="Unknown", since="2025-12-31T23:00:00Z", taints=("node.kubernetes.io/unreachable",))
    d = run(draining(), FakeReader([stuck_pod()], nodes=[old]))
    assert "node gpu-1 unreachable" in condition(d, "DrainStuck")["message"]


def test_force_delete_only_when_the_node_is_confirmed_gone() -> None:
    spec = {"drain": {"stuckAfterSeconds": 300, "forceDeleteStuckPodsAfterSeconds": 600}}
    partitioned = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/unreachable",))
    d = run(draining(**spec), FakeReader([stuck_pod()], nodes=[partitioned]))
    assert condition(d, "DrainStuck")["status"] == "True" and d.actions == ()
    shut_down = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/out-of-service",))
    d = run(draining(**spec), FakeReader([stuck_pod()], nodes=[shut_down]))
    assert d.actions == (ForceDeletePod("default", "train-0-worker-0-0", uid("pod/train-0-worker-0-0"), "gpu-1",
                                        "node gpu-1 is out of service"),)
    assert d.response["finalized"] is False, "the force delete is asked for; the barrier still waits"
    too_soon = run(draining(since="2025-12-31T23:55:00Z", **spec), FakeReader([stuck_pod()], nodes=[]))
    assert condition(too_soon, "DrainStuck")["status"] == "True" and too_soon.actions == (), \
        "stuck for 300 s, force delete after 600 s only"


def test_nodes_are_not_read_before_the_wait_could_be_stuck_and_a_failed_read_changes_nothing() -> None:
    reader = FakeReader([stuck_pod()], nodes=[])
    run(draining(since="2025-12-31T23:59:00Z"), reader)
    assert not [c for c in reader.calls if c[0] == "node_states"]
    d = run(draining(), FakeReader([stuck_pod()], fail=["node_states"]))
    assert condition(d, "DrainStuck") is None and d.response["finalized"] is False


def test_drain_stuck_turns_false_when_the_drain_passes() -> None:
    body = draining()
    d = run(body, FakeReader([stuck_pod()], nodes=[]))
    done = run(fed_back(body, d), FakeReader())
    assert done.response["finalized"] is True and condition(done, "DrainStuck")["status"] == "False"
