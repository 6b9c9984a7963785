"""nvcre_checkpoint: the trainer's side of the NVCRE checkpoint contract v1 (docs/checkpoint.md).

Before the hooks drain a Job's attempt (a suspend, a Kueue preemption, a delete with
``spec.checkpoint.onDelete``), they ask the running workload to save: the request is in the mounted
control file (``CONTROL_FILE``, refreshed by the kubelet) and in the Job's ``status.checkpoint``. The
workload saves, then rank 0 acknowledges by writing the annotation ``ACK_ANNOTATION`` on its Job
(``{"id": <request id>, "step": <saved step>}``); the hooks then drain at once instead of waiting for
the grace to run out. An acknowledgement never skips the drain: it only shortens the wait.

Standard library only: the API calls go to the API server over the pod's ServiceAccount token
(``InClusterApi``); any object with the same two methods will do (``Api``). Use::

    from nvcre_checkpoint import acknowledge, on_sigterm, should_checkpoint

    on_sigterm(lambda: save(step))          # the fallback: a SIGTERM with no request saves anyway
    for step in range(start, steps):
        train_one_step()
        if should_checkpoint():              # cheap: a stat, and a read when the file changed
            save(step)
            if rank == 0:
                acknowledge(step)            # patch the Job: the hooks drain now
            wait_to_be_stopped()

``should_checkpoint`` is true from the moment a request of this attempt is published until the
attempt ends (every rank sees the same file); ``acknowledge`` names the request it read.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ACK_ANNOTATION", "CONTROL_FILE", "VERSION", "Api", "CheckpointError", "InClusterApi", "Request",
           "acknowledge", "control", "on_sigterm", "pending", "should_checkpoint"]

VERSION = "v1"
CONTROL_FILE = "/etc/nvcre/control/checkpoint.json"
ACK_ANNOTATION = "checkpoint.nvcre.nvidia.com/acknowledged"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
JOBS = "/apis/nvcre.nvidia.com/v1alpha1/namespaces/{namespace}/jobs/{name}"
TIMEOUT_SECONDS = 10.0


class CheckpointError(Exception):
    """The control file or the API said something this helper cannot act on (it says what)."""


@dataclass(frozen=True)
class Request:
    """A checkpoint request of the hooks: its ``id`` (the acknowledgement names it), the ``attempt``
    it is for, the ``reason`` (``suspend``, ``preemption``, ``delete``), the ``deadline`` (RFC 3339:
    the drain proceeds then, saved or not), and the Job (``job``, ``namespace``)."""

    id: str
    attempt: int
    reason: str
    deadline: str
    job: str
    namespace: str


class Api(Protocol):
    """What the helper asks of the API server: read the Job, merge-patch the Job."""

    def get_job(self, namespace: str, name: str) -> dict[str, Any]: ...

    def patch_job(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]: ...


class InClusterApi:
    """The API server over HTTPS with the pod's ServiceAccount token and CA (``SERVICE_ACCOUNT``), or
    at ``base_url`` with ``token`` (a test's server; ``http://`` needs no CA)."""

    def __init__(self, base_url: str | None = None, token: str | None = None, ca_file: str | None = None,
                 timeout: float = TIMEOUT_SECONDS) -> None:
        if base_url is None:
            host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            if not host:
                raise CheckpointError("not in a cluster: KUBERNETES_SERVICE_HOST is not set")
            base_url = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
            ca_file = ca_file or str(SERVICE_ACCOUNT / "ca.crt")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._context = ssl.create_default_context(cafile=ca_file) if self.base_url.startswith("https") else None
        self.timeout = timeout

    def _bearer(self) -> str:
        # read on every call: the kubelet rotates a projected token
        return self._token if self._token is not None else (SERVICE_ACCOUNT / "token").read_text().strip()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              content_type: str = "application/json") -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._bearer()}", "Accept": "application/json", "Content-Type": content_type,
            "User-Agent": f"nvcre-checkpoint/{VERSION}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode(errors="replace")
            raise CheckpointError(f"{method} {path}: HTTP {error.code}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise CheckpointError(f"{method} {path}: {error}") from None

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        return self._call("GET", JOBS.format(namespace=namespace, name=name))

    def patch_job(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._call("PATCH", JOBS.format(namespace=namespace, name=name), patch,
                          content_type="application/merge-patch+json")


# ---- reading the request -----------------------------------------------------------------------------

_cache: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}


def control(path: str = CONTROL_FILE) -> dict[str, Any]:
    """The control file as published (``version``, ``job``, ``namespace``, ``attempt``, ``request``).
    Re-read only when its modification time or size changed (the kubelet swaps the file atomically).
    Raises ``CheckpointError`` when it is missing, not JSON or of another contract version."""
    try:
        stat = os.stat(path)
    except OSError as error:
        raise CheckpointError(f"no control file at {path}: is spec.checkpoint set on the Job? ({error})") from None
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _cache.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{path} is not readable JSON: {error}") from None
    if not isinstance(document, dict) or document.get("version") != VERSION:
        version = document.get("version") if isinstance(document, dict) else None
        raise CheckpointError(f"{path}: contract version {version!r}, this helper speaks {VERSION}")
    _cache[path] = (key, document)
    return document


def pending(path: str = CONTROL_FILE, *, api: Api | None = None) -> Request | None:
    """The request for this attempt, or ``None``: from the control file, or, with ``api``, from the
    Job's ``status.checkpoint`` (the Job and attempt still named by the control file; needs ``get`` on
    the Job). A request is this attempt's only when its ``attempt`` is the control file's."""
    document = control(path)
    job, namespace, attempt = str(document.get("job")), str(document.get("namespace")), document.get("attempt")
    if api is not None:
        record = (api.get_job(namespace, job).get("status") or {}).get("checkpoint") or None
    else:
        record = document.get("request")
    if not isinstance(record, dict) or record.get("attempt") != attempt:
        return None
    if record.get("outcome") not in ("Requested", "Acknowledged", "GraceExpired"):
        return None
    return Request(str(record["id"]), int(record["attempt"]), str(record.get("reason", "")),
                   str(record.get("deadline", "")), job, namespace)


def should_checkpoint(path: str = CONTROL_FILE, *, api: Api | bool = False) -> bool:
    """Whether the hooks ask this attempt to save now (``pending``). ``api=True`` reads the Job's
    status with the in-cluster credentials instead of the mounted file (fresher; one API read)."""
    chosen = InClusterApi() if api is True else (api or None)
    return pending(path, api=chosen) is not None


def acknowledge(step: int, path: str = CONTROL_FILE, *, api: Api | None = None,
                request: Request | None = None) -> Request:
    """Rank 0, once the save of ``step`` is durable: writes ``ACK_ANNOTATION`` naming the pending
    request (``request``, or the one ``pending`` reads now) and ``step`` on the Job (a merge patch;
    the ServiceAccount needs ``patch`` on jobs.nvcre.nvidia.com: manifests/samples/checkpoint/).
    Returns the request acknowledged; raises ``CheckpointError`` when there is none or the patch fails."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CheckpointError(f"step must be an integer >= 0, got {step!r}")
    chosen = request or pending(path)
    if chosen is None:
        raise CheckpointError("no checkpoint request is pending for this attempt")
    value = json.dumps({"id": chosen.id, "step": step}, separators=(",", ":"))
    patch = {"metadata": {"annotations": {ACK_ANNOTATION: value}}}
    (api or InClusterApi()).patch_job(chosen.namespace, chosen.job, patch)
    return chosen


# ---- the fallback -------------------------------------------------------------------------------------

def on_sigterm(save: Callable[[], object], path: str = CONTROL_FILE, *, exit_code: int = 143) -> None:
    """Installs a SIGTERM handler (main thread only): when SIGTERM comes and no request was seen
    (the hooks did not ask: a kubelet eviction, a node drain, a feature turned off, a request that
    never reached the file), ``save()`` is called once, best effort, then the process exits with
    ``exit_code``. When a request was pending the save was the loop's to make: it only exits. Saving
    after SIGTERM races the pod's grace period and the other ranks, which are signalled at once:
    prefer acknowledging the request."""
    done = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if done.is_set():
            return
        done.set()
        try:
            asked = pending(path) is not None
        except CheckpointError:
            asked = False
        if not asked:
            try:
                save()
            except Exception as error:  # the process is going away: say why, then go
                print(f"nvcre_checkpoint: the SIGTERM save failed: {error}", file=sys.stderr)
        sys.exit(exit_code)

    signal.signal(signal.SIGTERM, handler)
