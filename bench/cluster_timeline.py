"""When things happened on the real control plane, as watches see them: the scale benchmark's clock.

``Timeline`` follows three watches of one namespace with admin credentials (not the hooks', so the
API server's count of the hooks' requests is untouched): pods, JobSets and NVCRE Jobs. It records,
by ``clock`` (``time.monotonic``), when each pod was deleted (with its Job and attempt,
read from its labels), its phase, when each JobSet was added and when each NVCRE Job was deleted.
From these come the latencies the benchmark reports:

- restart latency: the old attempt's last pod gone -> the next attempt's JobSet added;
- delete latency: the Job's last pod gone -> the Job gone.

A watch event reaches the benchmark a few milliseconds after the API server wrote the change; both
ends of a latency are seen the same way, so the delay cancels. A watch that ends (its
``timeoutSeconds``) resumes from the last resourceVersion it saw (bookmarks keep that current); one
told its version is too old (410) starts again with a fresh list, which replays every object as
added (counted once, by uid).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import kubernetes
import orjson

from podread import JOB_LABEL
from tests.cluster.informers import stream_events
from tests.cluster.kube import SERVER_ERRORS
from tests.cluster.world import attempt_of_pod

WATCH_SECONDS = 10
"""Each watch request's ``timeoutSeconds``: ``stop()`` returns within about this long."""
Obj = dict[str, Any]


@dataclass
class PodRecord:
    """One pod as the pod watch last saw it."""

    name: str
    job: str
    attempt: int
    phase: str
    deleting: bool
    gone: float | None = None


Lister = Callable[..., Any]
"""A generated list method of the kubernetes client with its path arguments bound, e.g.
``partial(CoreV1Api.list_namespaced_pod, namespace)``: called with ``watch=True`` it watches."""


def watch_events(lister: Lister, resource_version: str, timeout: int = WATCH_SECONDS) -> Iterator[Obj]:
    """The events of one watch request made with ``lister`` (``tests.cluster.informers.stream_events``), from
    ``resource_version``, with bookmarks; ends when the server ends it (``timeout`` seconds)."""
    response = lister(watch=True, allow_watch_bookmarks=True, resource_version=resource_version,
                      timeout_seconds=timeout, _preload_content=False, _request_timeout=(5, timeout + 30))
    try:
        yield from stream_events(response)  # a half-sent last event is dropped: the next request resumes
    finally:
        response.release_conn()


class Timeline:
    """The watches of ``namespace`` (module doc). Use as a context manager, or ``start``/``stop``."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api_client, self.namespace, self.clock = api_client, namespace, clock
        self.pods: dict[str, PodRecord] = {}
        """Every pod seen, by uid."""
        self._by_job: dict[str, dict[str, PodRecord]] = {}
        """The same records by Job name, then uid: a Job's pods without a scan of every pod."""
        self.jobsets_added: dict[str, float] = {}
        self.jobs_gone: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> Timeline:
        """Starts the three watches and returns once each has delivered its first list."""
        ns = self.namespace
        core = kubernetes.client.CoreV1Api(self.api_client)
        custom = kubernetes.client.CustomObjectsApi(self.api_client)
        listers = {"pods": (partial(core.list_namespaced_pod, ns), self._on_pod),
                 "jobsets": (partial(custom.list_namespaced_custom_object, "jobset.x-k8s.io", "v1alpha2", ns,
                                     "jobsets"), self._on_jobset),
                 "jobs": (partial(custom.list_namespaced_custom_object, "nvcre.nvidia.com", "v1alpha1", ns, "jobs"),
                          self._on_job)}
        ready = []
        for name, (lister, handler) in listers.items():
            started = threading.Event()
            ready.append(started)
            thread = threading.Thread(target=self._follow, args=(lister, handler, started), daemon=True,
                                      name=f"timeline-{name}")
            thread.start()
            self._threads.append(thread)
        for started in ready:
            started.wait(30)
        return self

    def stop(self) -> None:
        """Ends the watches (each within ``WATCH_SECONDS``)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(WATCH_SECONDS + 35)

    def __enter__(self) -> Timeline:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the watches -------------------------------------------------------------------------------

    def _follow(self, lister: Lister, handler: Callable[[str, Obj, float], None], started: threading.Event) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:  # a fresh list: an empty version then replays every object as ADDED
                    listed = orjson.loads(lister(_preload_content=False, _request_timeout=(5, 60)).data)
                    now = self.clock()
                    for obj in listed["items"]:
                        handler("ADDED", obj, now)
                    version = listed["metadata"]["resourceVersion"]
                    started.set()
                for event in watch_events(lister, version):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            version = ""
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if kind != "BOOKMARK":
                        handler(str(kind), obj, self.clock())
            except kubernetes.client.ApiException as exc:
                if exc.status == 410:
                    version = ""
                self._stop.wait(0.5)
            except (*SERVER_ERRORS, ValueError):
                self._stop.wait(0.5)

    def _on_pod(self, kind: str, pod: Obj, now: float) -> None:
        metadata = pod["metadata"]
        labels = dict(metadata.get("labels") or {})
        attempt = attempt_of_pod(pod)
        with self._lock:
            record = self.pods.get(metadata["uid"])
            if record is None:
                record = PodRecord(metadata["name"], labels.get(JOB_LABEL, ""),
                                   int(attempt) if attempt.isdigit() else -1, "", False)
                self.pods[metadata["uid"]] = record
                self._by_job.setdefault(record.job, {})[metadata["uid"]] = record
            record.phase = str((pod.get("status") or {}).get("phase") or "")
            record.deleting = "deletionTimestamp" in metadata
            if kind == "DELETED" and record.gone is None:
                record.gone = now

    def _on_jobset(self, kind: str, jobset: Obj, now: float) -> None:
        if kind == "ADDED":
            with self._lock:
                self.jobsets_added.setdefault(jobset["metadata"]["name"], now)

    def _on_job(self, kind: str, job: Obj, now: float) -> None:
        if kind == "DELETED":
            with self._lock:
                self.jobs_gone.setdefault(job["metadata"]["name"], now)

    # -- reading -----------------------------------------------------------------------------------

    def pods_of(self, job: str) -> list[PodRecord]:
        """The pods of ``job`` seen so far, gone ones included."""
        with self._lock:
            return list(self._by_job.get(job, {}).values())

    def running(self, job: str, *, after_attempt: int = -1) -> list[PodRecord]:
        """The pods of ``job`` Running now (not deleting), of an attempt after ``after_attempt``."""
        return [p for p in self.pods_of(job) if p.gone is None and not p.deleting and p.phase == "Running"
                and p.attempt > after_attempt]

    def last_pod_gone(self, job: str, attempt: int | None = None) -> float | None:
        """When the last pod of ``job`` (of ``attempt`` only, when given) was deleted; ``None``
        while one is still there, or when none was seen."""
        pods = [p for p in self.pods_of(job) if attempt is None or p.attempt == attempt]
        if not pods or any(p.gone is None for p in pods):
            return None
        return max(p.gone for p in pods if p.gone is not None)

    def restart_latency(self, job: str, attempt: int) -> float | None:
        """Seconds from the last pod of ``job``'s ``attempt`` gone to JobSet ``<job>-<attempt+1>``
        added, or ``None`` when either has not happened."""
        gone = self.last_pod_gone(job, attempt)
        with self._lock:
            added = self.jobsets_added.get(f"{job}-{attempt + 1}")
        return None if gone is None or added is None else added - gone

    def delete_latency(self, job: str) -> float | None:
        """Seconds from the last pod of ``job`` gone to the Job gone, or ``None``."""
        gone = self.last_pod_gone(job)
        with self._lock:
            job_gone = self.jobs_gone.get(job)
        return None if gone is None or job_gone is None else job_gone - gone


def wait_for(predicate: Callable[[], bool], timeout: float, every: float = 0.5) -> bool:
    """Polls ``predicate`` until it holds (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(*SERVER_ERRORS):
            if predicate():
                return True
        time.sleep(every)
    return False
