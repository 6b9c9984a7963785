"""Queue-managed Jobs behind Kueue (docs/adr/0103): the Workload child and what Kueue says of it.

Pure: reads an ``Observed`` (the Job's labels, its observed Workloads, the related ResourceFlavors and
WorkloadPriorityClasses) and returns plain values and dicts.

A Job with the label ``QUEUE_LABEL`` is queue-managed. It owns one Workload, named like the Job,
which Metacontroller creates and deletes as a child (the CompositeController lists
``kueue.x-k8s.io/v1beta2 workloads`` with ``OnDelete``); Kueue admits, evicts and writes its status.
The quota is held as long as the Workload exists, so ``hooks.core.decide`` leaves it out of ``children``
only after the drain barrier has passed. ``admission`` says where Kueue stands; ``build_workload``
builds the Workload from the JobSet the Job would run; ``admitted_jobset`` puts into that JobSet's
pod templates what the admission says (the ResourceFlavors' ``nodeLabels`` and ``tolerations``, the
admission checks' ``podSetUpdates``), as Kueue does for the kinds it reconciles itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hooks.core.jobset import JOBSET_CONTROLLER, InvalidSpec, count_of, json_copy, kept_child
from hooks.core.observed import Observed

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_PREFIX = "kueue.x-k8s.io/"
NOT_PASSED_ON = frozenset({"kueue.x-k8s.io/managed", "kueue.x-k8s.io/prebuilt-workload-name"})
"""Kueue's own labels (its pod finalizer marker, prebuilt adoption): never copied to the Workload."""
API_VERSION = "kueue.x-k8s.io/v1beta2"
KIND = "Workload"
PRIORITY_GROUP = "kueue.x-k8s.io"
PRIORITY_KIND = "WorkloadPriorityClass"
MAX_POD_SETS = 8
"""Kueue's limit on ``spec.podSets`` (one per replicated job)."""

NONE, PENDING, ADMITTED, EVICTED = "none", "pending", "admitted", "evicted"


@dataclass(frozen=True)
class Admission:
    """Where Kueue stands on a Job's Workload.

    ``state``: ``none`` (no Workload observed, or it is being deleted), ``pending`` (waiting for quota
    or admission checks), ``admitted`` (``Admitted=True``, not evicted) or ``evicted``
    (``Evicted=True``). ``reason`` and ``message`` are Kueue's, from the condition that decides the
    state; ``cluster_queue`` the admitting ClusterQueue; ``elsewhere`` the cluster MultiKueue
    dispatched the Workload to (``status.clusterName``), ``""`` when none.
    """

    state: str
    reason: str = ""
    message: str = ""
    cluster_queue: str = ""
    elsewhere: str = ""


def queue_name(observed: Observed) -> str:
    """The LocalQueue of a queue-managed Job: ``QUEUE_LABEL``, else, while its Workload exists, the
    Workload's ``spec.queueName`` (a label removed from a running Job never drops the Workload, and
    with it the quota, before the barrier). ``""`` when the Job is not queue-managed."""
    label = observed.labels.get(QUEUE_LABEL, "")
    if label:
        return label
    workload = current_workload(observed)
    return str(((workload or {}).get("spec") or {}).get("queueName") or "") if workload is not None else ""


def workload_name(job: str) -> str:
    """The name of Job ``job``'s Workload: the Job's own name (one Workload per Job)."""
    return job


def current_workload(observed: Observed) -> Mapping[str, Any] | None:
    """The observed Workload named ``workload_name(job)``, or ``None``."""
    wanted = workload_name(observed.name)
    return next((w for w in observed.workloads if w["metadata"]["name"] == wanted), None)


def admission(workload: Mapping[str, Any] | None) -> Admission:
    """Reads a Workload's conditions (``Evicted``, ``Admitted``, ``QuotaReserved``), admission and
    ``clusterName`` into an ``Admission``. A missing Workload, or one being deleted, is ``none``."""
    if workload is None or workload["metadata"].get("deletionTimestamp"):
        return Admission(NONE, "WorkloadMissing", "the Workload is not there")
    status = workload.get("status") or {}
    conditions = {str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)}
    elsewhere = str(status.get("clusterName") or "")
    cluster_queue = str((status.get("admission") or {}).get("clusterQueue") or "")
    evicted = conditions.get("Evicted")
    if evicted is not None and evicted.get("status") == "True":
        return Admission(EVICTED, str(evicted.get("reason") or "Evicted"), str(evicted.get("message") or ""),
                         cluster_queue, elsewhere)
    admitted = conditions.get("Admitted")
    if admitted is not None and admitted.get("status") == "True":
        return Admission(ADMITTED, str(admitted.get("reason") or "Admitted"), str(admitted.get("message") or ""),
                         cluster_queue, elsewhere)
    reserved = conditions.get("QuotaReserved")
    if reserved is not None:
        reason = str(reserved.get("reason") or "Pending")
        if reserved.get("status") == "True":
            reason = "WaitingForAdmissionChecks"
        return Admission(PENDING, reason, str(reserved.get("message") or ""), cluster_queue, elsewhere)
    return Admission(PENDING, "Pending", "waiting for Kueue to consider the Workload", cluster_queue, elsewhere)


def check_jobsets(observed: Observed) -> None:
    """Raises ``InvalidSpec`` (``ManagedElsewhere``) when an observed JobSet has a ``spec.managedBy``
    other than JobSet's controller (set by a webhook, MultiKueue's or another): its pods would run
    where the drain barrier reads nothing."""
    for jobset in observed.jobsets:
        managed_by = (jobset.get("spec") or {}).get("managedBy")
        if managed_by is not None and managed_by != JOBSET_CONTROLLER:
            raise InvalidSpec(f"JobSet {jobset['metadata']['name']} has spec.managedBy {str(managed_by)[:70]!r}: "
                              f"only {JOBSET_CONTROLLER} may manage the workload (another controller would run its "
                              "pods where the drain barrier cannot see them)", "ManagedElsewhere")


def check_queueing(observed: Observed, state: Admission) -> None:
    """Raises ``InvalidSpec`` when a queue-managed Job cannot be queued: the CompositeController has
    no Workload child (``QueueingUnavailable``), or Kueue dispatched the Workload to another cluster
    (``ManagedElsewhere``)."""
    if not observed.workloads_enabled:
        raise InvalidSpec(f"the Job names LocalQueue {queue_name(observed)!r} ({QUEUE_LABEL}), but the "
                          "CompositeController has no Workload child: apply manifests-kueue/ to run Jobs behind "
                          "Kueue", "QueueingUnavailable")
    if state.elsewhere:
        raise InvalidSpec(f"Kueue dispatched Workload {workload_name(observed.name)} to cluster {state.elsewhere!r}: "
                          "its pods would run where the drain barrier cannot see them", "ManagedElsewhere")


class PriorityUnknown(Exception):
    """The Job names a WorkloadPriorityClass that is not among the related objects: it cannot be
    queued yet (its priority value is not known). ``message`` says which."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def build_workload(observed: Observed, jobset: Mapping[str, Any]) -> dict[str, Any]:
    """The Workload of a queue-managed Job, from the JobSet it would run (``hooks.core.jobset``'s output).

    One pod set per replicated job: its name, ``count`` = replicas x parallelism (both default 1),
    the labelled pod template. ``spec.queueName`` from ``QUEUE_LABEL``; with ``PRIORITY_LABEL``,
    ``priorityClassRef`` and ``priority`` from the related WorkloadPriorityClass. The Job's other
    ``kueue.x-k8s.io/`` labels are copied, except ``NOT_PASSED_ON``. Raises ``InvalidSpec``
    (``TooManyPodSets``) past Kueue's limit and ``PriorityUnknown`` when the class is not related.
    """
    replicated = jobset["spec"]["replicatedJobs"]
    if len(replicated) > MAX_POD_SETS:
        raise InvalidSpec(f"spec.replicatedJobs has {len(replicated)} entries; a Kueue Workload holds at most "
                          f"{MAX_POD_SETS} pod sets", "TooManyPodSets")
    pod_sets = []
    for entry in replicated:
        job_spec = entry["template"].get("spec") or {}
        count = count_of(entry, "replicas") * count_of(job_spec, "parallelism")
        pod_sets.append({"name": entry["name"], "count": count, "template": json_copy(job_spec.get("template") or {})})
    workload_spec: dict[str, Any] = {"queueName": queue_name(observed), "podSets": pod_sets}
    priority_class = observed.labels.get(PRIORITY_LABEL, "")
    if priority_class:
        value = observed.priority_classes.get(priority_class)
        if value is None:
            raise PriorityUnknown(f"WorkloadPriorityClass {priority_class!r} ({PRIORITY_LABEL}) is not known "
                                  "(not created yet, or the customize hook is not configured)")
        workload_spec["priorityClassRef"] = {"group": PRIORITY_GROUP, "kind": PRIORITY_KIND, "name": priority_class}
        workload_spec["priority"] = value
    labels = {key: value for key, value in sorted(observed.labels.items())
              if key.startswith(KUEUE_PREFIX) and key not in NOT_PASSED_ON}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": workload_name(observed.name), "namespace": observed.namespace, "labels": labels},
        "spec": workload_spec,
    }


class FlavorUnknown(Exception):
    """The admission names a ResourceFlavor that is not among the related objects (not synced yet,
    or the customize hook is not configured): the JobSet cannot be given its node labels yet."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AdmissionUnreadable(FlavorUnknown):
    """The Workload's ``status.admission.podSetAssignments`` or ``status.admissionChecks`` do not
    have the shape Kueue writes (a list of objects, ``flavors`` a map of flavor names, ...). Kueue
    owns that status: the JobSet is not created from it, and waits as for an unknown flavor (the
    rows treat both alike: admitted, nothing created yet, asked again), rather than guessing a
    placement or failing the whole call (a 4xx or 5xx would also stop suspend and finalize)."""


def pod_set_infos(workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the admission of ``workload`` asks of each pod set, by pod set name: ``nodeSelector``
    (the ``nodeLabels`` of every flavor assigned to it, in name order) and ``tolerations`` (the
    flavors', without repeats), then ``labels``, ``annotations``, ``nodeSelector`` and ``tolerations``
    of the admission checks' ``podSetUpdates``. Raises ``FlavorUnknown`` for a flavor not in
    ``flavors``, ``AdmissionUnreadable`` for an admission of the wrong shape (naming the field),
    ``InvalidSpec`` (``PodSetUpdateConflict``) when an update contradicts a value."""
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    infos: dict[str, dict[str, Any]] = {}
    where = "status.admission.podSetAssignments"
    for index, assignment in enumerate(_entries(admission.get("podSetAssignments"), where)):
        name = _text(assignment.get("name"), f"{where}[{index}].name")
        info: dict[str, Any] = {"nodeSelector": {}, "tolerations": [], "labels": {}, "annotations": {}}
        assigned = _strings_map(assignment.get("flavors"), f"{where}[{index}].flavors")
        for flavor in sorted(set(assigned.values())):
            flavor_spec = flavors.get(flavor)
            if flavor_spec is None:
                raise FlavorUnknown(f"ResourceFlavor {flavor[:80]!r} (assigned to pod set {name[:80]}) is not "
                                    "known yet")
            info["nodeSelector"].update(flavor_spec.get("nodeLabels") or {})
            _add_tolerations(info["tolerations"], flavor_spec.get("tolerations") or ())
        infos[name] = info
    for index, check in enumerate(_entries(status.get("admissionChecks"), "status.admissionChecks")):
        at = f"status.admissionChecks[{index}]"
        for number, update in enumerate(_entries(check.get("podSetUpdates"), f"{at}.podSetUpdates")):
            here = f"{at}.podSetUpdates[{number}]"
            info = infos.setdefault(_text(update.get("name"), f"{here}.name"),
                                    {"nodeSelector": {}, "tolerations": [], "labels": {}, "annotations": {}})
            for key in ("labels", "annotations", "nodeSelector"):
                _merge(info[key], _strings_map(update.get(key), f"{here}.{key}"),
                       f"admission check {str(check.get('name'))[:80]}: {key}")
            _add_tolerations(info["tolerations"], _entries(update.get("tolerations"), f"{here}.tolerations"))
    return infos


def _entries(value: Any, path: str) -> list[Mapping[str, Any]]:
    """A list of objects of the Workload's status (``[]`` when unset); ``AdmissionUnreadable`` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise AdmissionUnreadable(f"the Workload's {path} is not a list of objects, as Kueue writes it")
    return value


def _strings_map(value: Any, path: str) -> Mapping[str, str]:
    """A map of strings of the Workload's status (``{}`` when unset); ``AdmissionUnreadable`` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(item, str) for item in value.values()):
        raise AdmissionUnreadable(f"the Workload's {path} is not a map of strings, as Kueue writes it")
    return value


def _text(value: Any, path: str) -> str:
    """A string of the Workload's status (``""`` when unset); ``AdmissionUnreadable`` otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AdmissionUnreadable(f"the Workload's {path} is not a string, as Kueue writes it")
    return value


def admitted_jobset(jobset: Mapping[str, Any], workload: Mapping[str, Any],
                    flavors: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of ``jobset`` whose replicated jobs' pod templates carry ``pod_set_infos`` of their
    pod set (labels, annotations and node selector merged, tolerations added). Raises
    ``FlavorUnknown``, or ``InvalidSpec`` (``PodSetUpdateConflict``) when the admission contradicts
    the template (a node selector key with another value, ...)."""
    infos = pod_set_infos(workload, flavors)
    admitted = json_copy(jobset)
    for entry in admitted["spec"]["replicatedJobs"]:
        info = infos.get(entry["name"])
        if info is None:
            continue
        template = entry["template"]["spec"]["template"]
        metadata = template["metadata"] = template.get("metadata") or {}  # null counts as unset
        pod_spec = template["spec"] = template.get("spec") or {}
        where = f"replicated job {entry['name']}"
        for key, holder in (("labels", metadata), ("annotations", metadata), ("nodeSelector", pod_spec)):
            if info[key]:
                merged = dict(holder.get(key) or {})
                _merge(merged, info[key], f"{where}: {key}")
                holder[key] = merged
        if info["tolerations"]:
            tolerations = list(pod_spec.get("tolerations") or [])
            _add_tolerations(tolerations, info["tolerations"])
            pod_spec["tolerations"] = tolerations
    return admitted


def _merge(into: dict[str, Any], values: Mapping[str, Any], where: str) -> None:
    """Adds ``values`` to ``into``; a key already there with another value is a conflict."""
    for key, value in sorted(values.items()):
        if key in into and into[key] != value:
            raise InvalidSpec(f"{where}: Kueue's admission sets {key}={str(value)[:60]!r}, the template has "
                              f"{str(into[key])[:60]!r}", "PodSetUpdateConflict")
        into[key] = value


def _add_tolerations(into: list[Any], tolerations: Any) -> None:
    for toleration in tolerations:
        if toleration not in into:
            into.append(json_copy(toleration) if isinstance(toleration, Mapping) else toleration)


def as_observed(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The child that keeps an observed Workload: identity, labels and spec as they are (with
    ``OnDelete`` Metacontroller never updates it, so nothing fights Kueue's writes)."""
    return kept_child(workload, API_VERSION, KIND)


def customize_response() -> dict[str, Any]:
    """The customize hook's answer, the same for every Job: relate every WorkloadPriorityClass and
    every ResourceFlavor (cluster-scoped; the hook must be version v2), so that the sync request
    carries the priority values and the flavors' node labels and tolerations."""
    return {"relatedResources": [{"apiVersion": API_VERSION, "resource": resource, "labelSelector": {}}
                                 for resource in ("workloadpriorityclasses", "resourceflavors")]}
