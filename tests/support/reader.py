"""FakeReader: the real podread ``Reader`` over in-memory sources, recording every read and failing on
demand, so decision tests run through the Reader's own rules (the cache, then the API server before
answering "none active"; the selectors; the sorting) rather than a copy of them.

``pods`` is what the cache holds (only pods carrying JOB_LABEL are visible through it, as in the real
cache, and slim as the real cache keeps them: ``tests.support.slim_guard.guarded``, so a decision that reads a
field the cache drops fails its test); ``live_pods`` what the API server holds (``None``: the same pods
as the cache). ``fail`` names Reader methods whose reads raise (``"job_pods"``, ``"counted_job_pods"``,
``"active_job_pods"``, ``"workload_pods"``, ``"active_launcher_pods"``, ``"active_attempt_pods"``,
``"attempt_jobs"``, ...) or a whole source (``"cache"``, ``"live"``); ``error`` builds the error raised (default:
``PodReadError("injected failure")``); the Reader locates it (method, source) as it does any failure.
``jobs`` are the batch Jobs the API server holds (``attempt_jobs``; none by default, ``make_batch_job``
builds one); ``nodes`` the Nodes (``None``: every node read fails), read through ``node_cache`` when
given (a ``podread.nodes.NodeCache``, as the production Reader has one); ``delete_allowed`` the access
review's answer. ``calls`` lists ``(method, source, args)`` for each list a read sends (one for each
source an ``active_job_pods`` or a ``counted_job_pods`` reads) and one for each node, batch Job or access read.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from podread import JOB_LABEL, JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL, PodSelector, Reader, ReadMetrics
from podread.errors import PodReadError
from podread.nodes import NodeCache
from tests.support.slim_guard import guarded

Pod = dict[str, Any]

POD_READS = ("job_pods", "counted_job_pods", "active_job_pods", "workload_pods", "active_launcher_pods",
             "active_attempt_pods", "attempt_failure_pods", "job_pods_on_node", "namespace_pods")
"""The Reader's pod reads: each list they send is recorded by the source it goes to."""
OTHER_READS = ("attempt_jobs", "node_states", "pod_delete_allowed")
"""The Reader's live reads of other kinds: each call is recorded once, as live."""


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
                   finished: str = "", job: str = "") -> dict[str, Any]:
    """Builds a ``batch/v1`` Job dict as JobSet makes them for ``workload`` (``<workload>-worker-0``
    unless ``name``), labelled ``jobset.sigs.k8s.io/jobset-name=<workload>``, and JOB_LABEL=``job``
    when given (as the hooks stamp it on the Job template, issue 31); ``finished`` adds that
    condition (``Complete``, ``Failed``) with status True, ``deleting`` a ``deletionTimestamp``."""
    labels = {JOBSET_NAME_LABEL: workload, REPLICATED_JOB_LABEL: "worker", **({JOB_LABEL: job} if job else {})}
    metadata: dict[str, Any] = {"name": name or f"{workload}-worker-0", "namespace": namespace, "labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = deleting
    status: dict[str, Any] = {"conditions": [{"type": finished, "status": "True"}]} if finished else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"backoffLimit": 2},
            "status": status}


class FakeReader(Reader):
    """``podread.Reader`` over the pods, batch Jobs and Nodes given, recording and failing as said above."""

    delete_allowed: bool | frozenset[str] = True
    """``pod_delete_allowed``'s answer: every namespace (True), none (False), or those named."""

    def __init__(self, pods: Iterable[Mapping[str, Any]] = (), live_pods: Iterable[Mapping[str, Any]] | None = None,
                 fail: Iterable[str] = (), error: Callable[[], PodReadError] | None = None,
                 nodes: Iterable[Mapping[str, Any]] | None = None,
                 jobs: Iterable[Mapping[str, Any]] = (), node_cache: NodeCache | None = None) -> None:
        self.pods = [dict(pod) for pod in pods]
        self.jobs = [dict(job) for job in jobs]
        self.nodes = None if nodes is None else {str(n["metadata"]["name"]): dict(n) for n in nodes}
        self.live_pods = None if live_pods is None else [dict(pod) for pod in live_pods]
        self.fail = set(fail)
        self.error = error
        self.calls: list[tuple[str, str, tuple[Any, ...]]] = []
        self.node_gets: list[str] = []
        """The names of the Nodes read from the fake API server (one GET each; not those answered from
        ``node_cache``)."""
        self._reading: tuple[str, tuple[Any, ...]] = ("", ())
        others = _Others(self)
        super().__init__(_Source(self, "cache"), _Source(self, "live"),
                         metrics=ReadMetrics(registry=CollectorRegistry()), nodes=others, access=others, jobs=others,
                         node_cache=node_cache)

    def _refuse(self, method: str, source: str) -> None:
        """Raises the injected error when ``method`` or ``source`` is to fail."""
        if method in self.fail or source in self.fail:
            raise self.error() if self.error is not None else PodReadError("injected failure")


class _Source:
    """One side of the FakeReader: the cache (JOB_LABEL pods, slim) or the API server."""

    def __init__(self, reader: FakeReader, source: str) -> None:
        self.reader = reader
        self.source = source

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        reader = self.reader
        method, args = reader._reading
        reader.calls.append((method, self.source, args))
        reader._refuse(method, self.source)
        if self.source == "cache":
            return [guarded(pod) for pod in reader.pods if JOB_LABEL in _labels(pod) and selector.matches(pod)]
        return [pod for pod in (reader.pods if reader.live_pods is None else reader.live_pods) if selector.matches(pod)]


class _Others:
    """The FakeReader's batch Jobs, Nodes and access review (all live)."""

    def __init__(self, reader: FakeReader) -> None:
        self.reader = reader

    def list_jobs(self, selector: PodSelector) -> list[dict[str, Any]]:
        self.reader._refuse("attempt_jobs", "live")
        return [job for job in self.reader.jobs if selector.matches(job)]

    def get_node(self, name: str) -> dict[str, Any] | None:
        self.reader.node_gets.append(name)
        self.reader._refuse("node_states", "live")
        if self.reader.nodes is None:
            raise PodReadError("no nodes in this fake")
        return self.reader.nodes.get(name)

    def may_delete_pods(self, namespace: str) -> bool:
        self.reader._refuse("pod_delete_allowed", "live")
        allowed = self.reader.delete_allowed
        return allowed if isinstance(allowed, bool) else namespace in allowed


def _recorded(name: str) -> Callable[..., Any]:
    """``Reader.<name>``, noting which read runs (its sources record it) or recording it (other kinds)."""
    real = getattr(Reader, name)
    signature = inspect.signature(real)

    @functools.wraps(real)
    def read(self: FakeReader, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = tuple(tuple(value) if isinstance(value, list) else value for value in bound.args[1:])
        if name in OTHER_READS:
            self.calls.append((name, "live", arguments))
        self._reading = (name, arguments)
        try:
            return real(self, *args, **kwargs)
        finally:
            self._reading = ("", ())

    return read


for _name in (*POD_READS, *OTHER_READS):
    setattr(FakeReader, _name, _recorded(_name))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
