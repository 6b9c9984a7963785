"""Lifecycles end to end on the real control plane: the real API server, Job controller, garbage
collector, JobSet controller and scheduler, kwok's nodes and pod lifecycles, the hooks served by
gunicorn as their ServiceAccount, and Metacontroller's stand-in (tests/cluster/world.py). The
invariants are checked against the real server after every step and every answer."""

from __future__ import annotations

import pytest

from podread import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from tests.cluster.world import ClusterWorld

pytestmark = pytest.mark.cluster


def test_create_run_succeed(world: ClusterWorld) -> None:
    world.create_job("happy")
    world.run_until(lambda: world.jobsets("happy") == ["happy-0"], "JobSet happy-0 created")
    world.run_until(lambda: world.phase("happy") == "Running", "Running")
    world.run_until_pods_run("happy", 2)
    for pod in world.active_pods("happy"):  # made by the real JobSet and Job controllers, bound by the scheduler
        labels = pod["metadata"]["labels"]
        assert labels[JOBSET_NAME_LABEL] == "happy-0" and labels["jobset.sigs.k8s.io/priority"] == "0", labels
        assert pod["spec"]["nodeName"] in world.kwok.nodes()
    world.pods.finish("nvcre.nvidia.com/job=happy")
    world.run_until(lambda: world.phase("happy") == "Succeeded", "Succeeded")
    status = world.status("happy")
    assert (status["attempt"], status["restarts"]) == (0, 0)
    world.assert_safe()


def test_failure_restarts_only_after_the_last_pod_is_gone(world: ClusterWorld) -> None:
    """The MPI launcher outlives its workers: it stays terminating after they are gone, and the
    next attempt waits for it."""
    world.create_job("retry", max_restarts=1, launcher=True)
    world.run_until_pods_run("retry", 3)
    launchers = [p["metadata"]["name"] for p in world.active_pods("retry")
                 if (p["metadata"].get("labels") or {}).get(REPLICATED_JOB_LABEL) == "launcher"]
    assert len(launchers) == 1, f"one launcher pod: {launchers}"
    lingering = launchers[0]
    world.pods.hold(lingering)
    world.pods.finish("nvcre.nvidia.com/job=retry", phase="Failed", exit_code=1, limit=1)
    world.run_until(lambda: world.phase("retry") == "Restarting", "Restarting")
    world.run_until(lambda: world.jobsets("retry") == [], "the failed attempt torn down")
    world.run_for(3)
    assert world.jobsets("retry") == [], "no next attempt while a pod of the last one runs"
    world.run_until(lambda: [p["metadata"]["name"] for p in world.active_pods("retry")] == [lingering],
                    "the workers gone, the launcher still terminating")
    world.run_for(2)
    assert world.jobsets("retry") == [], "no next attempt while the launcher of the last one runs"
    assert world.condition("retry", "Drained")["status"] == "False"
    world.pods.release()
    world.run_until(lambda: world.jobsets("retry") == ["retry-1"], "attempt 1 created")
    status = world.status("retry")
    assert (status["attempt"], status["restarts"]) == (1, 1)
    world.assert_safe()


def test_a_pod_held_terminating_keeps_the_real_jobset_running(world: ClusterWorld) -> None:
    """A deleted pod that does not go (its kubelet has not confirmed it): its batch Job is only
    ``FailureTarget``, and the real JobSet reacts to ``Failed`` alone, so it stays non-terminal and
    the Job stays Running with its attempt. (The JobSet stand-in failed at ``FailureTarget``.) Once
    the pod goes, the JobSet fails and the restart follows."""
    world.create_job("stuck", max_restarts=1)
    pods = world.run_until_pods_run("stuck", 2)
    world.pods.hold(pods[0])
    world.pods.core.delete_namespaced_pod(pods[0], world.namespace)
    world.run_for(5)
    jobset = world.view.jobsets_of(world.created["stuck"])[0]
    assert not (jobset.get("status") or {}).get("terminalState"), jobset.get("status")
    assert world.jobsets("stuck") == ["stuck-0"] and world.phase("stuck") == "Running"
    assert world.status("stuck")["restarts"] == 0
    world.pods.release()
    world.run_until(lambda: world.jobsets("stuck") == ["stuck-1"], "attempt 1 once the pod is gone", timeout=90)
    assert world.status("stuck")["restarts"] == 1
    world.assert_safe()


def test_delete_keeps_the_job_until_its_pods_are_gone(world: ClusterWorld) -> None:
    world.create_job("doomed")
    pods = world.run_until_pods_run("doomed", 2)
    world.pods.hold(pods[0])
    world.driver.delete_job(world.namespace, "doomed")
    world.run_until(lambda: world.phase("doomed") == "Terminating", "Terminating")
    world.run_for(3)
    assert not world.gone("doomed"), "the finalizer holds the Job while a pod runs"
    world.pods.release()
    world.run_until(lambda: world.gone("doomed"), "the Job gone", timeout=90)
    assert world.active_pods("doomed") == []
    world.assert_safe()


def test_suspend_then_resume(world: ClusterWorld) -> None:
    world.create_job("pause")
    world.run_until_pods_run("pause", 2)
    world.driver.patch_spec(world.namespace, "pause", suspend=True)
    world.run_until(lambda: world.phase("pause") == "Suspended", "Suspended", timeout=90)
    assert world.active_pods("pause") == []
    world.driver.patch_spec(world.namespace, "pause", suspend=False)
    world.run_until(lambda: world.jobsets("pause") == ["pause-1"], "resumed as attempt 1")
    world.run_until_pods_run("pause", 2)
    world.assert_safe()


def test_a_job_created_suspended_starts_at_attempt_0_when_resumed(world: ClusterWorld) -> None:
    """Issue 23: the first workload is attempt 0, whether or not the Job was created suspended."""
    world.create_job("dormant", suspend=True)
    world.run_until(lambda: world.phase("dormant") == "Suspended", "Suspended")
    assert world.jobsets("dormant") == []
    world.driver.patch_spec(world.namespace, "dormant", suspend=False)
    world.run_until(lambda: world.jobsets("dormant") == ["dormant-0"], "resumed as attempt 0")
    world.run_until_pods_run("dormant", 2)
    world.run_until(lambda: world.phase("dormant") == "Running", "Running")
    status = world.status("dormant")
    assert (status["attempt"], status["restarts"], [e["attempt"] for e in status["attempts"]]) == (0, 0, [0])
    world.assert_safe()


def test_restarts_exhausted_ends_failed(world: ClusterWorld) -> None:
    world.create_job("broken")
    world.run_until_pods_run("broken", 2)
    world.pods.finish("nvcre.nvidia.com/job=broken", phase="Failed", exit_code=1, limit=1)
    world.run_until(lambda: world.phase("broken") == "Failed", "Failed")
    world.run_for(2)
    assert world.jobsets("broken") == ["broken-0"], "a Failed Job keeps its JobSet and gets no new one"
    world.assert_safe()


def test_a_lost_node_holds_the_teardown(world: ClusterWorld) -> None:
    world.create_job("stranded")
    world.run_until_pods_run("stranded", 2)
    pod = sorted(world.active_pods("stranded"), key=lambda p: p["metadata"]["name"])[0]
    node = pod["spec"]["nodeName"]
    world.kwok.lose_node(node)
    world.driver.delete_job(world.namespace, "stranded")
    world.run_until(lambda: world.phase("stranded") == "Terminating", "Terminating")
    world.run_for(4)
    assert not world.gone("stranded")
    drained = world.condition("stranded", "Drained")
    assert drained["status"] == "False"
    assert pod["metadata"]["name"] in world.status("stranded")["message"] + drained["message"]
    world.kwok.restore_node(node)
    world.run_until(lambda: world.gone("stranded"), "the Job gone after the node came back", timeout=90)
    world.assert_safe()


def test_a_template_edit_the_crd_lets_through_never_reaches_an_attempt(world: ClusterWorld) -> None:
    """``backoffLimit`` replaced by ``activeDeadlineSeconds`` in a running Job's template: the real
    server accepts it (test_api: the CRD's immutability rule cannot tell), the hooks refuse it
    (``ReplicatedJobsChanged``): the running attempt is kept, a failure starts no attempt from the
    edited spec, and once the spec is restored the restart goes on."""
    world.create_job("edited", max_restarts=1)
    world.run_until_pods_run("edited", 2)
    # Running first: the real JobSet reports its pods a moment after they run, and an edit the hooks
    # refuse while the Job still says Pending keeps it Pending (row 7 freezes the phase), pods running
    # or not. The JobSet stand-in wrote its status every step, so the Job was always Running by now.
    world.run_until(lambda: world.phase("edited") == "Running", "Running")

    def job_template(job: dict) -> dict:
        return job["spec"]["replicatedJobs"][0]["template"]["spec"]

    def replace(job: dict) -> None:
        world.backend.custom.replace_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", world.namespace,
                                                              "jobs", "edited", job)

    job = world.job("edited")
    assert job is not None
    original = dict(job_template(job))
    job_template(job)["activeDeadlineSeconds"] = 600
    del job_template(job)["backoffLimit"]
    replace(job)  # accepted
    world.run_until(lambda: world.condition("edited", "InvalidSpec").get("reason") == "ReplicatedJobsChanged",
                    "the edit refused by the hooks")
    assert world.jobsets("edited") == ["edited-0"] and world.phase("edited") == "Running"
    world.pods.finish("nvcre.nvidia.com/job=edited", phase="Failed", exit_code=1, limit=1)
    world.run_for(4)
    assert world.jobsets("edited") == ["edited-0"], "no attempt built from the edited spec"
    assert world.status("edited")["restarts"] == 0
    job = world.job("edited")
    assert job is not None
    job["spec"]["replicatedJobs"][0]["template"]["spec"] = original
    replace(job)  # the same kind of edit, back
    world.run_until(lambda: world.jobsets("edited") == ["edited-1"], "the restart goes on from the restored spec",
                    timeout=90)
    assert world.condition("edited", "InvalidSpec")["status"] == "False"
    assert world.status("edited")["restarts"] == 1
    world.assert_safe()
