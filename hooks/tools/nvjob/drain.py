"""What the drain barrier waits for now, as the hooks' own barrier sees it.

Nothing here re-derives the barrier's rules: the Job and its JobSets become the ``Observed`` a hook
call would parse (``hooks.core.observed.parse_request``), and ``hooks.core.barrier`` runs over a
podread Reader on the live client (``drain_reads`` for the pods, launchers and batch Jobs it waits
on; ``barrier`` for its reason and sentence and, through ``hooks.core.stuckwait``, the pods stuck
on dead nodes). A ``_ReadOnce`` wrapper answers the barrier's second pass from the first one's
reads, so both views are of the same moment and every read is sent once. The barrier's actions (a
force delete) are never carried out here: the plugin writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core.barrier import barrier, drain_reads, job_names, split_launchers
from hooks.core.observed import JOBSET_GROUP, InvalidRequest, Observed, parse_request
from hooks.core.work import DRAIN_STUCK, DRAINED, RESTARTING, SUSPENDING, TERMINATING, Context, Work
from podread.errors import PodReadError

DRAINING_PHASES = frozenset({RESTARTING, SUSPENDING, TERMINATING})
"""Phases whose next step waits on the barrier now (a deleted Job too, whatever its phase)."""


@dataclass(frozen=True)
class DrainView:
    """The barrier's view of one Job now.

    ``draining``: the Job's next step waits on the barrier (else the view says what a teardown
    would wait for). ``passed``: nothing is left (``None`` when a read failed: unknown, never
    "nothing"). ``reason`` and ``message``: the ``Drained`` reason and sentence the barrier writes.
    ``jobsets``, ``pods`` (active workers), ``launchers``, ``batch_jobs``: what it waits on.
    ``stuck``: the ``DrainStuck`` sentence, ``""`` when no pod is stuck on a dead node.
    ``error``: why a read failed, ``""`` otherwise.
    """

    draining: bool
    passed: bool | None
    reason: str
    message: str
    jobsets: list[str] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    launchers: list[dict[str, Any]] = field(default_factory=list)
    batch_jobs: list[str] = field(default_factory=list)
    stuck: str = ""
    error: str = ""


class _ReadOnce:
    """A Reader whose every method answers a repeated call (same arguments) with the first answer,
    or raises the first error again. Attributes other than methods pass through."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._answers: dict[str, tuple[bool, Any]] = {}

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._reader, name)
        if not callable(target):
            return target

        def once(*args: Any, **kwargs: Any) -> Any:
            key = repr((name, args, sorted(kwargs.items())))
            if key not in self._answers:
                try:
                    self._answers[key] = (True, target(*args, **kwargs))
                except PodReadError as error:
                    self._answers[key] = (False, error)
            ok, answer = self._answers[key]
            if not ok:
                raise answer
            return answer

        return once


def owned_jobsets(job: Mapping[str, Any], jobsets: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The JobSets whose ownerReferences name the Job's UID: the children Metacontroller observes."""
    uid = (job.get("metadata") or {}).get("uid")
    return [js for js in jobsets
            if uid and any(isinstance(o, Mapping) and o.get("uid") == uid
                           for o in (js.get("metadata") or {}).get("ownerReferences") or ())]


def observed_of(job: Mapping[str, Any], jobsets: Sequence[Mapping[str, Any]]) -> Observed:
    """The ``Observed`` a sync call for ``job`` with its ``jobsets`` would parse; raises
    ``InvalidRequest`` for an object no hook call could carry."""
    children = {f"{js['metadata'].get('namespace', '')}/{js['metadata']['name']}": js for js in jobsets}
    return parse_request({"parent": dict(job), "children": {JOBSET_GROUP: children}}, "sync")


def drain_view(job: Mapping[str, Any], jobsets: Sequence[Mapping[str, Any]], reader: Any,
               now: datetime, *, wrap: Callable[[Any], Any] = _ReadOnce) -> DrainView:
    """What the barrier waits for now for ``job`` with its observed ``jobsets`` (``owned_jobsets``),
    reading through ``reader`` (a podread Reader). Reads pods, launchers and batch Jobs live, and
    nodes once a wait has lasted ``spec.drain.stuckAfterSeconds``. Never raises for a failed read:
    the view says it (``passed`` None, ``error``)."""
    metadata = job.get("metadata") or {}
    status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
    phase = str(status.get("phase") or "")
    draining = phase in DRAINING_PHASES or bool(metadata.get("deletionTimestamp"))
    try:
        observed = observed_of(job, jobsets)
    except InvalidRequest as exc:
        return DrainView(draining, None, "", "", error=f"the Job cannot be read as the hooks read it: {exc.message}")
    prior = observed.status
    ctx = Context(observed, wrap(reader), now)
    work = Work(phase=prior.phase, attempt=prior.attempt, restarts=prior.restarts, workload=prior.workload,
                active_pods=prior.active_pods, conditions=cond.sort_conditions(prior.conditions))
    names = sorted(str(js["metadata"]["name"]) for js in observed.jobsets)
    try:
        found, jobs = drain_reads(ctx, work.attempt)
    except PodReadError as error:
        barrier(ctx, work)  # answered from the same failed read: its words for it
        return DrainView(draining, None, "ReadFailed", work.message, jobsets=names, error=error.cause)
    passed = barrier(ctx, work)
    active, launchers = split_launchers(ctx, found)
    drained = cond.get_condition(work.conditions, DRAINED) or {}
    stuck = cond.get_condition(work.conditions, DRAIN_STUCK) or {}
    return DrainView(
        draining, passed, str(drained.get("reason") or ("NoActivePods" if passed else "")),
        work.message or str(drained.get("message") or ""), jobsets=names,
        pods=[pod_brief(pod) for pod in active], launchers=[pod_brief(pod) for pod in launchers],
        batch_jobs=job_names(jobs),
        stuck=str(stuck.get("message") or "") if stuck.get("status") == cond.TRUE else "",
    )


def pod_brief(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A waited-on pod in a few fields: name, node, phase, and when its grace period ends if it is being deleted."""
    metadata = pod.get("metadata") or {}
    return {"name": str(metadata.get("name", "")), "node": str((pod.get("spec") or {}).get("nodeName") or ""),
            "phase": str((pod.get("status") or {}).get("phase") or ""),
            "gracePeriodEnds": metadata.get("deletionTimestamp") or None}
