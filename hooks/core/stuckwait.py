"""While the drain barrier waits: are the pods it waits on stuck on dead nodes?

``wait`` reads nodes (``Reader.node_states``) only once the wait has lasted
``spec.drain.stuckAfterSeconds``, judges them with ``hooks.core.stuck`` and returns what it found, a
``StuckWait``: the stuck pods and, only as ``hooks.core.stuck`` allows, the force deletes to ask for
(``ForceDeletePod``). ``conditions`` turns it into ``DrainStuck`` and ``ForceDeleteAllowed``;
``hooks.core.barrier.record`` says how it enters the status with the rest of the barrier's result. The
barrier's answer never changes here: a stuck pod is still active, and the barrier still waits.

Before it asks for a force delete it confirms, live, what licenses it (a status claim never does):
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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core import deadlines, stuck
from hooks.core.actions import ForceDeletePod
from hooks.core.vocab import ConditionType, Reason
from hooks.core.wording import bounded
from hooks.core.work import DRAIN_STUCK, DRAINED, Context
from podread.errors import PodReadError

FORCE_DELETE_ALLOWED = ConditionType.FORCE_DELETE_ALLOWED
"""Condition: may the hooks force-delete the stuck pods that qualify (the permission is opt-in)? Set only once a pod
qualifies: True (``Allowed``), or False (``Forbidden``) naming the overlay to apply."""
OVERLAY = "manifests/overlays/force-delete"
ROLE = "nvcre-hooks-pod-deleter"


@dataclass(frozen=True)
class StuckWait:
    """What the barrier's wait found about the pods it waits on.

    ``known``: False when the node read failed: nothing is said and nothing changes (unknown is
    never "gone"). ``found``: the stuck pods (none: ``DrainStuck`` turns False where it exists).
    ``refused``: once a pod qualified for a force delete, was confirmed live and the permission was
    read, the namespaces where the hooks may not delete pods (``()``: allowed); ``None`` otherwise.
    ``deletes``: the force deletes to ask for (confirmed live, and allowed).
    """

    known: bool = True
    found: stuck.Stuck = field(default_factory=stuck.Stuck)
    refused: tuple[str, ...] | None = None
    deletes: tuple[ForceDeletePod, ...] = ()

    @property
    def pods(self) -> int:
        """How many waited-on pods are stuck (0 when unknown)."""
        return len(self.found.pods) if self.known else 0

    def said(self) -> str:
        """What the status message adds: ``; <the stuck pods>`` when some are stuck, else ``""``."""
        return f"; {self.found.message()}" if self.pods else ""


NOT_KNOWN = StuckWait(known=False)
"""A wait whose nodes could not be read, or a barrier whose own reads failed: nothing changes."""


def waiting_since(conditions: cond.Conditions, now: datetime) -> datetime | None:
    """Since when the barrier waits: the ``lastTransitionTime`` the ``Drained=False`` it writes
    has (kept from ``conditions`` while it was False already, else ``now``); ``None`` when that
    time cannot be read."""
    try:
        return deadlines.parse_time(str(cond.transition_time(conditions, DRAINED, cond.FALSE, now) or ""))
    except ValueError:
        return None


def wait(ctx: Context, since: datetime | None, pods: list[Mapping[str, Any]]) -> StuckWait:
    """While the barrier waits on ``pods`` (since ``since``, ``waiting_since``): are some stuck
    terminating on dead nodes (``hooks.core.stuck``)? Reads nodes (``Reader.node_states``) only once
    the wait has lasted ``spec.drain.stuckAfterSeconds``; the force deletes only for the pods
    ``force_deletable`` confirms live. A failed node read is ``NOT_KNOWN``."""
    maybe = stuck.candidates(pods, since, ctx.now, ctx.observed.spec)
    if not maybe or since is None:
        return StuckWait()
    try:
        nodes = ctx.reader.node_states(sorted({str(p["spec"]["nodeName"]) for p in maybe}))
    except PodReadError:
        return NOT_KNOWN
    found = stuck.judge(maybe, nodes, since, ctx.now, ctx.observed.spec, ctx.job)
    if not found.pods:
        return StuckWait()
    refused, allowed = force_deletable(ctx, found.force_delete)
    deletes = tuple(ForceDeletePod(pod.namespace, pod.name, pod.uid, pod.node.name,
                                   f"node {pod.node.name} is {pod.node.describe()}") for pod in allowed)
    return StuckWait(True, found, refused, deletes)


def force_deletable(ctx: Context, wanted: tuple[stuck.StuckPod, ...]) -> tuple[tuple[str, ...] | None,
                                                                                 list[stuck.StuckPod]]:
    """Which pods of ``wanted`` (``stuck.judge``'s force-delete candidates) may be force-deleted
    now: each confirmed on the whole pod read live (``Reader.workload_pods`` of its attempt, same
    UID, ``stuck.may_force_delete``), and the hooks allowed to delete pods in its namespace
    (``Reader.pod_delete_allowed``). Returns (the namespaces refused, ``None`` when no pod was
    confirmed or a read failed; the pods). A failed read returns ``(None, [])``."""
    if not wanted:
        return None, []
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
        return None, []
    if not confirmed:
        return None, []
    refused = tuple(sorted(namespace for namespace, ok in allowed.items() if not ok))
    return refused, [pod for pod in confirmed if allowed.get(pod.namespace)]


def conditions(ctx: Context, conditions: cond.Conditions, found: StuckWait) -> cond.Conditions:
    """``conditions`` with what ``found`` says: ``DrainStuck`` True naming the pods and nodes, or
    False once none is stuck (only where it exists); ``ForceDeleteAllowed`` once the permission was
    read (True ``Allowed``, or False ``Forbidden`` naming the Role to bind). Unknown changes nothing."""
    if not found.known:
        return conditions
    if not found.pods:
        if cond.get_condition(conditions, DRAIN_STUCK) is None:
            return conditions
        return cond.set_condition(conditions, DRAIN_STUCK, cond.FALSE, Reason.NOT_STUCK, "", ctx.stamp)
    conditions = cond.set_condition(conditions, DRAIN_STUCK, cond.TRUE, Reason.PODS_ON_LOST_NODES,
                                    bounded(found.found.message()), ctx.stamp)
    if found.refused:
        return cond.set_condition(
            conditions, FORCE_DELETE_ALLOWED, cond.FALSE, Reason.FORBIDDEN,
            bounded(f"pods qualify for a force delete, but the hooks may not delete pods in namespace "
                    f"{', '.join(found.refused)}: bind the Role {ROLE} there ({OVERLAY}, docs/operations.md)"),
            ctx.stamp)
    if found.refused is not None:
        return cond.set_condition(conditions, FORCE_DELETE_ALLOWED, cond.TRUE, Reason.ALLOWED,
                                  "the hooks may delete the pods that qualify", ctx.stamp)
    return conditions
