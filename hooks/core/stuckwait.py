"""While the drain barrier waits: are the pods it waits on stuck on dead nodes (issues 15, 20)?

Reads nodes (``Reader.node_states``) only once the wait has lasted ``spec.drain.stuckAfterSeconds``
and judges them with ``hooks.core.stuck``. Sets ``DrainStuck`` and, only as ``hooks.core.stuck``
allows, asks for a force delete (``ForceDeletePod``). The barrier's answer never changes here: a
stuck pod is still active, and the barrier still waits.

Before it asks for a force delete it confirms, live, what licenses it (issue 20):
- the pod as the API server has it now (``Reader.workload_pods`` of the attempt its
  ``jobset-name`` label names: whole pods, ownerReferences included; the barrier's pods may be the
  cache's slim ones), judged by ``hooks.core.stuck.may_force_delete`` (its own workload's
  identity, terminating on the node confirmed gone, ``forceDeleteStuckPodsAfterSeconds`` counted
  from its ``deletionTimestamp``);
- the permission (``Reader.pod_delete_allowed``: a SelfSubjectAccessReview for ``delete pods`` in
  the namespace). The base manifests grant no pod delete; the overlay
  ``manifests/overlays/force-delete/`` binds it per namespace. Refused: no force delete, and
  ``ForceDeleteAllowed=False`` (``Forbidden``) says which Role to bind; allowed:
  ``ForceDeleteAllowed=True``.
A failed read of either is "unknown": no force delete, and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import conditions as cond
from hooks.core import deadlines, stuck
from hooks.core.actions import ForceDeletePod
from hooks.core.wording import bounded
from hooks.core.work import DRAIN_STUCK, DRAINED, Context, Work
from podread.errors import PodReadError

FORCE_DELETE_ALLOWED = "ForceDeleteAllowed"
"""Condition: may the hooks force-delete the stuck pods that qualify (issue 20)? Set only once a pod
qualifies: True (``Allowed``), or False (``Forbidden``) naming the overlay to apply."""
OVERLAY = "manifests/overlays/force-delete"
ROLE = "nvcre-hooks-pod-deleter"


def check_stuck(ctx: Context, work: Work, pods: list[Mapping[str, Any]]) -> None:
    """While the barrier waits on ``pods``: are some stuck terminating on dead nodes
    (``hooks.core.stuck``)? Reads nodes (``Reader.node_states``) only once the wait has lasted
    ``spec.drain.stuckAfterSeconds``. Sets ``DrainStuck`` True naming the pods and nodes, or False
    once none is; asks for a force delete only for the pods ``force_deletable`` confirms live. A
    failed node read changes nothing (unknown is never "gone"). The barrier's answer is unchanged:
    it still waits."""
    drained = cond.get_condition(work.conditions, DRAINED) or {}
    try:
        since = deadlines.parse_time(str(drained.get("lastTransitionTime") or ""))
    except ValueError:
        since = None
    maybe = stuck.candidates(pods, since, ctx.now, ctx.observed.spec)
    if not maybe or since is None:
        clear_stuck(ctx, work)
        return
    try:
        nodes = ctx.reader.node_states(sorted({str(p["spec"]["nodeName"]) for p in maybe}))
    except PodReadError:
        return
    found = stuck.judge(maybe, nodes, since, ctx.now, ctx.observed.spec, ctx.job)
    if not found.pods:
        clear_stuck(ctx, work)
        return
    work.stuck_pods = len(found.pods)
    work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.TRUE, "PodsOnLostNodes",
                                         bounded(found.message()), ctx.now)
    work.message = bounded(f"{work.message}; {found.message()}")
    for pod in force_deletable(ctx, work, found.force_delete):
        work.actions.append(ForceDeletePod(pod.namespace, pod.name, pod.uid, pod.node.name,
                                           f"node {pod.node.name} is {pod.node.describe()}"))


def force_deletable(ctx: Context, work: Work, wanted: tuple[stuck.StuckPod, ...]) -> list[stuck.StuckPod]:
    """The pods of ``wanted`` (``stuck.judge``'s force-delete candidates) that may be force-deleted
    now: each confirmed on the whole pod read live (``Reader.workload_pods`` of its attempt, same
    UID, ``stuck.may_force_delete``), and the hooks allowed to delete pods in its namespace
    (``Reader.pod_delete_allowed``). Sets ``ForceDeleteAllowed`` when some pod qualifies and the
    permission was read. A failed read returns none and changes nothing else."""
    if not wanted:
        return []
    confirmed: list[stuck.StuckPod] = []
    try:
        live: dict[str, Mapping[str, Any]] = {}
        for workload in sorted({pod.workload for pod in wanted}):
            for pod in ctx.reader.workload_pods(ctx.namespace, workload):
                live.setdefault(str((pod.get("metadata") or {}).get("uid") or ""), pod)
        for pod in wanted:
            whole = live.get(pod.uid) if pod.uid else None
            if whole is not None and stuck.may_force_delete(whole, ctx.job, pod.node, ctx.now, ctx.observed.spec):
                confirmed.append(pod)
        allowed = {namespace: ctx.reader.pod_delete_allowed(namespace)
                   for namespace in sorted({pod.namespace for pod in confirmed})}
    except PodReadError:
        return []
    if not confirmed:
        return []
    refused = sorted(namespace for namespace, ok in allowed.items() if not ok)
    if refused:
        work.conditions = cond.set_condition(
            work.conditions, FORCE_DELETE_ALLOWED, cond.FALSE, "Forbidden",
            bounded(f"pods qualify for a force delete, but the hooks may not delete pods in namespace "
                    f"{', '.join(refused)}: bind the Role {ROLE} there ({OVERLAY}, docs/operations.md)"), ctx.now)
    else:
        work.conditions = cond.set_condition(work.conditions, FORCE_DELETE_ALLOWED, cond.TRUE, "Allowed",
                                             "the hooks may delete the pods that qualify", ctx.now)
    return [pod for pod in confirmed if allowed.get(pod.namespace)]


def clear_stuck(ctx: Context, work: Work) -> None:
    """``DrainStuck`` False once no waited-on pod is stuck (only when the condition exists)."""
    if cond.get_condition(work.conditions, DRAIN_STUCK) is not None:
        work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.FALSE, "NotStuck", "", ctx.now)
