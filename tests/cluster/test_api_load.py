"""What the hooks ask of the API server, counted by the API server itself (its audit log of the hooks'
ServiceAccount, ``ControlPlane.audit_events``), with the hooks at their production cache settings.

A settled Job costs the API server no read per sync: its pods come from the watch (whose own
one-pod "nudge" lists are cluster-wide, not per Job; a read finding the watch's confirmation older
than the TTL, on a loaded machine, lists the Job's pods once) and its status settled longer ago than
the freshness window, so the answer is sent without checking the Job live
(``hooks.server.freshness``; the window set shorter here, ``WINDOW_SECONDS`` through
``NVCRE_RECENT_STATUS_SECONDS``: production's 30 s would hold the tier half a minute). A transition
is where the reads are: the drain barrier lists the pods and the batch Jobs live, and the answer
that changes the status is checked against the live Job. The first figures of issue 24's benchmark,
on the real control plane.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from podread.cache import DEFAULT_TTL_SECONDS
from tests.cluster.conftest import HOOK_TOKEN
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kwokctl import Kwok
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.server import HookServer

pytestmark = pytest.mark.cluster

SYNCS = 10
WINDOW_SECONDS = 3.0
"""The hooks' freshness window here (``NVCRE_RECENT_STATUS_SECONDS``; production: 30 s)."""


@pytest.fixture(scope="module")
def production_hooks(control_plane: ControlPlane, hooks_token: str) -> Iterator[HookServer]:
    """The hooks with the production pod cache (``NVCRE_CACHE_TTL_SECONDS`` at its default, watch
    mode), not the tier's 0.3 s TTL, which sends a per-Job list whenever the watch is not confirmed;
    a freshness window of ``WINDOW_SECONDS``."""
    source = KubeconfigSource(control_plane, hooks_token, "nvcre-hooks")
    with HookServer(source, token=HOOK_TOKEN, env={"NVCRE_CACHE_TTL_SECONDS": str(DEFAULT_TTL_SECONDS),
                                                   "NVCRE_RECENT_STATUS_SECONDS": str(WINDOW_SECONDS)}) as server:
        yield server


def reads(events: list[dict[str, Any]], namespace: str) -> Counter[str]:
    """The hooks' requests on objects of ``namespace``, as ``verb resource`` (``nvcre.nvidia.com``'s
    jobs named ``nvjobs``, batch Jobs ``jobs``)."""
    counted: Counter[str] = Counter()
    for event in events:
        ref = event.get("objectRef") or {}
        if ref.get("namespace") != namespace:
            continue
        resource = "nvjobs" if ref.get("apiGroup") == "nvcre.nvidia.com" else str(ref.get("resource"))
        counted[f"{event.get('verb')} {resource}"] += 1
    return counted


def status_written(world: ClusterWorld, name: str) -> datetime:
    """When the Job's status was last written (its ``managedFields`` entry of subresource ``status``)."""
    fields = ((world.job(name) or {}).get("metadata") or {}).get("managedFields") or []
    times = [f["time"] for f in fields if f.get("subresource") == "status" and f.get("time")]
    return datetime.fromisoformat(max(times).replace("Z", "+00:00"))


def test_a_settled_job_costs_no_read_per_sync_and_a_transition_reads_live(
        control_plane: ControlPlane, production_hooks: HookServer, kwok: Kwok) -> None:
    world = ClusterWorld(control_plane, production_hooks, "api-load", kwok)
    world.create_job("steady")
    world.run_until_pods_run("steady", 2)
    world.run_until(lambda: world.phase("steady") == "Running", "Running")
    # settled: no status write for longer than the freshness check's window
    world.run_until(lambda: (datetime.now(UTC) - status_written(world, "steady")).total_seconds()
                    > WINDOW_SECONDS + 1, "the status settled", timeout=WINDOW_SECONDS + 30)
    _, mark = control_plane.audit_events()
    calls = []
    for _ in range(SYNCS):
        calls.append(world.driver.reconcile(world.namespace, "steady"))
        time.sleep(0.2)
    time.sleep(0.5)  # the audit log is written as each request completes
    events, mark_after = control_plane.audit_events(mark)
    steady = reads(events, world.namespace)
    print(f"\n{SYNCS} settled syncs: the hooks' requests in the namespace: {dict(steady)}")
    assert all(call is not None and call.reply.status == 200 for call in calls), \
        [call.reply.status if call else None for call in calls]
    # None as a rule; when a watch confirmation ages past the TTL (a loaded machine: CI saw one with
    # two control planes running), one read lists the Job's pods and renews it: never one per sync.
    assert steady["list pods"] <= 2 and set(steady) <= {"list pods"}, \
        f"a settled Job reads no Job, no batch Job and almost no pods: {dict(steady)}"

    world.driver.patch_spec(world.namespace, "steady", suspend=True)
    world.run_until(lambda: world.phase("steady") == "Suspended", "Suspended", timeout=90)
    time.sleep(0.5)
    events, _ = control_plane.audit_events(mark_after)
    transition = reads(events, world.namespace)
    print(f"the suspend's drain: the hooks' requests in the namespace: {dict(transition)}")
    assert transition["list pods"] >= 1, f"the barrier lists the pods live: {dict(transition)}"
    assert transition["list jobs"] >= 1, f"and the batch Jobs: {dict(transition)}"
    assert transition["get nvjobs"] >= 1, f"an answer that changes the status checks the Job: {dict(transition)}"
    world.assert_safe()
