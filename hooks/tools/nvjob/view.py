"""What each ``kubectl nvjob`` command shows, from the objects read: pure functions, no I/O.

Everything is derived from what the API server holds (the Job and its status as the hooks wrote it,
the pods, the Events) and from the barrier's view (``drain.DrainView``); the words of ``why`` come
from the status' phase, conditions and reasons, the ones the hooks write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hooks.core.deadlines import parse_time
from hooks.tools.nvjob.drain import DrainView
from podread.attempts import workload_name
from podread.constants import REPLICATED_JOB_LABEL

MAX_EVENTS = 10
"""How many of the most recent Events ``describe`` shows."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def status_of(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Job's status, ``{}`` when there is none yet."""
    return _map(job.get("status"))


def spec_of(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(job.get("spec"))


def condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    """The status condition of ``type_``, ``{}`` when absent."""
    for entry in status.get("conditions") or ():
        if isinstance(entry, Mapping) and entry.get("type") == type_:
            return entry
    return {}


def is_true(status: Mapping[str, Any], type_: str) -> bool:
    return condition(status, type_).get("status") == "True"


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


def summary(job: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """One Job as ``get`` lists it: name, phase, attempt, restarts, active pods (``status.activePods``,
    the hooks' last count), what it waits for, age."""
    metadata, status = _map(job.get("metadata")), status_of(job)
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
        job_spec = _map(_map(entry.get("template")).get("spec"))
        pod_spec = _map(_map(job_spec.get("template")).get("spec"))
        containers = [c for c in pod_spec.get("containers") or () if isinstance(c, Mapping)]
        gpus = sum(_gpus(_map(c.get("resources"))) for c in containers)
        replicated.append({"name": str(entry.get("name", "")), "replicas": entry.get("replicas", 1),
                           "parallelism": job_spec.get("parallelism", 1),
                           "images": sorted({str(c.get("image", "")) for c in containers}), "gpusPerPod": gpus})
    drain = _map(spec.get("drain"))
    labels = _map(_map(job.get("metadata")).get("labels"))
    return {
        "replicatedJobs": replicated,
        "launcher": spec.get("launcher") or None,
        "maxRestarts": spec.get("maxRestarts"),
        "suspend": spec.get("suspend") is True,
        "activeDeadlineSeconds": spec.get("activeDeadlineSeconds"),
        "ttlSecondsAfterFinished": spec.get("ttlSecondsAfterFinished"),
        "failureRules": len(_map(spec.get("failurePolicy")).get("rules") or ()),
        "stuckAfterSeconds": drain.get("stuckAfterSeconds"),
        "forceDeleteStuckPodsAfterSeconds": drain.get("forceDeleteStuckPodsAfterSeconds"),
        "queue": labels.get(QUEUE_LABEL) or None,
    }


def _gpus(resources: Mapping[str, Any]) -> int:
    for side in ("limits", "requests"):
        value = _map(resources.get(side)).get("nvidia.com/gpu")
        if value is not None:
            try:
                return int(str(value))
            except ValueError:
                return 0
    return 0


ATTEMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "number": ("number", "attempt"),
    "jobSet": ("jobSet", "jobset", "workload", "name"),
    "created": ("created", "createdAt", "creationTime", "createTime"),
    "started": ("started", "startedAt", "startTime", "runningSince"),
    "ended": ("ended", "endedAt", "endTime", "finishedAt"),
    "outcome": ("outcome", "result", "end", "endedAs"),
    "replicatedJob": ("replicatedJob", "failedReplicatedJob", "failingReplicatedJob"),
    "pod": ("pod", "failingPod", "firstFailingPod", "firstFailedPod"),
    "node": ("node", "failingNode", "nodeName"),
    "exitCode": ("exitCode", "exit", "code"),
    "reason": ("reason", "failureReason", "message"),
    "cause": ("cause", "restartCause", "countedAs"),
    "drainSeconds": ("drainSeconds", "drainDurationSeconds", "seconds", "duration", "durationSeconds"),
    "stuck": ("stuck", "drainStuck"),
}
"""Where each column of the attempts table is found in an entry of ``status.attempts`` (the first
name present wins, looked up in the entry and in its ``outcome``, ``failure`` and ``drain`` objects)."""


def _pick(entry: Mapping[str, Any], names: Iterable[str]) -> Any:
    nested = [entry] + [_map(entry.get(key)) for key in ("outcome", "failure", "failingPod", "firstFailingPod",
                                                         "drain", "pod")]
    for name in names:
        for where in nested:
            value = where.get(name)
            if value is not None and not isinstance(value, Mapping | list):
                return value
    return None


def attempt_rows(job: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """``status.attempts`` as rows (number, JobSet, created/started/ended, outcome, the failing
    replicated job, pod, node and exit code or reason, the restart cause, the drain's duration and
    whether it was stuck); ``None`` when the status records no attempt history."""
    entries = status_of(job).get("attempts")
    if not isinstance(entries, list):
        return None
    rows = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        row = {column: _pick(entry, names) for column, names in ATTEMPT_FIELDS.items()}
        for key in ATTEMPT_FIELDS["pod"]:  # a failing pod may be an object: its name
            if isinstance(entry.get(key), Mapping) and entry[key].get("name"):
                row["pod"] = entry[key]["name"]
                break
        outcome = entry.get("outcome")
        if isinstance(outcome, Mapping):
            row["outcome"] = _pick(outcome, ("type", "phase", "state", "kind", "reason"))
        rows.append(row)
    return rows


def attempts_not_kept(job: Mapping[str, Any]) -> int:
    """How many earlier attempts the status counted but no longer keeps (0 when it says nothing)."""
    status = status_of(job)
    for name in ("attemptsNotKept", "attemptsDropped", "attemptsOmitted", "olderAttempts", "droppedAttempts"):
        value = status.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def current_workload(job: Mapping[str, Any]) -> str:
    """The current attempt's JobSet name: ``status.workload``, else ``<job>-<status.attempt>``."""
    status = status_of(job)
    name = str(_map(job.get("metadata")).get("name", ""))
    attempt = status.get("attempt", 0)
    return str(status.get("workload") or workload_name(name, attempt if isinstance(attempt, int) else 0))


def pod_rows(pods: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The pods as ``describe`` lists them: name, replicated job, phase (``Terminating`` while being
    deleted), node, container restarts, age; sorted by name."""
    rows = []
    for pod in pods:
        metadata, status = _map(pod.get("metadata")), _map(pod.get("status"))
        restarts = sum(int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or ()
                       if isinstance(s, Mapping))
        rows.append({
            "name": str(metadata.get("name", "")),
            "replicatedJob": str(_map(metadata.get("labels")).get(REPLICATED_JOB_LABEL, "")),
            "phase": "Terminating" if metadata.get("deletionTimestamp") else str(status.get("phase") or "Unknown"),
            "node": str(_map(pod.get("spec")).get("nodeName") or ""),
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
    metadata = _map(job.get("metadata"))
    name, uid = metadata.get("name"), metadata.get("uid")
    rows = []
    for event in events:
        regarding = _map(event.get("regarding"))
        if regarding.get("kind") != "Job" or regarding.get("name") != name:
            continue
        if regarding.get("uid") and uid and regarding.get("uid") != uid:
            continue
        if str(regarding.get("apiVersion", "")).split("/")[0] not in ("nvcre.nvidia.com", ""):
            continue
        when = (_map(event.get("series")).get("lastObservedTime") or event.get("eventTime")
                or event.get("deprecatedLastTimestamp") or _map(event.get("metadata")).get("creationTimestamp"))
        count = _map(event.get("series")).get("count") or event.get("deprecatedCount") or 1
        rows.append({"type": str(event.get("type") or ""), "reason": str(event.get("reason") or ""),
                     "time": when, "age": age(when, now), "from": str(event.get("reportingController") or ""),
                     "count": count, "note": str(event.get("note") or "")})
    rows.sort(key=lambda row: str(row["time"] or ""))
    return rows[-MAX_EVENTS:]


# -- why -------------------------------------------------------------------------------------------


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _drain_words(job: Mapping[str, Any], drain: DrainView | None) -> str:
    """What the barrier waits for, in the barrier's words: the view read now, else the status."""
    if drain is not None:
        if drain.error:
            return f"The drain barrier cannot tell what is left: {drain.error}; it holds and reads again"
        if drain.passed:
            return "The drain barrier finds nothing left now (no JobSet, no active pod, no batch Job)"
        words = f"The drain barrier is {drain.message}" if drain.message else ""
        return f"{words}; {drain.stuck}" if drain.stuck else words
    said = waiting_for(job)
    return f"It is {said}" if said else ""


def why(job: Mapping[str, Any], drain: DrainView | None = None) -> str:
    """One paragraph: why the Job is in its phase and what would move it on, from the status the
    hooks wrote (phase, attempt, restarts, conditions and their reasons, message, lastFailure) and,
    while it drains, what the barrier waits for now (``drain``)."""
    metadata, status, spec = _map(job.get("metadata")), status_of(job), spec_of(job)
    name = str(metadata.get("name", ""))
    phase = str(status.get("phase") or "")
    attempt = status.get("attempt", 0)
    restarts = status.get("restarts", 0)
    workload = current_workload(job)
    message = str(status.get("message") or "")
    parts: list[str] = []
    if not status or not phase:
        parts.append(f"Job {name} has no status yet: the hooks have not answered for it. Check that "
                     "Metacontroller runs and the CompositeController nvcre-hooks is installed, and that the "
                     "hooks answer (SyncError Events, docs/operations.md §4)")
        return " ".join(_sentence(p) for p in parts if p)
    mismatch = condition(status, "StatusMismatch")
    invalid = condition(status, "InvalidSpec")
    deleting = bool(metadata.get("deletionTimestamp"))
    max_restarts = spec.get("maxRestarts")
    limit = f" of {max_restarts}" if isinstance(max_restarts, int) else ""
    if mismatch.get("status") == "True":
        parts.append(f"Job {name} is {phase} and holds: its status disagrees with what the API server shows "
                     f"({mismatch.get('reason')}: {mismatch.get('message') or message})")
        parts.append("Nothing is created, deleted or ended until the status is corrected or the extra JobSet "
                     "removed (docs/operations.md, StatusMismatch)")
    elif deleting or phase == "Terminating":
        if deleting:
            parts.append(f"Job {name} is Terminating: it was deleted, and its finalizer keeps it until no pod of "
                         "any attempt is left")
            parts.append(_drain_words(job, drain))
            parts.append("Once the barrier passes, the finalizer is removed and the Job goes away")
        else:
            deadline = condition(status, "DeadlineExceeded")
            parts.append(f"Job {name} is Terminating: spec.activeDeadlineSeconds passed "
                         f"({deadline.get('message') or 'DeadlineExceeded'}), so its workload is being torn down")
            parts.append(_drain_words(job, drain))
            parts.append("Once the barrier passes it becomes Failed (reason DeadlineExceeded)")
    elif invalid.get("status") == "True":
        parts.append(f"Job {name} is {phase} and creates nothing: its spec cannot become a JobSet "
                     f"({invalid.get('reason')}: {invalid.get('message')})")
        if invalid.get("reason") == "ReplicatedJobsChanged":
            parts.append("spec.replicatedJobs no longer matches the workload the Job was created with "
                         "(status.replicatedJobsDigest): restore it, or delete the Job and create it again")
        else:
            parts.append("Fix the spec (kubectl edit nvjob " + name + "); the hooks judge it again on their next call")
        if message:
            parts.append(message)
    elif phase == "Pending":
        if "before creating JobSet" in message or "admitted, waiting" in message:
            parts.append(f"Job {name} is Pending at attempt {attempt}: JobSet {workload} is not created yet, "
                         f"because the drain barrier holds: {message}")
            parts.append("It is created once nothing of an earlier attempt is left")
        else:
            parts.append(f"Job {name} is Pending at attempt {attempt}: JobSet {workload} exists and no worker "
                         "pod is active yet" + (f" ({message})" if message else ""))
            parts.append("It becomes Running when a worker pod is active (scheduled and started)")
    elif phase == "Running":
        active = status.get("activePods", 0)
        if message:
            parts.append(f"Job {name} is Running at attempt {attempt} with {active} active pods: {message}")
        else:
            parts.append(f"Job {name} is Running at attempt {attempt} with {active} active pods of JobSet {workload}")
        parts.append(f"It becomes Succeeded when JobSet {workload} reports Completed; when it reports Failed, "
                     f"it restarts as attempt {_next(attempt)} after the drain barrier (restarts {restarts}{limit}) "
                     "or, with no restart left or a FailJob rule, becomes Failed")
    elif phase == "Restarting":
        failure = _map(status.get("lastFailure"))
        why_failed = failure.get("message") or failure.get("cause") or "its JobSet failed"
        parts.append(f"Job {name} is Restarting: attempt {attempt} failed ({why_failed}) and is being torn down "
                     f"(restarts {restarts}{limit})")
        parts.append(_drain_words(job, drain))
        parts.append(f"Attempt {_next(attempt)} is created, Pending, only once nothing of attempt {attempt} is left")
    elif phase == "Suspending":
        queued = bool(_map(metadata.get("labels")).get(QUEUE_LABEL))
        cause = "spec.suspend is true" if spec.get("suspend") is True else (
            "Kueue evicted its Workload" if queued else "it is being suspended")
        parts.append(f"Job {name} is Suspending: {cause}, so attempt {attempt} is being torn down")
        parts.append(_drain_words(job, drain))
        parts.append("It becomes Suspended (Queued behind Kueue, its quota released) once nothing is left")
    elif phase == "Suspended":
        parts.append(f"Job {name} is Suspended: spec.suspend is true and nothing of it runs")
        parts.append(f"Resume it with kubectl patch nvjob {name} --type merge -p '{{\"spec\":{{\"suspend\":false}}}}': "
                     f"attempt {_next(attempt)} starts once the drain barrier passes")
    elif phase == "Queued":
        admitted = condition(status, "Admitted")
        queue = _map(metadata.get("labels")).get(QUEUE_LABEL, "")
        said = admitted.get("message") or admitted.get("reason") or message or "not admitted yet"
        parts.append(f"Job {name} is Queued in LocalQueue {queue}: Kueue has not admitted its Workload ({said})")
        parts.append("Its JobSet is created once Kueue admits the Workload")
    elif phase == "Succeeded":
        parts.append(f"Job {name} Succeeded: JobSet {workload} completed at attempt {attempt}"
                     + (f" (completed at {status.get('completionTime')})" if status.get("completionTime") else ""))
        parts.append(_final_words(spec))
    elif phase == "Failed":
        failed = condition(status, "Failed")
        said = failed.get("message") or _map(status.get("lastFailure")).get("message") or message or "it failed"
        parts.append(f"Job {name} Failed ({failed.get('reason') or 'Failed'}) at attempt {attempt} after "
                     f"{restarts} restarts: {said}")
        parts.append(_final_words(spec))
    else:
        parts.append(f"Job {name} is {phase}" + (f": {message}" if message else ""))
    stuck = condition(status, "DrainStuck")
    if stuck.get("status") == "True" and (drain is None or not drain.stuck):
        parts.append(f"Pods are stuck on lost nodes: {stuck.get('message')}")
    return " ".join(_sentence(p) for p in parts if p)


def _next(attempt: Any) -> Any:
    return attempt + 1 if isinstance(attempt, int) else "the next"


def _final_words(spec: Mapping[str, Any]) -> str:
    ttl = spec.get("ttlSecondsAfterFinished")
    after = f"; it is deleted {ttl}s after it finished (spec.ttlSecondsAfterFinished)" if isinstance(ttl, int) else ""
    return f"The phase is final: nothing moves it on, create a new Job to run again{after}"
