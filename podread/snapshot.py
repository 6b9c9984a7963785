"""Readers over pods held in memory: a `kubectl get pods -o json` PodList or a recorded scenario.

Used by ``python -m hooks replay`` and by the recorded-payload tests, so that a decision can be run
offline exactly as the server runs it, with the Reader over a fixed set of pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from podread.errors import ApiError
from podread.reader import Reader
from podread.selector import Pod, PodSelector


class SnapshotLister:
    """A PodLister over a fixed list of pods, or one that always fails.

    ``list_pods`` returns the pods the selector selects, in the order given; with ``error`` set it
    raises ``ApiError(error)`` instead, as the API server failing would.
    """

    def __init__(self, pods: Iterable[Pod] = (), error: str | None = None) -> None:
        self._pods = list(pods)
        self._error = error

    @property
    def pods(self) -> list[Pod]:
        """The pods this snapshot holds."""
        return list(self._pods)

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """The snapshot's pods that ``selector`` selects; raises ApiError if the snapshot is a failure."""
        if self._error is not None:
            raise ApiError(self._error)
        return [pod for pod in self._pods if selector.matches(pod)]


def _side(doc: Mapping[str, Any], name: str) -> SnapshotLister:
    side = doc.get(name)
    if side is None:
        return SnapshotLister()
    if not isinstance(side, Mapping):
        raise ValueError(f"{name}: expected an object with 'pods' or 'error'")
    if "error" in side:
        return SnapshotLister(error=str(side["error"]))
    pods = side.get("pods", [])
    if not isinstance(pods, list) or not all(isinstance(pod, dict) for pod in pods):
        raise ValueError(f"{name}.pods: expected a list of pod objects")
    return SnapshotLister(pods)


def reader_from_snapshot(doc: Mapping[str, Any], **reader_options: Any) -> Reader:
    """A Reader whose cache and live sources answer from ``doc``.

    ``doc`` is either a PodList (``{"kind": "PodList", "items": [...]}``, what
    ``kubectl get pods -o json`` prints; a bare ``{"items": [...]}`` too): both sources see the same
    pods; or the scenario form ``{"cache": {"pods": [...]} | {"error": "..."}, "live": ...}`` where
    each source has its own pods or fails with the given message (a missing side has no pods).
    Raises ValueError when ``doc`` is neither.
    """
    if not isinstance(doc, Mapping):
        raise ValueError("a pod snapshot must be a JSON object (a PodList or {cache, live})")
    if "items" in doc:
        items = doc["items"] or []
        if not isinstance(items, list) or not all(isinstance(pod, dict) for pod in items):
            raise ValueError("items: expected a list of pod objects")
        lister = SnapshotLister(items)
        return Reader(lister, lister, **reader_options)
    if "cache" in doc or "live" in doc:
        return Reader(_side(doc, "cache"), _side(doc, "live"), **reader_options)
    raise ValueError("a pod snapshot must be a PodList (items) or have 'cache' and/or 'live'")
