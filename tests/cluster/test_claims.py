"""Status claims on the real control plane (ADR-104): a status written through the ``/status``
subresource by someone other than the hooks (anyone with status write, a restore from a backup)
never ends a healthy run, drops its JobSet or deletes the Job; once the status is put right the run
goes on and ends as its pods say. The hooks run under gunicorn as their ServiceAccount, the
invariants are checked against the real server all along (tests/cluster/world.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec

pytestmark = pytest.mark.cluster

GROUP, VERSION = "nvcre.nvidia.com", "v1alpha1"


def write_status(world: ClusterWorld, name: str, status: dict[str, Any]) -> None:
    """Replaces Job ``name``'s status through ``/status``, as a user with status write would, then
    lets Metacontroller's cache catch up before the world steps again: a sync from the parent as
    the cache held it before would write its answer over this status (the last writer wins, issue
    21), and the hooks would never see it. The write must survive that wait."""
    job = world.job(name)
    assert job is not None
    job["status"] = status
    world.backend.custom.replace_namespaced_custom_object_status(GROUP, VERSION, world.namespace, "jobs", name, job)
    world.driver.refresh()  # the informer receives the write now, and serves it once its lag has passed
    time.sleep(world.driver.staleness.lag + 0.2)
    assert world.status(name) == status, "nothing else wrote the status meanwhile"


def test_a_forged_final_status_neither_ends_the_run_nor_deletes_the_job(world: ClusterWorld) -> None:
    world.create_job("claimed", {**job_spec(), "ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 3600})
    pods = world.run_until_pods_run("claimed", 2)
    world.run_until(lambda: world.phase("claimed") == "Running", "Running")
    honest = world.status("claimed")
    assert honest.get("startTime"), "the hooks recorded when the run started"
    forged = {**honest, "phase": "Succeeded", "startTime": "1999-01-01T00:00:00Z",
              "completionTime": "1999-01-01T01:00:00Z",
              "conditions": [*honest.get("conditions", []),
                             {"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds",
                              "lastTransitionTime": "1999-01-01T01:00:00Z"}]}
    write_status(world, "claimed", forged)
    world.run_until(lambda: world.condition("claimed", "StatusMismatch").get("status") == "True",
                    "the hooks hold on the forged status")
    world.run_for(3)
    assert not world.gone("claimed"), "ttlSecondsAfterFinished: 0 on a forged Succeeded deleted nothing"
    assert world.jobsets("claimed") == ["claimed-0"], "the running JobSet is kept"
    assert sorted(p["metadata"]["name"] for p in world.active_pods("claimed")) == sorted(pods)
    held = world.status("claimed")
    assert held["startTime"] == forged["startTime"] and held["completionTime"] == forged["completionTime"], \
        "while holding, the hooks keep the claims as they are and stamp nothing"
    assert "status.startTime" in world.condition("claimed", "StatusMismatch")["message"]
    write_status(world, "claimed", honest)  # the operator puts the status right
    world.run_for(3)
    assert world.condition("claimed", "StatusMismatch").get("status") != "True", "the disagreement is gone"
    assert (world.phase("claimed"), world.status("claimed")["startTime"]) == ("Running", honest["startTime"])
    assert world.jobsets("claimed") == ["claimed-0"]
    world.pods.finish("nvcre.nvidia.com/job=claimed")
    world.run_until(lambda: world.gone("claimed"), "Succeeded for real, then deleted by its TTL of 0")
    world.assert_safe()
