"""FakeReader: the podread Reader's methods over in-memory pods, recording every call.

``pods`` is what the cache holds (only pods carrying JOB_LABEL are visible through it, as in the real
cache, and slim as the real cache keeps them: ``tests.slim_guard.guarded``, so a decision that reads a
field the cache drops fails its test); ``live_pods`` what the API server holds (``None``: the same pods
as the cache). ``fail`` names
methods that raise ``PodReadError`` (``"job_pods"``, ``"active_job_pods"``, ``"workload_pods"``,
``"active_launcher_pods"``, ``"active_attempt_pods"``, ...) or a whole source (``"cache"``,
``"live"``); ``error`` builds the error raised (default: ``PodReadError("injected failure")``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from podread import JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL, is_active
from podread.errors import PodReadError
from tests.slim_guard import guarded

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


class FakeReader:
    """A duck-typed podread Reader for unit tests. ``calls`` lists ``(method, source, args)``."""

    def __init__(self, pods: Iterable[Mapping[str, Any]] = (), live_pods: Iterable[Mapping[str, Any]] | None = None,
                 fail: Iterable[str] = (), error: Callable[[], PodReadError] | None = None) -> None:
        self.pods = [dict(pod) for pod in pods]
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
                 deleting: str = "") -> dict[str, Any]:
    """An observed JobSet child ``<job>-<attempt>``; ``state`` "Failed"/"Completed" sets its condition."""
    metadata: dict[str, Any] = {"name": f"{job}-{attempt}", "namespace": namespace,
                                "uid": f"uid-{job}-{attempt}", "resourceVersion": "100",
                                "labels": {"nvcre.nvidia.com/job": job, "nvcre.nvidia.com/attempt": str(attempt),
                                           "controller-uid": f"uid-{job}"}}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    status: dict[str, Any] = {"restarts": 0}
    if state:
        status["conditions"] = [{"type": state, "status": "True", "reason": "Test", "message": state,
                                 "lastTransitionTime": "2025-12-31T23:00:00Z"}]
        status["terminalState"] = state
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
            "spec": {"replicatedJobs": []}, "status": status}


def job_request(*, name: str = "train", namespace: str = "default", spec: Mapping[str, Any] | None = None,
                status: Mapping[str, Any] | None = None, jobsets: Iterable[Mapping[str, Any]] = (),
                keying: str = "v1", finalizing: bool = False, deleting: str = "") -> dict[str, Any]:
    """A CompositeController request body as Metacontroller sends it, children keyed v1 or v2."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "generation": 1,
                                "resourceVersion": "42",
                                "finalizers": ["metacontroller.io/compositecontroller-nvcre-jobs"]}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    group: dict[str, Any] = {}
    for child in jobsets:
        child_md = child["metadata"]
        key = child_md["name"] if keying == "v1" else f"{child_md['namespace']}/{child_md['name']}"
        group[key] = child
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
    return {"controller": controller, "parent": parent, "children": {JOBSET_GROUP: group}, "related": {},
            "finalizing": finalizing}
