"""What ``get`` and ``describe`` show, from the objects read: pure functions, no I/O.

Everything is derived from what the API server holds: the Job and its status as the hooks wrote it,
the pods, the Events. The paragraph of ``why`` is ``hooks.tools.nvjob.why``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hooks.core import budget
from hooks.core.deadlines import parse_time
from hooks.core.declared import InvalidRequest
from hooks.core.historyentry import ENTRY_KEYS
from hooks.core.request import read_spec
from hooks.core.vocab import BUDGETED, FailureClass
from podread.attempts import workload_name
from podread.constants import REPLICATED_JOB_LABEL

MAX_EVENTS = 10
"""How many of the most recent Events ``describe`` shows."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def as_map(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else ``{}``."""
    return value if isinstance(value, Mapping) else {}


def status_of(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Job's status, ``{}`` when there is none yet."""
    return as_map(job.get("status"))


def spec_of(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(job.get("spec"))


def condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    """The status condition of ``type_``, ``{}`` when absent."""
    for entry in status.get("conditions") or ():
        if isinstance(entry, Mapping) and entry.get("type") == type_:
            return entry
    return {}


# -- time ------------------------------------------------------------------------------------------


def seconds_since(stamp: Any, now: datetime) -> int | None:
    """Whole seconds from ``stamp`` (RFC 3339) to ``now``; ``None`` when missing or malformed."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return int((now - parse_time(stamp)).total_seconds())
    except (ValueError, OverflowError):
        return None


def human_duration(seconds: int | None) -> str:
    """A duration as kubectl prints ages (``HumanDuration``): ``45s``, ``3m20s``, ``12m``, ``5h3m``,
    ``47h``, ``6d2h``, ``400d``, ``2y10d``; ``<unknown>`` for ``None``, ``<invalid>`` when negative."""
    if seconds is None:
        return "<unknown>"
    if seconds < -1:
        return "<invalid>"
    seconds = max(0, seconds)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def age(stamp: Any, now: datetime) -> str:
    return human_duration(seconds_since(stamp, now))


# -- get -------------------------------------------------------------------------------------------


def waiting_for(job: Mapping[str, Any]) -> str:
    """What the Job waits for, in the hooks' words: ``status.message`` (the barrier's sentence while
    it drains, a failed read's, a gate's), else the ``Drained`` condition's message while it is not
    True; ``""`` when it waits for nothing."""
    status = status_of(job)
    message = str(status.get("message") or "")
    if message:
        return message
    drained = condition(status, "Drained")
    if drained and drained.get("status") != "True":
        return str(drained.get("message") or drained.get("reason") or "")
    return ""


def stuck_since(job: Mapping[str, Any]) -> str:
    """Since when the Job's drain has been stuck on pods on lost nodes, as the hooks wrote it: the
    ``DrainStuck=True`` condition's ``lastTransitionTime`` (``""`` when the drain is not stuck, or
    the condition carries no time)."""
    stuck = condition(status_of(job), "DrainStuck")
    since = stuck.get("lastTransitionTime") if stuck.get("status") == "True" else None
    return since if isinstance(since, str) else ""


def summary(job: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """One Job as ``get`` lists it: name, phase, attempt, restarts, active pods (``status.activePods``,
    the hooks' last count), what it waits for, age; whether its drain is stuck and for how long
    (``stuck``, ``stuckSince``, ``stuckFor``: ``stuck_since``); and for ``-o wide`` its current
    JobSet (``workload``), Kueue LocalQueue (``queue``) and gang (``gang``: the ``GangScheduled``
    condition's reason, as the CRD's wide column)."""
    metadata, status = as_map(job.get("metadata")), status_of(job)
    since = stuck_since(job)
    labels = as_map(metadata.get("labels"))
    return {
        "namespace": str(metadata.get("namespace", "")),
        "name": str(metadata.get("name", "")),
        "phase": str(status.get("phase") or ""),
        "attempt": status.get("attempt", 0) if status else None,
        "restarts": status.get("restarts", 0) if status else None,
        "activePods": status.get("activePods", 0) if status else None,
        "waitingFor": waiting_for(job),
        "deleting": bool(metadata.get("deletionTimestamp")),
        "creationTimestamp": metadata.get("creationTimestamp"),
        "age": age(metadata.get("creationTimestamp"), now),
        "stuck": bool(since) or condition(status, "DrainStuck").get("status") == "True",
        "stuckSince": since or None,
        "stuckFor": age(since, now) if since else None,
        "workload": str(status.get("workload") or "") if status else "",
        "queue": str(labels.get(QUEUE_LABEL) or ""),
        "gang": str(condition(status, "GangScheduled").get("reason") or ""),
    }


# -- describe --------------------------------------------------------------------------------------


def spec_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The spec in short: each replicated job (replicas, parallelism, image, GPUs per pod), the
    launcher, restarts allowed, suspend, deadlines, failure rules, drain limits, the queue."""
    spec = spec_of(job)
    replicated = []
    for entry in spec.get("replicatedJobs") or ():
        if not isinstance(entry, Mapping):
            continue
        job_spec = as_map(as_map(entry.get("template")).get("spec"))
        pod_spec = as_map(as_map(job_spec.get("template")).get("spec"))
        containers = [c for c in pod_spec.get("containers") or () if isinstance(c, Mapping)]
        gpus = sum(_gpus(as_map(c.get("resources"))) for c in containers)
        replicated.append({"name": str(entry.get("name", "")), "replicas": entry.get("replicas", 1),
                           "parallelism": job_spec.get("parallelism", 1),
                           "images": sorted({str(c.get("image", "")) for c in containers}), "gpusPerPod": gpus})
    drain = as_map(spec.get("drain"))
    labels = as_map(as_map(job.get("metadata")).get("labels"))
    return {
        "replicatedJobs": replicated,
        "launcher": spec.get("launcher") or None,
        "maxRestarts": spec.get("maxRestarts"),
        "suspend": spec.get("suspend") is True,
        "activeDeadlineSeconds": spec.get("activeDeadlineSeconds"),
        "ttlSecondsAfterFinished": spec.get("ttlSecondsAfterFinished"),
        "failureRules": len(as_map(spec.get("failurePolicy")).get("rules") or ()),
        "stuckAfterSeconds": drain.get("stuckAfterSeconds"),
        "forceDeleteStuckPodsAfterSeconds": drain.get("forceDeleteStuckPodsAfterSeconds"),
        "queue": labels.get(QUEUE_LABEL) or None,
    }


def _gpus(resources: Mapping[str, Any]) -> int:
    for side in ("limits", "requests"):
        value = as_map(resources.get(side)).get("nvidia.com/gpu")
        if value is not None:
            try:
                return int(str(value))
            except ValueError:
                return 0
    return 0


ATTEMPT_FIELDS: tuple[str, ...] = ENTRY_KEYS
"""The keys of an entry of ``status.attempts`` (``hooks.core.historyentry.ENTRY_KEYS``): the keys of each
row of the attempts table, in that order."""


def attempt_rows(job: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """``status.attempts`` as rows, one per entry, each with every key of ``ATTEMPT_FIELDS`` (``None``
    where the entry has no such value: an attempt not ended yet has no outcome; ``failedNodes`` is the
    list of node names it holds); ``None`` when the status records no attempt history."""
    entries = status_of(job).get("attempts")
    if not isinstance(entries, list):
        return None
    rows = []
    for entry in entries:
        if isinstance(entry, Mapping):
            rows.append({key: _names(entry.get(key)) if key == FAILED_NODES else _scalar(entry.get(key))
                         for key in ATTEMPT_FIELDS})
    return rows


FAILED_NODES = "failedNodes"


def _scalar(value: Any) -> Any:
    return None if isinstance(value, Mapping | list) else value


def _names(value: Any) -> list[str] | None:
    return [str(name) for name in value if isinstance(name, str)] if isinstance(value, list) else None


def budget_rows(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each budgeted class (``hooks.core.vocab.BUDGETED``) as ``describe`` and ``why`` show it,
    by the hooks' own rule (``hooks.core.budget``: ``budget_of``, ``spent_of``, ``pool``): ``class``,
    ``budget`` (``spec.failurePolicy.budgets``, else its default; ``None``: unlimited), ``spent``
    (the most of what ``status.restartsByClass`` claims, what the history records and, for the user
    budget, ``restarts`` less what the other classes count: a status written before issue 34 has no
    ``restartsByClass``; a pool shared by ``user`` and ``unknown`` counts both), ``left`` (``None``:
    unlimited) and ``shares`` (``"user"`` for an ``unknown`` that spends the user budget, else ``""``).
    A spec the hooks would refuse is shown with the defaults."""
    try:
        spec = read_spec(spec_of(job))
    except InvalidRequest:
        spec = read_spec(None)
    status = status_of(job)
    by_class = as_map(status.get("restartsByClass"))
    attempts = [entry for entry in status.get("attempts") or () if isinstance(entry, Mapping)]
    counters = budget.Counters(
        restarts=status.get("restarts") if _count(status.get("restarts")) else 0,
        by_class={str(name): count for name, count in by_class.items() if _count(count)},
        floor=budget.floor(spec, attempts))
    rows: list[dict[str, Any]] = []
    for klass in BUDGETED:
        allowed, spent = budget.budget_of(spec, klass), budget.spent_of(spec, counters, klass)
        shares = "user" if klass == FailureClass.UNKNOWN and budget.pool(spec, klass) != (klass,) else ""
        rows.append({"class": klass.value, "budget": allowed, "spent": spent,
                     "left": None if allowed is None else max(0, allowed - spent), "shares": shares})
    return rows


def _count(value: Any) -> bool:
    """Whether ``value`` is a count: an integer >= 0, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def excluded_rows(job: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    """``status.excludedNodes`` (issue 34): each node kept out of the next attempts, the class and
    attempt that blamed it, its ``until`` and how long that is from ``now`` (``left``; ``expired``
    once passed)."""
    rows = []
    for entry in status_of(job).get("excludedNodes") or ():
        if not isinstance(entry, Mapping):
            continue
        passed = seconds_since(entry.get("until"), now)
        rows.append({"node": str(entry.get("node") or ""), "class": str(entry.get("class") or ""),
                     "attempt": entry.get("attempt"), "until": entry.get("until"),
                     "left": "expired" if passed is not None and passed >= 0 else human_duration(
                         None if passed is None else -passed)})
    return rows


def attempts_dropped(job: Mapping[str, Any]) -> int:
    """``status.attemptsDropped``: how many earlier attempts the status counted but no longer keeps
    (0 when it says nothing)."""
    value = status_of(job).get("attemptsDropped")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def current_workload(job: Mapping[str, Any]) -> str:
    """The current attempt's JobSet name: ``status.workload``, else ``<job>-<status.attempt>``."""
    status = status_of(job)
    name = str(as_map(job.get("metadata")).get("name", ""))
    attempt = status.get("attempt", 0)
    return str(status.get("workload") or workload_name(name, attempt if isinstance(attempt, int) else 0))


def pod_rows(pods: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The pods as ``describe`` lists them: name, replicated job, phase (``Terminating`` while being
    deleted), node, container restarts, age; sorted by name."""
    rows = []
    for pod in pods:
        metadata, status = as_map(pod.get("metadata")), as_map(pod.get("status"))
        restarts = sum(int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or ()
                       if isinstance(s, Mapping))
        rows.append({
            "name": str(metadata.get("name", "")),
            "replicatedJob": str(as_map(metadata.get("labels")).get(REPLICATED_JOB_LABEL, "")),
            "phase": "Terminating" if metadata.get("deletionTimestamp") else str(status.get("phase") or "Unknown"),
            "node": str(as_map(pod.get("spec")).get("nodeName") or ""),
            "restarts": restarts,
            "age": age(metadata.get("creationTimestamp"), now),
        })
    return sorted(rows, key=lambda row: row["name"])


def condition_rows(job: Mapping[str, Any], now: datetime) -> list[dict[str, Any]]:
    """The status conditions: type, status, reason, how long since the last transition, message."""
    return [{"type": str(c.get("type", "")), "status": str(c.get("status", "")), "reason": str(c.get("reason") or ""),
             "since": age(c.get("lastTransitionTime"), now), "message": str(c.get("message") or "")}
            for c in status_of(job).get("conditions") or () if isinstance(c, Mapping)]


def event_rows(job: Mapping[str, Any], events: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The most recent ``MAX_EVENTS`` Events regarding this Job (its kind and name, and its UID when the
    Event names one), oldest first: type, reason, age, who reported it, count, note."""
    metadata = as_map(job.get("metadata"))
    name, uid = metadata.get("name"), metadata.get("uid")
    rows = []
    for event in events:
        regarding = as_map(event.get("regarding"))
        if regarding.get("kind") != "Job" or regarding.get("name") != name:
            continue
        if regarding.get("uid") and uid and regarding.get("uid") != uid:
            continue
        if str(regarding.get("apiVersion", "")).split("/")[0] not in ("nvcre.nvidia.com", ""):
            continue
        when = (as_map(event.get("series")).get("lastObservedTime") or event.get("eventTime")
                or event.get("deprecatedLastTimestamp") or as_map(event.get("metadata")).get("creationTimestamp"))
        count = as_map(event.get("series")).get("count") or event.get("deprecatedCount") or 1
        rows.append({"type": str(event.get("type") or ""), "reason": str(event.get("reason") or ""),
                     "time": when, "age": age(when, now), "from": str(event.get("reportingController") or ""),
                     "count": count, "note": str(event.get("note") or "")})
    rows.sort(key=lambda row: str(row["time"] or ""))
    return rows[-MAX_EVENTS:]
