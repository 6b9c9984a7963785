"""Gang scheduling on the real tier (issue 22): the real kube-scheduler with ``GenericWorkload`` places an
attempt's pods all together or not at all through the PodGroup the hooks answer; the control without
a gang shows the partial placement the gang prevents; without the PodGroup child type the Job waits and
says why.

Each test has nodes of its own (``pool``: kwok nodes labelled and tainted with a tag only its pods
select and tolerate, deleted afterwards), so no other test's pods take their GPUs, and every worker
asks for a whole node's GPUs. The scheduler retries an unschedulable gang on its backoff, not on node
events (issue 22: a gang bound 9-15 s after its node appeared), hence the waits of up to 60 s.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import kubernetes
import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT
from tests.cluster.kwokctl import GPUS_PER_NODE, Kwok
from tests.cluster.world import ClusterWorld
from tests.e2e.harness import job_spec
from tests.e2e.server import HookServer

pytestmark = pytest.mark.cluster

POOL_KEY = "nvcre.test/gang-pool"
PLACED_SECONDS = 60.0
_tags = itertools.count()


class Pool:
    """Nodes of one test: ``add(n)`` creates them (labelled and tainted ``POOL_KEY=<tag>``)."""

    def __init__(self, kwok: Kwok) -> None:
        self.kwok = kwok
        self.tag = f"g{next(_tags)}"
        self.names: list[str] = []

    def add(self, count: int) -> None:
        taint = {"key": POOL_KEY, "value": self.tag, "effect": "NoSchedule"}
        for _ in range(count):
            self.names.append(self.kwok.add_node({POOL_KEY: self.tag}, taints=[taint]))

    def delete(self) -> None:
        for name in self.names:
            try:
                self.kwok.core.delete_node(name, _request_timeout=REQUEST_TIMEOUT)
            except kubernetes.client.ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def pool(kwok: Kwok) -> Iterator[Pool]:
    made = Pool(kwok)
    try:
        yield made
    finally:
        made.delete()


_names = itertools.count()


@pytest.fixture
def gang_world(control_plane: ControlPlane, hooks: HookServer, kwok: Kwok) -> ClusterWorld:
    """A world whose Metacontroller lists PodGroup children (the manifests-gang overlay)."""
    return ClusterWorld(control_plane, hooks, f"gang-{next(_names)}", kwok, podgroups=True)


def spec(workers: int, tag: str, *, gang: str | None = "Gang") -> dict[str, Any]:
    """``workers`` workers, each taking a whole node of pool ``tag``; ``spec.gang.policy`` ``gang``."""
    built = job_spec(workers)
    pod = built["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"] = {POOL_KEY: tag}
    pod["tolerations"] = [{"key": POOL_KEY, "operator": "Equal", "value": tag, "effect": "NoSchedule"}]
    pod["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(GPUS_PER_NODE)}}
    if gang is not None:
        built["gang"] = {"policy": gang}
    return built


def bound(world: ClusterWorld, name: str) -> list[str]:
    """The active pods of Job ``name`` the scheduler has bound to a node."""
    return sorted(p["metadata"]["name"] for p in world.active_pods(name) if p["spec"].get("nodeName"))


def _scheduled_at(pod: dict[str, Any]) -> datetime:
    """When the scheduler bound ``pod`` (its ``PodScheduled=True`` condition's time)."""
    [when] = [c["lastTransitionTime"] for c in pod["status"].get("conditions") or []
              if c["type"] == "PodScheduled" and c["status"] == "True"]
    return datetime.fromisoformat(when.replace("Z", "+00:00"))


def podgroup(world: ClusterWorld, name: str) -> dict[str, Any] | None:
    try:
        raw = kubernetes.client.CustomObjectsApi(world.plane.api_client()).get_namespaced_custom_object(
            "scheduling.k8s.io", "v1beta1", world.namespace, "podgroups", name, _request_timeout=REQUEST_TIMEOUT)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return json.loads(json.dumps(raw))


def test_a_gang_binds_nothing_until_all_of_it_fits_then_all_together(gang_world: ClusterWorld, pool: Pool) -> None:
    world = gang_world
    pool.add(2)
    world.create_job("gang", spec(3, pool.tag))
    seen: set[int] = set()

    def unschedulable() -> bool:
        seen.add(len(bound(world, "gang")))
        return world.condition("gang", "GangScheduled").get("reason") == "Unschedulable"

    world.run_until(unschedulable, "GangScheduled False Unschedulable", timeout=PLACED_SECONDS)
    group = podgroup(world, "gang-0")
    assert group is not None and group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert bound(world, "gang") == [] and seen == {0}, "an unschedulable gang binds nothing"
    assert world.phase("gang") == "Pending"
    assert "minCount (3) cannot be satisfied" in world.condition("gang", "GangScheduled")["message"]
    assert "GangUnschedulable" in world.event_reasons("gang")
    pool.add(1)

    counts: list[int] = []

    def all_bound() -> bool:
        counts.append(len(bound(world, "gang")))
        return counts[-1] == 3

    world.run_until(all_bound, "all 3 pods of the gang bound", timeout=PLACED_SECONDS)
    # The scheduler binds a placed gang in one cycle, but each pod by its own Binding write, ms
    # apart: one read may fall between them. A part bound on two reads in a row is a gang split.
    assert not any(0 < a < 3 and 0 < b < 3 for a, b in itertools.pairwise(counts)), \
        f"the gang stayed bound in part: {counts}"
    times = sorted(_scheduled_at(pod) for pod in world.active_pods("gang"))
    assert (times[-1] - times[0]).total_seconds() <= 1, f"the gang's pods were bound at {times}"
    world.run_until(lambda: world.condition("gang", "GangScheduled").get("status") == "True",
                    "GangScheduled True", timeout=30)
    world.run_until(lambda: world.phase("gang") == "Running", "Running", timeout=30)
    world.assert_safe()


def test_without_a_gang_the_same_job_is_placed_in_part(world: ClusterWorld, pool: Pool) -> None:
    """The control: 3 workers on 2 nodes without a gang hold 2 nodes while the third never fits."""
    pool.add(2)
    world.create_job("loose", spec(3, pool.tag, gang=None))
    world.run_until(lambda: len(bound(world, "loose")) == 2, "2 of 3 pods bound", timeout=PLACED_SECONDS)
    world.run_for(3)
    assert len(bound(world, "loose")) == 2 and len(world.active_pods("loose")) == 3
    assert world.condition("loose", "GangScheduled") == {}
    world.assert_safe()


def test_two_gangs_that_cannot_both_fit_never_split_the_nodes(gang_world: ClusterWorld, pool: Pool) -> None:
    """Two Jobs of 6 workers on 8 nodes: one runs whole, the other waits whole (never 4 and 4)."""
    world = gang_world
    pool.add(8)
    world.create_job("first", spec(6, pool.tag))
    world.create_job("second", spec(6, pool.tag))
    counts: set[tuple[int, int]] = set()

    def settled() -> bool:
        placed = (len(bound(world, "first")), len(bound(world, "second")))
        counts.add(placed)
        waiting = [name for name in ("first", "second")
                   if world.condition(name, "GangScheduled").get("reason") == "Unschedulable"]
        return sorted(placed) == [0, 6] and len(waiting) == 1

    world.run_until(settled, "one gang placed whole, the other Unschedulable", timeout=PLACED_SECONDS)
    world.run_for(3)
    counts.add((len(bound(world, "first")), len(bound(world, "second"))))
    assert counts <= {(0, 0), (6, 0), (0, 6)}, f"a gang was placed in part: {sorted(counts)}"
    world.assert_safe()


def test_without_the_podgroup_child_type_a_gang_job_waits_and_says_why(world: ClusterWorld) -> None:
    """The base manifests (no PodGroup children): nothing is created, GangUnavailable with discovery's words."""
    world.create_job("nogang", spec(2, "none"))
    world.run_until(lambda: world.condition("nogang", "GangScheduled").get("reason") == "GangUnavailable",
                    "GangScheduled False GangUnavailable", timeout=30)
    message = world.condition("nogang", "GangScheduled")["message"]
    assert "lists no PodGroup children" in message
    assert "discovery: the API server serves scheduling.k8s.io/v1beta1 podgroups" in message
    assert world.jobsets("nogang") == [] and world.phase("nogang") == "Pending"
    world.assert_safe()


def test_a_restarts_gang_comes_only_after_the_last_attempts_pods_are_gone(gang_world: ClusterWorld,
                                                                         pool: Pool) -> None:
    """Attempt 0's group goes with its attempt (held by podgroup-protection while a pod of it
    terminates); attempt 1's JobSet and group come only once that pod is gone, and its gang is placed."""
    world = gang_world
    pool.add(2)
    world.create_job("again", {**spec(2, pool.tag), "maxRestarts": 1})
    world.run_until(lambda: len(bound(world, "again")) == 2 and world.phase("again") == "Running",
                    "attempt 0 placed and Running", timeout=PLACED_SECONDS)
    _first, second = sorted(p["metadata"]["name"] for p in world.active_pods("again"))
    world.pods.hold(second)
    world.pods.finish("nvcre.nvidia.com/job=again", phase="Failed", exit_code=1, limit=1)
    world.run_until(lambda: world.jobsets("again") == [] and world.phase("again") == "Restarting",
                    "attempt 0 torn down", timeout=60)
    world.run_for(3)
    assert world.jobsets("again") == [] and podgroup(world, "again-1") is None, \
        "no next JobSet or group while a pod of attempt 0 is active"
    old = podgroup(world, "again-0")
    assert old is None or old["metadata"].get("deletionTimestamp"), "attempt 0's group goes with its attempt"
    world.pods.release()
    world.run_until(lambda: world.jobsets("again") == ["again-1"] and podgroup(world, "again-1") is not None,
                    "attempt 1's JobSet and group", timeout=60)
    world.run_until(lambda: podgroup(world, "again-0") is None, "attempt 0's group gone", timeout=30)
    world.run_until(lambda: world.condition("again", "GangScheduled").get("status") == "True"
                    and "again-1" in world.condition("again", "GangScheduled").get("message", ""),
                    "attempt 1's gang placed", timeout=PLACED_SECONDS)
    assert len(bound(world, "again")) == 2
    world.assert_safe()


def test_a_squatter_podgroup_holds_the_jobset_until_it_is_gone(gang_world: ClusterWorld, pool: Pool) -> None:
    """Someone else's PodGroup ``sq-0`` (minCount 1, none of the Job's labels) made before the Job:
    Metacontroller neither lists nor adopts it and ignores the ``AlreadyExists`` of its own create.
    A JobSet created beside it would have its pods name the squatter, and the scheduler would place
    them by its rules (before issue 31, on this tier: one worker bound on the one node, the other
    Pending, the Job Running with ``PlacementNotReported``). The hooks create their group first: no JobSet, no pod,
    the Job Pending saying why; once the squatter is deleted, their own group, then the JobSet, and the
    gang placed whole."""
    world = gang_world
    pool.add(1)
    api = kubernetes.client.CustomObjectsApi(world.plane.api_client())
    squatter = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "sq-0", "namespace": world.namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}
    api.create_namespaced_custom_object("scheduling.k8s.io", "v1beta1", world.namespace, "podgroups", squatter,
                                        _request_timeout=REQUEST_TIMEOUT)
    world.create_job("sq", spec(2, pool.tag))
    world.run_until(lambda: world.condition("sq", "GangScheduled").get("reason") == "WaitingForPodGroup",
                    "GangScheduled False WaitingForPodGroup", timeout=30)
    world.run_for(3)
    assert world.jobsets("sq") == [] and world.view.job_pods(world.namespace, "sq") == [], \
        "no JobSet, hence no pod, over a PodGroup that is not the Job's"
    assert world.phase("sq") == "Pending"
    assert "a PodGroup sq-0 this Job does not own is in the way" in world.condition("sq", "GangScheduled")["message"]
    left = podgroup(world, "sq-0")
    assert left is not None and left["spec"]["schedulingPolicy"] == {"gang": {"minCount": 1}}
    assert not left["metadata"].get("ownerReferences"), "the squatter is left as it is"

    api.delete_namespaced_custom_object("scheduling.k8s.io", "v1beta1", world.namespace, "podgroups", "sq-0",
                                        _request_timeout=REQUEST_TIMEOUT)
    pool.add(1)
    world.run_until(lambda: world.jobsets("sq") == ["sq-0"], "JobSet sq-0 once the squatter is gone", timeout=30)
    group = podgroup(world, "sq-0")
    assert group is not None and group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    world.run_until(lambda: world.condition("sq", "GangScheduled").get("status") == "True",
                    "GangScheduled True", timeout=PLACED_SECONDS)
    assert len(bound(world, "sq")) == 2
    world.assert_safe()
