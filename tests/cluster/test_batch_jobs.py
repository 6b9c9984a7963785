"""The drain barrier waits for the batch Jobs as well (issue 20), on the real control plane.

Metacontroller (its stand-in here, ``tests/cluster/metacontroller.py``) deletes an omitted JobSet
with background propagation: the JobSet goes at once and the garbage collector deletes its
``batch/v1`` Jobs later, then their pods. Until it does, such a Job is a live controller: a Job
with ``backoffLimit`` left replaces a pod that failed (after the Job controller's 10 s pod failure
back-off). The test runs kube-controller-manager without its garbage collector while a Job is
suspended and at once resumed (the resume is attempt+1, behind the barrier): every pod of
attempt 0 ends, its orphaned batch Job makes a replacement pod, and attempt 1's JobSet must come
only once that Job and its pod are gone (the garbage collector restored).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from podread import JOBSET_NAME_LABEL, is_active
from tests.cluster.controlplane import CONTROLLERS
from tests.cluster.kube import REQUEST_TIMEOUT
from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec

pytestmark = pytest.mark.cluster

WITHOUT_GARBAGE_COLLECTOR = ",".join(c for c in CONTROLLERS.split(",") if c != "garbagecollector")


def batch_jobs(world: ClusterWorld, workload: str) -> list[dict[str, Any]]:
    """The batch Jobs JobSet labelled ``workload`` on the server now (admin credentials)."""
    raw = world.view.batch.list_namespaced_job(world.namespace, label_selector=f"{JOBSET_NAME_LABEL}={workload}",
                                               _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
    return list(json.loads(raw.data)["items"])


def attempt_pods(world: ClusterWorld, workload: str) -> list[dict[str, Any]]:
    """Every pod JobSet labelled ``workload`` on the server now, finished or not."""
    return [pod for pod in world.view.pods()
            if (pod["metadata"].get("labels") or {}).get(JOBSET_NAME_LABEL) == workload]


def held_for_batch_jobs(world: ClusterWorld, calls: list[Any]) -> list[Any]:
    """The hook answers among ``calls`` whose ``Drained`` condition waits on batch Jobs only."""
    return [call for call in calls if call.body and any(
        c.get("type") == "Drained" and c.get("reason") == "BatchJobsPresent"
        for c in call.body["status"].get("conditions") or [])]


@pytest.mark.timeout(420)
def test_the_next_attempt_waits_for_a_batch_job_the_garbage_collector_has_not_removed(world: ClusterWorld) -> None:
    spec = job_spec(workers=1)
    spec["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 3  # the Job replaces a failed pod
    world.create_job("orphan", spec)
    original = world.run_until_pods_run("orphan", 1)
    plane = world.plane
    plane.restart_controller_manager(WITHOUT_GARBAGE_COLLECTOR)
    try:
        world.driver.patch_spec(world.namespace, "orphan", suspend=True)
        world.run_until(lambda: world.view.jobsets_of(world.created["orphan"]) == [],
                        "JobSet orphan-0 deleted (background propagation: at once)")
        world.run_for(2)
        assert [j["metadata"]["name"] for j in batch_jobs(world, "orphan-0")] == ["orphan-0-worker-0"], \
            "without the garbage collector the JobSet's batch Job stays"
        world.driver.patch_spec(world.namespace, "orphan", suspend=False)  # resume: attempt 1, behind the barrier
        assert world.pods.finish(f"{JOBSET_NAME_LABEL}=orphan-0", phase="Failed",
                                    exit_code=1) == original
        calls_before = len(world.driver.calls)
        world.run_until(lambda: world.active_pods("orphan") == [], "every pod of attempt 0 finished")
        world.run_until(lambda: any(p["metadata"]["name"] not in original for p in world.active_pods("orphan")),
                        "the orphaned batch Job's replacement pod", timeout=90)
        replacement = [p["metadata"]["name"] for p in world.active_pods("orphan")]
        assert world.jobsets("orphan") == [], "no attempt 1 while the batch Job of attempt 0 was left"
        waited = held_for_batch_jobs(world, world.driver.calls[calls_before:])
        assert waited, "while no pod was active, the hooks held for the batch Job"
        message = next(c for c in waited[-1].body["status"]["conditions"] if c["type"] == "Drained")["message"]
        assert "orphan-0-worker-0" in message
        world.run_until_pods_run("orphan", 1)
        world.run_for(3)
        assert world.jobsets("orphan") == [], "no attempt 1 while the replacement pod runs"
        assert world.phase("orphan") in ("Suspending", "Suspended")
    finally:
        plane.restart_controller_manager(CONTROLLERS)  # the garbage collector back: it removes Job and pod
    created_with: list[tuple[list[str], list[str]]] = []

    def attempt_one() -> bool:
        if world.jobsets("orphan") != ["orphan-1"]:
            return False
        created_with.append(([j["metadata"]["name"] for j in batch_jobs(world, "orphan-0")],
                             [p["metadata"]["name"] for p in attempt_pods(world, "orphan-0") if is_active(p)]))
        return True

    world.run_until(attempt_one, "attempt 1 created once the batch Job and its pod are gone", timeout=180)
    assert created_with == [([], [])], \
        f"attempt 1 created while a batch Job or an active pod of attempt 0 was left: {created_with}"
    assert not [p for p in attempt_pods(world, "orphan-0") if p["metadata"]["name"] in replacement and is_active(p)]
    world.run_until_pods_run("orphan", 1)
    world.assert_safe()
