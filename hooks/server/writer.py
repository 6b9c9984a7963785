"""The hooks' own writes to the API server: Events, a Job's TTL deletion, a stuck pod's
force delete. Everything else is still written by Metacontroller.

``ApiWriter`` uses the official kubernetes client, one bounded request per write, no retries (the
next hook call asks again). ``MemoryWriter`` keeps the writes in memory (replay, recorded payloads,
tests). Each method returns the outcome in one word or raises ``WriteError``; callers
(``hooks.server.effects``) log and count it and never let it change an answer. RBAC: ``manifests/rbac.yaml``
grants ``create`` on ``events.k8s.io`` events and ``delete`` on ``nvcre.nvidia.com`` jobs; ``delete``
on pods only the opt-in overlay ``manifests/overlays/force-delete/`` grants, per namespace.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hooks.core.actions import DeleteJob, ForceDeletePod
from podread import rest
from podread.environment import load_api_client

log = logging.getLogger("nvcre.hooks.writer")

GROUP, VERSION, PLURAL = "nvcre.nvidia.com", "v1alpha1", "jobs"
DEFAULT_TIMEOUT_SECONDS = 2.0


class WriteError(Exception):
    """A write failed: ``code`` is its class (``http-403``, ``unreachable``, ``no-client``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class Writer(Protocol):
    """What ``hooks.server.effects`` writes through."""

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str: ...

    def delete_job(self, action: DeleteJob) -> str: ...

    def force_delete_pod(self, action: ForceDeletePod) -> str: ...


class ApiWriter:
    """Writes through the kubernetes client, each request bounded by ``timeout_seconds``.

    ``create_event``: ``POST /apis/events.k8s.io/v1/namespaces/<ns>/events``; ``"created"``, or
    ``"exists"`` on 409 (the same transition, already written by this or another process).
    ``delete_job``: ``DELETE`` the NVCRE Job with a UID precondition and background propagation;
    ``"deleted"``, or ``"gone"`` on 404/409 (already deleted, or another Job of that name now).
    ``force_delete_pod``: ``DELETE`` the pod with ``gracePeriodSeconds: 0`` and a UID precondition;
    ``"deleted"``, ``"gone"``, or ``"forbidden"`` (403: the namespace has no force-delete Role).
    A delete whose action has no UID is never sent: ``WriteError`` with code ``no-uid``.
    """

    def __init__(self, api_client: k8s.ApiClient, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._api_client = api_client
        self._timeout = (timeout_seconds, timeout_seconds)

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        """Sends ``body`` as it is. Not through ``EventsV1Api.create_namespaced_event``: that method
        turns the dict into its model first, and the model writes ``eventTime`` back with
        ``isoformat()``, which drops the fraction when it is zero (``...T00:00:00+00:00``), a
        MicroTime the API server refuses (found on the real server, tests/cluster/test_api.py)."""
        what = f"create event {body.get('metadata', {}).get('name')}"
        try:
            rest.send(self._api_client, "POST", rest.EVENTS_PATH, params={"namespace": namespace}, body=dict(body),
                      timeout=self._timeout)
        except ApiException as exc:
            if exc.status == 409:
                return "exists"
            body_text = exc.body if isinstance(exc.body, (str, bytes)) else b""
            raise WriteError(f"{what}: the API server answered {exc.status} {body_text[:300]!r}",
                             f"http-{exc.status}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise WriteError(f"{what}: {exc}", "unreachable") from exc
        return "created"

    def delete_job(self, action: DeleteJob) -> str:
        options: dict[str, Any] = {"propagationPolicy": "Background",
                                   "preconditions": _uid_precondition(action, "delete job")}
        return _delete(f"delete job {action.namespace}/{action.name}", lambda: (
            rest.send(self._api_client, "DELETE", rest.CUSTOM_OBJECT_PATH, body=options, timeout=self._timeout,
                      params={"group": GROUP, "version": VERSION, "namespace": action.namespace, "plural": PLURAL,
                              "name": action.name})))

    def force_delete_pod(self, action: ForceDeletePod) -> str:
        """``"deleted"``, ``"gone"``, or ``"forbidden"`` on 403: the base manifests grant no pod
        delete, only the overlay ``manifests/overlays/force-delete/`` does, per namespace (the
        decision asks first, ``Reader.pod_delete_allowed``; a Role removed since is refused here,
        counted, never raised)."""
        options: dict[str, Any] = {"gracePeriodSeconds": 0,
                                   "preconditions": _uid_precondition(action, "force delete pod")}
        what = f"force delete pod {action.namespace}/{action.name}"
        try:
            return _delete(what, lambda: (
                rest.send(self._api_client, "DELETE", rest.POD_PATH, body=options, timeout=self._timeout,
                          params={"namespace": action.namespace, "name": action.name})))
        except WriteError as exc:
            if exc.code != "http-403":
                raise
            log.warning("%s refused (403): bind the Role of manifests/overlays/force-delete in %s", what,
                        action.namespace)
            return "forbidden"


class NullWriter:
    """The writer of a server without cluster configuration: every write fails, saying why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        raise WriteError(f"no cluster configuration ({self.reason})", "no-client")

    def delete_job(self, action: DeleteJob) -> str:
        raise WriteError(f"no cluster configuration ({self.reason})", "no-client")

    def force_delete_pod(self, action: ForceDeletePod) -> str:
        raise WriteError(f"no cluster configuration ({self.reason})", "no-client")


class MemoryWriter:
    """Keeps every write in ``writes`` (``(kind, detail)``), as the API server would take it:
    an Event name written twice is ``"exists"`` the second time."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self._names: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> str:
        key = (namespace, str(body["metadata"]["name"]))
        with self._lock:
            if key in self._names:
                return "exists"
            self._names.add(key)
            self.writes.append(("event", dict(body)))
        return "created"

    def delete_job(self, action: DeleteJob) -> str:
        _uid_precondition(action, "delete job")
        with self._lock:
            self.writes.append(("delete-job", {"namespace": action.namespace, "name": action.name,
                                               "uid": action.uid}))
        return "deleted"

    def force_delete_pod(self, action: ForceDeletePod) -> str:
        _uid_precondition(action, "force delete pod")
        with self._lock:
            self.writes.append(("force-delete-pod", {"namespace": action.namespace, "name": action.name,
                                                     "uid": action.uid, "node": action.node}))
        return "deleted"


def writer_from_environment(env: Mapping[str, str] | None = None) -> Writer:
    """The production writer: ``ApiWriter`` over the same cluster configuration podread loads
    (kubeconfig, then in-cluster), or a ``NullWriter`` saying why there is none."""
    api_client, where = load_api_client(os.environ if env is None else env)
    if api_client is None:
        log.warning("no cluster configuration (%s): Events and the hooks' own deletes will fail", where)
        return NullWriter(where)
    return ApiWriter(api_client)


NO_UID = "no-uid"
"""The ``WriteError`` code of a delete refused before it was sent: the action carries no UID."""


def _uid_precondition(action: DeleteJob | ForceDeletePod, what: str) -> dict[str, str]:
    """The ``preconditions`` of a delete of ``action``'s object: its UID, so that another object of
    the same name (a Job re-created, a pod replaced) is never hit. An action without a UID is
    refused here (``WriteError`` code ``no-uid``): a delete is never sent without the precondition."""
    if not isinstance(action.uid, str) or not action.uid.strip():
        raise WriteError(f"{what} {action.namespace}/{action.name}: no UID to bind the delete to, refused", NO_UID)
    return {"uid": action.uid}


def _delete(what: str, call: Callable[[], object]) -> str:
    """Runs one delete: ``deleted``; ``gone`` when the object is already gone or is another one now
    (404, or 409 from the UID precondition); raises ``WriteError`` on any other failure."""
    try:
        call()
    except ApiException as exc:
        if exc.status in (404, 409):
            return "gone"
        raise _http(what, exc) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise WriteError(f"{what}: {exc}", "unreachable") from exc
    return "deleted"


def _http(what: str, exc: ApiException) -> WriteError:
    return WriteError(f"{what}: the API server answered {exc.status} {exc.reason}", f"http-{exc.status}")
