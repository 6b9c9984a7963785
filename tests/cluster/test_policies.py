"""Issue 15 on the real control plane: failure-policy rules, the active deadline, TTL after finish,
pods stuck on dead nodes, and the Events, written by the hooks as their ServiceAccount (so the RBAC
of manifests/rbac.yaml is what allows them) and validated by the real API server."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.tools.nvjob.rendering import history_text
from hooks.tools.nvjob.view import attempt_rows
from tests.cluster.kube import REPO, Applier, load_documents
from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec

pytestmark = pytest.mark.cluster

FAIL_ON_42 = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
PREEMPTED = {"name": "preempted", "action": "RestartJobIgnoreMaxRestarts",
             "onPodConditions": [{"type": "DisruptionTarget"}]}


def spec(**extra: Any) -> dict[str, Any]:
    return {**job_spec(max_restarts=extra.pop("max_restarts", 0)), **extra}


def test_exit_code_42_fails_at_once_and_the_events_say_so(world: ClusterWorld) -> None:
    world.create_job("fatal", spec(max_restarts=3, failurePolicy={"rules": [FAIL_ON_42, PREEMPTED]}))
    world.run_until_pods_run("fatal", 2)
    world.pods.finish("nvcre.nvidia.com/job=fatal", phase="Failed", exit_code=42, limit=1)
    world.run_until(lambda: world.phase("fatal") == "Failed", "Failed")
    world.run_for(2)
    status = world.status("fatal")
    failed = world.condition("fatal", "Failed")
    assert failed["reason"] == "FailurePolicy" and "exited with 42" in failed["message"]
    assert (status["attempt"], status["restarts"], status["lastFailure"]["cause"]) == (0, 0, "bad-config")
    assert world.jobsets("fatal") == ["fatal-0"], "no restart although three were left"
    world.run_until(lambda: "Failed" in world.event_reasons("fatal"), "the Failed Event")
    counts = Counter(world.event_reasons("fatal"))
    assert counts["AttemptCreated"] == 1 and counts["Failed"] == 1, counts
    event = next(e for e in world.events("fatal") if e["reason"] == "Failed")
    assert event["type"] == "Warning" and event["reportingController"] == "nvcre.nvidia.com/nvcre-hooks"
    assert event["regarding"]["uid"] == world.created["fatal"]
    world.assert_safe()


def test_an_eviction_restarts_without_spending_a_restart(world: ClusterWorld) -> None:
    """A pod its kubelet evicts ends ``Failed`` with ``DisruptionTarget`` (``TerminationByKubelet``) and
    stays (nobody deletes it): the hooks read the condition and restart without spending one."""
    world.create_job("preempt", spec(max_restarts=0, failurePolicy={"rules": [FAIL_ON_42, PREEMPTED]}))
    world.run_until_pods_run("preempt", 2)
    world.pods.finish("nvcre.nvidia.com/job=preempt", phase="Failed", exit_code=137, limit=1,
                      disruption="TerminationByKubelet")
    world.run_until(lambda: world.jobsets("preempt") == ["preempt-1"], "attempt 1 created", timeout=90)
    status = world.status("preempt")
    assert (status["attempt"], status["restarts"]) == (1, 0)
    assert status["restartsByCause"] == {"preempted": 1}
    first = status["attempts"][0]  # issue 23: the attempt is recorded, as the real API server admits it
    assert [e["attempt"] for e in status["attempts"]] == [0, 1] and first["failedPod"].startswith("preempt-0-")
    # a kubelet's eviction is no preemption: the attempt Failed, its reason the disruption's, its cause the rule's
    assert (first["outcome"], first["reason"], first["cause"], first["exitCode"]) == \
        ("Failed", "TerminationByKubelet", "preempted", 137)
    world.run_until(lambda: "drainSeconds" in world.status("preempt")["attempts"][0], "the drain dated")
    first = world.status("preempt")["attempts"][0]  # one status write after the pass (issue 35)
    assert first["drainSeconds"] >= 0 and first["drainStuck"] is False
    world.run_until(lambda: {"Restarting", "DrainPassed"} <= set(world.event_reasons("preempt")),
                    "the restart's Events")
    restarting = next(e for e in world.events("preempt") if e["reason"] == "Restarting")
    assert "does not count against maxRestarts" in restarting["note"]
    assert Counter(world.event_reasons("preempt"))["AttemptCreated"] == 2
    world.assert_safe()


def test_a_preemption_that_deletes_the_pod_restarts_without_spending_a_restart(world: ClusterWorld) -> None:
    """A preemption as kube-scheduler (or Kueue's eviction of a pod) does it: ``DisruptionTarget``
    written, then the pod deleted. kwok deletes it (no terminal phase), the Job controller counts it
    failed, the batch Job fails once it is gone, and only then does the real JobSet fail. The pod is
    gone by then: the hooks read it from their pod watch's memory (``Reader.attempt_failure_pods``,
    issue 34), so the rule on ``DisruptionTarget`` matches and no restart is spent."""
    world.create_job("preempt", spec(max_restarts=0, failurePolicy={"rules": [FAIL_ON_42, PREEMPTED]}))
    pods = world.run_until_pods_run("preempt", 2)
    victim = sorted(pods)[0]
    world.pods.disrupt(victim, "PreemptionByScheduler")
    world.pods.core.delete_namespaced_pod(victim, world.namespace)
    world.run_until(lambda: world.jobsets("preempt") == ["preempt-1"] or world.phase("preempt") == "Failed",
                    "attempt 1 created, or the Job Failed", timeout=90)
    assert world.phase("preempt") != "Failed", world.status("preempt")
    world.run_until(lambda: world.phase("preempt") == "Running", "attempt 1 Running", timeout=60)
    status = world.status("preempt")
    assert (status["phase"], status["attempt"], status["restarts"]) == ("Running", 1, 0), status
    assert status["restartsByCause"] == {"preempted": 1}
    first = status["attempts"][0]
    assert (first["failedPod"], first["reason"], first["cause"]) == (victim, "PreemptionByScheduler", "preempted")
    world.assert_safe()


def test_the_active_deadline_tears_down_then_fails(world: ClusterWorld) -> None:
    world.create_job("late", spec(max_restarts=2, activeDeadlineSeconds=4))
    world.run_until_pods_run("late", 2)
    world.run_until(lambda: world.condition("late", "DeadlineExceeded").get("status") == "True",
                    "DeadlineExceeded", timeout=30)
    world.run_until(lambda: world.phase("late") == "Failed", "Failed after the drain", timeout=60)
    assert world.condition("late", "Failed")["reason"] == "DeadlineExceeded"
    assert world.active_pods("late") == [] and world.jobsets("late") == []
    assert world.status("late")["startTime"] <= world.status("late")["completionTime"]
    world.run_until(lambda: "DeadlineExceeded" in world.event_reasons("late"), "the DeadlineExceeded Event")
    world.assert_safe()


def test_a_finished_job_is_deleted_after_its_ttl(world: ClusterWorld) -> None:
    world.create_job("brief", spec(ttlSecondsAfterFinished=2))
    world.run_until_pods_run("brief", 2)
    world.pods.finish("nvcre.nvidia.com/job=brief")
    world.run_until(lambda: world.phase("brief") == "Succeeded", "Succeeded")
    assert not world.gone("brief")
    took = world.run_until(lambda: world.gone("brief"), "the Job deleted by its TTL, then finalized", timeout=60)
    assert took >= 1.0, "not before the TTL"
    assert world.active_pods("brief") == []
    assert "Deleting" in world.event_reasons("brief")
    world.assert_safe()


@pytest.mark.timeout(240)
def test_a_pod_stuck_on_a_dead_node_is_named_then_force_deleted_once_the_node_is_gone(world: ClusterWorld) -> None:
    marooned = spec(drain={"stuckAfterSeconds": 1, "forceDeleteStuckPodsAfterSeconds": 2})
    for replicated in marooned["replicatedJobs"]:
        # The force delete's wait counts from the pod's deletionTimestamp, which the API server sets
        # to the delete plus the grace period (30 s by default): with 1 s, the wait is over before the
        # node is deleted, so only the node's state (unreachable, then gone) holds or licenses it.
        replicated["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    world.create_job("marooned", marooned)
    world.run_until_pods_run("marooned", 2)
    pod = sorted(world.active_pods("marooned"), key=lambda p: p["metadata"]["name"])[0]
    node = pod["spec"]["nodeName"]
    world.kwok.lose_node(node)
    world.driver.delete_job(world.namespace, "marooned")
    world.run_until(lambda: world.condition("marooned", "DrainStuck").get("status") == "True", "DrainStuck",
                    timeout=60)
    stuck = world.condition("marooned", "DrainStuck")
    assert pod["metadata"]["name"] in stuck["message"] and node in stuck["message"]
    world.run_for(4)
    assert not world.gone("marooned"), "a node that is only unreachable never licenses a force delete"
    assert pod["metadata"]["name"] in [p["metadata"]["name"] for p in world.active_pods("marooned")]
    assert "DrainStuck" in world.event_reasons("marooned")
    world.kwok.delete_node(node)
    world.run_until(lambda: world.condition("marooned", "ForceDeleteAllowed").get("reason") == "Forbidden",
                    "ForceDeleteAllowed=False: the base install grants no pod delete (issue 20)", timeout=60)
    world.run_for(2)
    assert not world.gone("marooned"), "no force delete without the overlay's grant"
    grants = load_documents(REPO / "manifests" / "overlays" / "force-delete" / "pod-deleter.yaml")
    for doc in grants:
        doc["metadata"]["namespace"] = world.namespace
    Applier(world.plane.api_client()).apply_all(grants)
    world.run_until(lambda: world.gone("marooned"), "the Job gone after the force delete", timeout=120)
    assert "ForceDeletingPod" in world.event_reasons("marooned")
    world.assert_safe()


HELD_SECONDS, STUCK_SECONDS = 5, 6


def test_drain_seconds_time_a_drain_held_by_a_pod_and_one_stuck_on_a_lost_node(world: ClusterWorld) -> None:
    """Issue 35: ``status.attempts[].drainSeconds`` on pod-only drains (the JobSet goes at once, the
    pods do not), which the old stamp dated 0 s: a suspend whose pod is held Terminating for
    ``HELD_SECONDS``, then, resumed, a suspend whose pod is on a node lost for ``STUCK_SECONDS``
    (``DrainStuck``). Each is timed from the suspend's write to the API server's write of the pass:
    no less than the pod was held, no more than the test saw it take. About 30 s."""
    timed = spec(drain={"stuckAfterSeconds": 1})
    for replicated in timed["replicatedJobs"]:
        replicated["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    world.create_job("timed", timed)
    held = sorted(world.run_until_pods_run("timed", 2))[0]
    world.pods.hold(held)
    began = time.monotonic()
    world.driver.patch_spec(world.namespace, "timed", suspend=True)
    world.run_until(lambda: world.phase("timed") == "Suspending" and world.jobsets("timed") == [], "dropped")
    world.run_for(max(0.0, HELD_SECONDS - (time.monotonic() - began)))
    world.pods.release(held)
    world.run_until(lambda: "drainSeconds" in world.status("timed")["attempts"][0], "the held drain dated")
    took = time.monotonic() - began
    first = world.status("timed")["attempts"][0]
    assert HELD_SECONDS - 1 <= first["drainSeconds"] <= took + 1, (first, took)
    assert first["drainStuck"] is False and world.phase("timed") == "Suspended"

    world.driver.patch_spec(world.namespace, "timed", suspend=None)
    pod = sorted(world.run_until_pods_run("timed", 2, timeout=60))[0]
    node = next(p["spec"]["nodeName"] for p in world.active_pods("timed") if p["metadata"]["name"] == pod)
    world.kwok.lose_node(node)
    try:
        began = time.monotonic()
        world.driver.patch_spec(world.namespace, "timed", suspend=True)
        world.run_until(lambda: world.condition("timed", "DrainStuck").get("status") == "True", "DrainStuck",
                        timeout=30)
        world.run_for(max(0.0, STUCK_SECONDS - (time.monotonic() - began)))
    finally:
        world.kwok.restore_node(node)  # the pool is the session's: never leave a node lost
    world.run_until(lambda: "drainSeconds" in world.status("timed")["attempts"][1], "the stuck drain dated")
    took = time.monotonic() - began
    second = world.status("timed")["attempts"][1]
    assert STUCK_SECONDS - 1 <= second["drainSeconds"] <= took + 1, (second, took)
    assert second["drainStuck"] is True
    job = world.job("timed")
    assert job is not None
    print("\n" + history_text(attempt_rows(job) or [], 0, datetime.now(UTC)))  # the README's samples
    world.assert_safe()
