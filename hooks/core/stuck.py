"""Pods stuck terminating on dead nodes, while the drain barrier waits on them.

Pure: reads the pods the barrier waits on, the node states read for them
(``Reader.node_states``), when the wait began (the ``Drained=False`` condition's
``lastTransitionTime``) and ``now``. Returns ``Stuck``: the pods whose node is gone, not Ready or
unreachable since at least ``spec.drain.stuckAfterSeconds`` (default ``STUCK_AFTER_DEFAULT``) of
waiting, and the ones of those that may be force-deleted.

The wait itself never changes: a stuck pod is still active, and the barrier holds. Only with
``spec.drain.forceDeleteStuckPodsAfterSeconds`` set, and only for a pod whose node is *confirmed
gone* (the API server's NotFound for the Node, or the taint ``node.kubernetes.io/out-of-service``),
is the pod force-deleted (grace period 0). A node that is merely NotReady or unreachable may be
partitioned, not dead: its kubelet may still be running the containers, and removing their pod
objects would let the next attempt start next to them, the one thing the barrier exists to prevent.

A force delete also needs evidence the API server set, never a status claim (anyone
with write access to the status could forge one):
- identity (``own_workload``): the pod carries JobSet's ``jobset-name`` label ``<job>-<n>`` (an
  attempt of this Job) and its controller ownerReference is a ``batch/v1`` Job named
  ``<jobset>-<replicatedJob>-<index>`` of that JobSet, as JobSet names its Jobs. A pod that only
  carries JOB_LABEL (the template's label, which anyone who can patch a pod can add) is still
  waited on and reported, never force-deleted;
- time (``force_since``): the force delete's wait counts from the pod's ``deletionTimestamp`` (when
  its grace period ended) and, for a node that still exists, the node's ``Ready`` transition,
  whichever is later; never from ``Drained``'s ``lastTransitionTime``, which anyone with status
  write can move into the past. (``DrainStuck``, a report, still counts from the wait's start.)

Total over what the CRD admits: a limit that is missing, ``null``, negative or huge (``2**63-1``)
never raises; durations are compared in seconds, never built as ``timedelta``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hooks.core.deadlines import parse_time
from hooks.core.request import Spec, kept
from podread.attempts import attempt_in_name, batch_job_of
from podread.constants import JOBSET_NAME_LABEL

if TYPE_CHECKING:  # a type only: podread.nodes also holds the node reads, which the core never imports
    from podread.nodes import NodeState

@dataclass(frozen=True)
class StuckPod:
    """A pod the barrier waits on whose node is unhealthy: ``since`` is when it counts from (the
    report); ``workload`` its ``jobset-name`` label when that names an attempt of the Job, else ``""``."""

    namespace: str
    name: str
    uid: str
    node: NodeState
    since: datetime
    workload: str = ""


@dataclass(frozen=True)
class Stuck:
    """The stuck pods (sorted by name) and those of them that qualify for a force delete as far as
    the barrier's pods tell (``judge``); the caller confirms each on the whole pod read live
    (``may_force_delete``) and checks the permission before it asks for one."""

    pods: tuple[StuckPod, ...] = ()
    force_delete: tuple[StuckPod, ...] = field(default_factory=tuple)

    def message(self) -> str:
        """``N pods wait on nodes that are gone or not ready: p (node n deleted), ...``."""
        shown = ", ".join(f"{p.name} (node {p.node.name} {p.node.describe()})" for p in self.pods[:5])
        more = f" and {len(self.pods) - 5} more" if len(self.pods) > 5 else ""
        noun = "pod waits on a node that is" if len(self.pods) == 1 else "pods wait on nodes that are"
        return f"{len(self.pods)} {noun} gone or not ready: {shown}{more}"


def stuck_after(spec: Spec) -> int:
    """``spec.drain.stuckAfterSeconds`` when it is within its declared range, else its declared
    default, ``STUCK_AFTER_DEFAULT`` (unset, ``null``, or out of range: ``InvalidSpec``'s to report)."""
    return kept(spec.drain, "stuck_after_seconds")


def force_after(spec: Spec) -> int | None:
    """``spec.drain.forceDeleteStuckPodsAfterSeconds`` (opt-in) when it is within its declared range,
    else ``None`` (no force delete)."""
    return kept(spec.drain, "force_delete_stuck_pods_after_seconds")


def elapsed(now: datetime, since: datetime) -> float:
    """Seconds from ``since`` to ``now`` (negative when ``since`` is later); ``-inf`` when the two
    cannot be compared (a naive and an aware time), so a limit is never reached by accident."""
    try:
        return (now - since).total_seconds()
    except (TypeError, OverflowError):
        return float("-inf")


def attempt_workload(pod: Mapping[str, Any], job: str) -> str:
    """The pod's ``jobset-name`` label when it is ``<job>-<n>`` (an attempt of ``job``), else ``""``."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    value = labels.get(JOBSET_NAME_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(value, str) and attempt_in_name(job, value) is not None:
        return value
    return ""


def own_workload(pod: Mapping[str, Any], job: str) -> bool:
    """Whether ``pod`` (a whole pod, as the API server has it) carries ``job``'s identity the way only
    its own workload sets it: the ``jobset-name`` label ``<job>-<n>`` and a controller ownerReference
    to a ``batch/v1`` Job named ``<that jobset>-<replicatedJob>-<index>`` (JobSet's naming)."""
    workload = attempt_workload(pod, job)
    owners = (pod.get("metadata") or {}).get("ownerReferences")
    if not workload or not isinstance(owners, list):
        return False
    controllers = [o for o in owners if isinstance(o, Mapping) and o.get("controller") is True]
    if len(controllers) != 1:
        return False
    owner = controllers[0]
    name = owner.get("name")
    return (owner.get("apiVersion") == "batch/v1" and owner.get("kind") == "Job" and isinstance(name, str)
            and batch_job_of(workload, name))


def force_since(pod: Mapping[str, Any], node: NodeState) -> datetime | None:
    """When the force delete's wait starts, from evidence only: the later of the pod's
    ``deletionTimestamp`` and, for a node that exists and is not Ready, its ``Ready`` transition.
    ``None`` without a readable ``deletionTimestamp`` (no force delete)."""
    try:
        since = parse_time(str((pod.get("metadata") or {}).get("deletionTimestamp") or ""))
    except ValueError:
        return None
    if since is None:
        return None
    return after_not_ready(since, node)


def after_not_ready(since: datetime, node: NodeState) -> datetime:
    """The later of ``since`` and, for a node that exists and is not Ready, its ``Ready``
    transition (a transition that cannot be read is left out)."""
    if node.exists and node.ready != "True":
        try:
            ready_since = parse_time(node.ready_since)
        except ValueError:
            ready_since = None
        if ready_since is not None and elapsed(ready_since, since) > 0:
            return ready_since
    return since


def may_force_delete(pod: Mapping[str, Any], job: str, node: NodeState, now: datetime,
                     spec: Spec) -> bool:
    """Whether ``pod`` (whole, read live) may be force-deleted now: opted in
    (``force_after``), terminating, on ``node`` confirmed gone, carrying ``job``'s own workload
    identity (``own_workload``), and waiting ``force_after`` seconds counted from ``force_since``."""
    force = force_after(spec)
    if force is None or not node.gone or not own_workload(pod, job):
        return False
    if str((pod.get("spec") or {}).get("nodeName") or "") != node.name:
        return False
    since = force_since(pod, node)
    return since is not None and elapsed(now, since) >= force


def candidates(pods: Sequence[Mapping[str, Any]], waiting_since: datetime | None, now: datetime,
               spec: Spec) -> list[Mapping[str, Any]]:
    """The waited-on pods that may be stuck: terminating (``deletionTimestamp``), bound to a node,
    once the wait has lasted ``stuck_after``. Before that no node is read at all."""
    if waiting_since is None or elapsed(now, waiting_since) < stuck_after(spec):
        return []
    return [pod for pod in pods if (pod.get("metadata") or {}).get("deletionTimestamp")
            and (pod.get("spec") or {}).get("nodeName")]


def judge(pods: Sequence[Mapping[str, Any]], nodes: Mapping[str, NodeState], waiting_since: datetime,
          now: datetime, spec: Spec, job: str) -> Stuck:
    """Which of ``pods`` (``candidates``) are stuck: bound to an unhealthy node (a node not in
    ``nodes`` was not read: unknown, so not stuck) for ``stuck_after`` seconds, counted from the
    later of the wait's start and the node's ``Ready`` transition; and which may be force-deleted,
    as far as these pods tell (they may be the cache's slim pods, without ownerReferences): stuck,
    opted in, node confirmed gone, ``jobset-name`` an attempt of ``job``, and ``force_after``
    seconds counted from ``force_since``. The caller confirms those on whole pods read live
    (``may_force_delete``) before it asks for a delete."""
    after, force = stuck_after(spec), force_after(spec)
    stuck: list[StuckPod] = []
    forced: list[StuckPod] = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"].get("name", ""))):
        node = nodes.get(str(pod["spec"]["nodeName"]))
        if node is None or not node.unhealthy:
            continue
        since = after_not_ready(waiting_since, node)
        if elapsed(now, since) < after:
            continue
        metadata = pod["metadata"]
        found = StuckPod(str(metadata.get("namespace", "")), str(metadata.get("name", "")),
                         str(metadata.get("uid", "")), node, since, attempt_workload(pod, job))
        stuck.append(found)
        evidence = force_since(pod, node)
        if (force is not None and node.gone and found.workload and evidence is not None
                and elapsed(now, evidence) >= force):
            forced.append(found)
    return Stuck(tuple(stuck), tuple(forced))
