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
import time
from typing import Any

import kubernetes
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


def jobset_named(world: ClusterWorld, name: str) -> dict[str, Any] | None:
    """JobSet ``name`` as the server holds it now, or ``None``."""
    items = world.view.custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", world.namespace, "jobsets",
                                                            _request_timeout=REQUEST_TIMEOUT)["items"]
    return next((js for js in items if js["metadata"]["name"] == name), None)


def delete_job(world: ClusterWorld, name: str, **options: Any) -> None:
    """Deletes NVCRE Job ``name`` with admin credentials and ``options`` (``propagation_policy``)."""
    body = kubernetes.client.V1DeleteOptions(**options)
    world.view.custom.delete_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", world.namespace, "jobs", name,
                                                      body=body, _request_timeout=REQUEST_TIMEOUT)


@pytest.mark.timeout(480)
def test_a_recreated_job_waits_for_a_later_attempts_batch_job_the_status_no_longer_names(world: ClusterWorld) -> None:
    """Issue 31, item 1: the barrier's reach never comes from a status claim. The Job runs attempt 2;
    with the garbage collector stopped it is deleted with its finalizer removed by hand and created
    again under the same name (its status now says nothing: attempt 0), while ``again-2-worker-0``
    is between pods (its pod failed, the Job controller's back-off before the replacement) and no
    pod is active. No JobSet may be created until that batch Job can create no pod and its pods are
    gone: the barrier finds it by the Job's own label, not up to a bound from the status."""
    name = "again"
    spec = job_spec(workers=1)
    spec["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = 3  # the Job replaces a failed pod
    world.create_job(name, spec)
    world.run_until_pods_run(name, 1)
    for attempt in (1, 2):  # each resume is attempt+1, behind the barrier
        world.driver.patch_spec(world.namespace, name, suspend=True)
        world.run_until(lambda: world.phase(name) == "Suspended", f"attempt {attempt - 1} suspended", timeout=90)
        world.driver.patch_spec(world.namespace, name, suspend=False)
        world.run_until(lambda a=attempt: world.jobsets(name) == [f"{name}-{a}"], f"attempt {attempt} created",
                        timeout=90)
        world.run_until_pods_run(name, 1)
    labels = batch_jobs(world, f"{name}-2")[0]["metadata"]["labels"]
    assert labels.get("nvcre.nvidia.com/job") == name, "JobSet copies the Job template's labels to its batch Job"
    plane = world.plane
    plane.restart_controller_manager(WITHOUT_GARBAGE_COLLECTOR)
    try:
        # Fail the pod twice: the Job controller's back-off doubles (10 s, then 20 s), so the second
        # wait leaves the re-created Job many calls while no pod of the old attempt is active.
        first = world.pods.finish(f"{JOBSET_NAME_LABEL}={name}-2", phase="Failed", exit_code=1)
        assert first
        world.run_until(lambda: any(p["metadata"]["name"] not in first and p["status"].get("phase") == "Running"
                                    for p in world.active_pods(name)), "the first replacement pod runs", timeout=90)
        ended = world.pods.finish(f"{JOBSET_NAME_LABEL}={name}-2", phase="Failed", exit_code=1)
        assert ended
        world.run_until(lambda: world.active_pods(name) == [], "the first replacement pod failed")
        old = world.job(name)
        assert old is not None
        world.backend.custom.patch_namespaced_custom_object(
            "nvcre.nvidia.com", "v1alpha1", world.namespace, "jobs", name, {"metadata": {"finalizers": None}},
            _request_timeout=REQUEST_TIMEOUT)
        delete_job(world, name)
        deadline = time.monotonic() + 10
        while world.job(name) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        world.created.pop(name)
        calls_before = len(world.driver.calls)
        world.create_job(name, spec)  # a new uid, no status: attempt 0
        world.run_until(lambda: any(p["metadata"]["name"] not in [*first, *ended] for p in world.active_pods(name)),
                        "the batch Job's second replacement pod", timeout=120)
        assert world.jobsets(name) == [], "no JobSet while a batch Job of attempt 2 was left"
        calls = [c for c in world.driver.calls[calls_before:] if c.job == name]
        waited = held_for_batch_jobs(world, calls)
        assert waited, "while no pod was active, the hooks held for the batch Job: " + repr(
            [(c.hook, c.reply.status, (c.body or {}).get("status", {}).get("message") if c.body else c.reply.body[:200])
             for c in calls])
        message = next(c for c in waited[-1].body["status"]["conditions"] if c["type"] == "Drained")["message"]
        assert f"{name}-2-worker-0" in message
        world.run_for(3)
        assert world.jobsets(name) == [], "no JobSet while the replacement pod runs"
    finally:
        plane.restart_controller_manager(CONTROLLERS)  # the garbage collector back: JobSet, Job and pod go
    created_with: list[tuple[list[str], list[str]]] = []

    def attempt_zero() -> bool:
        if not world.jobsets(name):
            return False
        created_with.append(([j["metadata"]["name"] for j in batch_jobs(world, f"{name}-2")],
                             [p["metadata"]["name"] for p in attempt_pods(world, f"{name}-2") if is_active(p)]))
        return True

    world.run_until(attempt_zero, "the new Job's first JobSet once attempt 2's batch Job and pods are gone",
                    timeout=180)
    assert created_with == [([], [])], f"a JobSet created while attempt 2's batch Job or pod was left: {created_with}"
    assert world.jobsets(name) == [f"{name}-0"]
    world.run_until_pods_run(name, 1)
    world.assert_safe()


@pytest.mark.timeout(300)
def test_an_orphan_delete_finishes_once_the_orphaned_jobsets_pods_ended(world: ClusterWorld) -> None:
    """Issue 31, item 7: ``kubectl delete nvjob NAME --cascade=orphan``. The garbage collector takes
    the Job's owner reference off JobSet ``keep-0`` (it is kept, and no child any more); the barrier
    waits while its pods run, and once they ended its batch Jobs are ``Complete``: they can create
    no pod, nobody deletes them, and the Job is finalized. What the orphan delete keeps stays."""
    name = "keep"
    world.create_job(name, job_spec(workers=2))
    world.run_until_pods_run(name, 2)
    delete_job(world, name, propagation_policy="Orphan")
    # The stand-in is not stepped until the garbage collector has orphaned the JobSet and taken its
    # ``orphan`` finalizer off the Job, and both of its caches hold that (its lists are polled, and a
    # parent list newer than a children list would make it delete the JobSet it still sees as owned:
    # Metacontroller manages children once no garbage-collector finalizer is on the parent).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        orphaned = not (jobset_named(world, f"{name}-0") or {"metadata": {"ownerReferences": [1]}})["metadata"].get(
            "ownerReferences")
        if orphaned and "orphan" not in ((world.job(name) or {}).get("metadata", {}).get("finalizers") or []):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the garbage collector did not orphan the JobSet")
    for _ in range(2):
        world.driver.refresh()
        time.sleep(1.0)
    world.run_for(3)
    assert not world.gone(name), "the orphaned JobSet's pods still run: the barrier holds"
    assert world.condition(name, "Drained").get("reason") == "PodsActive"
    world.pods.finish(f"{JOBSET_NAME_LABEL}={name}-0")
    world.run_until(lambda: world.gone(name), "the Job finalized once the orphaned JobSet's pods ended", timeout=90)
    kept = batch_jobs(world, f"{name}-0")
    assert kept and all(any(c.get("type") == "Complete" and c.get("status") == "True"
                            for c in j["status"].get("conditions") or []) for j in kept), kept
    assert jobset_named(world, f"{name}-0") is not None, "an orphan delete keeps the JobSet"
    world.view.custom.delete_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", world.namespace, "jobsets",
                                                      f"{name}-0", _request_timeout=REQUEST_TIMEOUT)
    world.assert_safe()
