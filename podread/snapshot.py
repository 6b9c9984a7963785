"""Readers over pods held in memory: a `kubectl get pods -o json` PodList or a recorded scenario.

Used by ``python -m hooks replay`` and by the recorded-payload tests, so that a decision can be run
offline exactly as the server runs it, with the Reader over a fixed set of pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from podread.access import SnapshotAccess
from podread.constants import JOBSET_NAME_LABEL
from podread.errors import ApiError
from podread.jobs import SnapshotJobs
from podread.nodes import SnapshotNodes
from podread.reader import Reader
from podread.selector import Pod, PodSelector

_Side = TypeVar("_Side", SnapshotNodes, SnapshotJobs)


class SnapshotLister:
    """A PodLister over a fixed list of pods, or one that always fails.

    ``list_pods`` returns the pods the selector selects, in the order given; with ``error`` set it
    raises ``ApiError(error)`` instead, as the API server failing would, of class ``code`` (see
    ``podread.errors.CAUSES``; default ``failed``).
    """

    def __init__(self, pods: Iterable[Pod] = (), error: str | None = None, code: str = "") -> None:
        self._pods = list(pods)
        self._error = error
        self._code = code

    @property
    def pods(self) -> list[Pod]:
        """The pods this snapshot holds."""
        return list(self._pods)

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """The snapshot's pods that ``selector`` selects; raises ApiError if the snapshot is a failure."""
        if self._error is not None:
            status = int(self._code[5:]) if self._code.startswith("http-") and self._code[5:].isdigit() else None
            raise ApiError(self._error, status=status, code=self._code)
        return [pod for pod in self._pods if selector.matches(pod)]


class SnapshotDeparted:
    """A ``DepartedLister`` over the departed pods a recording kept (``pods.json``'s ``departed``
    side: the pods ``attempt_failure_pods`` added from the watch's memory, annotated as they were):
    ``departed_pods`` returns those of the workload in the namespace, in the order given."""

    def __init__(self, pods: Iterable[Pod] = ()) -> None:
        self._pods = list(pods)

    def departed_pods(self, namespace: str, workload: str) -> list[Pod]:
        """The kept pods of ``workload`` (``jobset.sigs.k8s.io/jobset-name``) in ``namespace``."""
        return [pod for pod in self._pods
                if (pod.get("metadata") or {}).get("namespace") == namespace
                and ((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) == workload]


def _departed(side: object) -> SnapshotDeparted:
    """The ``departed`` side of a scenario (``{"pods": [...]}``); missing: none."""
    if side is None:
        return SnapshotDeparted()
    pods = side.get("pods", []) if isinstance(side, Mapping) else None
    if not isinstance(pods, list) or not all(isinstance(pod, dict) for pod in pods):
        raise ValueError("departed.pods: expected a list of pod objects")
    return SnapshotDeparted(pods)


def _side(doc: Mapping[str, Any], name: str) -> SnapshotLister:
    side = doc.get(name)
    if side is None:
        return SnapshotLister()
    if not isinstance(side, Mapping):
        raise ValueError(f"{name}: expected an object with 'pods' or 'error'")
    if "error" in side:
        code = side.get("code", "")
        if not isinstance(code, str):
            raise ValueError(f"{name}.code: expected a string")
        return SnapshotLister(error=str(side["error"]), code=code)
    pods = side.get("pods", [])
    if not isinstance(pods, list) or not all(isinstance(pod, dict) for pod in pods):
        raise ValueError(f"{name}.pods: expected a list of pod objects")
    return SnapshotLister(pods)


def _nodes(side: object) -> SnapshotNodes:
    # unknown, not "none": a node missing from a snapshot must not read as deleted
    return _items(side, "nodes", "node", SnapshotNodes)


def _access(side: object) -> SnapshotAccess:
    if side is None:  # unknown, not "refused": a snapshot without the review fails it, so no force delete
        return SnapshotAccess(error="the snapshot holds no access review", code="not-in-snapshot")
    if not isinstance(side, Mapping):
        raise ValueError("access: expected an object with 'allowed' or 'error'")
    if "error" in side:
        return SnapshotAccess(error=str(side["error"]), code=str(side.get("code", "")))
    allowed = side.get("allowed", {})
    if not isinstance(allowed, Mapping) or not all(isinstance(v, bool) for v in allowed.values()):
        raise ValueError("access.allowed: expected an object of namespace -> boolean")
    return SnapshotAccess(allowed)


def _jobs(side: object) -> SnapshotJobs:
    # unknown, not "none": a snapshot that does not say which batch Jobs exist
    return _items(side, "jobs", "batch Job", SnapshotJobs)


def _items(side: object, key: str, kind: str, make: Callable[..., _Side]) -> _Side:
    """A snapshot side of objects that are not pods (``{"items": [...]}`` or ``{"error": ..., "code": ...}``)
    as the lister ``make`` builds; a missing side fails every read of it (code ``not-in-snapshot``: the
    replay's own gap, not the cluster's)."""
    if side is None:
        return make(error=f"the snapshot holds no {kind}s", code="not-in-snapshot")
    if not isinstance(side, Mapping):
        raise ValueError(f"{key}: expected an object with 'items' or 'error'")
    if "error" in side:
        return make(error=str(side["error"]), code=str(side.get("code", "")))
    items = side.get("items", [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError(f"{key}.items: expected a list of {kind} objects")
    return make(items)


def reader_from_snapshot(doc: Mapping[str, Any], **reader_options: Any) -> Reader:
    """A Reader whose cache and live sources answer from ``doc``.

    ``doc`` is either a PodList (``{"kind": "PodList", "items": [...]}``, what
    ``kubectl get pods -o json`` prints; a bare ``{"items": [...]}`` too): both sources see the same
    pods, and every batch Job read fails (a pod list says nothing of Jobs); or a ``List`` of Pods
    (``kubectl get pods -o json`` prints ``kind: List``) and batch Jobs (``kubectl get pods,jobs -o
    json``): the same, with those Jobs when it holds at least one (a List with none reads as a pod
    list: its batch Job reads fail); or the scenario
    form ``{"cache": {"pods": [...]} | {"error": "..."}, "live": ...}`` where
    each source has its own pods or fails with the given message and, when given, error class
    (``{"error": "...", "code": "timeout"}``; a missing side has no pods), and ``nodes``, the
    Nodes the API server holds (``{"items": [...]}``, a node not listed reads as deleted, or
    ``{"error": ...}``; missing: every node read fails, so nothing reads as deleted), ``access``,
    whether the hooks may delete pods per namespace (``{"allowed": {"<ns>": true}}``, or
    ``{"error": ...}``; missing: every review fails, so no force delete), and ``jobs``,
    the batch Jobs the API server holds (``{"items": [...]}`` or ``{"error": ...}``; missing: every
    batch Job read fails, so the barrier holds rather than guess that none is left; a PodList
    snapshot says nothing of Jobs either, so its batch Job reads fail the same way), and
    ``departed``, the pods a recorded ``attempt_failure_pods`` added from the pod watch's memory
    (``{"pods": [...]}``, as they were, annotated; missing: none; never listed as the API
    server's pods). Raises ValueError when
    ``doc`` is neither, when ``kind`` is there and is not ``PodList``, or when ``items`` is not a
    list of objects (``items: null`` included: it is not "no pods").
    """
    if not isinstance(doc, Mapping):
        raise ValueError("a pod snapshot must be a JSON object (a PodList or {cache, live})")
    if "items" in doc or doc.get("kind") is not None:
        if doc.get("kind") not in (None, "PodList", "List"):
            raise ValueError(f"kind: expected PodList or List, got {str(doc.get('kind'))[:40]!r}")
        items = doc.get("items")
        if not isinstance(items, list) or not all(isinstance(pod, dict) for pod in items):
            raise ValueError("items: expected a list of pod objects")
        if doc.get("kind") == "List":  # what kubectl prints for `get pods -o json` and `get pods,jobs -o json`
            pods = [item for item in items if item.get("kind") in (None, "Pod")]
            lister = SnapshotLister(pods)
            batch = [item for item in items if item.get("kind") == "Job"]
            # a List holding no Job cannot tell "kubectl get pods" (Jobs not read) from "get pods,jobs"
            # with none: the batch Job reads fail, as for a PodList, rather than read as "none left"
            return Reader(lister, lister, jobs=_jobs({"items": batch} if batch else None), **reader_options)
        lister = SnapshotLister(items)
        return Reader(lister, lister, jobs=_jobs(None), **reader_options)
    if "cache" in doc or "live" in doc:
        return Reader(_side(doc, "cache"), _side(doc, "live"), nodes=_nodes(doc.get("nodes")),
                      access=_access(doc.get("access")), jobs=_jobs(doc.get("jobs")),
                      departed=_departed(doc.get("departed")), **reader_options)
    raise ValueError("a pod snapshot must be a PodList (items) or have 'cache' and/or 'live'")
