"""Lifecycles end to end on the real control plane: the real API server, Job controller and
garbage collector, the hooks served by gunicorn as their ServiceAccount, and the stand-ins for
Metacontroller, JobSet and the kubelets (tests/cluster/world.py). The invariants are checked
against the real server after every step and every answer."""

from __future__ import annotations

import pytest

from tests.cluster.world import ClusterWorld

pytestmark = pytest.mark.cluster


def test_create_run_succeed(world: ClusterWorld) -> None:
    world.create_job("happy")
    world.run_until(lambda: world.jobsets("happy") == ["happy-0"], "JobSet happy-0 created")
    world.run_until(lambda: world.phase("happy") == "Running", "Running")
    world.run_until_pods_run("happy", 2)
    world.kubelet.finish(world.namespace, "nvcre.nvidia.com/job=happy")
    world.run_until(lambda: world.phase("happy") == "Succeeded", "Succeeded")
    status = world.status("happy")
    assert (status["attempt"], status["restarts"]) == (0, 0)
    world.assert_safe()
