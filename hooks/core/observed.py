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
older CRD must still suspend, finalize and say what is wrong. ``tests/server/test_fuzz_types.py`` holds the
hooks to this over every field of every recorded request.

The fields are declared once (``hooks.core.request``, ``hooks.core.status``; ADR-105) and read by
``hooks.core.declared.decode``; this module puts what they say into the ``Observed`` the rows read: the
prior ``Status`` and the ``Spec`` as declared, the observed children raw (normalized: one per object,
named and sorted), as the rows and ``build_jobset`` read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from hooks.core.declared import MAPPING, InvalidRequest, decode, json_type
from hooks.core.request import (
    Flavor,
    JobSetChild,
    Parent,
    PodGroupChild,
    PriorityClass,
    Request,
    Spec,
    WorkloadChild,
    read_spec,
)
from hooks.core.status import Status

API_VERSION = "nvcre.nvidia.com/v1alpha1"
KIND = "Job"
JOBSET_GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
WORKLOAD_GROUP = "Workload.kueue.x-k8s.io/v1beta2"
PRIORITY_CLASS_GROUP = "WorkloadPriorityClass.kueue.x-k8s.io/v1beta2"
FLAVOR_GROUP = "ResourceFlavor.kueue.x-k8s.io/v1beta2"
PODGROUP_GROUP = "PodGroup.scheduling.k8s.io/v1beta1"
CONFIGMAP_GROUP = "ConfigMap.v1"
HOOKS = ("sync", "finalize")

PriorStatus = Status
"""The Job's status as Metacontroller last wrote it: the one declared ``Status``."""

__all__ = ["API_VERSION", "FLAVOR_GROUP", "HOOKS", "JOBSET_GROUP", "KIND", "PODGROUP_GROUP", "PRIORITY_CLASS_GROUP",
           "WORKLOAD_GROUP", "GangCluster", "InvalidRequest", "Observed", "PriorStatus", "parse_request"]


@dataclass(frozen=True)
class GangCluster:
    """What the hook server knows of gang scheduling in this cluster, passed to the core as data
    (issue 22; ``hooks.core.gang``): ``default_policy``, the ``spec.gang.policy`` of a Job that sets
    none (``NVCRE_GANG_POLICY``: ``Gang`` or ``None``), and ``api_note``, what discovery said of
    ``scheduling.k8s.io/v1beta1`` PodGroups when the request holds no PodGroup children (``""``:
    not asked; the words go into the ``GangScheduled`` condition)."""

    default_policy: str = "None"
    api_note: str = ""


NO_GANG_SETTINGS = GangCluster()
"""The ``GangCluster`` of a server with the default settings: one value (it is frozen) that every
``Observed`` without other words holds, instead of one built per request (issue 32 item 4)."""


class Observed(msgspec.Struct, frozen=True):
    """Everything ``decide`` may know about one Job, from one hook request (a frozen msgspec Struct:
    built on every call, in about a tenth of a frozen dataclass' time; ``msgspec.structs.replace``
    makes a changed copy).

    ``spec`` is the Job's spec, typed (``hooks.core.request.Spec``: read its attributes; the JobSet
    templates in it stay raw); ``jobsets`` the observed JobSet children (raw dicts), sorted by
    namespace and name, whichever object-key version the request used.
    """

    namespace: str
    name: str
    finalizing: bool
    spec: Spec
    status: Status
    jobsets: tuple[Mapping[str, Any], ...] = msgspec.field(default_factory=tuple)
    uid: str = ""
    creation_timestamp: str = ""
    """``parent.metadata.creationTimestamp`` (set by the API server): evidence for the status' times."""
    deletion_timestamp: str = ""
    """``parent.metadata.deletionTimestamp`` as found (set by the API server when the Job's deletion was
    asked for: a custom resource has no grace period), ``""`` when it is not being deleted."""
    version_times: tuple[str, ...] = ()
    """The times the API server stamped on this version of the parent: its ``managedFields`` times
    and, with them, its ``deletionTimestamp``, as found (unparsed; none in a request built by hand
    or recorded without ``managedFields``)."""
    world_times: tuple[str, ...] = ()
    """``version_times`` less the times of status writes (``managedFields`` entries of subresource
    ``status``): when the Job's spec or metadata last changed, and its deletionTimestamp; the same in
    every version that differs only by a status Metacontroller wrote for the hooks."""
    resource_version: str = ""
    """``parent.metadata.resourceVersion`` as found: which version of the Job the request carries
    (``hooks.server.freshness`` compares it with the live one)."""
    status_written: str = ""
    """The newest ``managedFields`` time of a ``status`` subresource write (unparsed): when the status
    this request carries was last written; ``""`` when none is recorded."""
    annotations: Mapping[str, str] = msgspec.field(default_factory=dict)
    """The Job's annotations (``hooks.core.checkpoint`` reads the workload's acknowledgement there)."""
    suspend_set_at: str = ""
    """The ``time`` of the newest ``managedFields`` entry (not of the status) that owns
    ``spec.suspend``, as found: when the API server last wrote the suspend (``""``: none recorded)."""
    labels: Mapping[str, str] = msgspec.field(default_factory=dict)
    """The Job's labels (``kueue.x-k8s.io/queue-name`` makes it queue-managed)."""
    workloads: tuple[Mapping[str, Any], ...] = msgspec.field(default_factory=tuple)
    """The observed Workload children (``WORKLOAD_GROUP``), sorted by name."""
    workloads_enabled: bool = False
    """Whether the CompositeController lists Workload children (the group is in the request)."""
    priority_classes: Mapping[str, int] = msgspec.field(default_factory=dict)
    """Related WorkloadPriorityClasses (``PRIORITY_CLASS_GROUP``): name -> value."""
    flavors: Mapping[str, Mapping[str, Any]] = msgspec.field(default_factory=dict)
    """Related ResourceFlavors (``FLAVOR_GROUP``): name -> ``spec`` (``nodeLabels``, ``tolerations``)."""
    podgroups: tuple[Mapping[str, Any], ...] = msgspec.field(default_factory=tuple)
    """The observed PodGroup children (``PODGROUP_GROUP``, issue 22), sorted by name."""
    podgroups_enabled: bool = False
    """Whether the CompositeController lists PodGroup children (the group is in the request): only
    then may an answer hold one (Metacontroller has found the type in discovery)."""
    configmaps_enabled: bool = False
    """Whether it lists ConfigMap children: only then is an attempt given a checkpoint control file
    (``hooks.core.checkpoint``)."""
    gang: GangCluster = NO_GANG_SETTINGS
    """The cluster's gang default and what discovery said (set by the hook server; ``GangCluster``)."""


def _managed_times(metadata: object) -> tuple[tuple[str, ...], tuple[str, ...], str, str]:
    """What the parent's ``managedFields`` say, read in one pass over its entries (issue 32 item 4):
    ``Observed.version_times`` and ``Observed.world_times``, every non-empty string
    ``managedFields[].time`` (for the world's, only those of entries not of subresource ``status``),
    each with the deletionTimestamp when there is any such time; ``Observed.status_written``, the
    newest of them of subresource ``status``; and ``Observed.suspend_set_at``, the newest of them not
    of subresource ``status`` whose ``fieldsV1`` owns ``f:spec`` / ``f:suspend`` (RFC 3339 seconds in
    UTC sort as text; ``""`` when none). Anything else there is ignored (server-set metadata, never a
    reason to refuse the request)."""
    if not isinstance(metadata, MAPPING):
        return (), (), "", ""
    fields = metadata.get("managedFields")
    if not isinstance(fields, list) or not fields:
        return (), (), "", ""
    times: list[str] = []
    world: list[str] = []
    status_written = suspend_set_at = ""
    for entry in fields:
        if not isinstance(entry, MAPPING):
            continue
        time = entry.get("time")
        if not isinstance(time, str) or not time:
            continue
        times.append(time)
        if entry.get("subresource") == "status":
            status_written = max(status_written, time)
            continue
        world.append(time)
        owned = entry.get("fieldsV1")
        spec = owned.get("f:spec") if isinstance(owned, MAPPING) else None
        if isinstance(spec, MAPPING) and "f:suspend" in spec:
            suspend_set_at = max(suspend_set_at, time)
    if not times:
        return (), (), "", ""
    deletion = metadata.get("deletionTimestamp")
    tail = (deletion,) if isinstance(deletion, str) and deletion else ()
    return (*times, *tail), (*world, *tail), status_written, suspend_set_at


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
    if not isinstance(payload, MAPPING):
        raise InvalidRequest(400, f"request: expected an object, got {json_type(payload)}")
    raw_parent = payload.get("parent")
    if raw_parent is None:
        raise InvalidRequest(400, "request: parent is missing")
    if not isinstance(raw_parent, MAPPING):
        raise InvalidRequest(400, f"parent: expected an object, got {json_type(raw_parent)}")
    if raw_parent.get("apiVersion") != API_VERSION or raw_parent.get("kind") != KIND:
        raise InvalidRequest(422, f"parent: expected apiVersion {API_VERSION} kind {KIND}, got apiVersion "
                                  f"{_shown(raw_parent.get('apiVersion'))} kind {_shown(raw_parent.get('kind'))}")
    request = decode(payload, Request)
    parent: Parent = request.parent  # type: ignore[assignment]  # checked above: not null
    metadata = parent.metadata
    if metadata is None:
        raise InvalidRequest(400, "parent.metadata.name: expected a string, got nothing")
    namespace = metadata.namespace or ""
    children = request.children or {}
    related = request.related or {}
    raw_metadata = raw_parent.get("metadata")
    version_times, world_times, status_written, suspend_set_at = _managed_times(raw_metadata)
    resource_version = raw_metadata.get("resourceVersion") if isinstance(raw_metadata, MAPPING) else None
    return Observed(namespace=namespace, name=metadata.name or "", finalizing=bool(request.finalizing),
                    spec=read_spec(parent.spec), status=parent.status or Status(),
                    jobsets=_jobsets(_group(children, JOBSET_GROUP, "children"), namespace),
                    uid=metadata.uid or "",
                    creation_timestamp=metadata.creation_timestamp,
                    deletion_timestamp=metadata.deletion_timestamp or "",
                    version_times=version_times, world_times=world_times,
                    resource_version=resource_version if isinstance(resource_version, str) else "",
                    status_written=status_written, labels=dict(metadata.labels),
                    annotations=dict(metadata.annotations), suspend_set_at=suspend_set_at,
                    workloads=_workloads(_group(children, WORKLOAD_GROUP, "children"), namespace),
                    workloads_enabled=WORKLOAD_GROUP in children,
                    podgroups=_podgroups(_group(children, PODGROUP_GROUP, "children"), namespace),
                    podgroups_enabled=PODGROUP_GROUP in children, configmaps_enabled=CONFIGMAP_GROUP in children,
                    priority_classes=_priority_classes(_group(related, PRIORITY_CLASS_GROUP, "related")),
                    flavors=_flavors(_group(related, FLAVOR_GROUP, "related")))


def _group(objects: Mapping[str, Any], group: str, where: str) -> Mapping[str, Any]:
    """The objects of ``group`` in ``children`` or ``related`` (``where``), keyed; ``{}`` when absent."""
    found = objects.get(group)
    if found is None:
        return {}
    if not isinstance(found, MAPPING):
        raise InvalidRequest(400, f'{where}["{group}"]: expected an object, got {json_type(found)}')
    return found


def _jobsets(group: Mapping[str, Any], namespace: str) -> tuple[Mapping[str, Any], ...]:
    """The observed JobSets under ``children[JOBSET_GROUP]``, keyed ``name`` (v1) or ``namespace/name``
    (v2), each checked as a ``JobSetChild`` and kept raw, named (from its key when its metadata does
    not say) and sorted by (namespace, name), one per object."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for key in sorted(group):
        child = group[key]
        path = f'children["{JOBSET_GROUP}"]["{key}"]'
        declared = decode(child, JobSetChild, path)
        key_namespace, _, key_name = key.rpartition("/")
        metadata = declared.metadata
        name = (metadata.name if metadata else "") or key_name
        if not name:
            raise InvalidRequest(400, f"{path}.metadata.name: missing")
        child_namespace = (metadata.namespace if metadata else "") or key_namespace or namespace
        normalized = dict(child)
        normalized["metadata"] = {**(child.get("metadata") or {}), "name": name, "namespace": child_namespace}
        found.setdefault((child_namespace, name), normalized)
    return tuple(found[key] for key in sorted(found))


def _workloads(group: Mapping[str, Any], namespace: str) -> tuple[Mapping[str, Any], ...]:
    """The observed Workloads under ``children[WORKLOAD_GROUP]``, each checked as a ``WorkloadChild``
    (``_named_children``). The placement the admission carries is read by ``hooks.core.queueing``,
    where a shape Kueue does not write holds the JobSet's creation."""
    return _named_children(group, WORKLOAD_GROUP, WorkloadChild, namespace)


def _podgroups(group: Mapping[str, Any], namespace: str) -> tuple[Mapping[str, Any], ...]:
    """The observed PodGroups under ``children[PODGROUP_GROUP]``, each checked as a ``PodGroupChild``
    (``_named_children``)."""
    return _named_children(group, PODGROUP_GROUP, PodGroupChild, namespace)


def _named_children(group: Mapping[str, Any], group_name: str, declared_as: type[Any],
                    namespace: str) -> tuple[Mapping[str, Any], ...]:
    """The children of ``group`` (either key version), each checked as ``declared_as`` (a 400 naming
    the field otherwise) and kept raw with its name (from the key when the object has none) and its
    namespace (``namespace`` by default), sorted by name; the first of two of one name is kept."""
    if not group:  # the usual case (no Workload, no PodGroup): nothing to sort or build
        return ()
    found: dict[str, Mapping[str, Any]] = {}
    for key in sorted(group):
        child = group[key]
        where = f'children["{group_name}"]["{key}"]'
        metadata = decode(child, declared_as, where).metadata
        name = (metadata.name if metadata else "") or key.rpartition("/")[2]
        if not name:
            raise InvalidRequest(400, f"{where}.metadata.name: missing")
        raw_metadata = child.get("metadata") or {}
        found.setdefault(name, {**child, "metadata": {**raw_metadata, "name": name,
                                                      "namespace": raw_metadata.get("namespace") or namespace}})
    return tuple(found[name] for name in sorted(found))


def _flavors(group: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Related ResourceFlavors (cluster-scoped, keyed by name): name -> ``spec`` (raw)."""
    if not group:
        return {}
    flavors: dict[str, Mapping[str, Any]] = {}
    for key in sorted(group):
        declared = decode(group[key], Flavor, f'related["{FLAVOR_GROUP}"]["{key}"]')
        name = (declared.metadata.name if declared.metadata else "") or key
        flavors[name] = group[key].get("spec") or {}
    return flavors


def _priority_classes(group: Mapping[str, Any]) -> dict[str, int]:
    """Related WorkloadPriorityClasses (cluster-scoped, keyed by name): name -> ``value``."""
    if not group:
        return {}
    classes: dict[str, int] = {}
    for key in sorted(group):
        declared = decode(group[key], PriorityClass, f'related["{PRIORITY_CLASS_GROUP}"]["{key}"]')
        classes[(declared.metadata.name if declared.metadata else "") or key] = declared.value or 0
    return classes


def _shown(value: object) -> str:
    """A field's value for an error message, in JSON terms: ``"v1"``, ``null`` when missing."""
    return orjson.dumps(value).decode() if isinstance(value, str | int | float | bool | None) else json_type(value)
