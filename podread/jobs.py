"""Batch Job reads: the ``batch/v1`` Jobs a JobSet made, which the drain barrier waits for: until
the garbage collector removes them they can still create pods.

Metacontroller deletes an omitted JobSet with background propagation: the JobSet goes at once, and
the garbage collector deletes its ``batch/v1`` Jobs later, then their pods. Until it does, such a
Job is still a live controller: it can create a pod (a retry under ``backoffLimit``, the next
completions when ``completions > parallelism``) after every pod of the attempt had finished. So
the barrier also reads the Jobs JobSet labelled with the attempt's name
(``jobset.sigs.k8s.io/jobset-name=<job>-<n>``), from the API server, and waits while any is left.

A ``JobLister`` is anything with ``list_jobs(selector)``: ``JobClient`` (the kubernetes client,
``GET /apis/batch/v1/namespaces/<ns>/jobs``, sharing ``podread.live.PagedList`` with the pod
lists) or ``SnapshotJobs`` (Jobs held in memory, for replay and recorded payloads). The selector
is a ``PodSelector``: only its namespace and label terms are used (a Job has no ``spec.nodeName``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from kubernetes import client as k8s

from podread import rest
from podread.errors import ApiError
from podread.live import DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT_SECONDS, PagedList
from podread.metrics import ReadMetrics
from podread.selector import PodSelector

Job = dict[str, Any]
"""A ``batch/v1`` Job in the API server's JSON form, as a plain dict."""


class JobLister(Protocol):
    """Lists batch Jobs: every Job ``selector`` selects, or raises ``PodReadError``; never a
    partial list, and a failed read is never "no Jobs"."""

    def list_jobs(self, selector: PodSelector) -> list[Job]: ...


class JobClient(PagedList):
    """Lists batch Jobs from the API server with the official kubernetes client, with the qualities
    of ``LiveClient`` (``podread.live.PagedList``): consistent (no ``resourceVersion``: a quorum
    read), paged (``limit``/``continue``, restarted on 410 Gone), bounded by ``timeout_seconds``
    and by the hook call's deadline (``podread.deadline``), raw JSON. Every failure raises
    ``ApiError`` (code ``not-a-job-list`` for a 200 that is not a JobList) or ``DeadlineExceeded``.
    Requests are counted in ``podread_job_api_requests_total``. Namespaced lists only: the barrier
    reads one Job's namespace.
    """

    NOUN = "batch jobs"
    LIST_KIND = "JobList"
    NOT_A_LIST = "not-a-job-list"

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        page_size: int = DEFAULT_PAGE_SIZE,
        metrics: ReadMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(api_client, timeout_seconds=timeout_seconds, page_size=page_size, metrics=metrics,
                         clock=clock)

    def list_jobs(self, selector: PodSelector) -> list[Job]:
        """``GET /apis/batch/v1/namespaces/<ns>/jobs?labelSelector=...``: every Job ``selector``
        selects, from the API server's current state."""
        if selector.namespace is None:
            raise ValueError("a batch Job list is namespaced: the selector names no namespace")
        if selector.node_name is not None:
            raise ValueError("a batch Job has no spec.nodeName to select on")
        return self.list_snapshot(selector)[0]

    def _target(self, selector: PodSelector) -> tuple[str, dict[str, str]]:
        assert selector.namespace is not None
        return rest.BATCH_JOBS_PATH, {"namespace": selector.namespace}

    def _query(self, selector: PodSelector) -> list[tuple[str, str]]:
        return [(name, value) for name, value in super()._query(selector) if name != "fieldSelector"]

    def _requests(self) -> Any:
        return self._metrics.job_api_requests


class SnapshotJobs:
    """A ``JobLister`` over Jobs held in memory (``selector.matches`` as the API server would);
    with ``error`` set every list fails as the API server would, of class ``code``."""

    def __init__(self, jobs: Iterable[Mapping[str, Any]] = (), error: str | None = None, code: str = "") -> None:
        self._jobs = [dict(job) for job in jobs]
        self._error = error
        self._code = code

    def list_jobs(self, selector: PodSelector) -> list[Job]:
        """The held Jobs ``selector`` selects; raises ``ApiError`` for a failing snapshot."""
        if self._error is not None:
            status = int(self._code[5:]) if self._code.startswith("http-") and self._code[5:].isdigit() else None
            raise ApiError(self._error, status=status, code=self._code)
        return [job for job in self._jobs if selector.matches(job)]
