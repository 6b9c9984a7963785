"""While the drain barrier waits: are the pods it waits on stuck on dead nodes (issue 15)?

Reads nodes (``Reader.node_states``) only once the wait has lasted ``spec.drain.stuckAfterSeconds``
and judges them with ``hooks.core.stuck``. Sets ``DrainStuck`` and, only as ``hooks.core.stuck``
allows, asks for a force delete (``ForceDeletePod``). The barrier's answer never changes here: a
stuck pod is still active, and the barrier still waits.
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


def check_stuck(ctx: Context, work: Work, pods: list[Mapping[str, Any]]) -> None:
    """While the barrier waits on ``pods``: are some stuck terminating on dead nodes
    (``hooks.core.stuck``)? Reads nodes (``Reader.node_states``) only once the wait has lasted
    ``spec.drain.stuckAfterSeconds``. Sets ``DrainStuck`` True naming the pods and nodes, or False
    once none is; asks for a force delete only as ``hooks.core.stuck`` allows. A failed node read
    changes nothing (unknown is never "gone"). The barrier's answer is unchanged: it still waits."""
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
    found = stuck.judge(maybe, nodes, since, ctx.now, ctx.observed.spec)
    if not found.pods:
        clear_stuck(ctx, work)
        return
    work.stuck_pods = len(found.pods)
    work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.TRUE, "PodsOnLostNodes",
                                         bounded(found.message()), ctx.now)
    work.message = bounded(f"{work.message}; {found.message()}")
    for pod in found.force_delete:
        work.actions.append(ForceDeletePod(pod.namespace, pod.name, pod.uid, pod.node.name,
                                           f"node {pod.node.name} is {pod.node.describe()}"))


def clear_stuck(ctx: Context, work: Work) -> None:
    """``DrainStuck`` False once no waited-on pod is stuck (only when the condition exists)."""
    if cond.get_condition(work.conditions, DRAIN_STUCK) is not None:
        work.conditions = cond.set_condition(work.conditions, DRAIN_STUCK, cond.FALSE, "NotStuck", "", ctx.now)
