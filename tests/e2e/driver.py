"""A reconcile driver that behaves as Metacontroller does (reference/metacontroller-facts.md §1, §2, §4, §5).

It keeps NVCRE Jobs (spec, status, finalizers, deletionTimestamp) and, through the ``Cluster``,
their JobSet children, and calls the hooks:

- the request is ``{controller, parent, children, related: {}, finalizing}``; the children group
  ``JobSet.jobset.x-k8s.io/v1alpha2`` is always present, keyed by ``name`` (hook version v1) or
  ``namespace/name`` (v2); ``/finalize`` (``finalizing: true``) once the Job has a
  ``deletionTimestamp``, ``/sync`` otherwise; the finalizer is added before the first call;
- on a 200 with a JSON object: desired children that are not observed are created, observed ones
  that are omitted are deleted (background propagation: the cluster keeps their pods for a grace
  period), existing ones are never updated (``OnDelete``); the whole status is replaced by the
  answer's (plus ``observedGeneration``); ``finalized: true`` removes the finalizer and the Job is
  gone; ``resyncAfterSeconds`` schedules one more call;
- on a non-200, a body that is not a JSON object, or no answer within the 10 s hook timeout:
  nothing is written and the Job is retried with exponential backoff (429: after ``Retry-After``);
- a Job is called again on every change of itself or of its children (JobSet status included),
  never because a pod changed: pods are not children, so only resyncs see them.

Time is simulated: one ``Cluster.step`` is one second of the driver's clock.
"""

from __future__ import annotations

import http.client
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from tests.e2e.cluster import Cluster, clone, timestamp
from tests.e2e.invariants import Invariants

JOBSET_GROUP = "JobSet.jobset.x-k8s.io/v1alpha2"
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


class HttpTransport:
    """POSTs to a real server over HTTP (a fresh connection per call), with the hook timeout."""

    def __init__(self, host: str, port: int, *, timeout: float = HOOK_TIMEOUT_SECONDS) -> None:
        self.host, self.port, self.timeout = host, port, timeout

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """One call; a timeout or connection error is a ``Reply`` with ``status=None``."""
        started = time.perf_counter()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
            response = connection.getresponse()
            data = response.read()
            return Reply(response.status, data, time.perf_counter() - started,
                         {k.lower(): v for k, v in response.getheaders()})
        except (OSError, http.client.HTTPException) as exc:
            return Reply(None, b"", time.perf_counter() - started, error=repr(exc))
        finally:
            connection.close()


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


@dataclass
class _Job:
    obj: dict[str, Any]
    due_at: float = 0.0
    failures: int = 0
    seen: tuple[Any, ...] = ()
    calls_this_step: int = 0


class Driver:
    """Metacontroller's stand-in for one CompositeController over NVCRE Jobs.

    ``version`` is the hook version (``"v1"`` or ``"v2"``; may be changed between calls), ``token``
    the bearer token sent (``None``: no Authorization header), ``resync_period`` the controller's
    ``resyncPeriodSeconds`` (``None``: only events and ``resyncAfterSeconds`` call the hooks).
    """

    def __init__(
        self,
        cluster: Cluster,
        transport: Transport,
        invariants: Invariants | None = None,
        *,
        version: str = "v1",
        token: str | None = None,
        resync_period: float | None = None,
    ) -> None:
        self.cluster = cluster
        self.transport = transport
        self.invariants = invariants or Invariants(cluster)
        self.version = version
        self.token = token
        self.resync_period = resync_period
        self.now = 0.0
        self.jobs: dict[tuple[str, str], _Job] = {}
        self.calls: list[Call] = []
        self.keep_calls = True
        self._uids = 0

    # -- the user's side ---------------------------------------------------------------------------

    def create_job(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """Creates an NVCRE Job (``kubectl apply``)."""
        self._uids += 1
        obj = {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "uid": f"job-uid-{name}-{self._uids}",
                         "generation": 1, "resourceVersion": "1", "creationTimestamp": timestamp(self.cluster.time)},
            "spec": clone(dict(spec)),
        }
        self.jobs[(namespace, name)] = _Job(obj, due_at=self.now)

    def patch_spec(self, namespace: str, name: str, **changes: Any) -> bool:
        """Changes spec fields (``suspend=True``, ``maxRestarts=2``, ...); bumps the generation.
        Returns False when the Job is gone."""
        job = self.jobs.get((namespace, name))
        if job is None:
            return False
        spec = job.obj["spec"]
        for key, value in changes.items():
            if value is None:
                spec.pop(key, None)
            else:
                spec[key] = value
        job.obj["metadata"]["generation"] += 1
        self._touch(job)
        return True

    def delete_job(self, namespace: str, name: str) -> bool:
        """``kubectl delete``: sets the deletionTimestamp (the finalizer keeps the Job)."""
        job = self.jobs.get((namespace, name))
        if job is None:
            return False
        metadata = job.obj["metadata"]
        if "deletionTimestamp" not in metadata:
            metadata["deletionTimestamp"] = timestamp(self.cluster.time)
            if FINALIZER not in metadata.get("finalizers", []):
                self.jobs.pop((namespace, name))  # never synced: nothing holds it
                return True
            self._touch(job)
        return True

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of the Job, or ``None`` once it is gone."""
        job = self.jobs.get((namespace, name))
        return clone(job.obj) if job is not None else None

    def status(self, namespace: str, name: str) -> dict[str, Any]:
        """The Job's status (``{}`` when gone or never written)."""
        job = self.jobs.get((namespace, name))
        return clone(job.obj.get("status") or {}) if job is not None else {}

    # -- time and reconciling ----------------------------------------------------------------------

    def advance(self, seconds: float = 1.0) -> None:
        """Moves the driver's clock (the cluster's steps move it by one second each)."""
        self.now += seconds

    def reconcile_due(self) -> int:
        """Calls the hooks for every Job that is due (changed, resync or retry time reached), again
        and again within this instant while changes keep coming; returns the number of calls."""
        made = 0
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

    def _is_due(self, job: _Job) -> bool:
        if job.calls_this_step >= MAX_CALLS_PER_STEP and job.due_at > self.now:
            return False
        return job.due_at <= self.now or self._fingerprint(job) != job.seen

    def _fingerprint(self, job: _Job) -> tuple[Any, ...]:
        """What Metacontroller's informers would report a change of: the Job and its children."""
        return job.obj["metadata"]["resourceVersion"], self.cluster.jobset_versions(job.obj["metadata"]["uid"])

    def _touch(self, job: _Job) -> None:
        metadata = job.obj["metadata"]
        metadata["resourceVersion"] = str(int(metadata["resourceVersion"]) + 1)

    def request_for(self, namespace: str, name: str) -> dict[str, Any]:
        """The request body Metacontroller would send for the Job now."""
        job = self.jobs[(namespace, name)]
        children = {}
        for child in self.cluster.jobsets_of(job.obj["metadata"]["uid"]):
            metadata = child["metadata"]
            key = metadata["name"] if self.version == "v1" else f"{metadata['namespace']}/{metadata['name']}"
            children[key] = child
        return {
            "controller": {"metadata": {"name": CONTROLLER_NAME},
                           "spec": {"generateSelector": True,
                                    "parentResource": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "resource": "jobs"},
                                    "childResources": [{"apiVersion": "jobset.x-k8s.io/v1alpha2",
                                                        "resource": "jobsets",
                                                        "updateStrategy": {"method": "OnDelete"}}]}},
            "parent": clone(job.obj),
            "children": {JOBSET_GROUP: children},
            "related": {},
            "finalizing": "deletionTimestamp" in job.obj["metadata"],
        }

    def reconcile(self, namespace: str, name: str) -> Call:
        """One hook call for the Job, and the answer applied as Metacontroller would."""
        job = self.jobs[(namespace, name)]
        metadata = job.obj["metadata"]
        if "deletionTimestamp" not in metadata and FINALIZER not in metadata.setdefault("finalizers", []):
            metadata["finalizers"].append(FINALIZER)  # added before any hook call
            self._touch(job)
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
        self._apply(job, body, call)
        return call

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

    def _apply(self, job: _Job, body: Mapping[str, Any], call: Call) -> None:
        namespace, name = job.obj["metadata"]["namespace"], job.obj["metadata"]["name"]
        uid = job.obj["metadata"]["uid"]
        job.failures = 0
        status = body.get("status")
        status = dict(status) if isinstance(status, Mapping) else {}
        children = body.get("children") or []
        prior = job.obj.get("status") or {}
        observed = {c["metadata"]["name"]: c for c in self.cluster.jobsets_of(uid)}
        desired: dict[str, Mapping[str, Any]] = {}
        for child in children:
            if not (isinstance(child, Mapping) and child.get("kind") == "JobSet"
                    and child.get("apiVersion") == "jobset.x-k8s.io/v1alpha2"
                    and isinstance(child.get("metadata"), Mapping) and child["metadata"].get("name")):
                self.invariants.fail(f"{name}: answer has a child Metacontroller refuses: {child!r:.200}")
                self._retry_later(job, call.reply)
                return
            desired[child["metadata"]["name"]] = child
        # manage children: deletions of omitted ones, creations of new ones; no updates (OnDelete)
        for child_name, child in sorted(observed.items()):
            if child_name not in desired:
                self.invariants.on_delete(name, child, status)
                self.cluster.delete_jobset(namespace, child_name)
                call.deleted.append(child_name)
        for child_name, child in sorted(desired.items()):
            if child_name not in observed:
                obj = clone(dict(child))
                obj["metadata"].setdefault("namespace", namespace)
                obj["metadata"].setdefault("labels", {})["controller-uid"] = uid
                self.invariants.on_create(namespace, name, obj, prior.get("phase", ""))
                self.cluster.create_jobset(obj, uid)
                call.created.append(child_name)
        # the status, replaced whole
        status["observedGeneration"] = job.obj["metadata"]["generation"]
        self.invariants.on_status(name, prior, status)
        if status != prior:
            job.obj["status"] = status
            self._touch(job)
        call.applied = True
        if body.get("finalized") is True and "deletionTimestamp" in job.obj["metadata"]:
            self.invariants.on_finalized(namespace, name, uid)
            job.obj["metadata"]["finalizers"] = [f for f in job.obj["metadata"]["finalizers"] if f != FINALIZER]
            if not job.obj["metadata"]["finalizers"]:
                del self.jobs[(namespace, name)]
                for child in self.cluster.jobsets_of(uid):  # garbage collection of what is left
                    self.cluster.delete_jobset(namespace, child["metadata"]["name"])
            return
        resync = body.get("resyncAfterSeconds")
        due = math.inf
        if isinstance(resync, int | float) and resync > 0:
            due = self.now + float(resync)
        if self.resync_period is not None:
            due = min(due, self.now + self.resync_period)
        job.due_at = due  # the status write and child changes above are events of their own (seen is older)
