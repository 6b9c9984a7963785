"""Permission reads: may the hooks delete pods in a namespace (the opt-in force delete)?

The base manifests grant the hooks no pod ``delete`` at all; the overlay
``manifests/overlays/force-delete/`` binds it per namespace. The decision asks for a force delete
only when the permission is there, and says so (``ForceDeleteAllowed=False``) when it is not: the
write itself runs after the answer (``hooks.server.effects``), so its 403 could never reach the
status. The question goes to the API server as a ``SelfSubjectAccessReview``
(``POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews``, ``resourceAttributes`` delete
pods in the namespace): the authorizer's own answer for the hooks' own identity, which every
authenticated user may ask (``system:basic-user``), so it needs no RBAC of its own. Live, never
cached: a Role bound or removed takes effect at the next call.

An ``AccessReviewer`` is anything with ``may_delete_pods(namespace)``: ``AccessClient`` (the
kubernetes client) or ``SnapshotAccess`` (answers held in memory, for replay and recorded
payloads). A failed review raises ``PodReadError``: the answer is unknown, never "allowed".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from podread import calldeadline, rest, trace
from podread.errors import ApiError, NoLiveReaderError, PodReadError
from podread.live import DEFAULT_TIMEOUT_SECONDS, http_error, transport_error
from podread.metrics import ReadMetrics

log = logging.getLogger("podread")

METHOD = "pod_delete_allowed"
"""The Reader method name the review is counted, timed and traced under."""


class AccessReviewer(Protocol):
    """Answers whether the hooks' identity may ``delete`` pods in ``namespace``; raises
    ``PodReadError`` when it cannot tell."""

    def may_delete_pods(self, namespace: str) -> bool: ...


def review_body(namespace: str) -> dict[str, Any]:
    """The ``SelfSubjectAccessReview`` asking for ``delete`` on core ``pods`` in ``namespace``."""
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": "delete", "group": "",
                                            "resource": "pods"}}}


def allowed_in(body: object, what: str) -> bool:
    """``status.allowed`` of a review answer; raises ``ApiError`` (code ``invalid-json``) for an
    answer that is not a review with a boolean ``allowed`` (a missing ``allowed`` is not "no":
    the API server always writes it)."""
    status = body.get("status") if isinstance(body, dict) else None
    allowed = status.get("allowed") if isinstance(status, dict) else None
    if not isinstance(allowed, bool) or (isinstance(body, dict) and body.get("kind") not in (
            None, "SelfSubjectAccessReview")):
        raise ApiError(f"{what}: the answer is not a SelfSubjectAccessReview with status.allowed",
                       code="invalid-json")
    return allowed


def read_permission(reviewer: AccessReviewer | None, namespace: str, metrics: ReadMetrics) -> bool:
    """What ``Reader.pod_delete_allowed`` does: asks ``reviewer`` (counted and timed as method
    ``pod_delete_allowed`` from ``live``, noted in an open ``trace.recording()`` with the answer as
    its one item). Raises ``PodReadError`` (``NoLiveReaderError`` without a reviewer)."""
    started = time.perf_counter()
    try:
        if reviewer is None:
            raise NoLiveReaderError("no access reviewer: this Reader was built without one")
        allowed = reviewer.may_delete_pods(namespace)
        if not isinstance(allowed, bool):
            raise PodReadError(f"the access review answered {allowed!r}, not a boolean", code="unexpected")
    except Exception as exc:
        error = exc if isinstance(exc, PodReadError) else PodReadError(f"unexpected error: {exc!r}", code="unexpected")
        error.located(METHOD, "live")
        metrics.reads.labels(METHOD, "live", "error").inc()
        metrics.read_errors.labels(METHOD, "live", error.code).inc()
        _note(namespace, started, error=error)
        log.warning("pod delete permission read failed: %s [%s]", error.reason, error.code)
        if error is exc:
            raise
        raise error from exc
    metrics.reads.labels(METHOD, "live", "ok").inc()
    metrics.read_seconds.labels(METHOD, "live").observe(time.perf_counter() - started)
    _note(namespace, started, allowed=allowed)
    return allowed


def _note(namespace: str, started: float, *, allowed: bool | None = None, error: PodReadError | None = None) -> None:
    if trace.recording_open():
        trace.note(trace.ReadRecord(
            method=METHOD, source="live", query=f"delete pods in {namespace}",
            outcome="ok" if error is None else "error", pods=0, seconds=time.perf_counter() - started,
            error=None if error is None else str(error), error_code=None if error is None else error.code,
            items=({"namespace": namespace, "allowed": allowed},) if allowed is not None and trace.keeping_pods()
            else None))


class AccessClient:
    """Asks the API server with the official kubernetes client: one ``SelfSubjectAccessReview``
    create, raw JSON, bounded by ``timeout_seconds`` and by the hook call's deadline. Every failure
    raises ``ApiError`` with the error's class in ``code``."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        self._api_client = api_client
        self._timeout = timeout_seconds

    def may_delete_pods(self, namespace: str) -> bool:
        """``POST .../selfsubjectaccessreviews`` for delete pods in ``namespace``: ``status.allowed``."""
        what = f"review delete pods in {namespace}"
        budget = calldeadline.budget(what, self._timeout)
        try:
            raw = rest.send(self._api_client, "POST", rest.ACCESS_REVIEWS_PATH, body=review_body(namespace),
                            timeout=(budget, budget))
        except ApiException as exc:
            raise http_error(what, exc) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(what, exc) from exc
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ApiError(f"{what}: the answer is not valid JSON ({exc})", code="invalid-json") from exc
        return allowed_in(body, what)


class SnapshotAccess:
    """An ``AccessReviewer`` over answers held in memory: ``allowed`` maps a namespace to its
    answer, a namespace not in it is refused; with ``error`` set every review fails as the API
    server would."""

    def __init__(self, allowed: Mapping[str, bool] | None = None, error: str | None = None, code: str = "") -> None:
        self._allowed = dict(allowed or {})
        self._error = error
        self._code = code

    def may_delete_pods(self, namespace: str) -> bool:
        """The held answer for ``namespace`` (False when absent); raises ``ApiError`` when failing."""
        if self._error is not None:
            raise ApiError(self._error, code=self._code)
        return bool(self._allowed.get(namespace, False))
