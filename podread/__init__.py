"""podread is the only place controller code reads Pods (ADR-102).

The Pod cache holds only Pods that carry the NVCRE job label (JOB_LABEL). A Pod read therefore has
to know whether every pod it needs carries that label, and the answer belongs to what is being read,
not to each caller. Each Reader method names what it reads and picks its source: the cache, under a
selector the method builds itself, or the API server. A new kind of read is a new method, where its
source is decided and reviewed.

    reader = podread.from_environment()          # PodCache(LiveClient) + LiveClient
    reader.active_job_pods("team-a", "llama")    # cache, then the API server before answering none

Beside the pods, the drain barrier reads through the Reader, live, the Nodes its pods are bound to
(``node_states``; a state that licenses nothing may come from a few seconds' ``NodeCache``) and the
batch Jobs of the Job's attempts (``attempt_jobs``).

Evidence that outlives a pod: ``attempt_failure_pods`` also returns the failing pods of the
workload that the pod watch saw deleted within a bounded window (``podread.watch.MAX_DEPARTED``,
``DEPARTED_SECONDS``), as last seen and annotated ``DEPARTED_ANNOTATION``; a live pod of the same
name wins. A preemption deletes its victim before the real JobSet fails, so without them the pod
that carried ``DisruptionTarget`` would never be read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Exported names and the module each comes from. Loaded on first use (PEP 562), so that importing a
# light module of the package (``podread.constants``, ``podread.errors``, ``podread.selector``), as
# the pure decision core does, loads neither the kubernetes client nor urllib3 nor pydantic.
_EXPORTS: dict[str, str] = {
    "PodCache": "podread.cache",
    "deadline": "podread.calldeadline",
    **dict.fromkeys(("ATTEMPT_LABEL", "DEPARTED_ANNOTATION", "FINISHED_PHASES", "JOB_INDEX_FIELD", "JOB_LABEL",
                     "JOBSET_NAME_LABEL", "LAUNCHER_LABEL", "NODE_NAME_INDEX_FIELD", "REPLICATED_JOB_LABEL"),
                    "podread.constants"),
    "from_environment": "podread.environment",
    **dict.fromkeys(("CAUSES", "ApiError", "CacheScopeError", "DeadlineExceeded", "NoLiveReaderError",
                     "NoSourceError", "PodReadError"), "podread.errors"),
    **dict.fromkeys(("Job", "JobClient", "JobLister", "SnapshotJobs"), "podread.jobs"),
    "LiveClient": "podread.live",
    "ReadMetrics": "podread.metrics",
    "Reader": "podread.reader",
    **dict.fromkeys(("Pod", "PodLister", "PodSelector", "is_active", "pod_key"), "podread.selector"),
    **dict.fromkeys(("SnapshotLister", "reader_from_snapshot"), "podread.snapshot"),
    **dict.fromkeys(("ReadRecord", "recording"), "podread.trace"),
}


def __getattr__(name: str) -> Any:
    """``podread.<name>`` for an exported name: imports its module on first use and keeps the value."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'podread' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # for type checkers and readers: the same names, imported eagerly
    from podread.cache import PodCache
    from podread.calldeadline import deadline
    from podread.constants import (
        ATTEMPT_LABEL,
        DEPARTED_ANNOTATION,
        FINISHED_PHASES,
        JOB_INDEX_FIELD,
        JOB_LABEL,
        JOBSET_NAME_LABEL,
        LAUNCHER_LABEL,
        NODE_NAME_INDEX_FIELD,
        REPLICATED_JOB_LABEL,
    )
    from podread.environment import from_environment
    from podread.errors import (
        CAUSES,
        ApiError,
        CacheScopeError,
        DeadlineExceeded,
        NoLiveReaderError,
        NoSourceError,
        PodReadError,
    )
    from podread.jobs import Job, JobClient, JobLister, SnapshotJobs
    from podread.live import LiveClient
    from podread.metrics import ReadMetrics
    from podread.reader import Reader
    from podread.selector import Pod, PodLister, PodSelector, is_active, pod_key
    from podread.snapshot import SnapshotLister, reader_from_snapshot
    from podread.trace import ReadRecord, recording

__all__ = [
    "ATTEMPT_LABEL", "CAUSES", "DEPARTED_ANNOTATION", "FINISHED_PHASES", "JOBSET_NAME_LABEL", "JOB_INDEX_FIELD",
    "JOB_LABEL", "LAUNCHER_LABEL", "NODE_NAME_INDEX_FIELD", "REPLICATED_JOB_LABEL", "ApiError", "CacheScopeError",
    "DeadlineExceeded", "Job", "JobClient", "JobLister", "LiveClient", "NoLiveReaderError", "NoSourceError", "Pod",
    "PodCache", "PodLister", "PodReadError", "PodSelector", "ReadMetrics", "ReadRecord", "Reader", "SnapshotJobs",
    "SnapshotLister", "deadline", "from_environment", "is_active", "pod_key", "reader_from_snapshot", "recording",
]
