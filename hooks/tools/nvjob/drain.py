"""What the drain barrier waits for now, as the hooks' own barrier sees it.

Nothing here re-derives the barrier's rules: the Job and its JobSets become the ``Observed`` a hook
call would parse (``hooks.core.observed.parse_request``), and ``hooks.core.barrier`` runs over a
podread Reader on the live client: its value (``Drain``) holds the pods, launchers and batch Jobs
it waits on, its reason and sentence and, through ``hooks.core.stuckwait``, the pods stuck on dead
nodes; every read is sent once (``Context.once``). The force deletes it would ask for are never
carried out here: the plugin writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hooks.core import conditions as cond
from hooks.core import lifecycle
from hooks.core.barrier import barrier
from hooks.core.deadlines import stamp
from hooks.core.history import deletion_times
from hooks.core.observed import JOBSET_GROUP, InvalidRequest, Observed, parse_request
from hooks.core.work import Context

BARRIER_PASSED = "drain barrier passed"
"""The words with which an arrow of ``hooks.core.lifecycle.ARROWS`` says it waits for the drain barrier."""


def draining_phases() -> frozenset[str]:
    """The phases whose next step waits on the drain barrier now, read from the lifecycle table
    (``hooks.core.lifecycle.ARROWS``, at each call): the sources of the arrows whose words say the
    drain barrier passed (today Restarting, Suspending and Terminating). The plugin keeps no list
    of its own: a phase the table gives such an arrow is shown draining without editing it."""
    return frozenset(str(arrow.source) for arrow in lifecycle.ARROWS
                     if BARRIER_PASSED in arrow.words and arrow.source != lifecycle.START)


def is_draining(phase: str, deleting: bool) -> bool:
    """Whether a Job in ``phase`` (``deleting``: it carries a deletionTimestamp) waits on the barrier
    now: a deleted Job whatever its phase, else a phase of ``draining_phases``."""
    return deleting or phase in draining_phases()


@dataclass(frozen=True)
class DrainView:
    """The barrier's view of one Job now.

    ``draining``: the Job's next step waits on the barrier (else the view says what a teardown
    would wait for). ``passed``: nothing is left (``None`` when a read failed: unknown, never
    "nothing"). ``reason`` and ``message``: the ``Drained`` reason and sentence the barrier writes
    (the status message adds the stuck pods to it: here they are ``stuck``, apart).
    ``jobsets``, ``pods`` (active workers), ``launchers``, ``batch_jobs``: what it waits on.
    ``stuck``: the ``DrainStuck`` sentence, ``""`` when no pod is stuck on a dead node;
    ``stuck_since``: since when the earliest of them is counted stuck (the wait's start, or its
    node's ``Ready`` transition if later: ``hooks.core.stuck``), RFC 3339, ``""`` with none.
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
    stuck_since: str = ""
    error: str = ""


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
               now: datetime) -> DrainView:
    """What the barrier waits for now for ``job`` with its observed ``jobsets`` (``owned_jobsets``),
    reading through ``reader`` (a podread Reader): ``hooks.core.barrier.barrier`` through the
    status's attempt, its pods, launchers and batch Jobs read live (each once: ``Context.once``),
    and nodes once a wait has lasted ``spec.drain.stuckAfterSeconds``. Never raises for a failed
    read: the view says it (``passed`` None, ``error``)."""
    metadata = job.get("metadata") or {}
    status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
    phase = str(status.get("phase") or "")
    draining = is_draining(phase, bool(metadata.get("deletionTimestamp")))
    try:
        observed = observed_of(job, jobsets)
    except InvalidRequest as exc:
        return DrainView(draining, None, "", "", error=f"the Job cannot be read as the hooks read it: {exc.message}")
    prior = observed.status
    drain = barrier(Context(observed, reader, now), cond.sort_conditions(prior.conditions), through=prior.attempt)
    if drain.error is not None:
        return DrainView(draining, None, str(drain.reason), drain.words(), jobsets=list(drain.jobsets),
                         error=drain.error.cause)
    stuck = drain.stuck.found
    return DrainView(
        draining, drain.passed, str(drain.reason), drain.drained()[2], jobsets=list(drain.jobsets),
        pods=[pod_brief(pod) for pod in drain.workers], launchers=[pod_brief(pod) for pod in drain.launchers],
        batch_jobs=list(drain.batch_jobs), stuck=stuck.message() if stuck.pods else "",
        stuck_since=stamp(min(pod.since for pod in stuck.pods)) if stuck.pods else "",
    )


def pod_brief(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A waited-on pod in a few fields: name, node, phase and, if it is being deleted, when its
    deletion started and when its grace period ends (``hooks.core.history.deletion_times``: the
    facts ``status.attempts`` records of a failed pod; ``deletionStarted`` None when the pod does not
    carry its grace period)."""
    metadata = pod.get("metadata") or {}
    times = deletion_times(pod)
    return {"name": str(metadata.get("name", "")), "node": str((pod.get("spec") or {}).get("nodeName") or ""),
            "phase": str((pod.get("status") or {}).get("phase") or ""),
            "deletionStarted": times.get("failedPodDeletionStarted"),
            "gracePeriodEnds": times.get("failedPodGracePeriodEnds") or metadata.get("deletionTimestamp") or None}
