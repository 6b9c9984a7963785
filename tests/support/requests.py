"""Request builders: CompositeController requests as Metacontroller sends them, and the children and
related objects they carry, for the decision tests and ``tests/payloads/_build.py``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tests.support.uids import uid

JOBSET_GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
JOB_CREATED = "2024-01-01T00:00:00Z"
"""Every test Job's ``creationTimestamp``: before any time the tests use."""


def job_spec(*, launcher: str = "", max_restarts: int | None = None, suspend: bool | None = None,
             workers: int = 2) -> dict[str, Any]:
    """A valid NVCRE Job spec: ``worker`` replicas (and a ``launcher`` replicated job when named)."""
    def entry(name: str, replicas: int) -> dict[str, Any]:
        container = {"name": name, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
        return {"name": name, "replicas": replicas, "template": {"spec": {"template": {
            "metadata": {"labels": {"team": "research"}},
            "spec": {"restartPolicy": "Never", "containers": [container]}}}}}

    spec: dict[str, Any] = {"replicatedJobs": [entry("worker", workers)]}
    if launcher:
        spec["replicatedJobs"].insert(0, entry(launcher, 1))
        spec["launcher"] = launcher
    if max_restarts is not None:
        spec["maxRestarts"] = max_restarts
    if suspend is not None:
        spec["suspend"] = suspend
    return spec


def jobset_child(job: str, attempt: int, *, namespace: str = "default", state: str = "",
                 deleting: str = "", created: str = "") -> dict[str, Any]:
    """An observed JobSet child ``<job>-<attempt>``; ``state`` "Failed"/"Completed" sets its condition;
    ``created`` its ``creationTimestamp`` (none by default)."""
    metadata: dict[str, Any] = {"name": f"{job}-{attempt}", "namespace": namespace,
                                "uid": uid(f"jobset/{job}-{attempt}"), "resourceVersion": "100",
                                "labels": {"nvcre.nvidia.com/job": job, "nvcre.nvidia.com/attempt": str(attempt),
                                           "controller-uid": uid(f"job/{job}")}}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    if created:
        metadata["creationTimestamp"] = created
    status: dict[str, Any] = {"restarts": 0}
    if state:
        status["conditions"] = [{"type": state, "status": "True", "reason": "Test", "message": state,
                                 "lastTransitionTime": "2025-12-31T23:00:00Z"}]
        status["terminalState"] = state
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
            "spec": {"replicatedJobs": []}, "status": status}


def mounting(jobset: dict[str, Any]) -> dict[str, Any]:
    """``jobset`` (an observed JobSet child) as the hooks create it under ``spec.checkpoint``: its
    one replicated job's pod template mounts the control ConfigMap (``hooks.core.checkpoint.mount``)."""
    name = jobset["metadata"]["name"]
    jobset["spec"] = {"replicatedJobs": [{"name": "worker", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "worker", "image": "trainer",
                        "volumeMounts": [{"name": "nvcre-control", "mountPath": "/etc/nvcre/control",
                                          "readOnly": True}]}],
        "volumes": [{"name": "nvcre-control", "configMap": {"name": f"{name}-control"}}]}}}}}]}
    return jobset


def checkpoint_request(attempt: int, reason: str, requested_at: str, grace: int = 180,
                       outcome: str = "Requested", **more: Any) -> dict[str, Any]:
    """A ``status.checkpoint`` as the hooks write it (``hooks.core.checkpoint.judge``)."""
    from datetime import timedelta

    from hooks.core.checkpoint import request_id
    from hooks.core.conditions import format_time
    from hooks.core.deadlines import parse_time
    at = parse_time(requested_at)
    assert at is not None
    return {"version": "v1", "id": request_id(attempt, reason, requested_at), "attempt": attempt, "reason": reason,
            "requestedAt": requested_at, "deadline": format_time(at + timedelta(seconds=grace)),
            "outcome": outcome, **more}


WORKLOAD_GROUP = "Workload.kueue.x-k8s.io/v1beta2"
PRIORITY_CLASS_GROUP = "WorkloadPriorityClass.kueue.x-k8s.io/v1beta2"
FLAVOR_GROUP = "ResourceFlavor.kueue.x-k8s.io/v1beta2"


def workload_child(job: str, *, namespace: str = "default", state: str = "", reason: str = "",
                   message: str = "", cluster_queue: str = "team-cq", deleting: str = "",
                   queue: str = "team") -> dict[str, Any]:
    """An observed Workload child of Job ``job`` as Kueue leaves it: ``state`` ``""`` (just created),
    ``pending`` (QuotaReserved False), ``admitted`` or ``evicted`` (admitted, then Evicted True)."""
    metadata: dict[str, Any] = {"name": job, "namespace": namespace, "uid": uid(f"workload/{job}"),
                                "resourceVersion": "7",
                                "labels": {"kueue.x-k8s.io/queue-name": queue, "controller-uid": uid(f"job/{job}")}}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    since = "2025-12-31T23:00:00Z"
    conditions: list[dict[str, Any]] = []
    status: dict[str, Any] = {}
    if state == "pending":
        conditions.append({"type": "QuotaReserved", "status": "False", "reason": reason or "Pending",
                           "message": message or "couldn't assign flavors to pod set worker: insufficient unused "
                                                 "quota for nvidia.com/gpu in flavor default-flavor, 8 more needed",
                           "lastTransitionTime": since})
    if state in ("admitted", "evicted"):
        conditions += [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": f"Quota reserved in ClusterQueue {cluster_queue}", "lastTransitionTime": since},
                       {"type": "Admitted", "status": "True", "reason": "Admitted",
                        "message": "The workload is admitted", "lastTransitionTime": since}]
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": [
            {"name": "worker", "count": 2, "flavors": {"nvidia.com/gpu": "default-flavor"}}]}
    if state == "evicted":
        conditions.append({"type": "Evicted", "status": "True", "reason": reason or "Preempted",
                           "message": message or "Preempted to accommodate a workload (UID: u) due to "
                                                 "prioritization in the ClusterQueue", "lastTransitionTime": since})
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata,
            "spec": {"queueName": queue, "active": True, "podSets": [{"name": "worker", "count": 2, "template": {
                "metadata": {"labels": {"nvcre.nvidia.com/job": job}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "worker", "image": "trainer"}]}}}]},
            "status": status}


PODGROUP_GROUP = "PodGroup.scheduling.k8s.io/v1beta1"


def podgroup_child(job: str, attempt: int, *, namespace: str = "default", min_count: int = 2, state: str = "",
                   reason: str = "", message: str = "") -> dict[str, Any]:
    """An observed PodGroup ``<job>-<attempt>`` (issue 22) as the scheduler leaves it: ``state``
    ``""`` (nothing said yet), ``unschedulable`` or ``scheduled`` (``PodGroupInitiallyScheduled``)."""
    metadata: dict[str, Any] = {"name": f"{job}-{attempt}", "namespace": namespace,
                                "uid": uid(f"podgroup/{job}-{attempt}"), "resourceVersion": "9",
                                "labels": {"nvcre.nvidia.com/job": job, "nvcre.nvidia.com/attempt": str(attempt),
                                           "controller-uid": uid(f"job/{job}")},
                                "finalizers": ["scheduling.k8s.io/podgroup-protection"]}
    status: dict[str, Any] = {}
    since = "2025-12-31T23:00:00Z"
    if state == "unschedulable":
        status["conditions"] = [{"type": "PodGroupInitiallyScheduled", "status": "False",
                                 "reason": reason or "Unschedulable",
                                 "message": message or f"pod group is unschedulable, minCount ({min_count}) cannot "
                                                       "be satisfied: 0/1 nodes are available: 1 Insufficient "
                                                       "nvidia.com/gpu.", "lastTransitionTime": since}]
    if state == "scheduled":
        status["conditions"] = [{"type": "PodGroupInitiallyScheduled", "status": "True",
                                 "reason": reason or "Scheduled", "message": message,
                                 "lastTransitionTime": since}]
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": metadata,
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}, "status": status}


def job_request(*, name: str = "train", namespace: str = "default", spec: Mapping[str, Any] | None = None,
                status: Mapping[str, Any] | None = None, jobsets: Iterable[Mapping[str, Any]] = (),
                keying: str = "v1", finalizing: bool = False, deleting: str = "",
                labels: Mapping[str, str] | None = None, workloads: Iterable[Mapping[str, Any]] | None = None,
                priority_classes: Mapping[str, int] | None = None,
                flavors: Mapping[str, Mapping[str, Any]] | None = None,
                podgroups: Iterable[Mapping[str, Any]] | None = None,
                annotations: Mapping[str, str] | None = None, configmaps: bool = False) -> dict[str, Any]:
    """A CompositeController request body as Metacontroller sends it, children keyed v1 or v2.

    ``podgroups`` not ``None`` adds the PodGroup child group (the manifests-gang overlay's
    CompositeController, issue 22).

    ``workloads`` not ``None`` adds the Workload child group (the Kueue overlay's
    CompositeController) and the related ResourceFlavors (``flavors``: name -> spec; default one
    ``default-flavor`` without node labels), ``priority_classes`` the related
    WorkloadPriorityClasses (name -> value).
    """
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid(f"job/{name}"), "generation": 1,
                                "creationTimestamp": JOB_CREATED,
                                "resourceVersion": "42",
                                "finalizers": ["metacontroller.io/compositecontroller-nvcre-jobs"]}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    group: dict[str, Any] = {}
    for child in jobsets:
        child_md = child["metadata"]
        key = child_md["name"] if keying == "v1" else f"{child_md['namespace']}/{child_md['name']}"
        group[key] = child
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    parent = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": metadata,
              "spec": dict(spec if spec is not None else job_spec())}
    if status is not None:
        parent["status"] = dict(status)
    version = "v1" if keying == "v1" else "v2"
    controller = {"metadata": {"name": "nvcre-jobs"}, "spec": {
        "generateSelector": True,
        "parentResource": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "resource": "jobs"},
        "childResources": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "resource": "jobsets"}],
        "hooks": {"sync": {"version": version, "webhook": {"url": "http://nvcre-hooks.nvcre-system/sync"}},
                  "finalize": {"version": version,
                               "webhook": {"url": "http://nvcre-hooks.nvcre-system/finalize"}}}}}
    children: dict[str, Any] = {JOBSET_GROUP: group}
    if workloads is not None:
        children[WORKLOAD_GROUP] = {(w["metadata"]["name"] if keying == "v1" else
                                     f"{w['metadata']['namespace']}/{w['metadata']['name']}"): w for w in workloads}
    if configmaps:  # the ConfigMap child type (the checkpoint control file, issue 33): observed ones are not read
        children["ConfigMap.v1"] = {}
    if podgroups is not None:
        children[PODGROUP_GROUP] = {(g["metadata"]["name"] if keying == "v1" else
                                     f"{g['metadata']['namespace']}/{g['metadata']['name']}"): g for g in podgroups}
    related: dict[str, Any] = {}
    if workloads is not None:
        related[FLAVOR_GROUP] = {key: {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                                       "metadata": {"name": key}, "spec": dict(spec)}
                                 for key, spec in (flavors if flavors is not None else {"default-flavor": {}}).items()}
    if priority_classes is not None:
        related[PRIORITY_CLASS_GROUP] = {key: {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                                               "metadata": {"name": key}, "value": value}
                                         for key, value in priority_classes.items()}
    return {"controller": controller, "parent": parent, "children": children, "related": related,
            "finalizing": finalizing}
