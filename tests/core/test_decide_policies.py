"""Failure-policy rules, the active deadline, TTL after finish, pods stuck on dead nodes."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core import stuck
from hooks.core.actions import DeleteJob, ForceDeletePod
from hooks.core.deadlines import STUCK_AFTER_DEFAULT
from hooks.core.decide import Decision, decide
from hooks.core.observed import InvalidRequest, parse_request
from hooks.core.request import read_spec
from podread.nodes import node_state
from tests.core.test_decide import condition, names, status
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.settling import drain_dated
from tests.support.uids import uid

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


def test_without_pod_rules_the_verdict_ignores_the_pods_read_once_for_the_history() -> None:
    rule = {"name": "jobset-says", "action": "FailJob", "onJobSetFailure": {"reasons": ["Test"]}}
    body = request(spec=spec_with(2, failurePolicy={"rules": [rule]}), status=running_status(),
                   jobsets=[jobset_child("train", 0, state="Failed")])
    reader = FakeReader([failed_pod(exit_code=42)])
    d = run(body, reader)
    assert status(d)["phase"] == "Failed" and condition(d, "Failed")["reason"] == "FailurePolicy"
    assert "exited" not in condition(d, "Failed")["message"], "no rule reads pods: the verdict does not name one"
    assert [c for c in reader.calls if c[0] == "attempt_failure_pods"] == [
        ("attempt_failure_pods", "live", ("default", "train-0"))], "read once, for status.attempts"
    assert status(d)["attempts"][0]["failedPod"] == "train-0-worker-0-0"


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
    its creationTimestamp. (A Running status without startTime is a claim that disagrees with the evidence.)"""
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
    again = run(fed_back(drained, done), FakeReader())
    assert drain_dated(status(done), status(again)), "fed back, only the drain is dated (once)"
    assert status(run(fed_back(drained, again), FakeReader())) == status(again)


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


def stuck_pod(name: str = "train-0-worker-0-0", on: str = "gpu-1", deleting: str = "2025-12-31T23:00:00Z",
              owner: dict[str, Any] | None = None, workload: str = "train-0") -> dict[str, Any]:
    """A worker of ``workload`` terminating on ``on``, as the Job controller made it: a controller
    ownerReference to its batch Job ``<jobset>-worker-0`` (``owner`` replaces it; ``{}``: none)."""
    pod = make_pod(name, job="train", workload=workload, node=on, deleting=deleting)
    pod["metadata"]["uid"] = uid(f"pod/{name}")
    reference = {"apiVersion": "batch/v1", "kind": "Job", "name": f"{workload}-worker-0", "uid": uid("job/w0"),
                 "controller": True, "blockOwnerDeletion": True} if owner is None else owner
    pod["metadata"]["ownerReferences"] = [reference] if reference else []
    return pod


FORCE = {"drain": {"stuckAfterSeconds": 300, "forceDeleteStuckPodsAfterSeconds": 600}}
SHUT_DOWN = ("node.kubernetes.io/out-of-service",)


def forced(name: str = "train-0-worker-0-0", reason: str = "node gpu-1 is deleted") -> ForceDeletePod:
    return ForceDeletePod("default", name, uid(f"pod/{name}"), "gpu-1", reason)


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
    partitioned = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/unreachable",))
    d = run(draining(**FORCE), FakeReader([stuck_pod()], nodes=[partitioned]))
    assert condition(d, "DrainStuck")["status"] == "True" and d.actions == ()
    assert condition(d, "ForceDeleteAllowed") is None, "no pod qualifies: the permission is not even asked"
    shut_down = node("gpu-1", ready="Unknown", taints=SHUT_DOWN)
    d = run(draining(**FORCE), FakeReader([stuck_pod()], nodes=[shut_down]))
    assert d.actions == (forced(reason="node gpu-1 is out of service"),)
    assert d.response["finalized"] is False, "the force delete is asked for; the barrier still waits"
    assert condition(d, "ForceDeleteAllowed")["status"] == "True"


def test_the_force_delete_wait_counts_from_the_pods_deletion_not_from_the_drained_condition() -> None:
    recent = stuck_pod(deleting="2025-12-31T23:55:00Z")
    d = run(draining(**FORCE), FakeReader([recent], nodes=[]))
    assert condition(d, "DrainStuck")["status"] == "True" and d.actions == (), \
        "its grace period ended 300 s ago: stuck, force delete after 600 s only"
    forged = run(draining(since="2020-01-01T00:00:00Z", **FORCE), FakeReader([recent], nodes=[]))
    assert forged.actions == (), "Drained moved into the past by a status write licenses nothing"
    d = run(draining(**FORCE), FakeReader([stuck_pod(deleting="2025-12-31T23:50:00Z")], nodes=[]))
    assert d.actions == (forced(),), "600 s since its deletionTimestamp"
    node_back_late = node("gpu-1", ready="False", since="2025-12-31T23:58:00Z", taints=SHUT_DOWN)
    d = run(draining(**FORCE), FakeReader([stuck_pod()], nodes=[node_back_late]))
    assert d.actions == (), "the node's Ready transition 2 minutes ago: the wait counts from the later moment"
    no_deletion_time = stuck_pod(deleting="not a time")
    assert run(draining(**FORCE), FakeReader([no_deletion_time], nodes=[])).actions == ()


NOT_ITS_OWN = {
    "only JOB_LABEL": lambda p: (p["metadata"]["labels"].pop("jobset.sigs.k8s.io/jobset-name"),
                                 p["metadata"].pop("ownerReferences")),
    "JobSet label, no owner": lambda p: p["metadata"].pop("ownerReferences"),
    "another Job's attempt": lambda p: p["metadata"]["labels"].update({"jobset.sigs.k8s.io/jobset-name": "other-0"}),
    "an attempt name that is no attempt": lambda p: p["metadata"]["labels"].update(
        {"jobset.sigs.k8s.io/jobset-name": "train-01"}),
    "owner of another JobSet": lambda p: p["metadata"]["ownerReferences"][0].update({"name": "train-1-worker-0"}),
    "owner name not <jobset>-<rj>-<index>": lambda p: p["metadata"]["ownerReferences"][0].update(
        {"name": "train-0-worker"}),
    "owner not a Job": lambda p: p["metadata"]["ownerReferences"][0].update({"kind": "ReplicaSet"}),
    "owner not batch/v1": lambda p: p["metadata"]["ownerReferences"][0].update({"apiVersion": "example.com/v1"}),
    "owner not the controller": lambda p: p["metadata"]["ownerReferences"][0].update({"controller": False}),
    "two controllers": lambda p: p["metadata"]["ownerReferences"].append(
        {**p["metadata"]["ownerReferences"][0], "name": "train-0-worker-1"}),
}


@pytest.mark.parametrize("case", sorted(NOT_ITS_OWN))
def test_a_pod_without_its_own_workloads_identity_is_never_force_deleted(case: str) -> None:
    pod = stuck_pod()
    NOT_ITS_OWN[case](pod)
    d = run(draining(**FORCE), FakeReader([pod], nodes=[]))
    assert d.actions == ()
    assert d.response["finalized"] is False, "the barrier still waits on it"
    assert "train-0-worker-0-0 (node gpu-1 deleted)" in condition(d, "DrainStuck")["message"], "still reported"


def test_force_delete_is_judged_on_the_pod_read_live_not_on_the_cached_copy() -> None:
    cached = stuck_pod()
    patched = copy.deepcopy(cached)
    patched["metadata"]["ownerReferences"] = []
    reader = FakeReader([cached], live_pods=[patched], nodes=[])
    d = run(draining(**FORCE), reader)
    assert d.actions == (), "the server's pod lost its owner: nothing licenses the delete"
    assert ("workload_pods", "live", ("default", "train-0", "")) in reader.calls
    replaced = copy.deepcopy(cached)
    replaced["metadata"]["uid"] = uid("pod/a-new-pod-of-that-name")
    assert run(draining(**FORCE), FakeReader([cached], live_pods=[replaced], nodes=[])).actions == ()
    failing = FakeReader([cached], nodes=[], fail=["workload_pods"])
    d = run(draining(**FORCE), failing)
    assert d.actions == () and condition(d, "DrainStuck")["status"] == "True", "a failed read: unknown, no delete"
    assert condition(d, "ForceDeleteAllowed") is None


def test_without_the_permission_no_force_delete_and_the_job_says_which_role_to_bind() -> None:
    reader = FakeReader([stuck_pod()], nodes=[])
    reader.delete_allowed = False
    body = draining(**FORCE)
    d = run(body, reader)
    assert d.actions == () and d.response["finalized"] is False
    refused = condition(d, "ForceDeleteAllowed")
    assert (refused["status"], refused["reason"]) == ("False", "Forbidden")
    assert "nvcre-hooks-pod-deleter" in refused["message"] and "manifests/overlays/force-delete" in refused["message"]
    assert "namespace default" in refused["message"]
    assert ("pod_delete_allowed", "live", ("default",)) in reader.calls
    again = run(fed_back(body, d), reader, now=NOW + timedelta(seconds=30))
    assert again.response["status"] == d.response["status"], "a fixed point: nothing moves while it is refused"
    reader.delete_allowed = frozenset({"default"})
    allowed = run(fed_back(body, d), reader)
    assert allowed.actions == (forced(),) and condition(allowed, "ForceDeleteAllowed")["status"] == "True"


def test_a_failed_permission_read_is_unknown_no_force_delete_and_nothing_else_changes() -> None:
    body = draining(**FORCE)
    d = run(body, FakeReader([stuck_pod()], nodes=[], fail=["pod_delete_allowed"]))
    assert d.actions == () and condition(d, "ForceDeleteAllowed") is None
    assert condition(d, "DrainStuck")["status"] == "True" and d.response["finalized"] is False
    refused = FakeReader([stuck_pod()], nodes=[])
    refused.delete_allowed = False
    first = run(body, refused)
    later = run(fed_back(body, first), FakeReader([stuck_pod()], nodes=[], fail=["pod_delete_allowed"]))
    assert condition(later, "ForceDeleteAllowed") == condition(first, "ForceDeleteAllowed"), "kept as it was"


@pytest.mark.parametrize("drain", [
    {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 600},
    {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": None},
    {"stuckAfterSeconds": 2**63 - 1, "forceDeleteStuckPodsAfterSeconds": 2**63 - 1},
    {"stuckAfterSeconds": 300, "forceDeleteStuckPodsAfterSeconds": 2**63 - 1},
    {"stuckAfterSeconds": 1, "forceDeleteStuckPodsAfterSeconds": 2**64},
    {"stuckAfterSeconds": -(2**63), "forceDeleteStuckPodsAfterSeconds": -1},
    {"stuckAfterSeconds": -5},
    {"forceDeleteStuckPodsAfterSeconds": -(2**63)},
])
def test_drain_limits_are_total_while_a_drain_waits(drain: dict[str, Any]) -> None:
    reader = FakeReader([stuck_pod()], nodes=[])
    d = run(draining(drain=drain), reader)
    assert d.response["finalized"] is False, "whatever the limits, the barrier still waits on the pod"
    assert condition(d, "Drained")["status"] == "False"
    assert all(a.name == "train-0-worker-0-0" for a in d.actions)
    spec = read_spec({"drain": drain})
    pods = stuck.candidates([stuck_pod()], NOW - timedelta(days=3650), NOW, spec)
    stuck.judge(pods, {"gpu-1": node_state("gpu-1", None)}, NOW - timedelta(days=3650), NOW, spec, "train")
    assert stuck.may_force_delete(stuck_pod(), "train", node_state("gpu-1", None), NOW, spec) in (True, False)


@pytest.mark.parametrize(("drain", "invalid"), [
    ({"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 600}, False),
    ({"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 200}, True),
    ({"stuckAfterSeconds": 2**63 - 1, "forceDeleteStuckPodsAfterSeconds": 2**63 - 1}, True),
    ({"forceDeleteStuckPodsAfterSeconds": -1}, True),
])
def test_drain_limits_on_a_running_job_are_total(drain: dict[str, Any], invalid: bool) -> None:
    body = request(spec=spec_with(drain=drain), status=running_status(),
                   jobsets=[jobset_child("train", 0, created="2025-12-31T00:00:00Z")])
    d = run(body)
    assert names(d) == ["train-0"], "a running Job keeps its JobSet whatever its drain limits"
    assert (condition(d, "InvalidSpec") is not None) is invalid


def test_drain_limits_of_any_json_type_never_raise() -> None:
    """A limit of the wrong JSON type is a 400 naming it (the request is never decided); one of the right
    type but out of its declared range reads as its default (``InvalidSpec`` reports it)."""
    for drain in ("x", 3, [], {"stuckAfterSeconds": "300"}, {"stuckAfterSeconds": 1.5},
                  {"forceDeleteStuckPodsAfterSeconds": True}, {"stuckAfterSeconds": {}}):
        with pytest.raises(InvalidRequest, match=r"^parent\.spec\.drain"):
            parse_request(request(spec=spec_with(drain=drain)), "sync")
    for drain in (None, {}, {"stuckAfterSeconds": 0}, {"stuckAfterSeconds": -5},
                  {"stuckAfterSeconds": STUCK_AFTER_DEFAULT * 10**7, "forceDeleteStuckPodsAfterSeconds": -1}):
        spec = parse_request(request(spec=spec_with(drain=drain)), "sync").spec
        assert stuck.stuck_after(spec) == STUCK_AFTER_DEFAULT
        assert stuck.force_after(spec) is None


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
