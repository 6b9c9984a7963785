"""A checkpoint before the drain (issue 33): the gate of the suspend, the Kueue eviction (a preemption)
and, when asked, the delete, and the contract the workload implements (docs/checkpoint.md).

Pure, and low in the import order (the vocabulary, the conditions, the status; the lifecycle's and
the evidence's shapes are imported where they are used, since ``hooks.core.lifecycle.GATES`` lists
the gates of this module). What it reads and decides:

- ``policy(spec)``: the one reader of ``spec.checkpoint`` (``None`` when it is not set: the feature
  is off, and nothing in an answer changes). ``InvalidSpec`` (``InvalidCheckpoint``) for a value out
  of range or of the wrong type.
- the control ConfigMap ``<job>-<attempt>-control`` (``control_child``): a child answered with every
  JobSet that mounts it (``mounted``), holding ``checkpoint.json`` (the contract's version, the
  Job, the attempt and the pending request, or none). A JobSet mounts it when its attempt began with
  ``spec.checkpoint`` set (``mount``): an attempt keeps the shape it was created with, so setting or
  unsetting ``spec.checkpoint`` takes effect from the next attempt.
- the gate (``CheckpointGate``, one per reason): while the current attempt's JobSet runs and mounts
  the control file, a teardown asks the workload to save (``status.checkpoint``: the request's id,
  attempt, reason, ``requestedAt`` and ``deadline``; the same request in the control file) and holds,
  the JobSet running, until the workload's rank 0 acknowledges it (``ACK_ANNOTATION`` on the Job
  naming the request id and the saved step) or the deadline passes; then the drain runs as it
  always has. An acknowledgement for another request is ignored and said so. Nothing here skips
  the drain barrier: a gate only delays it.
- the claims: a request read back from the status is kept only while it is this attempt's and this
  reason's, its id is the one its ``requestedAt`` makes, and that time is neither before the
  trigger's own evidence (``trigger_time``: the deletionTimestamp, the Workload's eviction, the
  write that set ``spec.suspend``) nor after ``now`` (plus the clock skew); otherwise it is made
  again (a past time must not shorten the grace, a future one must not stall a teardown). The
  outcome is derived again on every call while the JobSet runs: a status that says
  ``Acknowledged`` without the annotation waits as before.

Every time written is evidence (``Context.stamp``) or computed from it (the deadline); ``now`` only
decides whether the deadline passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson

from hooks.core import conditions as cond
from hooks.core.deadlines import time_or_none
from hooks.core.declared import MAPPING
from hooks.core.historyentry import ordered
from hooks.core.jobset import InvalidSpec
from hooks.core.request import Spec
from hooks.core.status import Status, StatusFields
from hooks.core.vocab import AttemptField as F
from hooks.core.vocab import ConditionType, Reason
from podread.constants import ATTEMPT_LABEL

if TYPE_CHECKING:
    from hooks.core.lifecycle import ConditionChange, GateVerdict
    from hooks.core.work import Context, Work

VERSION = "v1"
"""The contract's version (docs/checkpoint.md): in the control file and in ``status.checkpoint``."""
ACK_ANNOTATION = "checkpoint.nvcre.nvidia.com/acknowledged"
"""The annotation rank 0 writes on its Job: ``{"id": "<request id>", "step": <saved step>}`` (JSON)."""
CONTROL_VOLUME = "nvcre-control"
CONTROL_PATH = "/etc/nvcre/control"
CONTROL_FILE = "checkpoint.json"
"""Every container of an attempt started with ``spec.checkpoint`` reads ``CONTROL_PATH/CONTROL_FILE``."""
DEFAULT_GRACE_SECONDS = 180
"""How long a request waits by default: the kubelet refreshes a mounted ConfigMap within its sync
period plus its cache's TTL (60 s each by default), and the workload then needs time to save."""
MIN_GRACE_SECONDS, MAX_GRACE_SECONDS = 30, 3600
CLOCK_SKEW = timedelta(seconds=60)
CHECKPOINTED = ConditionType.CHECKPOINTED
MAX_ID = 80


class Why(StrEnum):
    """The reason of a request, as the contract spells it."""

    SUSPEND = "suspend"
    PREEMPTION = "preemption"
    DELETE = "delete"


class Said(StrEnum):
    """``status.checkpoint.outcome`` and the ``Checkpointed`` condition's reason."""

    REQUESTED = Reason.CHECKPOINT_REQUESTED
    ACKNOWLEDGED = Reason.CHECKPOINT_ACKNOWLEDGED
    GRACE_EXPIRED = Reason.CHECKPOINT_GRACE_EXPIRED
    CANCELLED = Reason.CHECKPOINT_CANCELLED
    WORKLOAD_ENDED = Reason.CHECKPOINT_WORKLOAD_ENDED
    NOT_REQUESTED = Reason.NOT_REQUESTED


ENDED = frozenset({Said.ACKNOWLEDGED, Said.GRACE_EXPIRED, Said.CANCELLED, Said.WORKLOAD_ENDED})


# ---- spec.checkpoint ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Policy:
    """``spec.checkpoint`` as read: which teardowns ask, and the grace."""

    on_suspend: bool = True
    on_preemption: bool = True
    on_delete: bool = False
    grace_seconds: int = DEFAULT_GRACE_SECONDS

    def asks(self, why: Why) -> bool:
        """Whether a teardown for ``why`` asks the workload to save."""
        return {Why.SUSPEND: self.on_suspend, Why.PREEMPTION: self.on_preemption, Why.DELETE: self.on_delete}[why]


def policy(spec: Spec) -> Policy | None:
    """The one reader of ``spec.checkpoint`` (``Spec.checkpoint``, left raw there): ``None``
    when unset or null; else ``onSuspend`` and ``onPreemption`` (default true: setting the object
    says the workload implements the contract), ``onDelete`` (default false: a delete is opt-in) and
    ``graceSeconds`` (default ``DEFAULT_GRACE_SECONDS``, from ``MIN_GRACE_SECONDS`` to
    ``MAX_GRACE_SECONDS``). Raises ``InvalidSpec`` (``InvalidCheckpoint``) naming the field for a
    value of the wrong type or out of range (the CRD refuses the same)."""
    raw = spec.checkpoint
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidSpec("spec.checkpoint must be an object", "InvalidCheckpoint")
    flags = {}
    for key in ("onSuspend", "onPreemption", "onDelete"):
        value = raw.get(key)
        if value is not None and not isinstance(value, bool):
            raise InvalidSpec(f"spec.checkpoint.{key} must be a boolean, got {str(value)[:40]!r}", "InvalidCheckpoint")
        flags[key] = value
    grace = raw.get("graceSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)
                              or not MIN_GRACE_SECONDS <= grace <= MAX_GRACE_SECONDS):
        raise InvalidSpec(f"spec.checkpoint.graceSeconds must be an integer from {MIN_GRACE_SECONDS} to "
                          f"{MAX_GRACE_SECONDS}, got {str(grace)[:40]!r}", "InvalidCheckpoint")
    return Policy(on_suspend=flags["onSuspend"] is not False, on_preemption=flags["onPreemption"] is not False,
                  on_delete=flags["onDelete"] is True,
                  grace_seconds=DEFAULT_GRACE_SECONDS if grace is None else grace)


def check(spec: Spec) -> None:
    """``policy``'s checks, for ``hooks.core.spec.check_policies``; also refuses a pod template that
    already has a volume named ``CONTROL_VOLUME`` (``InvalidCheckpoint``)."""
    if policy(spec) is None:
        return
    entries = spec.replicated_jobs
    for entry in entries if isinstance(entries, list) else ():
        volumes = _pod_spec(entry).get("volumes")
        if isinstance(volumes, list) and any(isinstance(v, MAPPING) and v.get("name") == CONTROL_VOLUME
                                             for v in volumes):
            raise InvalidSpec(f"replicated job {str(entry.get('name'))[:63]}: a volume named {CONTROL_VOLUME} is the "
                              f"checkpoint control file's (spec.checkpoint)", "InvalidCheckpoint")


def _pod_spec(entry: object) -> Mapping[str, Any]:
    node: Any = entry
    for key in ("template", "spec", "template", "spec"):
        node = node.get(key) if isinstance(node, MAPPING) else None
    return node if isinstance(node, MAPPING) else {}


# ---- the control ConfigMap and its mount ---------------------------------------------------------------

def control_name(jobset_name: str) -> str:
    """The control ConfigMap of an attempt: ``<job>-<attempt>-control`` (its JobSet's name, then ``-control``)."""
    return f"{jobset_name}-control"


def mount(jobset: dict[str, Any]) -> dict[str, Any]:
    """``jobset`` (a built one, not shared) with the control ConfigMap mounted read-only at
    ``CONTROL_PATH`` in every container and init container of every pod template; returns it.
    Raises ``InvalidSpec`` (``InvalidCheckpoint``) when a pod spec's ``volumes``, ``containers``,
    ``initContainers`` or a container's ``volumeMounts`` is not an array (nothing to add to)."""
    volume = {"name": CONTROL_VOLUME, "configMap": {"name": control_name(jobset["metadata"]["name"])}}
    for replicated in jobset["spec"]["replicatedJobs"]:
        pod_spec = replicated["template"]["spec"]["template"].setdefault("spec", {})
        pod_spec["volumes"] = [*_array(pod_spec, "volumes", replicated), volume]
        for kind in ("initContainers", "containers"):
            for container in _array(pod_spec, kind, replicated):
                if isinstance(container, dict):
                    container["volumeMounts"] = [*_array(container, "volumeMounts", replicated), {
                        "name": CONTROL_VOLUME, "mountPath": CONTROL_PATH, "readOnly": True}]
    return jobset


def _array(node: Mapping[str, Any], key: str, replicated: Mapping[str, Any]) -> list[Any]:
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidSpec(f"replicated job {str(replicated.get('name'))[:63]}: {key} must be an array to mount "
                          f"the checkpoint control file (spec.checkpoint)", "InvalidCheckpoint")
    return value


def mounted(jobset: Mapping[str, Any] | None) -> bool:
    """Whether ``jobset`` (observed or answered) mounts its control ConfigMap: its attempt began
    under the contract."""
    jobset_spec = jobset.get("spec") if jobset is not None else None
    replicated_jobs = jobset_spec.get("replicatedJobs") if isinstance(jobset_spec, MAPPING) else None
    for replicated in replicated_jobs if isinstance(replicated_jobs, list) else ():
        volumes = _pod_spec(replicated).get("volumes")
        if isinstance(volumes, list) and any(isinstance(v, MAPPING) and v.get("name") == CONTROL_VOLUME
                                             for v in volumes):
            return True
    return False


def control_child(job: str, namespace: str, jobset_name: str, attempt: int,
                  record: Mapping[str, Any]) -> dict[str, Any]:
    """The control ConfigMap of ``attempt``: ``checkpoint.json`` holds the version, the Job, its
    namespace, the attempt and ``request`` (``record``'s id, attempt, reason, requestedAt, deadline
    and outcome when ``record`` is this attempt's, else ``null``). Sorted keys: the same state, the
    same bytes."""
    request = None
    if record and record.get("attempt") == attempt and record.get("outcome") in (Said.REQUESTED, Said.ACKNOWLEDGED,
                                                                                 Said.GRACE_EXPIRED):
        request = {key: record[key] for key in ("id", "attempt", "reason", "requestedAt", "deadline", "outcome")}
    body = {"version": VERSION, "job": job, "namespace": namespace, "attempt": attempt, "request": request}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": control_name(jobset_name), "namespace": namespace},
            "data": {CONTROL_FILE: orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()}}


# ---- the request, its claims and its outcome ----------------------------------------------------------

def record_of(status: StatusFields) -> Mapping[str, Any]:
    """``status.checkpoint`` as it came (``{}`` when none)."""
    return status.checkpoint or {}


def waiting(status: StatusFields) -> bool:
    """Whether ``status`` (or the ``Work`` deciding one) shows a request of its current attempt that
    waits (``Requested``)."""
    record = record_of(status)
    return record.get("outcome") == Said.REQUESTED and record.get("attempt") == status.attempt


def request_id(attempt: int, why: Why, requested_at: str) -> str:
    """A request's id: ``<attempt>-<reason>-<requestedAt, digits only>``: the same request, the same id."""
    return f"{attempt}-{why}-{''.join(ch for ch in requested_at if ch.isdigit())}"[:MAX_ID]


def trigger_time(ctx: Context, why: Why) -> datetime | None:
    """When the API server says the teardown began, when the request carries it: the Job's
    ``deletionTimestamp`` (delete), the time of its Workload's ``Evicted`` condition (a preemption:
    Kueue's eviction; its other conditions move on while the request waits), the time of the last
    write that set ``spec.suspend`` (``Observed.suspend_set_at``). ``None`` when the request carries
    no such evidence."""
    observed = ctx.observed
    if why == Why.DELETE:
        return time_or_none(observed.deletion_timestamp)
    if why == Why.SUSPEND:
        return time_or_none(observed.suspend_set_at)
    times = [time_or_none(c.get("lastTransitionTime")) for w in observed.workloads
             for c in _conditions(w) if c.get("type") == "Evicted" and c.get("status") == "True"]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _conditions(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = workload.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in conditions if isinstance(c, Mapping)] if isinstance(conditions, list) else []


def _held_request(ctx: Context, work: Work, why: Why) -> Mapping[str, Any] | None:
    """The status' request, when it is this attempt's and reason's and its claims hold (the module
    doc); else ``None``."""
    record = work.checkpoint or {}
    if record.get("attempt") != work.attempt or record.get("reason") != why or record.get("version") != VERSION:
        return None
    if record.get("outcome") in (Said.CANCELLED, Said.WORKLOAD_ENDED):
        return None  # that request is over: a new teardown asks again, under a new id
    requested_at = record.get("requestedAt")
    at = time_or_none(requested_at)
    if at is None or record.get("id") != request_id(work.attempt, why, str(requested_at)):
        return None
    floor = trigger_time(ctx, why)
    if (floor is not None and at < floor) or at > _utc(ctx.now) + CLOCK_SKEW:
        return None
    return record


def bounded(text: str) -> str:
    """``hooks.core.wording.bounded`` (imported here when used: wording is above the lifecycle)."""
    from hooks.core.wording import bounded as cut
    return cut(text)


def _utc(moment: datetime) -> datetime:
    from hooks.core.claims import utc
    return utc(moment)


@dataclass(frozen=True)
class Ack:
    """What the annotation says: the request ``id`` and the saved ``step`` (``None``: unreadable)."""

    id: str
    step: int | None


def acknowledgement(annotations: Mapping[str, str]) -> Ack | None:
    """``ACK_ANNOTATION`` as read: ``None`` when absent; an ``Ack`` whose ``step`` is ``None`` when it
    is not ``{"id": <string>, "step": <integer >= 0>}``."""
    text = annotations.get(ACK_ANNOTATION)
    if text is None:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return Ack("", None)
    if not isinstance(value, dict):
        return Ack("", None)
    ack_id, step = value.get("id"), value.get("step")
    good = isinstance(step, int) and not isinstance(step, bool) and step >= 0
    return Ack(str(ack_id)[:MAX_ID] if isinstance(ack_id, str) else "", step if good else None)


@dataclass(frozen=True)
class Verdict:
    """Where a request stands in this call: the ``record`` (``status.checkpoint``), whether the gate
    passes, the words while it holds and the ``Checkpointed`` condition change."""

    record: Mapping[str, Any]
    passed: bool
    words: str
    condition: tuple[str, str, str]


def judge(ctx: Context, work: Work, why: Why, grace: int) -> Verdict:
    """The request of a running attempt that mounts the control file: the status' request when its
    claims hold, else a new one at the call's evidence time (never before the trigger's own);
    acknowledged when the annotation names its id (the step and the time of the call's evidence,
    kept from the status when it says the same step); expired once ``now`` reaches the deadline
    (the deadline is the expiry's time); else it waits."""
    from hooks.core.conditions import format_time
    held = _held_request(ctx, work, why)
    if held is not None:
        requested_at = str(held["requestedAt"])
    else:
        stamp, floor = _utc(ctx.stamp), trigger_time(ctx, why)
        requested_at = format_time(max(stamp, floor) if floor is not None else stamp)
    at = time_or_none(requested_at)
    assert at is not None  # made or checked just above
    deadline = at + timedelta(seconds=grace)
    rid = request_id(work.attempt, why, requested_at)
    base = {"version": VERSION, "id": rid, "attempt": work.attempt, "reason": str(why), "requestedAt": requested_at,
            "deadline": format_time(deadline)}
    ack = acknowledgement(ctx.observed.annotations)
    if ack is not None and ack.id == rid and ack.step is not None:
        prior = held or {}
        acked_at = prior.get("acknowledgedAt") if prior.get("acknowledgedStep") == ack.step else None
        when = time_or_none(acked_at)
        if when is None or when < at or when > _utc(ctx.now) + CLOCK_SKEW:
            acked_at = format_time(max(_utc(ctx.stamp), at))
        record = {**base, "outcome": str(Said.ACKNOWLEDGED), "acknowledgedStep": ack.step, "acknowledgedAt": acked_at}
        return Verdict(record, True, "", (cond.TRUE, Said.ACKNOWLEDGED,
                                          f"request {rid} ({why}) acknowledged: step {ack.step} saved"))
    ignored = _ignored_words(ack, rid)
    if _utc(ctx.now) >= deadline:
        record = {**base, "outcome": str(Said.GRACE_EXPIRED), "expiredAt": format_time(deadline)}
        words = f"request {rid} ({why}): no acknowledgement by {format_time(deadline)}; drained without it{ignored}"
        return Verdict(record, True, "", (cond.FALSE, Said.GRACE_EXPIRED, bounded(words)))
    record = {**base, "outcome": str(Said.REQUESTED)}
    if ack is not None and ignored:
        record["ignored"] = ack.id or "(unreadable)"
    words = bounded(f"checkpoint requested ({why}): waiting for the workload to acknowledge request {rid} until "
                    f"{format_time(deadline)}, or the grace to expire, before draining{ignored}")
    return Verdict(record, False, words, (cond.FALSE, Said.REQUESTED,
                                          bounded(f"request {rid} ({why}) until {format_time(deadline)}{ignored}")))


def _ignored_words(ack: Ack | None, rid: str) -> str:
    """What is said of an acknowledgement that is not for ``rid`` (``""`` when there is none)."""
    if ack is None or (ack.id == rid and ack.step is not None):
        return ""
    if ack.step is None:
        return f" ({ACK_ANNOTATION} is ignored: not {{\"id\": <string>, \"step\": <integer >= 0>}})"
    return f" (an acknowledgement of request {ack.id} is ignored: it is not this request)"


# ---- the gate ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckpointGate:
    """The gate a teardown for ``why`` takes before its drain barrier (``hooks.core.lifecycle.Gate``).
    The JobSet runs while it waits (``running_legal``)."""

    why: Why
    name: str = "checkpoint"
    running_legal: bool = True

    def check(self, ctx: Context, work: Work) -> GateVerdict:
        """Passes at once (no request) unless ``spec.checkpoint`` asks for this reason (a spec that
        cannot be read asks nothing: the teardown must not wait on it) and the current attempt's
        JobSet runs and mounts the control file; a request that waited while its JobSet stopped
        running ends ``WorkloadEnded``; an ended one is kept as it is. Else ``judge`` says."""
        from hooks.core.evidence import healthy
        from hooks.core.lifecycle import GateVerdict
        try:
            asked = policy(ctx.observed.spec)
        except InvalidSpec:
            asked = None
        if asked is None:
            return GateVerdict(True)
        current = ctx.jobset(work.attempt)
        record = work.checkpoint or {}
        ours = record.get("attempt") == work.attempt and record.get("reason") == self.why
        if current is None or not healthy(current) or not mounted(current):
            if ours and record.get("outcome") == Said.REQUESTED:
                ended = {**record, "outcome": str(Said.WORKLOAD_ENDED)}
                return GateVerdict(True, checkpoint=ended, conditions=(_change(
                    cond.FALSE, Said.WORKLOAD_ENDED, f"request {record.get('id')}: the attempt stopped running"),))
            if ours:
                return GateVerdict(True)
            return GateVerdict(True, conditions=(_change(cond.FALSE, Said.NOT_REQUESTED,
                                                         f"nothing runs to save ({self.why})"),))
        if not asked.asks(self.why):
            return GateVerdict(True, conditions=(_change(cond.FALSE, Said.NOT_REQUESTED,
                                                         f"spec.checkpoint does not ask on {self.why}"),))
        verdict = judge(ctx, work, self.why, asked.grace_seconds)
        return GateVerdict(verdict.passed, words=verdict.words, checkpoint=verdict.record,
                           conditions=(_change(*verdict.condition),))

    def waiting(self, status: Status) -> bool:
        """Whether ``status`` shows this gate's request waiting (``waiting``)."""
        return waiting(status) and record_of(status).get("reason") == self.why


def _change(status: str, reason: str, message: str) -> ConditionChange:
    from hooks.core.lifecycle import ConditionChange
    return ConditionChange(CHECKPOINTED, status, reason, bounded(message))


ON_SUSPEND = CheckpointGate(Why.SUSPEND)
ON_PREEMPTION = CheckpointGate(Why.PREEMPTION)
ON_DELETE = CheckpointGate(Why.DELETE)
GATES = (ON_SUSPEND, ON_PREEMPTION, ON_DELETE)
"""The gates of this module, listed in ``hooks.core.lifecycle.GATES``."""


# ---- what an answer reached: the Events' and the metrics' -----------------------------------------------

def reached(prior: Mapping[str, Any], record: Mapping[str, Any]) -> tuple[str, float | None] | None:
    """The outcome a request reached between ``prior`` and ``record`` (``status.checkpoint`` before
    and after an answer): ``(outcome, seconds)`` when ``record``'s outcome is an end (``ENDED``) it
    did not have in ``prior`` (another request, or another outcome); ``seconds``, for an
    acknowledgement, from ``requestedAt`` to ``acknowledgedAt`` (``None`` otherwise, or when a time
    is unreadable). ``None`` when nothing ended."""
    outcome = record.get("outcome")
    if outcome not in ENDED or (prior.get("id"), prior.get("outcome")) == (record.get("id"), outcome):
        return None
    seconds = None
    if outcome == Said.ACKNOWLEDGED:
        asked, acked = time_or_none(record.get("requestedAt")), time_or_none(record.get("acknowledgedAt"))
        if asked is not None and acked is not None:
            seconds = max(0.0, (acked - asked).total_seconds())
    return str(outcome), seconds


# ---- a resume while it waits, and what the answer carries ----------------------------------------------

def cancelled(status: Status) -> tuple[Mapping[str, Any], ConditionChange]:
    """The waiting request of ``status`` (``waiting``) cancelled by a resume: the record and the
    ``Checkpointed`` condition."""
    record = {**record_of(status), "outcome": str(Said.CANCELLED)}
    record.pop("ignored", None)
    return record, _change(cond.FALSE, Said.CANCELLED,
                           f"request {record.get('id')}: resumed before the drain; the attempt keeps running")


def control_children(ctx: Context, work: Work) -> list[dict[str, Any]]:
    """A control ConfigMap (``control_child``) for each JobSet the answer carries that mounts it."""
    return [control_child(ctx.job, ctx.namespace, child["metadata"]["name"],
                          int((child["metadata"].get("labels") or {}).get(ATTEMPT_LABEL, -1)), work.checkpoint or {})
            for child in work.children if child.get("kind") == "JobSet" and mounted(child)]


def history_keys(record: Mapping[str, Any]) -> dict[str, Any]:
    """What ``status.attempts[]`` of the request's attempt says of it: ``checkpointRequested``,
    and ``checkpointStep`` and ``checkpointAcknowledged``, or ``checkpointExpired``."""
    keys: dict[str, Any] = {F.CHECKPOINT_REQUESTED: record.get("requestedAt")}
    if record.get("outcome") == Said.ACKNOWLEDGED:
        keys[F.CHECKPOINT_STEP] = record.get("acknowledgedStep")
        keys[F.CHECKPOINT_ACKNOWLEDGED] = record.get("acknowledgedAt")
    if record.get("outcome") == Said.GRACE_EXPIRED:
        keys[F.CHECKPOINT_EXPIRED] = record.get("expiredAt")
    return {key: value for key, value in keys.items() if value not in (None, "")}


HISTORY_KEYS = (F.CHECKPOINT_REQUESTED, F.CHECKPOINT_STEP, F.CHECKPOINT_ACKNOWLEDGED, F.CHECKPOINT_EXPIRED)
"""The keys ``history_keys`` writes: one request's, never two requests' mixed."""


def with_request(entry: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` (the request's attempt's) saying what became of ``record``: the keys it does not
    have yet (``history_keys``, each written once), in the entries' one order. Its keys are one
    request's: when they name another request (their ``checkpointRequested`` is not ``record``'s:
    a request made again after a cancel, under a new id), they are that request's and are replaced;
    a cancelled request (the attempt kept running) leaves none."""
    keys = history_keys(record) if record.get("outcome") != Said.CANCELLED else {}
    if entry.get(F.CHECKPOINT_REQUESTED) != keys.get(F.CHECKPOINT_REQUESTED):
        entry = {key: value for key, value in entry.items() if key not in HISTORY_KEYS}
    return ordered({**keys, **entry})


def after_row(ctx: Context, work: Work) -> None:
    """After the rows: the control ConfigMaps join the children, and the attempt's history entry
    says what became of its request (``with_request``). Writes nothing else."""
    work.children.extend(control_children(ctx, work))
    record = work.checkpoint or {}
    if not record:
        return
    work.attempts = [with_request(entry, record) if entry.get(F.ATTEMPT) == record.get("attempt") else entry
                     for entry in work.attempts]

