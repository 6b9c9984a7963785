"""Pods stuck terminating on dead nodes, while the drain barrier waits on them (issue 15).

Pure: reads the pods the barrier waits on, the node states read for them
(``Reader.node_states``), when the wait began (the ``Drained=False`` condition's
``lastTransitionTime``) and ``now``. Returns ``Stuck``: the pods whose node is gone, not Ready or
unreachable since at least ``spec.drain.stuckAfterSeconds`` (default ``DEFAULT_STUCK_AFTER``) of
waiting, and the ones of those that may be force-deleted.

The wait itself never changes: a stuck pod is still active, and the barrier holds. Only with
``spec.drain.forceDeleteStuckPodsAfterSeconds`` set, and only for a pod whose node is *confirmed
gone* (the Node object deleted, or tainted ``node.kubernetes.io/out-of-service``), is the pod
force-deleted (grace period 0). A node that is merely NotReady or unreachable may be partitioned,
not dead: its kubelet may still be running the containers, and removing their pod objects would
let the next attempt start next to them, the one thing the barrier exists to prevent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hooks.core.deadlines import parse_time

if TYPE_CHECKING:  # a type only: podread.nodes also holds the node reads, which the core never imports
    from podread.nodes import NodeState

DEFAULT_STUCK_AFTER = 300


@dataclass(frozen=True)
class StuckPod:
    """A pod the barrier waits on whose node is unhealthy: ``since`` is when it counts from."""

    namespace: str
    name: str
    uid: str
    node: NodeState
    since: datetime


@dataclass(frozen=True)
class Stuck:
    """The stuck pods (sorted by name) and those of them to force-delete now."""

    pods: tuple[StuckPod, ...] = ()
    force_delete: tuple[StuckPod, ...] = field(default_factory=tuple)

    def message(self) -> str:
        """``N pods wait on nodes that are gone or not ready: p (node n deleted), ...``."""
        shown = ", ".join(f"{p.name} (node {p.node.name} {p.node.describe()})" for p in self.pods[:5])
        more = f" and {len(self.pods) - 5} more" if len(self.pods) > 5 else ""
        noun = "pod waits on a node that is" if len(self.pods) == 1 else "pods wait on nodes that are"
        return f"{len(self.pods)} {noun} gone or not ready: {shown}{more}"


def stuck_after(spec: Mapping[str, Any]) -> int:
    """``spec.drain.stuckAfterSeconds``, or ``DEFAULT_STUCK_AFTER``."""
    value = (spec.get("drain") or {}).get("stuckAfterSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_STUCK_AFTER


def force_after(spec: Mapping[str, Any]) -> int | None:
    """``spec.drain.forceDeleteStuckPodsAfterSeconds`` (opt-in), or ``None``."""
    value = (spec.get("drain") or {}).get("forceDeleteStuckPodsAfterSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def candidates(pods: Sequence[Mapping[str, Any]], waiting_since: datetime | None, now: datetime,
               spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The waited-on pods that may be stuck: terminating (``deletionTimestamp``), bound to a node,
    once the wait has lasted ``stuck_after``. Before that no node is read at all."""
    if waiting_since is None or now - waiting_since < timedelta(seconds=stuck_after(spec)):
        return []
    return [pod for pod in pods if (pod.get("metadata") or {}).get("deletionTimestamp")
            and (pod.get("spec") or {}).get("nodeName")]


def judge(pods: Sequence[Mapping[str, Any]], nodes: Mapping[str, NodeState], waiting_since: datetime,
          now: datetime, spec: Mapping[str, Any]) -> Stuck:
    """Which of ``pods`` (``candidates``) are stuck: bound to an unhealthy node (a node not in
    ``nodes`` was not read: unknown, so not stuck) for ``stuck_after`` seconds, counted from the
    later of the wait's start and the node's ``Ready`` transition; and which may be force-deleted:
    stuck, node confirmed gone, and ``force_after`` seconds counted from the same moment."""
    after, force = timedelta(seconds=stuck_after(spec)), force_after(spec)
    stuck: list[StuckPod] = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"].get("name", ""))):
        node = nodes.get(str(pod["spec"]["nodeName"]))
        if node is None or not node.unhealthy:
            continue
        since = waiting_since
        if node.exists and node.ready != "True":
            try:
                ready_since = parse_time(node.ready_since)
            except ValueError:
                ready_since = None
            if ready_since is not None and ready_since > since:
                since = ready_since
        if now - since >= after:
            metadata = pod["metadata"]
            stuck.append(StuckPod(str(metadata.get("namespace", "")), str(metadata.get("name", "")),
                                  str(metadata.get("uid", "")), node, since))
    forced = tuple(p for p in stuck if force is not None and p.node.gone
                   and now - p.since >= timedelta(seconds=force))
    return Stuck(tuple(stuck), forced)
