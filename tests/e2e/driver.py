"""A reconcile driver that behaves as Metacontroller does (reference/metacontroller-facts.md §1, §2, §4, §5).

One driver for every server the tests run against. Where the NVCRE Jobs and their JobSet children
live is its ``Backend``: ``SimulatedBackend`` keeps them in memory over the step-driven ``Cluster``
simulator (whose pods the wire-level fake API server serves), and
``tests.cluster.metacontroller.ApiBackend`` keeps them in a real kube-apiserver. Either way the
driver calls the hooks as Metacontroller does:

- the request is ``{controller, parent, children, related: {}, finalizing}``; the children group
  ``JobSet.jobset.x-k8s.io/v1alpha2`` is always present, keyed by ``name`` (hook version v1) or
  ``namespace/name`` (v2); ``/finalize`` (``finalizing: true``) once the Job has a
  ``deletionTimestamp``, ``/sync`` otherwise; the finalizer is added before the first call;
- on a 200 with a JSON object: desired children that are not observed are created, observed ones
  that are omitted are deleted (background propagation: their pods can outlive them), existing
  ones are never updated (``OnDelete``); the whole status is replaced by the answer's (plus
  ``observedGeneration``, through the ``/status`` subresource on a real server); ``finalized:
  true`` removes the finalizer and the Job is gone; ``resyncAfterSeconds`` schedules one more call;
- on a non-200, a body that is not a JSON object, no answer within the 10 s hook timeout, or a
  write the server refuses: nothing more is written and the Job is retried with exponential
  backoff (429: after ``Retry-After``);
- a Job is called again on every change of itself or of its children (JobSet status included),
  never because a pod changed: pods are not children, so only resyncs see them;
- with ``workloads`` (the ``manifests-kueue`` overlay's CompositeController), Workloads
  are a second child type (``Workload.kueue.x-k8s.io/v1beta2``, ``OnDelete`` as well) and every
  WorkloadPriorityClass and ResourceFlavor is a related object (the customize hook's answer, the
  same for every Job); the backend must then offer ``workloads``, ``create_workload``,
  ``delete_workload`` and ``related`` (related group -> objects). A Workload
  deleted while a pod of its Job is active is a violation: its quota would go with it.

Time is the simulated clock (``advance``) unless a ``clock`` is given (wall-clock on a real server).
"""

from __future__ import annotations

import http.client
import math
import select
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from tests.e2e.cluster import Cluster, clone, timestamp
from tests.e2e.invariants import Invariants
from tests.support.uids import uid

Key = tuple[str, str]
Obj = dict[str, Any]

JOBSET_GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
WORKLOAD_GROUP = "Workload.kueue.x-k8s.io/v1beta2"
CONTROLLER_NAME = "nvcre-jobs"
FINALIZER = f"metacontroller.io/compositecontroller-{CONTROLLER_NAME}"
HOOK_TIMEOUT_SECONDS = 10.0
MAX_CALLS_PER_STEP = 12
"""A Job called more often than this in one step (its status never settling) is a hot loop."""


@dataclass
class Reply:
    """One hook call's outcome: ``status`` (``None`` when there was no HTTP answer), body, seconds."""

    status: int | None
    body: bytes
    seconds: float
    headers: Mapping[str, str] = field(default_factory=dict)
    error: str = ""


class Transport(Protocol):
    """How the driver reaches the hooks."""

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply: ...


GO_IDLE_CONN_TIMEOUT = 90.0
"""Go's ``http.DefaultTransport.IdleConnTimeout``: an idle connection is closed by the client after this."""
GO_MAX_IDLE_CONNS_PER_HOST = 2
"""Go's ``http.DefaultMaxIdleConnsPerHost``: idle connections kept per host; one more is closed."""


class HttpTransport:
    """POSTs to a real server over HTTP as Metacontroller's hook client does: Go's ``http.Client``
    over the default transport (net/http/transport.go), with the hook timeout.

    Connections are kept alive and reused, the most recently used first; at most
    ``GO_MAX_IDLE_CONNS_PER_HOST`` stay idle (a connection given back beyond that is closed), and one
    idle ``GO_IDLE_CONN_TIMEOUT`` seconds is closed by the client. One the server has closed is
    dropped before reuse (Go's read loop sees the FIN first). A call that fails on a reused
    connection is not retried (a POST is not replayable): it is a failed call, as Go's ``EOF``.
    Thread-safe: Metacontroller's workers share one. ``dials`` counts the connections opened.
    ``close`` closes the idle connections (``HookServer.stop`` does, so gunicorn has none to wait for).
    """

    def __init__(self, host: str, port: int, *, timeout: float = HOOK_TIMEOUT_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.dials = 0
        self._clock = clock
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """One call; a timeout or connection error is a ``Reply`` with ``status=None``."""
        started = time.perf_counter()
        connection, reused = self._take()
        try:
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            where = "a reused" if reused else "a new"
            return Reply(None, b"", time.perf_counter() - started, error=f"{exc!r} on {where} connection")
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return Reply(response.status, data, time.perf_counter() - started,
                     {k.lower(): v for k, v in response.getheaders()})

    def close(self) -> None:
        """Closes every idle connection; one in use goes back to the pool when its call ends."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, _ in idle:
            connection.close()

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        """The most recently used idle connection still open (closing the timed-out and the
        server-closed ones on the way), else a new one; and whether it is reused."""
        now = self._clock()
        with self._lock:
            while self._idle:
                connection, since = self._idle.pop()
                if now - since < GO_IDLE_CONN_TIMEOUT and not _closed_by_server(connection):
                    return connection, True
                connection.close()
            self.dials += 1
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout), False

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        """Keeps ``connection`` idle for reuse, or closes it when enough are idle (``tryPutIdleConn``)."""
        with self._lock:
            if len(self._idle) < GO_MAX_IDLE_CONNS_PER_HOST:
                self._idle.append((connection, self._clock()))
                return
        connection.close()


def _closed_by_server(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection is unusable: no socket, or one that reads (the server's FIN, or
    bytes nobody asked for)."""
    sock = connection.sock
    return sock is None or bool(select.select([sock], [], [], 0)[0])


class AppTransport:
    """Calls a Flask app in process through its test client (the fast path)."""

    def __init__(self, app: Any) -> None:
        self.client = app.test_client()

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """One call through the test client."""
        started = time.perf_counter()
        response = self.client.post(path, data=body, headers=dict(headers), content_type="application/json")
        return Reply(response.status_code, response.get_data(), time.perf_counter() - started,
                     {k.lower(): v for k, v in response.headers.items()})


@dataclass
class Call:
    """One hook call the driver made and what it did with the answer."""

    job: str
    hook: str
    request: dict[str, Any]
    reply: Reply
    body: Any = None
    applied: bool = False
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)



class BackendError(Exception):
    """A write the server refused or could not take (a conflict, an outage): the driver writes
    nothing more for the Job in this call and retries it later, as Metacontroller requeues."""


class Backend(Protocol):
    """Where the driver's NVCRE Jobs (parents) and JobSets (children) live.

    Reads return the objects as the server holds them; writes raise ``BackendError`` when refused.
    """

    def parents(self) -> dict[Key, Obj]:
        """Every Job the driver manages, by ``(namespace, name)``; a Job that is gone is absent."""
        ...

    def create_parent(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """Creates a Job (``kubectl apply``)."""
        ...

    def patch_parent_spec(self, namespace: str, name: str, changes: Mapping[str, Any]) -> bool:
        """Changes spec fields (``None`` removes one); False when the Job is gone."""
        ...

    def delete_parent(self, namespace: str, name: str) -> bool:
        """``kubectl delete``: the finalizer keeps the Job; False when it was already gone."""
        ...

    def set_finalizers(self, parent: Obj, finalizers: list[str]) -> None:
        """Writes the Job's finalizer list (optimistic: on the ``parent`` version read)."""
        ...

    def write_status(self, parent: Obj, status: Obj) -> None:
        """Replaces the Job's whole status (the ``/status`` subresource on a real server)."""
        ...

    def children(self, parent: Obj) -> list[Obj]:
        """The JobSets the Job controls (ControllerRef), as Metacontroller observes them."""
        ...

    def child_versions(self, parent: Obj) -> tuple[Any, ...]:
        """What a change of the children shows as (names and resourceVersions)."""
        ...

    def create_child(self, parent: Obj, child: Obj) -> None:
        """Creates a JobSet owned by the Job (controller ownerReference)."""
        ...

    def delete_child(self, parent: Obj, child: Obj) -> None:
        """Deletes a JobSet with background propagation and a UID precondition."""
        ...


class SimulatedBackend:
    """Jobs in memory, JobSets in the ``Cluster`` simulator (whose pods the fake API server serves).

    The Job objects are kept here and changed in place; a Job whose last finalizer goes is removed
    at once and its JobSets are garbage-collected (deleted) with it.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.objects: dict[Key, Obj] = {}
        self._uids = 0

    def parents(self) -> dict[Key, Obj]:
        return self.objects

    def create_parent(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        self._uids += 1
        self.objects[(namespace, name)] = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "uid": uid(f"job/{namespace}/{name}/{self._uids}"),
                         "generation": 1, "resourceVersion": "1", "creationTimestamp": timestamp(self.cluster.time)},
            "spec": clone(dict(spec)),
        }

    def patch_parent_spec(self, namespace: str, name: str, changes: Mapping[str, Any]) -> bool:
        obj = self.objects.get((namespace, name))
        if obj is None:
            return False
        spec = obj["spec"]
        for key, value in changes.items():
            if value is None:
                spec.pop(key, None)
            else:
                spec[key] = value
        obj["metadata"]["generation"] += 1
        _touch(obj)
        return True

    def delete_parent(self, namespace: str, name: str) -> bool:
        obj = self.objects.get((namespace, name))
        if obj is None:
            return False
        metadata = obj["metadata"]
        if "deletionTimestamp" not in metadata:
            metadata["deletionTimestamp"] = timestamp(self.cluster.time)
            if not metadata.get("finalizers"):
                self._remove(obj)  # never synced: nothing holds it
                return True
            _touch(obj)
        return True

    def set_finalizers(self, parent: Obj, finalizers: list[str]) -> None:
        parent["metadata"]["finalizers"] = list(finalizers)
        _touch(parent)
        if not finalizers and "deletionTimestamp" in parent["metadata"]:
            self._remove(parent)

    def write_status(self, parent: Obj, status: Obj) -> None:
        parent["status"] = status
        _touch(parent)

    def children(self, parent: Obj) -> list[Obj]:
        return self.cluster.jobsets_of(parent["metadata"]["uid"])

    def child_versions(self, parent: Obj) -> tuple[Any, ...]:
        return self.cluster.jobset_versions(parent["metadata"]["uid"])

    def create_child(self, parent: Obj, child: Obj) -> None:
        self.cluster.create_jobset(child, parent["metadata"]["uid"])

    def delete_child(self, parent: Obj, child: Obj) -> None:
        self.cluster.delete_jobset(child["metadata"]["namespace"], child["metadata"]["name"])

    def _remove(self, obj: Obj) -> None:
        metadata = obj["metadata"]
        self.objects.pop((metadata["namespace"], metadata["name"]), None)
        for child in self.cluster.jobsets_of(metadata["uid"]):  # garbage collection of what is left
            self.cluster.delete_jobset(metadata["namespace"], child["metadata"]["name"])


def _touch(obj: Obj) -> None:
    metadata = obj["metadata"]
    metadata["resourceVersion"] = str(int(metadata["resourceVersion"]) + 1)


@dataclass
class _Job:
    """The driver's bookkeeping for one Job: its last-read object and its work-queue state."""

    obj: Obj
    due_at: float = 0.0
    failures: int = 0
    seen: tuple[Any, ...] = ()
    calls_this_step: int = 0


class Driver:
    """Metacontroller's stand-in for one CompositeController over NVCRE Jobs.

    ``backend`` holds the Jobs and JobSets (a ``Cluster`` is wrapped in a ``SimulatedBackend``);
    ``invariants`` is told of every answer and write (defaults to ``Invariants`` of that cluster).
    ``version`` is the hook version (``"v1"`` or ``"v2"``; may be changed between calls), ``token``
    the bearer token sent (``None``: no Authorization header), ``resync_period`` the controller's
    ``resyncPeriodSeconds`` (``None``: only events and ``resyncAfterSeconds`` call the hooks),
    ``clock`` the time source in seconds (``None``: simulated, moved by ``advance``).
    """

    def __init__(
        self,
        backend: Backend | Cluster,
        transport: Transport,
        invariants: Invariants | None = None,
        *,
        version: str = "v1",
        token: str | None = None,
        resync_period: float | None = None,
        clock: Callable[[], float] | None = None,
        workloads: bool = False,
    ) -> None:
        self.workloads = workloads
        if isinstance(backend, Cluster):
            self.cluster: Cluster | None = backend
            backend = SimulatedBackend(backend)
            invariants = invariants or Invariants(self.cluster)
        else:
            self.cluster = None
        if invariants is None:
            raise ValueError("a Driver over a real server needs its invariants")
        self.backend: Backend = backend
        self.transport = transport
        self.invariants = invariants
        self.version = version
        self.token = token
        self.resync_period = resync_period
        self._clock = clock
        self._simulated_now = 0.0
        self._epoch = clock() if clock is not None else 0.0
        self.jobs: dict[Key, _Job] = {}
        self.calls: list[Call] = []
        self.keep_calls = True

    @property
    def now(self) -> float:
        """Seconds on the driver's clock (simulated, or since the driver was made)."""
        return self._clock() - self._epoch if self._clock is not None else self._simulated_now

    # -- the user's side ---------------------------------------------------------------------------

    def create_job(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """Creates an NVCRE Job (``kubectl apply``); it is due at once."""
        self.backend.create_parent(namespace, name, spec)
        self.refresh()
        if (namespace, name) in self.jobs:
            self.jobs[(namespace, name)].due_at = self.now

    def patch_spec(self, namespace: str, name: str, **changes: Any) -> bool:
        """Changes spec fields (``suspend=True``, ``maxRestarts=2``, ``launcher=None`` removes);
        bumps the generation. Returns False when the Job is gone."""
        changed = self.backend.patch_parent_spec(namespace, name, changes)
        self.refresh()
        return changed

    def delete_job(self, namespace: str, name: str) -> bool:
        """``kubectl delete``: sets the deletionTimestamp (the finalizer keeps the Job)."""
        deleted = self.backend.delete_parent(namespace, name)
        self.refresh()
        return deleted

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of the Job as last read, or ``None`` once it is gone."""
        job = self.jobs.get((namespace, name))
        return clone(job.obj) if job is not None else None

    def status(self, namespace: str, name: str) -> dict[str, Any]:
        """The Job's status as last read (``{}`` when gone or never written)."""
        job = self.jobs.get((namespace, name))
        return clone(job.obj.get("status") or {}) if job is not None else {}

    # -- time and reconciling ----------------------------------------------------------------------

    def advance(self, seconds: float = 1.0) -> None:
        """Moves the simulated clock (the cluster's steps move it by one second each); a no-op on
        a wall clock."""
        self._simulated_now += seconds

    def refresh(self) -> None:
        """Reads every Job from the backend (what Metacontroller's informer holds)."""
        current = self.backend.parents()
        for key in list(self.jobs):
            if key not in current:
                del self.jobs[key]
        for key, obj in current.items():
            job = self.jobs.get(key)
            if job is None:
                self.jobs[key] = _Job(obj, due_at=self.now)
            else:
                job.obj = obj

    def reconcile_due(self) -> int:
        """Calls the hooks for every Job that is due (changed, resync or retry time reached), again
        and again within this instant while changes keep coming; returns the number of calls."""
        made = 0
        self.refresh()
        for job in self.jobs.values():
            job.calls_this_step = 0
        while True:
            due = [key for key, job in sorted(self.jobs.items()) if self._is_due(job)]
            if not due:
                return made
            for key in due:
                job = self.jobs.get(key)
                if job is None:
                    continue
                if job.calls_this_step >= MAX_CALLS_PER_STEP:
                    self.invariants.fail(f"{key[1]}: called {MAX_CALLS_PER_STEP} times in one step "
                                         "(status or children never settle)")
                    job.due_at = self.now + 1
                    continue
                job.calls_this_step += 1
                self.reconcile(*key)
                made += 1
            self.refresh()

    def _is_due(self, job: _Job) -> bool:
        if job.calls_this_step >= MAX_CALLS_PER_STEP and job.due_at > self.now:
            return False
        return job.due_at <= self.now or self._fingerprint(job) != job.seen

    def _fingerprint(self, job: _Job) -> tuple[Any, ...]:
        """What Metacontroller's informers would report a change of: the Job and its children."""
        workloads: tuple[Any, ...] = ()
        if self.workloads:
            backend: Any = self.backend
            workloads = tuple((w["metadata"]["name"], w["metadata"]["resourceVersion"])
                              for w in backend.workloads(job.obj))
        return job.obj["metadata"]["resourceVersion"], self.backend.child_versions(job.obj), workloads

    def _key(self, obj: Mapping[str, Any]) -> str:
        metadata = obj["metadata"]
        return metadata["name"] if self.version == "v1" else f"{metadata['namespace']}/{metadata['name']}"

    def request_for(self, namespace: str, name: str) -> dict[str, Any]:
        """The request body Metacontroller would send for the Job now."""
        job = self.jobs[(namespace, name)]
        children = {}
        for child in self.backend.children(job.obj):
            metadata = child["metadata"]
            key = metadata["name"] if self.version == "v1" else f"{metadata['namespace']}/{metadata['name']}"
            children[key] = child
        child_resources = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "resource": "jobsets",
                            "updateStrategy": {"method": "OnDelete"}}]
        groups: dict[str, Any] = {JOBSET_GROUP: children}
        related: dict[str, Any] = {}
        if self.workloads:
            backend: Any = self.backend
            child_resources.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "workloads",
                                    "updateStrategy": {"method": "OnDelete"}})
            groups[WORKLOAD_GROUP] = {self._key(w): w for w in backend.workloads(job.obj)}
            related = {group: {obj["metadata"]["name"]: obj for obj in objects}
                       for group, objects in backend.related().items()}
        return {
            "controller": {"metadata": {"name": CONTROLLER_NAME},
                           "spec": {"generateSelector": True,
                                    "parentResource": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "resource": "jobs"},
                                    "childResources": child_resources}},
            "parent": clone(job.obj),
            "children": groups,
            "related": related,
            "finalizing": "deletionTimestamp" in job.obj["metadata"],
        }

    def reconcile(self, namespace: str, name: str) -> Call | None:
        """One hook call for the Job, and the answer applied as Metacontroller would. Returns
        ``None`` when a write before the call was refused (the Job is retried later)."""
        job = self.jobs[(namespace, name)]
        metadata = job.obj["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if "deletionTimestamp" not in metadata and FINALIZER not in finalizers:
            try:  # added before any hook call
                self.backend.set_finalizers(job.obj, [*finalizers, FINALIZER])
            except BackendError:
                self._retry_later(job, Reply(None, b"", 0.0))
                return None
            self.refresh()
            job = self.jobs[(namespace, name)]
        job.seen = self._fingerprint(job)
        request = self.request_for(namespace, name)
        hook = "finalize" if request["finalizing"] else "sync"
        headers = {"Authorization": f"Bearer {self.token}"} if self.token is not None else {}
        reply = self.transport.post(f"/{hook}", orjson.dumps(request), headers)
        call = Call(name, hook, request if self.keep_calls else {}, reply)
        if self.keep_calls:
            self.calls.append(call)
        body: Any = None
        if reply.status == 200:
            try:
                body = orjson.loads(reply.body)
            except orjson.JSONDecodeError:
                body = None
        call.body = body
        self.invariants.on_answer(name, hook, self.version, reply.status, body if reply.status == 200 else None,
                                  reply.seconds)
        if reply.status != 200 or not isinstance(body, dict) or not self._strict_ok(body):
            self._retry_later(job, reply)
            return call
        try:
            self._apply(job, request, body, call)
        except BackendError:
            self._retry_later(job, reply)
        return call

    def _apply_workloads(self, parent: Obj, observed: Mapping[str, Obj], desired: Mapping[str, Mapping[str, Any]],
                         call: Call) -> None:
        """Deletes omitted Workloads (checking that no pod of the Job is active: the quota goes
        with the Workload) and creates new ones, labelled and owned like every child."""
        backend: Any = self.backend
        namespace, name, uid = parent["metadata"]["namespace"], parent["metadata"]["name"], parent["metadata"]["uid"]
        for child_name, child in sorted(observed.items()):
            if child_name not in desired and "deletionTimestamp" not in child["metadata"]:
                active = self.invariants.cluster.active_pods(namespace, name)
                if active:
                    self.invariants.fail(f"{name}: Workload {child_name} (the quota) released while pods are "
                                         f"active: {sorted(p['metadata']['name'] for p in active)}")
                backend.delete_workload(parent, child)
                call.deleted.append(f"Workload/{child_name}")
        for child_name, child in sorted(desired.items()):
            if child_name not in observed:
                obj = clone(dict(child))
                obj["metadata"].setdefault("namespace", namespace)
                obj["metadata"].setdefault("labels", {})["controller-uid"] = uid
                backend.create_workload(parent, obj)
                call.created.append(f"Workload/{child_name}")

    def _strict_ok(self, body: Mapping[str, Any]) -> bool:
        """Whether the decoder accepts the body: v2 is strict about unknown top-level fields."""
        if self.version == "v2":
            return not set(body) - {"status", "children", "resyncAfterSeconds", "finalized"}
        return True

    def _retry_later(self, job: _Job, reply: Reply) -> None:
        """No write at all; requeue rate-limited (per-item exponential from 5 ms), 429: Retry-After."""
        job.failures += 1
        if reply.status == 429:
            try:
                delay = float(reply.headers.get("retry-after", "0"))
            except ValueError:
                delay = 0.0
        else:
            delay = min(0.005 * 2 ** (job.failures - 1), 1000.0)
        job.due_at = self.now + max(delay, 0.001)

    def _apply(self, job: _Job, request: Mapping[str, Any], body: Mapping[str, Any], call: Call) -> None:
        """Manages the children, writes the status, removes the finalizer: in Metacontroller's order."""
        namespace, name = job.obj["metadata"]["namespace"], job.obj["metadata"]["name"]
        uid = job.obj["metadata"]["uid"]
        status = body.get("status")
        status = dict(status) if isinstance(status, Mapping) else {}
        children = body.get("children") or []
        prior = job.obj.get("status") or {}
        observed = {c["metadata"]["name"]: c for c in request["children"][JOBSET_GROUP].values()}
        observed_workloads = {c["metadata"]["name"]: c for c in request["children"].get(WORKLOAD_GROUP, {}).values()}
        desired: dict[str, Mapping[str, Any]] = {}
        desired_workloads: dict[str, Mapping[str, Any]] = {}
        for child in children:
            if (self.workloads and isinstance(child, Mapping) and child.get("kind") == "Workload"
                    and child.get("apiVersion") == "kueue.x-k8s.io/v1beta2"
                    and isinstance(child.get("metadata"), Mapping) and child["metadata"].get("name")):
                desired_workloads[child["metadata"]["name"]] = child
                continue
            if not (isinstance(child, Mapping) and child.get("kind") == "JobSet"
                    and child.get("apiVersion") == "jobset.x-k8s.io/v1alpha2"
                    and isinstance(child.get("metadata"), Mapping) and child["metadata"].get("name")):
                self.invariants.fail(f"{name}: answer has a child Metacontroller refuses: {child!r:.200}")
                self._retry_later(job, call.reply)
                return
            desired[child["metadata"]["name"]] = child
        job.failures = 0
        # manage children: deletions of omitted ones, creations of new ones; no updates (OnDelete)
        for child_name, child in sorted(observed.items()):
            if child_name not in desired and "deletionTimestamp" not in child["metadata"]:
                self.invariants.on_delete(name, child, status)
                self.backend.delete_child(job.obj, child)
                call.deleted.append(child_name)
        for child_name, child in sorted(desired.items()):
            if child_name not in observed:
                obj = clone(dict(child))
                obj["metadata"].setdefault("namespace", namespace)
                obj["metadata"].setdefault("labels", {})["controller-uid"] = uid
                self.invariants.on_create(namespace, name, obj, prior.get("phase", ""))
                self.backend.create_child(job.obj, obj)
                call.created.append(child_name)
        if self.workloads:
            self._apply_workloads(job.obj, observed_workloads, desired_workloads, call)
        # the status, replaced whole
        status["observedGeneration"] = job.obj["metadata"]["generation"]
        self.invariants.on_status(name, prior, status)
        if status != prior:
            self.backend.write_status(job.obj, status)
            self.refresh()
            job = self.jobs.get((namespace, name), job)
        call.applied = True
        if body.get("finalized") is True and "deletionTimestamp" in job.obj["metadata"]:
            self.invariants.on_finalized(namespace, name, uid)
            self.backend.set_finalizers(job.obj, [f for f in job.obj["metadata"].get("finalizers") or []
                                                  if f != FINALIZER])
            self.refresh()
            return
        resync = body.get("resyncAfterSeconds")
        due = math.inf
        if isinstance(resync, int | float) and resync > 0:
            due = self.now + float(resync)
        if self.resync_period is not None:
            due = min(due, self.now + self.resync_period)
        job.due_at = due  # the status write and child changes above are events of their own (seen is older)
