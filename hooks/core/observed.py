"""Parse a Metacontroller CompositeController request into an ``Observed``: the typed input of ``decide``.

Only shape is judged here. A 4xx (``InvalidRequest``, a message that names the field) is a request
that cannot be decided on at all: not an object, no ``parent``, a parent that is not an
``nvcre.nvidia.com/v1alpha1`` Job (422), a ``parent.metadata.uid`` missing or not a UID (a UUID: the
hooks' writes are bound to it), a name that could not go into a label selector, or a wrong JSON type
in a field the decision reads (types the CRD has always refused, so the API server never stores
them: only a request not from Metacontroller carries them). Nothing is decided or written then.

Everything else the decision must survive, and does: values the CRD admits now or admitted before
(``null`` counts, status times at the ends of datetime's range, a Workload status of a shape Kueue
does not write) are answered with a 200. Whether the spec can become a JobSet (replicated jobs
present, a launcher naming one, name lengths, a pod template and pod spec that are objects, time
limits in range, ...) is answered by ``hooks.core.spec.check_spec`` and reported in the status as
``InvalidSpec`` with a code and a reason naming the field, never as a 4xx: a Job stored under an
older CRD must still suspend, finalize and say what is wrong. ``tests/test_fuzz_types.py`` holds the
hooks to this over every field of every recorded request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

API_VERSION = "nvcre.nvidia.com/v1alpha1"
KIND = "Job"
JOBSET_GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
WORKLOAD_GROUP = "Workload.kueue.x-k8s.io/v1beta2"
PRIORITY_CLASS_GROUP = "WorkloadPriorityClass.kueue.x-k8s.io/v1beta2"
FLAVOR_GROUP = "ResourceFlavor.kueue.x-k8s.io/v1beta2"
HOOKS = ("sync", "finalize")

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_MAX_LABEL_VALUE = 63
_UID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class InvalidRequest(Exception):
    """The request cannot be decided on: ``status`` is the HTTP code (400 or 422), ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class PriorStatus:
    """The Job's status as Metacontroller last wrote it (``parent.status``), typed.

    Missing fields take their zero value. ``observedGeneration`` (Metacontroller's) and unknown
    fields are not kept: the hook owns the status and writes it whole.
    """

    phase: str = ""
    attempt: int = 0
    restarts: int = 0
    workload: str = ""
    active_pods: int = 0
    conditions: tuple[Mapping[str, Any], ...] = ()
    message: str = ""
    restarts_by_cause: Mapping[str, int] = field(default_factory=dict)
    last_failure: Mapping[str, Any] = field(default_factory=dict)
    start_time: str = ""
    completion_time: str = ""
    replicated_jobs_digest: str = ""


@dataclass(frozen=True)
class Observed:
    """Everything ``decide`` may know about one Job, from one hook request.

    ``spec`` is the Job's raw spec mapping; ``jobsets`` the observed JobSet children (raw dicts),
    sorted by namespace and name, whichever object-key version the request used.
    """

    namespace: str
    name: str
    generation: int
    deleting: bool
    finalizing: bool
    spec: Mapping[str, Any]
    status: PriorStatus
    jobsets: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    hook: str = "sync"
    uid: str = ""
    creation_timestamp: str = ""
    """``parent.metadata.creationTimestamp`` (set by the API server): evidence for the status' times."""
    version_times: tuple[str, ...] = ()
    """The times the API server stamped on this version of the parent: its ``managedFields`` times
    and, with them, its ``deletionTimestamp``, as found (unparsed; none in a request built by hand
    or recorded without ``managedFields``)."""
    # ---- issue 14 (Kueue, hooks.core.queueing): what the request says about queueing ----
    labels: Mapping[str, str] = field(default_factory=dict)
    """The Job's labels (``kueue.x-k8s.io/queue-name`` makes it queue-managed)."""
    workloads: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    """The observed Workload children (``WORKLOAD_GROUP``), sorted by name."""
    workloads_enabled: bool = False
    """Whether the CompositeController lists Workload children (the group is in the request)."""
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    """Related WorkloadPriorityClasses (``PRIORITY_CLASS_GROUP``): name -> value."""
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Related ResourceFlavors (``FLAVOR_GROUP``): name -> ``spec`` (``nodeLabels``, ``tolerations``)."""


def _version_times(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """``Observed.version_times``: every string ``managedFields[].time``, and the deletionTimestamp
    when there is one of those; anything else there is ignored (server-set metadata, never a reason
    to refuse the request)."""
    fields = metadata.get("managedFields")
    entries = fields if isinstance(fields, list) else []
    found = [entry.get("time") for entry in entries if isinstance(entry, Mapping)]
    found = [time for time in found if isinstance(time, str) and time]
    deletion = metadata.get("deletionTimestamp")
    return (*found, deletion) if found and isinstance(deletion, str) and deletion else tuple(found)


def parse_request(payload: object, hook: str) -> Observed:
    """Reads a decoded request body and returns the ``Observed`` it describes.

    Raises ``InvalidRequest``: 400 when ``payload`` is not an object, lacks ``parent``, holds a
    wrong type in a field the decision reads, names the Job or namespace with an invalid name, or
    lacks a ``parent.metadata.uid`` that is a UUID; 422 when the parent is not an
    ``nvcre.nvidia.com/v1alpha1`` ``Job``. ``hook`` is ``"sync"`` or
    ``"finalize"`` (anything else is a programming error: ``ValueError``).
    """
    if hook not in HOOKS:
        raise ValueError(f"unknown hook {hook!r}")
    if not isinstance(payload, Mapping):
        raise InvalidRequest(400, f"request: expected an object, got {_json_type(payload)}")
    if payload.get("parent") is None:
        raise InvalidRequest(400, "request: parent is missing")
    parent = _object(payload["parent"], "parent")
    if parent.get("apiVersion") != API_VERSION or parent.get("kind") != KIND:
        raise InvalidRequest(422, f"parent: expected apiVersion {API_VERSION} kind {KIND}, got apiVersion "
                                  f"{_shown(parent.get('apiVersion'))} kind {_shown(parent.get('kind'))}")
    metadata = _object(parent.get("metadata"), "parent.metadata")
    name = _string(metadata.get("name"), "parent.metadata.name", required=True)
    namespace = _string(metadata.get("namespace"), "parent.metadata.namespace", required=True)
    _check_job_name(name)
    _check_namespace(namespace)
    generation = _integer(metadata.get("generation"), "parent.metadata.generation")
    uid = _uid(metadata.get("uid"))
    creation_timestamp = _time(metadata.get("creationTimestamp"), "parent.metadata.creationTimestamp")
    deletion = metadata.get("deletionTimestamp")
    _string(deletion, "parent.metadata.deletionTimestamp")
    spec = _parse_spec(parent.get("spec"))
    status = _parse_status(parent.get("status"))
    finalizing = _boolean(payload.get("finalizing"), "finalizing")
    jobsets = _parse_children(payload.get("children"), namespace)
    labels = _object(metadata.get("labels"), "parent.metadata.labels")
    _string_map(labels, "parent.metadata.labels")
    children = _object(payload.get("children"), "children")
    workloads = _parse_workloads(children.get(WORKLOAD_GROUP), namespace)
    related = _object(payload.get("related"), "related")
    priority_classes = _parse_priority_classes(related.get(PRIORITY_CLASS_GROUP))
    flavors = _parse_flavors(related.get(FLAVOR_GROUP))
    return Observed(namespace=namespace, name=name, generation=generation, deleting=bool(deletion),
                    finalizing=finalizing, spec=spec, status=status, jobsets=jobsets, hook=hook, uid=uid,
                    creation_timestamp=creation_timestamp, version_times=_version_times(metadata),
                    labels=dict(labels), workloads=workloads, workloads_enabled=WORKLOAD_GROUP in children,
                    priority_classes=priority_classes, flavors=flavors)


def _parse_workloads(raw: object, namespace: str) -> tuple[Mapping[str, Any], ...]:
    """The observed Workloads under ``children[WORKLOAD_GROUP]`` (either key version), sorted by
    name. The fields that say where Kueue stands (metadata, conditions, ``clusterName``,
    ``admission.clusterQueue``) are type-checked (a wrong type is a 400); the placement the admission
    carries (``podSetAssignments``, ``admissionChecks``) is read by ``hooks.core.queueing``, where a
    shape Kueue does not write holds the JobSet's creation (``AdmissionUnreadable``) instead."""
    path = f'children["{WORKLOAD_GROUP}"]'
    found: dict[str, Mapping[str, Any]] = {}
    for key, child in sorted(_object(raw, path).items()):
        where = f'{path}["{key}"]'
        child = _object(child, where)
        metadata = _object(child.get("metadata"), f"{where}.metadata")
        name = _string(metadata.get("name"), f"{where}.metadata.name") or key.rpartition("/")[2]
        if not name:
            raise InvalidRequest(400, f"{where}.metadata.name: missing")
        _string(metadata.get("deletionTimestamp"), f"{where}.metadata.deletionTimestamp")
        _string_map(metadata.get("labels"), f"{where}.metadata.labels")
        _object(child.get("spec"), f"{where}.spec")
        status = _object(child.get("status"), f"{where}.status")
        _string(status.get("clusterName"), f"{where}.status.clusterName")
        _string(_object(status.get("admission"), f"{where}.status.admission").get("clusterQueue"),
                f"{where}.status.admission.clusterQueue")
        conditions = status.get("conditions")
        if conditions is not None and not isinstance(conditions, list):
            raise InvalidRequest(400, f"{where}.status.conditions: expected an array, got {_json_type(conditions)}")
        for index, condition in enumerate(conditions or ()):
            cpath = f"{where}.status.conditions[{index}]"
            _entry(condition, cpath)
            for field_name in ("type", "status", "reason", "message"):
                _string(condition.get(field_name), f"{cpath}.{field_name}")
        found.setdefault(name, {**child, "metadata": {**metadata, "name": name,
                                                      "namespace": metadata.get("namespace") or namespace}})
    return tuple(found[name] for name in sorted(found))


def _parse_flavors(raw: object) -> dict[str, Mapping[str, Any]]:
    """Related ResourceFlavors (cluster-scoped, keyed by name): name -> ``spec``, with
    ``nodeLabels`` a string map and ``tolerations`` an array of objects when present."""
    path = f'related["{FLAVOR_GROUP}"]'
    flavors: dict[str, Mapping[str, Any]] = {}
    for key, obj in sorted(_object(raw, path).items()):
        where = f'{path}["{key}"]'
        obj = _object(obj, where)
        name = _string(_object(obj.get("metadata"), f"{where}.metadata").get("name"), f"{where}.metadata.name") or key
        spec = _object(obj.get("spec"), f"{where}.spec")
        _string_map(spec.get("nodeLabels"), f"{where}.spec.nodeLabels")
        tolerations = spec.get("tolerations")
        if tolerations is not None and not isinstance(tolerations, list):
            raise InvalidRequest(400, f"{where}.spec.tolerations: expected an array, got {_json_type(tolerations)}")
        for index, toleration in enumerate(tolerations or ()):
            _entry(toleration, f"{where}.spec.tolerations[{index}]")
        flavors[name] = spec
    return flavors


def _parse_priority_classes(raw: object) -> dict[str, int]:
    """Related WorkloadPriorityClasses (cluster-scoped, keyed by name): name -> ``value``."""
    path = f'related["{PRIORITY_CLASS_GROUP}"]'
    classes: dict[str, int] = {}
    for key, obj in sorted(_object(raw, path).items()):
        where = f'{path}["{key}"]'
        obj = _object(obj, where)
        name = _string(_object(obj.get("metadata"), f"{where}.metadata").get("name"), f"{where}.metadata.name") or key
        classes[name] = _integer(obj.get("value"), f"{where}.value", minimum=None)
    return classes


def _parse_spec(raw: object) -> Mapping[str, Any]:
    """Checks the types of the spec fields the decision reads; returns the spec (``{}`` when absent).

    The content of each replicated job is ``build_jobset``'s to judge (``InvalidSpec``).
    """
    spec = _object(raw, "parent.spec")
    replicated = spec.get("replicatedJobs")
    if replicated is not None and not isinstance(replicated, list):
        raise InvalidRequest(400, f"parent.spec.replicatedJobs: expected an array, got {_json_type(replicated)}")
    launcher = _string(spec.get("launcher"), "parent.spec.launcher")
    if launcher and (len(launcher) > _MAX_LABEL_VALUE or not _DNS1123_LABEL.fullmatch(launcher)):
        # It goes into the label selector of the launcher read (jobset.sigs.k8s.io/replicatedjob-name).
        raise InvalidRequest(400, f"parent.spec.launcher: {launcher[:80]!r} is not a replicated job name (a DNS-1123 "
                                  f"label of at most {_MAX_LABEL_VALUE} characters), so it cannot be put in a selector")
    _integer(spec.get("maxRestarts"), "parent.spec.maxRestarts", minimum=None)
    _boolean(spec.get("suspend"), "parent.spec.suspend")
    for key in ("activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        _integer(spec.get(key), f"parent.spec.{key}", minimum=None)
    drain = _object(spec.get("drain"), "parent.spec.drain")
    for key in ("stuckAfterSeconds", "forceDeleteStuckPodsAfterSeconds"):
        _integer(drain.get(key), f"parent.spec.drain.{key}", minimum=None)
    policy = _object(spec.get("failurePolicy"), "parent.spec.failurePolicy")
    rules = policy.get("rules")
    if rules is not None and not isinstance(rules, list):
        raise InvalidRequest(400, f"parent.spec.failurePolicy.rules: expected an array, got {_json_type(rules)}")
    for index, rule in enumerate(rules or ()):
        _entry(rule, f"parent.spec.failurePolicy.rules[{index}]")
        for key in ("onJobSetFailure", "onExitCodes"):
            _object(rule.get(key), f"parent.spec.failurePolicy.rules[{index}].{key}")
    return spec


def _parse_status(raw: object) -> PriorStatus:
    """Reads ``parent.status`` into a ``PriorStatus``, checking each field's type."""
    status = _object(raw, "parent.status")
    conditions = status.get("conditions")
    if conditions is None:
        conditions = []
    if not isinstance(conditions, list):
        raise InvalidRequest(400, f"parent.status.conditions: expected an array, got {_json_type(conditions)}")
    for index, condition in enumerate(conditions):
        path = f"parent.status.conditions[{index}]"
        _entry(condition, path)
        _string(condition.get("type"), f"{path}.type", required=True)
        for key in ("status", "reason", "message", "lastTransitionTime"):
            _string(condition.get(key), f"{path}.{key}")
    return PriorStatus(
        phase=_string(status.get("phase"), "parent.status.phase"),
        attempt=_integer(status.get("attempt"), "parent.status.attempt"),
        restarts=_integer(status.get("restarts"), "parent.status.restarts"),
        workload=_string(status.get("workload"), "parent.status.workload"),
        active_pods=_integer(status.get("activePods"), "parent.status.activePods"),
        conditions=tuple(dict(c) for c in conditions),
        message=_string(status.get("message"), "parent.status.message"),
        restarts_by_cause=_counts(status.get("restartsByCause"), "parent.status.restartsByCause"),
        last_failure=dict(_object(status.get("lastFailure"), "parent.status.lastFailure")),
        start_time=_time(status.get("startTime"), "parent.status.startTime"),
        completion_time=_time(status.get("completionTime"), "parent.status.completionTime"),
        replicated_jobs_digest=_string(status.get("replicatedJobsDigest"), "parent.status.replicatedJobsDigest"),
    )


def _counts(value: object, path: str) -> dict[str, int]:
    """A ``map[string]int`` of non-negative counts (``restartsByCause``), sorted by key."""
    raw = _object(value, path)
    return {str(key): _integer(raw[key], f'{path}["{str(key)[:80]}"]') for key in sorted(raw)}


def _time(value: object, path: str) -> str:
    """An RFC 3339 time string (``2026-01-01T00:00:00Z``), ``""`` when absent; 400 otherwise."""
    text = _string(value, path)
    if text:
        try:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidRequest(400, f"{path}: {text[:40]!r} is not an RFC 3339 time") from None
    return text


def _parse_children(raw: object, namespace: str) -> tuple[Mapping[str, Any], ...]:
    """Returns the observed JobSets under ``children[JOBSET_GROUP]``, keyed ``name`` (v1) or
    ``namespace/name`` (v2), as a tuple sorted by (namespace, name), one per object.
    """
    children = _object(raw, "children")
    group = _object(children.get(JOBSET_GROUP), f'children["{JOBSET_GROUP}"]')
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for key in sorted(group):
        path = f'children["{JOBSET_GROUP}"]["{key}"]'
        child = group[key]
        if not isinstance(child, Mapping):
            raise InvalidRequest(400, f"{path}: expected an object, got {_json_type(child)}")
        metadata = _object(child.get("metadata"), f"{path}.metadata")
        key_namespace, _, key_name = key.rpartition("/")
        name = _string(metadata.get("name"), f"{path}.metadata.name") or key_name
        child_namespace = _string(metadata.get("namespace"), f"{path}.metadata.namespace") or key_namespace
        _string(child.get("apiVersion"), f"{path}.apiVersion")
        _string(child.get("kind"), f"{path}.kind")
        for field_name in ("labels", "annotations"):
            _string_map(metadata.get(field_name), f"{path}.metadata.{field_name}")
        _object(child.get("spec"), f"{path}.spec")
        _string(metadata.get("deletionTimestamp"), f"{path}.metadata.deletionTimestamp")
        status = _object(child.get("status"), f"{path}.status")
        _string(status.get("terminalState"), f"{path}.status.terminalState")
        conditions = status.get("conditions")
        if conditions is not None and not isinstance(conditions, list):
            raise InvalidRequest(400, f"{path}.status.conditions: expected an array, got {_json_type(conditions)}")
        for index, condition in enumerate(conditions or ()):
            cpath = f"{path}.status.conditions[{index}]"
            _entry(condition, cpath)
            _string(condition.get("type"), f"{cpath}.type")
            _string(condition.get("status"), f"{cpath}.status")
        if not name:
            raise InvalidRequest(400, f"{path}.metadata.name: missing")
        normalized = dict(child)
        normalized["metadata"] = {**metadata, "name": name, "namespace": child_namespace or namespace}
        found.setdefault((child_namespace or namespace, name), normalized)
    return tuple(found[key] for key in sorted(found))


def _string_map(value: object, path: str) -> None:
    """Checks a ``map[string]string`` field (labels, annotations): absent, or an object of strings."""
    for key, entry in _object(value, path).items():
        if not isinstance(entry, str):
            raise InvalidRequest(400, f'{path}["{str(key)[:80]}"]: expected a string, got {_json_type(entry)}')


def _check_job_name(name: str) -> None:
    """A Job name goes into the ``nvcre.nvidia.com/job`` label: DNS-1123 subdomain and label value."""
    if len(name) > _MAX_LABEL_VALUE or not _DNS1123_SUBDOMAIN.fullmatch(name):
        raise InvalidRequest(400, f"parent.metadata.name: {name!r} is not a valid Job name: it must be a "
                                  f"DNS-1123 subdomain of at most {_MAX_LABEL_VALUE} characters, since it is "
                                  "used as a label value")


def _uid(value: object) -> str:
    """The parent's ``metadata.uid``: required, and a UID as the API server gives one (a UUID,
    8-4-4-4-12 hex digits). The hooks' writes (Event ``regarding``, the TTL delete's precondition)
    are bound to it, so a request that cannot name its parent by UID decides nothing: 400."""
    uid = _string(value, "parent.metadata.uid", required=True)
    if not _UID.fullmatch(uid):
        raise InvalidRequest(400, f"parent.metadata.uid: {uid[:40]!r} is not a UID (a UUID: 8-4-4-4-12 hex digits)")
    return uid


def _check_namespace(namespace: str) -> None:
    """A namespace must be a DNS-1123 label."""
    if len(namespace) > _MAX_LABEL_VALUE or not _DNS1123_LABEL.fullmatch(namespace):
        raise InvalidRequest(400, f"parent.metadata.namespace: {namespace!r} is not a valid namespace "
                                  f"(a DNS-1123 label of at most {_MAX_LABEL_VALUE} characters)")


def _shown(value: object) -> str:
    """A field's value for an error message, in JSON terms: ``"v1"``, ``null`` when missing."""
    return orjson.dumps(value).decode() if isinstance(value, str | int | float | bool | None) else _json_type(value)


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _object(value: object, path: str) -> Mapping[str, Any]:
    """Returns ``value`` when it is an object, ``{}`` when it is absent (null), else raises 400."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidRequest(400, f"{path}: expected an object, got {_json_type(value)}")
    return value


def _entry(value: object, path: str) -> Mapping[str, Any]:
    """Returns ``value`` when it is an object; anything else, null included, raises 400 (an array
    entry that is null is not an absent field)."""
    if not isinstance(value, Mapping):
        raise InvalidRequest(400, f"{path}: expected an object, got {_json_type(value)}")
    return value


def _string(value: object, path: str, *, required: bool = False) -> str:
    """Returns ``value`` when it is a string, ``""`` when absent (unless ``required``), else raises 400."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        got = "nothing" if value is None else _json_type(value)
        raise InvalidRequest(400, f"{path}: expected a string, got {got}")
    if required and not value:
        raise InvalidRequest(400, f"{path}: must not be empty")
    return value


def _integer(value: object, path: str, *, minimum: int | None = 0) -> int:
    """Returns ``value`` when it is an integer (a boolean is not) at least ``minimum``, ``0`` when
    absent, else raises 400. ``minimum=None`` accepts any integer.
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(400, f"{path}: expected an integer, got {_json_type(value)}")
    if minimum is not None and value < minimum:
        raise InvalidRequest(400, f"{path}: expected an integer >= {minimum}, got {value}")
    return value


def _boolean(value: object, path: str) -> bool:
    """Returns ``value`` when it is a boolean, ``False`` when absent, else raises 400."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(400, f"{path}: expected a boolean, got {_json_type(value)}")
    return value
