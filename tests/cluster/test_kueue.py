"""NVCRE Jobs behind real Kueue (issue 14, docs/adr/0103) on the real control plane: Kueue v0.17.0's
manager built from its Go module, its webhooks on loopback, a ClusterQueue with ``nvidia.com/gpu``
quota; the hooks served by gunicorn; Metacontroller's stand-in with the ``manifests-kueue``
overlay's child types (JobSets and Workloads, related WorkloadPriorityClasses).

The rule checked throughout: a Job's Workload (its quota) is never deleted while a pod of the Job
is active (the driver fails the world if it is), and the second Job never gets a JobSet while the
first one's pods are active on a quota that fits one."""

from __future__ import annotations

import itertools
import socket
from typing import Any

import pytest

from tests.cluster.conftest import built_kueue
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kueue import PRIORITY_LABEL, QUEUE_LABEL, Kueue
from tests.cluster.kwokctl import Kwok
from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec
from tests.e2e.server import HookServer

pytestmark = pytest.mark.cluster
_names = itertools.count()
GPUS_PER_POD = 4


@pytest.fixture
def qworld(control_plane: ControlPlane, hooks: HookServer, kueue: Kueue, kwok: Kwok) -> ClusterWorld:
    """A world whose namespace has LocalQueue ``team`` on a ClusterQueue of 8 GPUs of its own."""
    namespace = f"kueue-{next(_names)}"
    world = ClusterWorld(control_plane, hooks, namespace, kwok, workloads=True)
    kueue.queue(namespace, "team", gpus=8, cluster_queue=f"{namespace}-cq")
    return world


def gpu_spec(workers: int = 2, **kwargs: Any) -> dict[str, Any]:
    """``job_spec`` whose pods each ask for ``GPUS_PER_POD`` GPUs and one cpu."""
    spec = job_spec(workers, **kwargs)
    for entry in spec["replicatedJobs"]:
        for container in entry["template"]["spec"]["template"]["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": "1", "nvidia.com/gpu": str(GPUS_PER_POD)},
                                      "limits": {"nvidia.com/gpu": str(GPUS_PER_POD)}}
    return spec


def labels(priority: str = "") -> dict[str, str]:
    return {QUEUE_LABEL: "team", **({PRIORITY_LABEL: priority} if priority else {})}


def workload(world: ClusterWorld, kueue: Kueue, job: str) -> dict[str, Any] | None:
    return next((w for w in kueue.workloads(world.namespace) if w["metadata"]["name"] == job), None)


def reserving(kueue: Kueue, world: ClusterWorld) -> int:
    """How many Workloads hold quota in the world's ClusterQueue, as Kueue reports it."""
    status = kueue.cluster_queue(f"{world.namespace}-cq").get("status") or {}
    return int(status.get("reservingWorkloads") or 0)


def admitted(world: ClusterWorld, job: str) -> bool:
    return world.condition(job, "Admitted").get("status") == "True"


def test_kueue_starts_again_on_new_ports_when_one_is_taken_before_it_binds(control_plane: ControlPlane,
                                                                          installed: dict[str, str]) -> None:
    """CI once lost a Kueue start to a port taken between choosing it and Kueue binding it. With its
    health port held by someone else, the manager exits on ``address already in use``; ``start`` runs
    it again on new ports and it comes up. (First in the module: it runs its own manager, stopped
    before the module's one starts.)"""
    manager = Kueue(control_plane, built_kueue())
    taken = manager.health_port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        with manager:
            assert manager.alive()
            assert manager.health_port != taken
    assert f"127.0.0.1:{taken}: bind: address already in use" in manager.log_path.read_text()


def test_two_jobs_for_quota_that_fits_one(qworld: ClusterWorld, kueue: Kueue) -> None:
    world = qworld
    world.create_job("first", gpu_spec(), labels=labels())
    pods = world.run_until_pods_run("first", 2, timeout=90)
    assert admitted(world, "first")
    world.create_job("second", gpu_spec(), labels=labels())
    world.run_until(lambda: world.phase("second") == "Queued" and world.condition("second", "Admitted"),
                    "second Queued with Kueue's reason", timeout=60)
    world.run_for(3)
    assert world.jobsets("second") == [], "no JobSet for a Job Kueue has not admitted"
    assert "team" in world.status("second")["message"]
    assert world.condition("second", "Admitted")["status"] == "False"
    # The first one is deleted; one of its pods keeps running while it terminates.
    world.pods.hold(pods[0])
    world.driver.delete_job(world.namespace, "first")
    world.run_until(lambda: world.phase("first") == "Terminating" and world.jobsets("first") == [],
                    "first torn down", timeout=60)
    world.run_for(4)
    assert workload(world, kueue, "first") is not None, "the quota is held while a pod of the Job runs"
    assert reserving(kueue, world) == 1, "Kueue itself still counts the first Job's quota as reserved"
    assert world.phase("second") == "Queued" and world.jobsets("second") == []
    world.pods.release()
    world.run_until(lambda: world.gone("first"), "first gone", timeout=90)
    world.run_until(lambda: world.jobsets("second") == ["second-0"], "second admitted and created", timeout=90)
    world.run_until_pods_run("second", 2, timeout=60)
    assert admitted(world, "second")
    world.assert_safe()


def test_preemption_by_a_higher_priority_spends_no_restart(qworld: ClusterWorld, kueue: Kueue) -> None:
    world = qworld
    world.create_job("low", gpu_spec(), labels=labels("low"))
    pods = world.run_until_pods_run("low", 2, timeout=90)
    world.pods.hold(pods[0])
    world.create_job("urgent", gpu_spec(), labels=labels("high"))
    world.run_until(lambda: world.condition("low", "Admitted").get("reason") == "Preempted",
                    "low preempted by Kueue", timeout=90)
    world.run_until(lambda: world.phase("low") == "Suspending" and world.jobsets("low") == [],
                    "low torn down", timeout=60)
    world.run_for(4)
    assert workload(world, kueue, "low") is not None, "the victim's quota is held while its pod runs"
    assert reserving(kueue, world) == 1, "Kueue still counts the victim's quota, not the preemptor's"
    assert world.jobsets("urgent") == [], "the preemptor waits for the victim's pods"
    world.pods.release()
    world.run_until(lambda: world.jobsets("urgent") == ["urgent-0"], "urgent admitted after the drain", timeout=90)
    world.run_until(lambda: world.phase("low") == "Queued", "low queued again", timeout=60)
    status = world.status("low")
    assert (status["attempt"], status["restarts"]) == (1, 0), "a preemption is not a failure"
    world.run_until_pods_run("urgent", 2, timeout=60)
    world.pods.finish("nvcre.nvidia.com/job=urgent")
    world.run_until(lambda: world.phase("urgent") == "Succeeded", "urgent done", timeout=60)
    world.run_until(lambda: world.jobsets("low") == ["low-1"], "low admitted again, next attempt", timeout=90)
    world.run_until_pods_run("low", 2, timeout=60)
    world.assert_safe()


def test_a_restart_keeps_its_admission(qworld: ClusterWorld, kueue: Kueue) -> None:
    world = qworld
    world.create_job("retry", gpu_spec(max_restarts=1), labels=labels())
    pods = world.run_until_pods_run("retry", 2, timeout=90)
    uid = workload(world, kueue, "retry")["metadata"]["uid"]  # type: ignore[index]
    world.create_job("waiting", gpu_spec(), labels=labels())
    world.run_until(lambda: world.phase("waiting") == "Queued", "waiting queued", timeout=60)
    lingering = sorted(pods)[1]
    world.pods.hold(lingering)
    world.pods.finish("nvcre.nvidia.com/job=retry",
                         phase="Failed", exit_code=1, limit=1)
    world.run_until(lambda: world.phase("retry") == "Restarting", "Restarting", timeout=60)
    world.run_for(4)
    assert world.jobsets("waiting") == [], "the quota is not handed over during a restart"
    world.pods.release()
    world.run_until(lambda: world.jobsets("retry") == ["retry-1"], "attempt 1 created", timeout=90)
    same = workload(world, kueue, "retry")
    assert same is not None and same["metadata"]["uid"] == uid, "the same Workload, the same admission"
    assert admitted(world, "retry")
    assert (world.status("retry")["attempt"], world.status("retry")["restarts"]) == (1, 1)
    assert world.phase("waiting") == "Queued"
    world.assert_safe()


def test_delete_while_queued(qworld: ClusterWorld, kueue: Kueue) -> None:
    world = qworld
    world.create_job("running", gpu_spec(), labels=labels())
    world.run_until_pods_run("running", 2, timeout=90)
    world.create_job("queued", gpu_spec(), labels=labels())
    world.run_until(lambda: world.phase("queued") == "Queued" and workload(world, kueue, "queued") is not None,
                    "queued, with its Workload", timeout=60)
    world.driver.delete_job(world.namespace, "queued")
    world.run_until(lambda: world.gone("queued"), "the queued Job gone", timeout=60)
    world.run_until(lambda: workload(world, kueue, "queued") is None, "its Workload gone", timeout=60)
    assert world.phase("running") == "Running" and admitted(world, "running")
    world.assert_safe()


def test_the_admitted_flavor_puts_its_node_labels_and_tolerations_on_the_pods(qworld: ClusterWorld,
                                                                              kueue: Kueue) -> None:
    world = qworld
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    world.kwok.add_node(labels={"nvidia.com/gpu.product": "A100-SXM4-80GB"})  # the scheduler needs one
    kueue.queue(world.namespace, "a100", gpus=8, cluster_queue=f"{world.namespace}-a100", flavor="a100",
                flavor_spec={"nodeLabels": {"nvidia.com/gpu.product": "A100-SXM4-80GB"}, "tolerations": [toleration]})
    world.create_job("placed", gpu_spec(), labels={QUEUE_LABEL: "a100"})
    world.run_until_pods_run("placed", 2, timeout=90)
    for pod in world.active_pods("placed"):
        assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "A100-SXM4-80GB"}
        assert toleration in pod["spec"]["tolerations"]
    world.assert_safe()
