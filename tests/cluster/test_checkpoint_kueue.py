"""The checkpoint before the drain (issue 33) when Kueue preempts: the real Kueue beside the parts of
``test_checkpoint.py`` (its stand-in trainer, ``Trainer``), in a file of its own so the tier's
pytest-xdist workers can run it beside the rest of the checkpoint tests (each file runs whole on one
worker: these three and the suspend tests' 30 s grace would otherwise make one long file)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest

import nvcre_checkpoint as helper
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kwokctl import Kwok
from tests.cluster.test_checkpoint import Trainer, checkpoint_of
from tests.cluster.world import ClusterWorld
from tests.e2e.server import HookServer

pytestmark = pytest.mark.cluster
_names = itertools.count()


def test_a_preemption_moves_the_quota_only_after_the_acknowledgement_and_the_drain(
        control_plane: ControlPlane, hooks: HookServer, kwok: Kwok, kueue: Any, tmp_path: Path) -> None:
    from tests.cluster.test_kueue import gpu_spec, labels, reserving, workload
    namespace = f"checkpoint-kueue-{next(_names)}"
    world = ClusterWorld(control_plane, hooks, namespace, kwok, workloads=True, configmaps=True)
    kueue.queue(namespace, "team", gpus=8, cluster_queue=f"{namespace}-cq")
    trainer = Trainer(world, tmp_path)
    world.create_job("low", gpu_spec() | {"checkpoint": {"graceSeconds": 300}}, labels=labels("low"))
    world.run_until_pods_run("low", 2, timeout=90)
    world.create_job("urgent", gpu_spec(), labels=labels("high"))
    world.run_until(lambda: checkpoint_of(world, "low").get("reason") == "preemption"
                    and checkpoint_of(world, "low").get("outcome") == "Requested", "low asked to save", timeout=90)
    world.run_for(4)
    assert world.phase("low") == "Suspending" and world.jobsets("low") == ["low-0"], "low runs while it saves"
    assert len(world.active_pods("low")) == 2
    assert workload(world, kueue, "low") is not None and reserving(kueue, world) == 1, "the quota stays held"
    assert world.jobsets("urgent") == [], "the preemptor waits"
    world.run_until(lambda: helper.pending(str(trainer.mount("low", 0))) is not None, "the request mounted")
    acked = time.monotonic()
    helper.acknowledge(4200, str(trainer.file), api=trainer.api)
    world.run_until(lambda: world.jobsets("urgent") == ["urgent-0"], "urgent admitted after the drain", timeout=90)
    released = time.monotonic() - acked
    world.run_until(lambda: world.phase("low") == "Queued", "low queued again", timeout=60)
    record = checkpoint_of(world, "low")
    assert (record["outcome"], record["acknowledgedStep"], record["reason"]) == ("Acknowledged", 4200, "preemption")
    status = world.status("low")
    assert (status["attempt"], status["restarts"]) == (1, 0), "a preemption is not a failure"
    entry = next(e for e in status["attempts"] if e["attempt"] == 0)
    assert (entry["outcome"], entry["checkpointStep"]) == ("Evicted", 4200)
    print(f"\nacknowledgement to the preemptor's JobSet: {released:.1f} s")
    world.assert_safe()


def test_a_preemption_without_an_acknowledgement_drains_when_the_grace_expires(
        control_plane: ControlPlane, hooks: HookServer, kwok: Kwok, kueue: Any) -> None:
    from tests.cluster.test_kueue import gpu_spec, labels, workload
    namespace = f"checkpoint-kueue-{next(_names)}"
    world = ClusterWorld(control_plane, hooks, namespace, kwok, workloads=True, configmaps=True)
    kueue.queue(namespace, "team", gpus=8, cluster_queue=f"{namespace}-cq")
    world.create_job("low", gpu_spec() | {"checkpoint": {"graceSeconds": 30}}, labels=labels("low"))
    world.run_until_pods_run("low", 2, timeout=90)
    world.create_job("urgent", gpu_spec(), labels=labels("high"))
    world.run_until(lambda: checkpoint_of(world, "low").get("outcome") == "Requested", "low asked", timeout=90)
    world.run_for(10)
    assert world.jobsets("low") == ["low-0"] and workload(world, kueue, "low") is not None
    assert world.jobsets("urgent") == []
    world.run_until(lambda: world.jobsets("urgent") == ["urgent-0"], "urgent after the grace and the drain",
                    timeout=120)
    record = checkpoint_of(world, "low")
    assert (record["outcome"], record["reason"]) == ("GraceExpired", "preemption")
    entry = next(e for e in world.status("low")["attempts"] if e["attempt"] == 0)
    assert entry["checkpointExpired"] == record["deadline"]
    world.assert_safe()


def test_an_eviction_withdrawn_while_the_request_waits_cancels_it_and_the_attempt_runs_on(
        control_plane: ControlPlane, hooks: HookServer, kwok: Kwok, kueue: Any) -> None:
    """Issue 33: "a resume during the checkpoint (... the eviction withdrawn) cancels it". Kueue
    v0.17.0 takes an eviction back only by reserving quota again (``workload.SetQuotaReservation``
    sets ``Evicted`` False, reason ``QuotaReserved``), and it never unsets the reservation of a
    Workload it does not stop itself (an external framework's, such as these): so the withdrawal
    is that status write, made here as Kueue makes it, once the preemptor is gone. The real Kueue
    then holds an admitted Workload again and evicts nothing: the request is ``Cancelled``, the same
    attempt keeps its JobSet, pods and Workload (no drain, no new attempt, the quota never moved)."""
    from tests.cluster.kueue import GROUP, VERSION
    from tests.cluster.test_kueue import gpu_spec, labels, reserving, workload
    namespace = f"checkpoint-kueue-{next(_names)}"
    world = ClusterWorld(control_plane, hooks, namespace, kwok, workloads=True, configmaps=True)
    kueue.queue(namespace, "team", gpus=8, cluster_queue=f"{namespace}-cq")
    world.create_job("low", gpu_spec() | {"checkpoint": {"graceSeconds": 300}}, labels=labels("low"))
    world.run_until_pods_run("low", 2, timeout=90)
    pods = sorted(p["metadata"]["name"] for p in world.active_pods("low"))
    uid = workload(world, kueue, "low")["metadata"]["uid"]  # type: ignore[index]
    world.create_job("urgent", gpu_spec(), labels=labels("high"))
    world.run_until(lambda: checkpoint_of(world, "low").get("outcome") == "Requested", "low asked", timeout=90)
    asked = checkpoint_of(world, "low")
    assert asked["reason"] == "preemption" and world.phase("low") == "Suspending"
    world.driver.delete_job(world.namespace, "urgent")
    world.run_until(lambda: world.gone("urgent"), "the preemptor gone", timeout=60)
    evicted = workload(world, kueue, "low")
    assert evicted is not None and evicted["metadata"]["uid"] == uid
    conditions = [c | {"status": "False", "reason": "QuotaReserved",
                       "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                  if c["type"] in ("Evicted", "Preempted") and c["status"] == "True" else c
                  for c in evicted["status"]["conditions"]]
    kueue.custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, "workloads", "low",
                                                       {"status": {"conditions": conditions}})
    world.run_until(lambda: checkpoint_of(world, "low").get("outcome") == "Cancelled", "cancelled", timeout=60)
    world.run_until(lambda: world.phase("low") == "Running", "Running again", timeout=30)
    world.run_for(4)
    status, record = world.status("low"), checkpoint_of(world, "low")
    assert record["id"] == asked["id"] and world.condition("low", "Checkpointed")["reason"] == "Cancelled"
    assert (status["phase"], status["attempt"], status["restarts"]) == ("Running", 0, 0)
    assert world.jobsets("low") == ["low-0"]
    assert sorted(p["metadata"]["name"] for p in world.active_pods("low")) == pods, "nothing was dropped"
    admitted = workload(world, kueue, "low")
    assert admitted is not None and admitted["metadata"]["uid"] == uid, "the same Workload, the same quota"
    assert not any(c["type"] == "Evicted" and c["status"] == "True" for c in admitted["status"]["conditions"]), \
        "Kueue evicts nothing again"
    assert reserving(kueue, world) == 1 and world.condition("low", "Admitted")["status"] == "True"
    reasons = world.event_reasons("low")
    assert "CheckpointCancelled" in reasons and "DrainWaiting" not in reasons and "DrainPassed" not in reasons
    assert [e["attempt"] for e in status["attempts"]] == [0] and "outcome" not in status["attempts"][0]
    world.assert_safe()
