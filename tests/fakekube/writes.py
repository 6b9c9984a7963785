"""The writes and the Node reads fakekube serves for the hooks' own calls.

- ``POST /apis/events.k8s.io/v1/namespaces/{ns}/events``: validated as kube-apiserver validates an
  events.k8s.io/v1 Event on create (name, eventTime, reportingController, reportingInstance,
  action, reason, type, note length, regarding in the same namespace); 201 with the stored Event,
  409 ``AlreadyExists`` for a name already there, 422 ``Invalid`` otherwise, and 400 for an
  ``eventTime`` that is no MicroTime (the real server's decoder refuses ``...T00:00:00+00:00``);
- ``DELETE /apis/nvcre.nvidia.com/v1alpha1/namespaces/{ns}/jobs/{name}``: over the Jobs the test
  put (``jobs``); 404 when there is none, 409 when a ``preconditions.uid`` does not match, else the
  Job is marked deleted (``deleted_jobs``) and returned;
- ``GET /apis/nvcre.nvidia.com/v1alpha1/namespaces/{ns}/jobs/{name}``: the Job from ``job_source``
  (by default ``jobs``; a harness points it at the Jobs its driver holds), 404 when there is none;
- ``PATCH /apis/nvcre.nvidia.com/v1alpha1/namespaces/{ns}/jobs/{name}``: a JSON merge patch (RFC 7386)
  of the Job the test put (``jobs``), as a workload's checkpoint acknowledgement writes its
  annotation (issue 33); 404 when there is none, 400 for a body that is not a JSON object;
- ``DELETE /api/v1/namespaces/{ns}/pods/{name}``: removes the pod from the pod store, honouring a
  UID precondition (409), 404 when absent;
- ``GET /api/v1/nodes/{name}``: from ``nodes``, else 404 with the real server's NotFound
  ``Status`` (``details: {name, kind: nodes}``);
- ``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews``: 201 with the review and
  ``status.allowed``: fakekube has no RBAC, so everything is allowed except a ``delete pods`` in a
  namespace listed in ``pod_delete_denied`` (the force delete is opt-in).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from tests.fakekube.store import PodStore, dumps

_EVENTS = re.compile(r"^/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events/?$")
_JOB = re.compile(r"^/apis/nvcre\.nvidia\.com/v1alpha1/namespaces/([^/]+)/jobs/([^/]+)$")
_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")
_NODE = re.compile(r"^/api/v1/nodes/([^/]+)$")
_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")

_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")

Answer = tuple[int, bytes]


class WriteRoutes:
    """State and answers of the routes above; ``status`` builds a Kubernetes ``Status`` body."""

    def __init__(self, store: PodStore, status: Callable[..., bytes]) -> None:
        self._store = store
        self._status = status
        self._lock = threading.Lock()
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.deleted_jobs: list[tuple[str, str]] = []
        self.deleted_pods: list[tuple[str, str, dict[str, Any]]] = []
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pod_delete_denied: set[str] = set()
        self.job_source: Callable[[str, str], Mapping[str, Any] | None] = lambda namespace, name: self.jobs.get(
            (namespace, name))
        self.job_reads = 0

    def answer(self, method: str, path: str, body: bytes) -> Answer | None:
        """The answer for a request on one of these routes, or ``None`` for any other request."""
        if method == "POST" and (match := _EVENTS.match(path)):
            return self._create_event(match.group(1), body)
        if method == "GET" and (match := _JOB.match(path)):
            return self._get_job(*match.groups())
        if method == "DELETE" and (match := _JOB.match(path)):
            return self._delete_job(*match.groups(), body)
        if method == "PATCH" and (match := _JOB.match(path)):
            return self._patch_job(*match.groups(), body)
        if method == "DELETE" and (match := _POD.match(path)):
            return self._delete_pod(*match.groups(), body)
        if method == "POST" and path.rstrip("/") == _REVIEWS:
            return self._review(body)
        if method == "GET" and (match := _NODE.match(path)):
            with self._lock:
                found = self.nodes.get(match.group(1))
            if found is None:
                return 404, self._status(404, f'nodes "{match.group(1)}" not found', reason="NotFound",
                                         details={"name": match.group(1), "kind": "nodes"})
            return 200, dumps({"kind": "Node", "apiVersion": "v1", **found})
        return None

    def _review(self, raw: bytes) -> Answer:
        try:
            review = json.loads(raw or b"{}")
        except ValueError:
            return 400, self._status(400, "the body is not JSON")
        attributes = (review.get("spec") or {}).get("resourceAttributes") or {}
        denied = (attributes.get("verb") == "delete" and attributes.get("resource") == "pods"
                  and attributes.get("group", "") == "" and attributes.get("namespace") in self.pod_delete_denied)
        status = {"allowed": not denied, **({"reason": "fakekube: pod delete denied in this namespace"}
                                            if denied else {})}
        return 201, dumps({**review, "status": status})

    def _create_event(self, namespace: str, raw: bytes) -> Answer:
        try:
            event = json.loads(raw or b"{}")
        except ValueError:
            return 400, self._status(400, "the body is not JSON")
        if event.get("eventTime") and not _MICRO_TIME.match(str(event["eventTime"])):
            # the real server's decoder refuses it before validation: 400, not 422
            return 400, self._status(400, f'Event in version "v1" cannot be handled as a Event: parsing time '
                                          f'"{event["eventTime"]}" as "2006-01-02T15:04:05.000000Z07:00"',
                                     reason="BadRequest")
        problems = _event_problems(namespace, event)
        if problems:
            return 422, self._status(422, f'Event.events.k8s.io "{event.get("metadata", {}).get("name", "")}" is '
                                          f"invalid: {'; '.join(problems)}", reason="Invalid")
        name = str(event["metadata"]["name"])
        with self._lock:
            if (namespace, name) in self.events:
                return 409, self._status(409, f'events.events.k8s.io "{name}" already exists', reason="AlreadyExists")
            stored = {**event, "metadata": {**event["metadata"], "namespace": namespace}}
            self.events[(namespace, name)] = stored
        return 201, dumps(stored)

    def _get_job(self, namespace: str, name: str) -> Answer:
        with self._lock:
            self.job_reads += 1
            job = self.job_source(namespace, name)
            if job is None:
                return 404, self._status(404, f'jobs.nvcre.nvidia.com "{name}" not found', reason="NotFound",
                                         details={"name": name, "group": "nvcre.nvidia.com", "kind": "jobs"})
            metadata = {"resourceVersion": "1", **(job.get("metadata") or {})}  # the server always sets one
            return 200, dumps({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", **job, "metadata": metadata})

    def _patch_job(self, namespace: str, name: str, raw: bytes) -> Answer:
        try:
            patch = json.loads(raw or b"null")
        except ValueError:
            patch = None
        if not isinstance(patch, dict):
            return 400, self._status(400, "the patch is not a JSON object", reason="BadRequest")
        with self._lock:
            job = self.jobs.get((namespace, name))
            if job is None:
                return 404, self._status(404, f'jobs.nvcre.nvidia.com "{name}" not found', reason="NotFound")
            merged = _merge(job, patch)
            self.jobs[(namespace, name)] = merged
        return 200, dumps({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", **merged})

    def _delete_job(self, namespace: str, name: str, raw: bytes) -> Answer:
        options = json.loads(raw or b"{}")
        with self._lock:
            job = self.jobs.get((namespace, name))
            if job is None:
                return 404, self._status(404, f'jobs.nvcre.nvidia.com "{name}" not found', reason="NotFound")
            wanted = (options.get("preconditions") or {}).get("uid")
            if wanted and wanted != job["metadata"].get("uid"):
                return 409, self._status(409, "Precondition failed: UID in precondition does not match",
                                         reason="Conflict")
            self.deleted_jobs.append((namespace, name))
            job["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return 200, dumps(job)

    def _delete_pod(self, namespace: str, name: str, raw: bytes) -> Answer:
        options = json.loads(raw or b"{}")
        pod = self._store.get(namespace, name)
        if pod is None:
            return 404, self._status(404, f'pods "{name}" not found', reason="NotFound")
        current = json.loads(pod.raw)
        wanted = (options.get("preconditions") or {}).get("uid")
        if wanted and wanted != current["metadata"].get("uid"):
            return 409, self._status(409, "Precondition failed: UID in precondition does not match", reason="Conflict")
        self._store.delete(namespace, name)
        with self._lock:
            self.deleted_pods.append((namespace, name, dict(options)))
        return 200, dumps(current)


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` merged into ``target`` (a ``null`` removes the key), as a new value."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge(merged.get(key), value)
    return merged


def _event_problems(namespace: str, event: Mapping[str, Any]) -> list[str]:
    """What kube-apiserver's events.k8s.io/v1 create validation refuses in ``event``."""
    problems = []
    metadata = event.get("metadata") or {}
    if not metadata.get("name"):
        problems.append("metadata.name: Required value")
    if metadata.get("namespace") not in (None, namespace):
        problems.append("metadata.namespace: does not match the namespace of the request")
    if not event.get("eventTime"):
        problems.append("eventTime: Required value")
    controller = str(event.get("reportingController") or "")
    if not _QUALIFIED.match(controller):
        problems.append("reportingController: Invalid value")
    instance = str(event.get("reportingInstance") or "")
    if not instance or len(instance) > 128:
        problems.append("reportingInstance: Required value (at most 128 characters)")
    for key in ("action", "reason"):
        value = str(event.get(key) or "")
        if not value or len(value) > 128:
            problems.append(f"{key}: Required value (at most 128 characters)")
    if event.get("type") not in ("Normal", "Warning"):
        problems.append("type: Unsupported value")
    if len(str(event.get("note") or "").encode()) > 1024:
        problems.append("note: Too long: may not be longer than 1024")
    regarding = event.get("regarding") or {}
    if regarding.get("namespace") not in (None, "", namespace):
        problems.append("regarding.namespace: does not match event.namespace")
    return problems
