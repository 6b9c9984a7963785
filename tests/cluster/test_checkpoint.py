"""The checkpoint before the drain (issue 33) on the real control plane: the real API server, JobSet
controller, scheduler, kwok and the hooks under gunicorn, Metacontroller's stand-in with the
ConfigMap child type (``InPlace``). A stand-in trainer uses ``nvcre_checkpoint`` against the real API
server as rank 0 would: it reads the control file (the ConfigMap as the kubelet would mount it) and
acknowledges with the token of a ServiceAccount that may only ``patch`` its Job
(manifests/samples/checkpoint/trainer-rbac.yaml). The tier's invariants hold in every case."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

import nvcre_checkpoint as helper
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT, Applier, service_account_token
from tests.cluster.kwokctl import Kwok
from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec
from tests.e2e.server import HookServer

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "manifests" / "samples" / "checkpoint" / "trainer-rbac.yaml"
_names = itertools.count()


@pytest.fixture
def world(control_plane: ControlPlane, hooks: HookServer, kwok: Kwok) -> Iterator[ClusterWorld]:
    """A world whose CompositeController lists ConfigMap children (as the shipped manifests do)."""
    yield ClusterWorld(control_plane, hooks, f"checkpoint-{next(_names)}", kwok, configmaps=True)


class Trainer:
    """Rank 0 of the workload, standing in: the control file as mounted, the helper, the
    ServiceAccount of the sample RBAC (patch on its Job, nothing else)."""

    def __init__(self, world: ClusterWorld, tmp: Path) -> None:
        self.world = world
        admin = world.plane.api_client()
        applier = Applier(admin)
        for document in yaml.safe_load_all(RBAC.read_text()):
            document["metadata"]["namespace"] = world.namespace
            for subject in document.get("subjects") or ():
                subject["namespace"] = world.namespace
            applier.apply(document)
        token = service_account_token(admin, world.namespace, "trainer")
        self.api = helper.InClusterApi(world.plane.url, token=token, ca_file=str(world.plane.ca_file))
        self.core = kubernetes.client.CoreV1Api(admin)
        self.file = tmp / "checkpoint.json"

    def mount(self, job: str, attempt: int) -> Path:
        """What the kubelet mounts: the control ConfigMap's file, as the API server holds it now."""
        configmap = self.core.read_namespaced_config_map(f"{job}-{attempt}-control", self.world.namespace,
                                                         _request_timeout=REQUEST_TIMEOUT)
        self.file.write_text(configmap.data["checkpoint.json"])
        return self.file


def checkpoint_of(world: ClusterWorld, name: str) -> dict[str, Any]:
    return dict(world.status(name).get("checkpoint") or {})


def spec(**checkpoint: Any) -> dict[str, Any]:
    return job_spec() | {"checkpoint": checkpoint}


def test_a_suspend_waits_for_the_trainer_s_acknowledgement(world: ClusterWorld, tmp_path: Path) -> None:
    trainer = Trainer(world, tmp_path)
    world.create_job("saver", spec(graceSeconds=300))
    world.run_until_pods_run("saver", 2)
    assert helper.pending(str(trainer.mount("saver", 0))) is None  # created with its JobSet, nothing asked
    world.driver.patch_spec(world.namespace, "saver", suspend=True)
    world.run_until(lambda: checkpoint_of(world, "saver").get("outcome") == "Requested", "the request")
    world.run_until(lambda: helper.pending(str(trainer.mount("saver", 0))) is not None,
                    "the request in the control ConfigMap (updated in place)")
    world.run_for(3)
    assert world.phase("saver") == "Suspending" and world.jobsets("saver") == ["saver-0"]
    assert len(world.active_pods("saver")) == 2, "the workload runs while it saves"
    with pytest.raises(helper.CheckpointError, match="HTTP 403"):  # the trainer may patch its Job, not read it
        helper.pending(str(trainer.file), api=trainer.api)
    asked = time.monotonic()
    request = helper.acknowledge(1200, str(trainer.file), api=trainer.api)
    assert request.id == checkpoint_of(world, "saver")["id"]
    world.run_until(lambda: world.phase("saver") == "Suspended", "suspended once acknowledged and drained")
    assert time.monotonic() - asked < 60, "the acknowledgement, not the 300 s grace, let the drain go"
    record = checkpoint_of(world, "saver")
    assert (record["outcome"], record["acknowledgedStep"]) == ("Acknowledged", 1200)
    assert world.condition("saver", "Checkpointed")["reason"] == "Acknowledged"
    entry = world.status("saver")["attempts"][0]
    assert (entry["outcome"], entry["checkpointStep"]) == ("Suspended", 1200)
    world.run_until(lambda: "drainSeconds" in world.status("saver")["attempts"][0], "the drain dated")
    drained = world.status("saver")["attempts"][0]["drainSeconds"]
    assert drained <= time.monotonic() - asked + 1, "timed from the acknowledgement, not from the suspend"
    world.run_until(lambda: {"CheckpointRequested", "CheckpointAcknowledged"} <= set(world.event_reasons("saver")),
                    "the Events")
    world.assert_safe()


def test_without_an_acknowledgement_the_grace_expires_and_the_drain_proceeds(world: ClusterWorld) -> None:
    world.create_job("silent", spec(graceSeconds=30))
    world.run_until_pods_run("silent", 2)
    world.driver.patch_spec(world.namespace, "silent", suspend=True)
    world.run_until(lambda: checkpoint_of(world, "silent").get("outcome") == "Requested", "the request")
    world.run_for(10)
    assert world.jobsets("silent") == ["silent-0"], "the JobSet runs until the grace expires"
    world.run_until(lambda: world.phase("silent") == "Suspended", "suspended after the grace", timeout=90)
    record = checkpoint_of(world, "silent")
    assert record["outcome"] == "GraceExpired" and record["expiredAt"] == record["deadline"]
    assert world.condition("silent", "Checkpointed")["reason"] == "GraceExpired"
    world.run_until(lambda: "CheckpointGraceExpired" in world.event_reasons("silent"), "the Warning Event")
    world.assert_safe()


def test_a_suspend_without_the_feature_drains_at_once(world: ClusterWorld) -> None:
    world.create_job("plain")
    world.run_until_pods_run("plain", 2)
    world.driver.patch_spec(world.namespace, "plain", suspend=True)
    world.run_until(lambda: world.phase("plain") == "Suspended", "suspended", timeout=30)
    assert "checkpoint" not in world.status("plain") and not world.condition("plain", "Checkpointed")
    world.assert_safe()


def test_a_resume_during_the_checkpoint_keeps_the_same_attempt_running(world: ClusterWorld) -> None:
    world.create_job("fickle", spec(graceSeconds=300))
    world.run_until_pods_run("fickle", 2)
    world.driver.patch_spec(world.namespace, "fickle", suspend=True)
    world.run_until(lambda: checkpoint_of(world, "fickle").get("outcome") == "Requested", "the request")
    pods = sorted(p["metadata"]["name"] for p in world.active_pods("fickle"))
    world.driver.patch_spec(world.namespace, "fickle", suspend=None)
    world.run_until(lambda: checkpoint_of(world, "fickle").get("outcome") == "Cancelled", "cancelled")
    world.run_until(lambda: world.phase("fickle") == "Running", "Running again")
    world.run_for(3)
    status = world.status("fickle")
    assert (status["attempt"], world.jobsets("fickle")) == (0, ["fickle-0"])
    assert sorted(p["metadata"]["name"] for p in world.active_pods("fickle")) == pods, "nothing was dropped"
    assert "checkpointRequested" not in status["attempts"][0], "a cancelled request leaves no history key"
    first = checkpoint_of(world, "fickle")
    world.driver.patch_spec(world.namespace, "fickle", suspend=True)  # asked again: a new request, not the first
    world.run_until(lambda: checkpoint_of(world, "fickle").get("outcome") == "Requested", "asked again")
    again = checkpoint_of(world, "fickle")
    assert again["id"] != first["id"] and again["requestedAt"] > first["requestedAt"]
    assert again["deadline"] > first["deadline"]
    world.run_until(lambda: world.status("fickle")["attempts"][0].get("checkpointRequested") == again["requestedAt"],
                    "the history names the new request")
    world.assert_safe()


def test_a_delete_with_on_delete_waits_for_the_acknowledgement(world: ClusterWorld, tmp_path: Path) -> None:
    trainer = Trainer(world, tmp_path)
    world.create_job("leaving", spec(onDelete=True, graceSeconds=300))
    world.run_until_pods_run("leaving", 2)
    world.driver.delete_job(world.namespace, "leaving")
    world.run_until(lambda: checkpoint_of(world, "leaving").get("outcome") == "Requested", "the request")
    world.run_for(3)
    assert world.phase("leaving") == "Terminating" and world.jobsets("leaving") == ["leaving-0"]
    world.run_until(lambda: helper.pending(str(trainer.mount("leaving", 0))) is not None, "the request mounted")
    helper.acknowledge(7, str(trainer.file), api=trainer.api)
    world.run_until(lambda: world.gone("leaving"), "finalized once acknowledged and drained")
    world.assert_safe()


def test_the_acknowledgement_names_the_request_or_is_ignored(world: ClusterWorld, tmp_path: Path) -> None:
    trainer = Trainer(world, tmp_path)
    world.create_job("picky", spec(graceSeconds=300))
    world.run_until_pods_run("picky", 2)
    world.driver.patch_spec(world.namespace, "picky", suspend=True)
    world.run_until(lambda: checkpoint_of(world, "picky").get("outcome") == "Requested", "the request")
    stale = helper.Request("0-suspend-20000101000000", 0, "suspend", "", "picky", world.namespace)
    helper.acknowledge(3, api=trainer.api, request=stale)
    world.run_until(lambda: checkpoint_of(world, "picky").get("ignored") == stale.id, "said ignored")
    world.run_for(3)
    assert world.phase("picky") == "Suspending" and world.jobsets("picky") == ["picky-0"]
    assert "CheckpointAckIgnored" in world.event_reasons("picky")
    json.dumps(checkpoint_of(world, "picky"))
    world.assert_safe()
