"""Outages of the control plane during a drain, on the real control plane (the parts of
``test_lifecycle.py``): the API server stopped, then etcd stopped under a running API server. Every
hook call meanwhile holds; the lifecycle completes once the part is back. A file of its own so the
tier's pytest-xdist workers can run it beside the other lifecycles (each file runs whole on one
worker, and these two restarts are the longest lifecycle tests)."""

from __future__ import annotations

import pytest

from tests.cluster.world import ClusterWorld

pytestmark = pytest.mark.cluster


def _draining_with_pods_held(world: ClusterWorld, name: str) -> int:
    """A Job deleted while its two running pods are held: returns the driver's call count once it
    shows Terminating (the calls made after it are the ones a fault test judges)."""
    world.create_job(name)
    pods = world.run_until_pods_run(name, 2)
    world.pods.hold(*pods)
    world.driver.delete_job(world.namespace, name)
    world.run_until(lambda: world.phase(name) == "Terminating", "Terminating")
    return len(world.driver.calls)


def _held_then_completes(world: ClusterWorld, name: str, during: list, what: str) -> None:
    """Every hook call ``during`` the fault held: a 200 that holds with ``ReadFailed`` (nothing
    finalized), or a 503 saying the Job could not be read to check the request is current
    (``hooks.server.freshness``: no answer that writes a status is sent unchecked); the Job is still
    there; released after the fault, its pods go and the Job with them."""
    for call in during:
        assert call.body is None or call.body.get("finalized") is not True, "nothing proceeds in an outage"
    held = [c for c in during if c.body and any(
        cond.get("reason") == "ReadFailed" for cond in c.body["status"].get("conditions") or [])]
    unchecked = [c for c in during if c.reply.status == 503
                 and b"could not read Job" in bytes(c.reply.body or b"")]
    assert len(held) + len(unchecked) == len(during), \
        f"the hooks held while {what}: {[(c.reply.status, bytes(c.reply.body or b'')[:120]) for c in during]}"
    assert not world.gone(name)
    world.pods.release()
    world.run_until(lambda: world.gone(name), f"the lifecycle completes after {what}", timeout=120)
    world.assert_safe()


@pytest.mark.timeout(240)
def test_api_server_outage_during_a_drain_holds(world: ClusterWorld) -> None:
    calls_before = _draining_with_pods_held(world, "outage")
    plane = world.plane
    plane.stop_apiserver()
    try:
        world.run_for(4)
    finally:
        plane.start_apiserver()
    during = world.driver.calls[calls_before:]
    assert during, "the hooks were called during the outage"
    _held_then_completes(world, "outage", during, "the API server could not answer")


@pytest.mark.timeout(300)
def test_etcd_outage_during_a_drain_holds(world: ClusterWorld) -> None:
    """etcd stopped under a running API server: every request hangs until its client timeout
    instead of being refused. The stand-ins are not stepped meanwhile (each of their calls would
    wait its timeout); Metacontroller's stand-in calls the hooks from its last snapshot, as its
    informers would, and each hook call must hold within its deadline."""
    calls_before = _draining_with_pods_held(world, "etcdout")

    def cached_deleting() -> bool:
        cached = world.driver.job(world.namespace, "etcdout") or {}
        return bool((cached.get("metadata") or {}).get("deletionTimestamp"))

    # The syncs below use the stand-in's cache as it is: it must hold the Job being deleted by then.
    # The Job can reach Terminating within the cache's 0.6 s lag (seen: the cached copy was still its
    # first version, without the finalizer, so the sync added it first: a write that hung on etcd,
    # and no hook call).
    world.run_until(cached_deleting, "the stand-in's cache shows the deletion")
    calls_before = len(world.driver.calls)
    plane = world.plane
    plane.stop_etcd()
    try:
        made = [world.driver.reconcile(world.namespace, "etcdout") for _ in range(2)]
    finally:
        plane.start_etcd()
        plane.wait_ready(timeout=120)
    during = world.driver.calls[calls_before:]
    view = world.driver.job(world.namespace, "etcdout") or {}
    seen = {k: (view.get("metadata") or {}).get(k) for k in ("deletionTimestamp", "finalizers", "resourceVersion")}
    assert len(during) == 2, f"syncs {made}, sync errors {world.driver.sync_errors[-3:]}, cached parent {seen}"
    for call in during:
        assert call.reply.seconds < 10, f"a hook call took {call.reply.seconds:.1f}s: past Metacontroller's timeout"
    _held_then_completes(world, "etcdout", during, "etcd was away")
