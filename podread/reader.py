"""Reader: every Pod read the controller makes. Each method names what it reads and picks its source."""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NoReturn, TypeVar

from podread import calldeadline, trace
from podread.access import AccessReviewer, read_permission
from podread.attempts import attempt_in_name, workload_name
from podread.cached import CachedLister, DepartedLister, as_cached
from podread.constants import JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL
from podread.errors import DeadlineExceeded, NoLiveReaderError, PodReadError
from podread.jobs import Job, JobLister
from podread.metrics import ReadMetrics, default_metrics
from podread.nodes import NodeCache, NodeLister, NodeState, read_states
from podread.nodewatch import NodeWatch
from podread.selector import Counted, Pod, PodLister, PodSelector, counted, is_active, job_selector, tells_a_failure

log = logging.getLogger("podread")
L = TypeVar("L")

CACHE = "cache"
LIVE = "live"
DEPARTED = "departed"
"""The source of the pods ``attempt_failure_pods`` adds from memory: those the pod watch saw deleted."""
MAX_SET_VALUES = 50
"""The most workload names ``active_attempt_pods`` puts in one ``in (...)`` label term; past it,
the read selects every JobSet-labelled pod of the namespace and keeps the Job's own (one list,
whatever the attempt)."""


class Reader:
    """Reads Pods from the job-scoped cache or from the API server, whichever the read needs.

    ``cached`` reads through the job-scoped cache: a ``CachedLister`` (``podread.cached``; in
    production a ``PodCache``), or a plain ``PodLister``, wrapped once in ``Uncached`` (every read
    lists from it; a live-only Reader, a snapshot). ``live`` reads the API server (a
    ``LiveClient``). A unit test may pass the same fake lister for both.

    A ``live`` of ``None`` is not replaced by ``cached``: the live reads exist because the cache
    cannot answer them, and ``active_job_pods``' check against the API server would quietly become
    a second cached read. Every live read then raises ``NoLiveReaderError`` instead, logged and
    counted like any failed read.

    Every method returns pods as plain dicts in the API server's JSON form (do not mutate them), an
    empty list for no pods, or raises ``PodReadError`` naming the method, the source and the cause.
    Pods read from the cache are slim: only the fields in ``podread.slim.KEPT`` (name, namespace,
    uid, resourceVersion, labels, creation and deletion timestamps, ``spec.nodeName``,
    ``status.phase``); a caller of a cached read that needs another field adds it there.
    Each read is counted and timed in ``metrics`` and noted in an open ``trace.recording()``; the
    note holds the selector itself, and describes it only when something reads its ``selector``.

    Beside the pods, the drain barrier reads two other kinds through here, each live and each
    failing like a pod read: the batch Jobs of a Job's attempts (``attempt_jobs``, through
    ``jobs``, a ``JobLister``) and Nodes (``node_states``, through ``nodes``). Without ``jobs`` or
    ``nodes`` those reads raise ``NoLiveReaderError``: never "none". ``node_cache`` (``None``: every
    node read is a GET) keeps the node states that license nothing for a few seconds, shared by
    the threads that use this Reader (``node_states``); ``node_watch`` (a ``podread.nodewatch.NodeWatch``,
    started by the first ``node_states``, stopped by ``close``) answers a healthy node's state before it.

    ``departed`` (a ``DepartedLister``; default: the cached side when it is one, as a ``PodCache``
    with a watch is) holds the pods the watch saw deleted that ``attempt_failure_pods`` adds to
    its live answer; without one it adds none (TTL or live mode, a snapshot without them).
    """

    def __init__(self, cached: CachedLister | PodLister, live: PodLister | None, *,
                 metrics: ReadMetrics | None = None, nodes: NodeLister | None = None,
                 access: AccessReviewer | None = None, jobs: JobLister | None = None,
                 node_cache: NodeCache | None = None, departed: DepartedLister | None = None,
                 node_watch: NodeWatch | None = None) -> None:
        self._cached = as_cached(cached)
        self._departed = departed if departed is not None else (
            self._cached if isinstance(self._cached, DepartedLister) else None)
        self._live = live
        self._metrics = metrics or default_metrics()
        self._nodes = nodes
        self._node_cache = node_cache
        self._node_watch = node_watch
        self._access = access
        self._jobs = jobs

    def close(self) -> None:
        """Stops what the cache runs in the background (its watch, in watch mode) and the Node watch.
        Reads still work."""
        self._cached.close()
        if self._node_watch is not None:
            self._node_watch.stop()

    @property
    def has_live(self) -> bool:
        """Whether live reads can succeed at all (a live client was given)."""
        return self._live is not None

    def job_pods(self, namespace: str, job: str) -> list[Pod]:
        """A Job's workload pods from the cache: the pods carrying JOB_LABEL=job in namespace, slim.

        Freshness: as old as the cache's TTL (the watch's last confirmation, or the entry's list).
        No pods is an empty list.
        """
        return self._read("job_pods", CACHE, job_selector(namespace, job))

    def counted_job_pods(self, namespace: str, job: str, reported: int | None) -> Counted:
        """A Job's workload pods for the count a status reports (``activePods``): JOB_LABEL=job in
        namespace, from the cache (slim) when as many of them are active as ``reported`` (the count
        the status holds now; ``None``: none yet), else from the API server (whole pods).

        A count that differs from the reported one is therefore always the API server's current
        answer, never a cache's alone. Each hooks process (a gunicorn worker) keeps its own cache,
        listed at its own time, so two of them can disagree for up to a TTL (a watch each, for as
        long as one lags): a count taken from whichever cache answered would move the status back
        and forth, each write a new sync that the other process may answer. Confirmed this way, the
        status changes only when the pods on the server do, and a status fed back is a fixed point.
        When the cache missed and this call's own fill listed the pods from the live client, that
        list is the answer (no second read). Returns the pods with their active count
        (``podread.selector.Counted``: counted once, the count the caller writes). A failed read
        raises, never "no pods".
        """
        selector = job_selector(namespace, job)
        cached, listed_live, active = self._list("counted_job_pods", CACHE, selector)
        answer = counted(cached) if active is None else Counted(cached, active)  # counted where the cache keeps them
        if listed_live or answer.active == reported:
            return answer
        return counted(self._read("counted_job_pods", LIVE, selector))

    def active_job_pods(self, namespace: str, job: str) -> list[Pod]:
        """A Job's workload pods that have not finished: JOB_LABEL=job in namespace, phase neither
        Succeeded nor Failed (a pod being deleted is still active).

        Reads the cache (slim pods), and when no active pod remains there reads the API server
        (whole pods) before returning none. A caller acts on "none active": the drain barrier lets
        teardown proceed. The cache can hold a Job's finished pods and miss a newer one that is still
        running, so the API server is checked whenever filtering leaves no active pod, not only when
        the cached list is empty. The check selects on the job label, so it sees what the cache
        would hold once it catches up.
        An empty answer therefore always comes from the API server: when the cache missed and this
        call's own fill listed the pods from the live client, that list is the check.
        """
        selector = job_selector(namespace, job)
        cached, listed_live, _ = self._list("active_job_pods", CACHE, selector)
        active = [pod for pod in cached if is_active(pod)]
        if active or listed_live:
            return active
        return [pod for pod in self._read("active_job_pods", LIVE, selector) if is_active(pod)]

    def job_pods_on_node(self, node: str) -> list[Pod]:
        """The NVCRE workload pods bound to node, from the cache (slim), through the spec.nodeName
        index and JOB_LABEL. Pods of other components on the node are not returned.
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

    def active_launcher_pods(self, namespace: str, job: str) -> list[Pod]:
        """A Job's MPI launcher pods that have not finished, of every attempt, from the API server:
        the pods carrying LAUNCHER_LABEL=job in namespace whose phase is neither Succeeded nor Failed.

        It reads by the launcher's own label, not by a workload name computed from the status or the
        spec: a launcher of an earlier attempt, or of a Job whose ``spec.launcher`` was removed, is
        found all the same. Launchers carry no JOB_LABEL, so the cache cannot hold them.
        """
        selector = PodSelector(namespace=namespace, labels={LAUNCHER_LABEL: job})
        return [pod for pod in self._read("active_launcher_pods", LIVE, selector) if is_active(pod)]

    def active_attempt_pods(self, namespace: str, job: str, last_attempt: int) -> list[Pod]:
        """The pods of a Job's workloads that have not finished, found by the labels JobSet itself
        writes, from the API server: pods in namespace whose ``jobset.sigs.k8s.io/jobset-name`` is
        one of ``<job>-0`` ... ``<job>-<last_attempt>``, phase neither Succeeded nor Failed.

        JOB_LABEL and LAUNCHER_LABEL are on the pod template, and anyone who can patch a pod can
        remove or change them; JobSet's label names the workload the pod was made for. Up to
        MAX_SET_VALUES names go in one ``in (...)`` term; beyond that, the read selects every pod
        carrying the JobSet label in namespace and keeps those whose value is ``<job>-<number>``
        (every attempt). Either way one list. The cache cannot serve it (no JOB_LABEL term).
        """
        selector, own = attempt_selector(namespace, job, last_attempt)
        return [pod for pod in self._read("active_attempt_pods", LIVE, selector) if is_active(pod) and own(pod)]

    def attempt_jobs(self, namespace: str, job: str, last_attempt: int) -> list[Job]:
        """The ``batch/v1`` Jobs of a Job's workloads, of every attempt, from the API server: Jobs in
        namespace labelled JOB_LABEL=job (the hooks stamp it on every replicated job's Job template,
        so JobSet writes it on every batch Job of every attempt: no attempt bound, whatever the
        status says or once said), together with those whose ``jobset.sigs.k8s.io/jobset-name``
        label is one of ``<job>-0`` ... ``<job>-<last_attempt>`` (the names, and past
        MAX_SET_VALUES the fallback, of ``active_attempt_pods``: batch Jobs made before the label
        was stamped, or whose label was removed). Two lists; each Job once (by uid, else name).
        Every such Job counts, finished or not, a Job being deleted too: it still exists (the
        caller decides which may still create a pod). Sorted by name.

        Metacontroller deletes a JobSet in the background; the garbage collector deletes its Jobs
        later, and until then such a Job can still create a pod (a retry under ``backoffLimit``,
        the next completions). Live, not cached: the pod cache holds pods only, and a caller acts on
        "none left" (the drain barrier lets teardown proceed), so it must be the server's current
        state. An empty list means the API server holds no such Job in namespace. Raises
        ``PodReadError`` (method ``attempt_jobs``, source ``live``) when either list fails; without
        a ``JobLister`` ``NoLiveReaderError``. The two lists are sent together (``_list_jobs``):
        the call waits one round trip, not two (issue 36 item 8).
        """
        selector, own = attempt_selector(namespace, job, last_attempt)
        labelled, named = self._list_jobs(job_selector(namespace, job), selector)
        named = [found for found in named if own(found)]
        unique = {_object_key(found): found for found in (*labelled, *named)}
        return sorted(unique.values(), key=lambda found: str((found.get("metadata") or {}).get("name", "")))

    def _list_jobs(self, *selectors: PodSelector) -> list[list[Job]]:
        """The live lists of batch Jobs for ``attempt_jobs``, one per selector, sent at the same time:
        every one but the last on a thread of ``_helpers()`` (in a copy of this call's context: the
        hook call's deadline bounds it), the last on this thread; a helper's answer is waited for no
        longer than that deadline (``_waited``: all helpers busy with other calls' lists fails the
        read, it never holds the call past its deadline). Once every one has ended, each is
        counted, timed, logged and traced as a pod read is, in the selectors' order; then the first
        that failed is raised (``PodReadError``): never a partial answer."""
        started = time.perf_counter()
        try:
            lister = _sendable(self._jobs, "no batch Job lister: this Reader was built without one, so it cannot "
                                           "read the API server's Jobs")
        except Exception as exc:
            self._failed("attempt_jobs", LIVE, selectors[0], started, exc)
        sent: list[Future[tuple[list[Job] | Exception, float]]] = [
            _helpers().submit(contextvars.copy_context().run, _timed, lister.list_jobs, selector)
            for selector in selectors[:-1]]
        last = _timed(lister.list_jobs, selectors[-1])
        ended = [_waited(future, started) for future in sent] + [last]
        answers: list[list[Job]] = []
        first: PodReadError | None = None
        for selector, (answer, seconds) in zip(selectors, ended, strict=True):
            if isinstance(answer, Exception):
                try:
                    self._failed("attempt_jobs", LIVE, selector, time.perf_counter() - seconds, answer)
                except PodReadError as exc:
                    first = first or exc
                continue
            self._finish("attempt_jobs", LIVE, selector, time.perf_counter() - seconds, pods=answer)
            answers.append(answer)
        if first is not None:
            raise first
        return answers

    def attempt_failure_pods(self, namespace: str, workload: str) -> list[Pod]:
        """The pods of a failed workload that say why it failed: pods JobSet labelled with
        ``workload`` (``jobset.sigs.k8s.io/jobset-name``, workers and launcher alike) whose phase is
        Failed, or that carry a ``DisruptionTarget`` condition, or a container that ended with a
        non-zero exit code. Sorted by name.

        Two sources. The API server (whole pods): live, not cached, because a failure policy turns
        this answer into a final decision (``FailJob`` is terminal) and launchers are not cached.
        Then the departed pods (``departed``: the pods of the workload the pod watch saw deleted,
        within its bounds, ``podread.watch.MAX_DEPARTED`` and ``DEPARTED_SECONDS``), as last seen
        (``podread.slim.evidence``: conditions, reasons, exit codes, termination messages, node),
        each annotated ``DEPARTED_ANNOTATION`` with the time the watch saw the deletion, those that
        tell a failure, except where the API server holds a pod of the same name (the live pod
        wins, failing or not). A preemption deletes its victim before the real JobSet fails, so the
        pod that carried ``DisruptionTarget`` is found only there.

        A failed live read raises ``PodReadError`` (method ``attempt_failure_pods``, source
        ``live``): never the departed pods alone. The departed pods added are noted in an open
        ``trace.recording()`` as a read of source ``departed`` (a recording replays them from its
        ``departed`` side, never as pods the API server holds).
        """
        selector = PodSelector(namespace=namespace, labels={JOBSET_NAME_LABEL: workload})
        listed = self._read("attempt_failure_pods", LIVE, selector)
        pods = [pod for pod in listed if tells_a_failure(pod)]
        if self._departed is not None:
            live_names = {str((pod.get("metadata") or {}).get("name", "")) for pod in listed}
            started = time.perf_counter()
            departed = [pod for pod in self._departed.departed_pods(namespace, workload)
                        if tells_a_failure(pod) and str(pod["metadata"].get("name", "")) not in live_names]
            if departed and trace.recording_open():
                trace.note(trace.ReadRecord(
                    method="attempt_failure_pods", source=DEPARTED, query=selector, outcome="ok", pods=len(departed),
                    seconds=time.perf_counter() - started,
                    items=tuple(departed) if trace.keeping_pods() else None))
            pods += departed
        return sorted(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name", "")))

    def node_states(self, names: list[str]) -> dict[str, NodeState]:
        """The state of each named node (``podread.nodes.read_states``), at most
        ``MAX_NODES_PER_READ`` (sorted, the first ones): from this Reader's Node watch when it is
        fresh and the node is healthy ("not stuck yet", ``podread.nodewatch``), else (watch not
        fresh, or none) from its ``NodeCache`` when it holds the node (existing, not out of
        service, read less than its TTL ago), else one GET per node, the API server's own NotFound
        read as deleted.

        "Deleted" and "out of service" license a force delete, so they always come from a GET this
        call sent, never the cache; a cached state (Ready or not) only decides whether a pod is
        reported stuck, and delays that by at most the TTL. Raises ``PodReadError`` (method
        ``node_states``) when any GET fails, or when this Reader has no node lister
        (``NoLiveReaderError``): never "deleted", never a cached state instead.
        """
        return read_states(self._nodes, names, self._metrics, self._node_cache, self._node_watch)

    def pod_delete_allowed(self, namespace: str) -> bool:
        """Whether the hooks may ``delete`` pods in ``namespace``, from the API server
        (``podread.access``: one ``SelfSubjectAccessReview``, bounded by the hook call's deadline).

        Live: the base manifests grant no pod delete and an overlay binds it per namespace, so the
        answer is the authorizer's current one, never remembered. Raises ``PodReadError`` (method
        ``pod_delete_allowed``) when the review fails or this Reader has no reviewer
        (``NoLiveReaderError``): unknown, never "allowed".
        """
        return read_permission(self._access, namespace, self._metrics)

    def _read(self, method: str, source: str, selector: PodSelector) -> list[Pod]:
        """Runs one list on ``source``; see ``_list``."""
        return self._list(method, source, selector)[0]

    def _list(self, method: str, source: str, selector: PodSelector) -> tuple[list[Pod], bool, int | None]:
        """Runs one list on ``source``, counting, timing, logging and tracing it.

        Returns the pods, whether the answer is a list this very call sent to the live client (a
        cached read whose entry was missing, filled by this call, not by a fill another thread had
        started, from this Reader's ``live``: ``CachedRead.listed_from``; such a list is already the
        API server's current answer), and how many of the pods are active when the cache counted
        them where it keeps them (``CachedRead.active``; ``None`` otherwise).
        """
        started = time.perf_counter()
        listed_from = None
        active = None
        try:
            if source == CACHE:
                answer = self._cached.read(selector)
                pods, listed_from, active = answer.pods, answer.listed_from, answer.active
            else:
                pods = _sendable(self._live, "no live client: this Reader was built without one, so it cannot "
                                             "read the API server").list_pods(selector)
        except Exception as exc:
            self._failed(method, source, selector, started, exc)
        self._finish(method, source, selector, started, pods=pods, filled=listed_from is not None)
        return pods, listed_from is not None and listed_from is self._live, active

    def _failed(self, method: str, source: str, selector: PodSelector, started: float, exc: Exception) -> NoReturn:
        """Counts, times, logs and traces a failed read, and raises it as a ``PodReadError`` that
        names ``method`` and ``source`` (an unexpected exception becomes one, code ``unexpected``)."""
        error = exc if isinstance(exc, PodReadError) else PodReadError(f"unexpected error: {exc!r}",
                                                                       code="unexpected")
        if error is not exc:
            error.__cause__ = exc
        error.located(method, source)
        self._finish(method, source, selector, started, error=error)
        log.warning("%s read failed: %s from %s (%s): %s [%s]", "job" if method == "attempt_jobs" else "pod",
                    method, source, selector.describe(), error.reason, error.code)
        if error is exc:
            raise error
        raise error from exc

    def _finish(
        self, method: str, source: str, selector: PodSelector, started: float,
        *, pods: list[Pod] | None = None, error: PodReadError | None = None, filled: bool = False,
    ) -> None:
        """Counts and times one read (``ReadMetrics.observe_read``: children bound once) and notes
        it in the open recording, if any, with ``selector`` itself (described only when read)."""
        seconds = time.perf_counter() - started
        self._metrics.observe_read(method, source, seconds, None if error is None else error.code)
        if trace.recording_open():
            trace.note(trace.ReadRecord(
                method=method, source=source, query=selector, outcome="ok" if error is None else "error",
                pods=len(pods or ()), seconds=seconds, error=None if error is None else str(error), filled=filled,
                error_code=None if error is None else error.code,
                items=tuple(pods) if pods is not None and trace.keeping_pods() else None,
            ))


HELPER_THREADS = 16
"""Threads per process that send the first of ``Reader._list_jobs``'s lists while the calling thread
sends the last: more than the default worker's 8 threads, so a list rarely waits for a thread; a large
install's worker has 20 (``manifests-large/``), so all may be busy: the read then waits no longer than
its call's deadline (``_waited``) and fails, never past it."""
_helper_pool: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _helpers() -> ThreadPoolExecutor:
    """This process's helper threads, started on first use (after gunicorn forked the worker)."""
    global _helper_pool
    with _helper_lock:
        if _helper_pool is None:
            _helper_pool = ThreadPoolExecutor(HELPER_THREADS, thread_name_prefix="podread-list")
        return _helper_pool


def _forget_helpers() -> None:
    """In a child just forked: the parent's helper threads did not come along (a fork copies only the
    forking thread), so a list handed to that pool would never run; the child starts its own on first
    use, under a lock of its own (the parent's may have been held at the fork)."""
    global _helper_pool, _helper_lock
    _helper_pool, _helper_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_helpers)


def _waited(future: Future[tuple[list[Job] | Exception, float]], started: float) -> tuple[list[Job] | Exception, float]:
    """The answer of a list sent on a helper thread (``_timed``'s), waited for until the hook call's
    deadline at most (without one, until it ends: the list is bounded by its client's timeout). Past
    the deadline: ``DeadlineExceeded`` and the seconds since ``started`` (a ``perf_counter`` time), and
    the list is cancelled if no helper took it yet (every helper busy with another call's list)."""
    left = calldeadline.remaining()
    try:
        return future.result(timeout=None if left is None else max(left, 0.0))
    except FutureTimeout:
        future.cancel()
        return (DeadlineExceeded("list batch jobs: no answer by the hook call's deadline for reads (every helper "
                                 "thread was busy, or the list was slow)"), time.perf_counter() - started)


def _timed(call: Callable[[PodSelector], list[Job]], selector: PodSelector) -> tuple[list[Job] | Exception, float]:
    """``call(selector)``'s answer, or the exception it raised, and how many seconds it took."""
    started = time.perf_counter()
    try:
        answer: list[Job] | Exception = call(selector)
    except Exception as exc:
        answer = exc
    return answer, time.perf_counter() - started


def _sendable(lister: L | None, missing: str) -> L:
    """``lister``, once a live read may be sent through it: ``NoLiveReaderError`` (``missing``) when
    this Reader has none, ``DeadlineExceeded`` when the hook call's deadline for reads has passed."""
    if lister is None:
        raise NoLiveReaderError(missing)
    left = calldeadline.remaining()
    if left is not None and left <= 0:
        raise DeadlineExceeded("not sent: the hook call's deadline for reads had passed")
    return lister


def _object_key(obj: Mapping[str, Any]) -> str:
    """What tells two listed objects apart: the uid, else the name."""
    metadata = obj.get("metadata") or {}
    return str(metadata.get("uid") or metadata.get("name", ""))


def attempt_selector(namespace: str, job: str,
                     last_attempt: int) -> tuple[PodSelector, Callable[[Mapping[str, Any]], bool]]:
    """The list of ``active_attempt_pods`` and ``attempt_jobs``, and the filter its answer goes
    through: ``jobset.sigs.k8s.io/jobset-name in (<job>-0, ..., <job>-<last_attempt>)`` up to
    MAX_SET_VALUES names (every object passes); beyond that every object carrying the label in
    namespace, kept when the value is ``<job>-<number>`` (every attempt). Raises ``ValueError``
    for a negative ``last_attempt``."""
    if last_attempt < 0:
        raise ValueError(f"last_attempt must be >= 0, got {last_attempt}")
    if last_attempt < MAX_SET_VALUES:
        names = tuple(workload_name(job, attempt) for attempt in range(last_attempt + 1))
        return PodSelector(namespace=namespace, label_in={JOBSET_NAME_LABEL: names}), lambda _: True
    def owned(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return attempt_in_name(job, str(labels.get(JOBSET_NAME_LABEL, ""))) is not None

    return PodSelector(namespace=namespace, has_labels=(JOBSET_NAME_LABEL,)), owned
