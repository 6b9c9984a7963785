"""An in-process PodLister for podread unit tests: pods in memory, calls recorded, failures on demand."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from podread import ApiError, Pod, PodSelector


class FakeLister:
    """Lists ``pods`` like the API server would; records each selector; can fail or be slow."""

    def __init__(self, pods: Iterable[Pod] = (), *, delay: float = 0.0) -> None:
        self.pods: list[Pod] = list(pods)
        self.calls: list[PodSelector] = []
        self.fail_with: Exception | None = None
        self.delay = delay
        self._lock = threading.Lock()

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        with self._lock:
            self.calls.append(selector)
        if self.delay:
            time.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        return [pod for pod in self.pods if selector.matches(pod)]


def failing(message: str = "the API server answered 500") -> ApiError:
    """The error a failing API server surfaces as."""
    return ApiError(message, status=500)


def pod(
    name: str, *, namespace: str = "team-a", job: str | None = "llama", phase: str = "Running",
    node: str = "", labels: dict[str, str] | None = None, deleting: bool = False,
) -> Pod:
    """A small pod in API JSON form; ``job=None`` leaves the job label off."""
    all_labels = dict(labels or {})
    if job is not None:
        all_labels["nvcre.nvidia.com/job"] = job
    metadata: dict = {"name": name, "namespace": namespace, "labels": all_labels,
                      "managedFields": [{"manager": "kubelet", "operation": "Update"}]}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}
