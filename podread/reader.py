"""Reader: every Pod read the controller makes. Each method names what it reads and picks its source."""

from __future__ import annotations

import logging
import time

from podread import trace
from podread.cache import PodCache
from podread.constants import JOB_LABEL, JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from podread.errors import NoLiveReaderError, PodReadError
from podread.metrics import ReadMetrics, default_metrics
from podread.selector import Pod, PodLister, PodSelector, is_active

log = logging.getLogger("podread")

CACHE = "cache"
LIVE = "live"


class Reader:
    """Reads Pods from the job-scoped cache or from the API server, whichever the read needs.

    ``cached`` reads through the job-scoped cache (a ``PodCache``); ``live`` reads the API server
    (a ``LiveClient``). A unit test may pass the same fake lister for both.

    A ``live`` of ``None`` is not replaced by ``cached``: the live reads exist because the cache
    cannot answer them, and ``active_job_pods``' check against the API server would quietly become
    a second cached read. Every live read then raises ``NoLiveReaderError`` instead, logged and
    counted like any failed read.

    Every method returns pods as plain dicts in the API server's JSON form (do not mutate them), an
    empty list for no pods, or raises ``PodReadError`` naming the method, the source and the cause.
    Each read is counted and timed in ``metrics`` and noted in an open ``trace.recording()``.
    """

    def __init__(self, cached: PodLister, live: PodLister | None, *, metrics: ReadMetrics | None = None) -> None:
        self._cached = cached
        self._live = live
        self._metrics = metrics or default_metrics()

    @property
    def has_live(self) -> bool:
        """Whether live reads can succeed at all (a live client was given)."""
        return self._live is not None

    def job_pods(self, namespace: str, job: str) -> list[Pod]:
        """A Job's workload pods from the cache: the pods carrying JOB_LABEL=job in namespace.

        Freshness: as old as the cache's TTL. No pods is an empty list.
        """
        return self._read("job_pods", CACHE, PodSelector(namespace=namespace, labels={JOB_LABEL: job}))

    def active_job_pods(self, namespace: str, job: str) -> list[Pod]:
        """A Job's workload pods that have not finished: JOB_LABEL=job in namespace, phase neither
        Succeeded nor Failed (a pod being deleted is still active).

        Reads the cache, and when no active pod remains there reads the API server before returning
        none. A caller acts on "none active": the drain barrier lets teardown proceed. The cache can
        hold a Job's finished pods and miss a newer one that is still running, so the API server is
        checked whenever filtering leaves no active pod, not only when the cached list is empty. The
        check selects on the job label, so it sees what the cache would hold once it catches up.
        An empty answer therefore always comes from the API server: when the cache missed and this
        call's own fill listed the pods from the live client, that list is the check.
        """
        selector = PodSelector(namespace=namespace, labels={JOB_LABEL: job})
        cached, listed_live = self._list("active_job_pods", CACHE, selector)
        active = [pod for pod in cached if is_active(pod)]
        if active or listed_live:
            return active
        return [pod for pod in self._read("active_job_pods", LIVE, selector) if is_active(pod)]

    def job_pods_on_node(self, node: str) -> list[Pod]:
        """The NVCRE workload pods bound to node, from the cache, through the spec.nodeName index
        and JOB_LABEL. Pods of other components on the node are not returned.
        """
        return self._read("job_pods_on_node", CACHE, PodSelector(has_labels=(JOB_LABEL,), node_name=node))

    def namespace_pods(self, namespace: str) -> list[Pod]:
        """Every pod in namespace, from the API server: for reads of other components' pods, such as
        installers in kube-system.
        """
        return self._read("namespace_pods", LIVE, PodSelector(namespace=namespace))

    def workload_pods(self, namespace: str, workload: str, replicated_job: str = "") -> list[Pod]:
        """A workload's pods from the API server: every pod JobSet labelled with the workload's name
        (``jobset.sigs.k8s.io/jobset-name``), in one replicated job
        (``jobset.sigs.k8s.io/replicatedjob-name``) when ``replicated_job`` is not empty.

        Launchers carry no JOB_LABEL, so the cache cannot hold them.
        """
        labels = {JOBSET_NAME_LABEL: workload}
        if replicated_job:
            labels[REPLICATED_JOB_LABEL] = replicated_job
        return self._read("workload_pods", LIVE, PodSelector(namespace=namespace, labels=labels))

    def _read(self, method: str, source: str, selector: PodSelector) -> list[Pod]:
        """Runs one list on ``source``; see ``_list``."""
        return self._list(method, source, selector)[0]

    def _list(self, method: str, source: str, selector: PodSelector) -> tuple[list[Pod], bool]:
        """Runs one list on ``source``, counting, timing, logging and tracing it.

        Returns the pods and whether the answer is a list this very call sent to the live client:
        a cached read whose entry was missing, filled by this call (not by a fill another thread had
        started), from a cache whose source is this Reader's ``live``. Such a list is already the API
        server's current answer.
        """
        lister = self._cached if source == CACHE else self._live
        started = time.perf_counter()
        filled = False
        try:
            if lister is None:
                raise NoLiveReaderError("no live client: this Reader was built without one, so it cannot "
                                        "read the API server")
            if isinstance(lister, PodCache):
                pods, filled = lister.read(selector)
            else:
                pods = lister.list_pods(selector)
        except Exception as exc:
            error = exc if isinstance(exc, PodReadError) else PodReadError(f"unexpected error: {exc!r}")
            if error is not exc:
                error.__cause__ = exc
            error.located(method, source)
            self._finish(method, source, selector, started, error=error)
            log.warning("pod read failed: %s from %s (%s): %s", method, source, selector.describe(), error.reason)
            if error is exc:
                raise
            raise error from exc
        self._finish(method, source, selector, started, pods=pods, filled=filled)
        listed_live = filled and self._live is not None and isinstance(lister, PodCache) and lister.source is self._live
        return pods, listed_live

    def _finish(
        self, method: str, source: str, selector: PodSelector, started: float,
        *, pods: list[Pod] | None = None, error: PodReadError | None = None, filled: bool = False,
    ) -> None:
        seconds = time.perf_counter() - started
        outcome = "ok" if error is None else "error"
        self._metrics.reads.labels(method, source, outcome).inc()
        self._metrics.read_seconds.labels(method, source).observe(seconds)
        if trace.recording_open():
            trace.note(trace.ReadRecord(
                method=method, source=source, selector=selector.describe(), outcome=outcome,
                pods=len(pods or ()), seconds=seconds, error=None if error is None else str(error), filled=filled,
                items=tuple(pods) if pods is not None and trace.keeping_pods() else None,
            ))
