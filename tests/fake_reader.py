"""FakeReader: the podread Reader's methods over in-memory pods, recording every call.

``pods`` is what the cache holds (only pods carrying JOB_LABEL are visible through it, as in the real
cache, and slim as the real cache keeps them: ``tests.slim_guard.guarded``, so a decision that reads a
field the cache drops fails its test); ``live_pods`` what the API server holds (``None``: the same pods
as the cache). ``fail`` names
methods that raise ``PodReadError`` (``"job_pods"``, ``"active_job_pods"``, ``"workload_pods"``,
``"active_launcher_pods"``, ``"active_attempt_pods"``, ``"attempt_jobs"``, ...) or a whole source
(``"cache"``, ``"live"``); ``error`` builds the error raised (default: ``PodReadError("injected failure")``).
``jobs`` are the batch Jobs the API server holds (``attempt_jobs``; none by default, ``make_batch_job``
builds one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from podread import JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL, is_active
from podread.errors import PodReadError
from podread.nodes import NodeState, node_state
from podread.selector import tells_a_failure
from tests.slim_guard import guarded
from tests.uids import uid

Pod = dict[str, Any]


def make_pod(name: str, *, job: str = "", namespace: str = "default", phase: str = "Running",
             workload: str = "", replicated_job: str = "", launcher: str = "", node: str = "node-a",
             deleting: str = "") -> Pod:
    """Builds a pod dict in API JSON form with the labels JobSet and this controller put on pods."""
    labels: dict[str, str] = {}
    if job:
        labels[JOB_LABEL] = job
    if launcher:
        labels["nvcre.nvidia.com/launcher"] = launcher
    if workload:
        labels[JOBSET_NAME_LABEL] = workload
    if replicated_job:
        labels[REPLICATED_JOB_LABEL] = replicated_job
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": phase}}


def make_batch_job(workload: str, *, name: str = "", namespace: str = "default", deleting: str = "",
                   finished: str = "") -> dict[str, Any]:
    """Builds a ``batch/v1`` Job dict as JobSet makes them for ``workload`` (``<workload>-worker-0``
    unless ``name``), labelled ``jobset.sigs.k8s.io/jobset-name=<workload>``; ``finished`` adds that
    condition (``Complete``, ``Failed``) with status True, ``deleting`` a ``deletionTimestamp``."""
    metadata: dict[str, Any] = {"name": name or f"{workload}-worker-0", "namespace": namespace,
                                "labels": {JOBSET_NAME_LABEL: workload, REPLICATED_JOB_LABEL: "worker"}}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    status: dict[str, Any] = {"conditions": [{"type": finished, "status": "True"}]} if finished else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"backoffLimit": 2},
            "status": status}


class FakeReader:
    """A duck-typed podread Reader for unit tests. ``calls`` lists ``(method, source, args)``."""

    def __init__(self, pods: Iterable[Mapping[str, Any]] = (), live_pods: Iterable[Mapping[str, Any]] | None = None,
                 fail: Iterable[str] = (), error: Callable[[], PodReadError] | None = None,
                 nodes: Iterable[Mapping[str, Any]] | None = None,
                 jobs: Iterable[Mapping[str, Any]] = ()) -> None:
        self.pods = [dict(pod) for pod in pods]
        self.jobs = [dict(job) for job in jobs]
        self.nodes = None if nodes is None else {str(n["metadata"]["name"]): dict(n) for n in nodes}
        self.live_pods = None if live_pods is None else [dict(pod) for pod in live_pods]
        self.fail = set(fail)
        self.error = error
        self.calls: list[tuple[str, str, tuple[Any, ...]]] = []

    def _source(self, method: str, source: str, args: tuple[Any, ...]) -> list[Pod]:
        self.calls.append((method, source, args))
        if method in self.fail or source in self.fail:
            if self.error is not None:
                raise self.error().located(method, source)
            raise PodReadError("injected failure", method=method, source=source)
        if source == "cache":
            return [guarded(pod) for pod in self.pods if JOB_LABEL in _labels(pod)]
        return list(self.pods if self.live_pods is None else self.live_pods)

    def job_pods(self, namespace: str, job: str) -> list[Pod]:
        """Cached pods with JOB_LABEL=job in namespace."""
        pods = self._source("job_pods", "cache", (namespace, job))
        return [p for p in pods if _ns(p) == namespace and _labels(p).get(JOB_LABEL) == job]

    def active_job_pods(self, namespace: str, job: str) -> list[Pod]:
        """Active cached pods of the job; when none, the active live pods of the job."""
        def select(pods: list[Pod]) -> list[Pod]:
            return [p for p in pods if _ns(p) == namespace and _labels(p).get(JOB_LABEL) == job and is_active(p)]

        active = select(self._source("active_job_pods", "cache", (namespace, job)))
        if active:
            return active
        return select(self._source("active_job_pods", "live", (namespace, job)))

    def workload_pods(self, namespace: str, workload: str, replicated_job: str = "") -> list[Pod]:
        """Live pods JobSet labelled with ``workload`` (and ``replicated_job`` when set)."""
        pods = self._source("workload_pods", "live", (namespace, workload, replicated_job))
        return [p for p in pods if _ns(p) == namespace and _labels(p).get(JOBSET_NAME_LABEL) == workload
                and (not replicated_job or _labels(p).get(REPLICATED_JOB_LABEL) == replicated_job)]

    def active_launcher_pods(self, namespace: str, job: str) -> list[Pod]:
        """Active live pods with LAUNCHER_LABEL=job, every attempt."""
        pods = self._source("active_launcher_pods", "live", (namespace, job))
        return [p for p in pods if _ns(p) == namespace and _labels(p).get(LAUNCHER_LABEL) == job and is_active(p)]

    def active_attempt_pods(self, namespace: str, job: str, last_attempt: int) -> list[Pod]:
        """Active live pods JobSet labelled ``<job>-0`` ... ``<job>-<last_attempt>``."""
        pods = self._source("active_attempt_pods", "live", (namespace, job, last_attempt))
        names = {f"{job}-{attempt}" for attempt in range(last_attempt + 1)}
        return [p for p in pods if _ns(p) == namespace and _labels(p).get(JOBSET_NAME_LABEL) in names and is_active(p)]

    def attempt_jobs(self, namespace: str, job: str, last_attempt: int) -> list[dict[str, Any]]:
        """Batch Jobs of ``jobs`` JobSet labelled ``<job>-0`` ... ``<job>-<last_attempt>``, sorted."""
        self.calls.append(("attempt_jobs", "live", (namespace, job, last_attempt)))
        if "attempt_jobs" in self.fail or "live" in self.fail:
            if self.error is not None:
                raise self.error().located("attempt_jobs", "live")
            raise PodReadError("injected failure", method="attempt_jobs", source="live")
        names = {f"{job}-{attempt}" for attempt in range(last_attempt + 1)}
        return sorted((j for j in self.jobs if _ns(j) == namespace and _labels(j).get(JOBSET_NAME_LABEL) in names),
                      key=lambda j: j["metadata"]["name"])

    def attempt_failure_pods(self, namespace: str, workload: str) -> list[Pod]:
        """Live pods JobSet labelled ``workload`` that failed, were disrupted or exited non-zero."""
        pods = self._source("attempt_failure_pods", "live", (namespace, workload))
        return sorted((p for p in pods if _ns(p) == namespace and _labels(p).get(JOBSET_NAME_LABEL) == workload
                       and tells_a_failure(p)), key=lambda p: p["metadata"]["name"])

    def node_states(self, names: list[str]) -> dict[str, NodeState]:
        """The states of the named nodes from ``nodes`` (a name not there: deleted); without
        ``nodes`` every node read fails, as a Reader without a node lister does."""
        self.calls.append(("node_states", "live", (tuple(names),)))
        if self.nodes is None or "node_states" in self.fail or "live" in self.fail:
            raise PodReadError("no nodes in this fake", method="node_states", source="live")
        return {name: node_state(name, self.nodes.get(name)) for name in sorted(set(names))}

    delete_allowed: bool | frozenset[str] = True
    """``pod_delete_allowed``'s answer: every namespace (True), none (False), or those named."""

    def pod_delete_allowed(self, namespace: str) -> bool:
        """Whether pods may be deleted in ``namespace`` (``delete_allowed``); fails like a live read
        when ``"pod_delete_allowed"`` or ``"live"`` is in ``fail``."""
        self.calls.append(("pod_delete_allowed", "live", (namespace,)))
        if "pod_delete_allowed" in self.fail or "live" in self.fail:
            raise PodReadError("injected failure", method="pod_delete_allowed", source="live")
        allowed = self.delete_allowed
        return allowed if isinstance(allowed, bool) else namespace in allowed

    def job_pods_on_node(self, node: str) -> list[Pod]:
        """Cached job pods bound to ``node``."""
        pods = self._source("job_pods_on_node", "cache", (node,))
        return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]

    def namespace_pods(self, namespace: str) -> list[Pod]:
        """Live pods of ``namespace``."""
        return [p for p in self._source("namespace_pods", "live", (namespace,)) if _ns(p) == namespace]


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _ns(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("namespace", ""))


# ---- request builders shared by the decision tests and tests/payloads/_build.py ----------------------

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


def job_request(*, name: str = "train", namespace: str = "default", spec: Mapping[str, Any] | None = None,
                status: Mapping[str, Any] | None = None, jobsets: Iterable[Mapping[str, Any]] = (),
                keying: str = "v1", finalizing: bool = False, deleting: str = "",
                labels: Mapping[str, str] | None = None, workloads: Iterable[Mapping[str, Any]] | None = None,
                priority_classes: Mapping[str, int] | None = None,
                flavors: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A CompositeController request body as Metacontroller sends it, children keyed v1 or v2.

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
