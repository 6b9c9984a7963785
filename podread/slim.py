"""The slim projection: the few fields of a Pod the cache keeps, and why each one is kept.

A cached pod is not the API server's whole object. The cache (TTL entries and the watch alike)
keeps only the fields below, so that every NVCRE pod of a cluster fits in a worker's memory
(``bench cache_memory``: about 2.5 KB retained per realistic pod instead of about 30 KB). Each field
is kept because a reader of cached pods uses it:

======================================  ===========================================================
field                                   read by
======================================  ===========================================================
``metadata.name``                       ``podread.pod_key``; ``hooks.core.wording`` (``pod_name``, the
                                        barrier's message, sorting and de-duplicating the pods the
                                        barrier found); ``hooks.tools.cli_format.pod_row``; the watch's
                                        store key
``metadata.namespace``                  ``PodSelector.matches``; ``pod_key``; ``pod_row``; the
                                        watch's store key and job index
``metadata.uid``                        the watch: a pod deleted and created again under the same
                                        name is a new pod
``metadata.resourceVersion``            the watch: an event older than (or as old as) the pod it
                                        holds is a duplicate or out of order and is dropped
``metadata.labels`` (``KEPT_LABELS``)   ``PodSelector.matches`` (JOB_LABEL); ``hooks.core.barrier``
                                        (``split_launchers``: JOB_LABEL, LAUNCHER_LABEL,
                                        REPLICATED_JOB_LABEL; ``last_attempt``: JOBSET_NAME_LABEL,
                                        ATTEMPT_LABEL); ``hooks.core.gang`` (ATTEMPT_LABEL,
                                        JOBSET_NAME_LABEL); ``hooks.core.history`` (a departed pod's
                                        JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL); ``pod_row`` (job,
                                        launcher, attempt); the watch's job index (JOB_LABEL)
``metadata.creationTimestamp``          ``pod_row`` (AGE of ``python -m hooks node-pods``)
``metadata.deletionTimestamp``          ``hooks.core.wording.list_pods`` ("terminating, grace period ends"); ``pod_row``
``spec.nodeName``                       ``PodSelector.matches`` (node reads); the watch's node index;
                                        ``pod_row``
``status.phase``                        ``podread.is_active``: every barrier and ``activePods``
``status.startTime``                    ``hooks.core.history.started_at`` (``status.attempts``:
                                        when an attempt started, from the pods ``activePods`` counts)
======================================  ===========================================================

Dropped: everything else (``managedFields``, annotations, ``ownerReferences``, the containers,
``status.conditions`` and ``containerStatuses``, and every other label: the batch Job's and
JobSet's own, such as ``controller-uid``, ``job-name``, ``jobset.sigs.k8s.io/job-key``, and the
user's): no reader of cached pods reads them. Keeping every label cost about 700-900 bytes a pod
(a pod of JobSet's carries 15-25 labels, some with a value of its own; issue 36 item 2,
BENCHMARKS.md section 4). A new reader
that needs one adds it here; ``tests/podread/test_podread_slim.py`` runs the recorded scenarios and the
decision tests over slim pods that raise on any dropped field, so a caller reading a dropped field
fails a test instead of reading ``None``.

Live reads (``Reader`` methods that read the API server) return whole pods.

Departed pods (``evidence``). A pod the watch saw deleted is kept a while longer, for
``Reader.attempt_failure_pods``, in a second projection that keeps, beside the slim fields, what says
why a pod failed: ``status.reason`` and ``status.message`` (``UnexpectedAdmissionError``, an
eviction's message), ``status.conditions`` (``type``, ``status``, ``reason``, ``message``,
``lastTransitionTime``: ``DisruptionTarget`` and its reason), and per container (and init
container) its ``name``, ``restartCount`` and ``state``/``lastState.terminated`` (``exitCode``,
``signal``, ``reason`` such as ``OOMKilled``, ``message``: the termination message, which the kubelet
bounds to 4 KiB per container). The annotation ``podread.nvcre.nvidia.com/departed`` is the only one
kept (the store writes it). Only deleted pods that tell a failure are kept so, bounded in count
and age (``podread.watch.MAX_DEPARTED``, ``DEPARTED_SECONDS``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL
from podread.selector import Pod

KEPT: Final[Mapping[str, frozenset[str]]] = {
    "metadata": frozenset({"name", "namespace", "uid", "resourceVersion", "labels", "creationTimestamp",
                           "deletionTimestamp"}),
    "spec": frozenset({"nodeName"}),
    "status": frozenset({"phase", "startTime"}),
}
"""The kept fields: top-level object -> the keys kept in it (of ``metadata.labels``, ``KEPT_LABELS``)."""
KEPT_LABELS: Final[frozenset[str]] = frozenset(
    {JOB_LABEL, LAUNCHER_LABEL, ATTEMPT_LABEL, JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL})
"""The labels kept in ``metadata.labels`` (the table above says who reads each); a pod without any of
them keeps an empty ``labels``."""

_INTERNED = ("namespace",)
_shared_specs: dict[str, dict[str, str]] = {}
_shared_statuses: dict[Any, dict[str, Any]] = {}


def _shared(table: dict[Any, dict[str, Any]], key: str, value: Any) -> dict[str, Any]:
    """One dict per distinct value (``{"phase": "Running"}``), shared by every pod that has it:
    cached pods are never mutated. Bounded by the number of nodes and phases in the cluster."""
    found = table.get(value)
    if found is None:
        found = table[value] = {key: value}
    return found


def slim(pod: Mapping[str, Any]) -> Pod:
    """A new pod dict holding only the fields in ``KEPT`` (absent ones stay absent), and of the labels
    only ``KEPT_LABELS``.

    Reads ``pod`` (not modified). Strings repeated across pods (namespace, label values) are
    interned, and the ``spec`` and ``status`` dicts are shared between pods with the same node and
    phase, so that many pods of a job cost little more than their names and labels.
    """
    metadata = pod.get("metadata") or {}
    kept: dict[str, Any] = {}
    for key in KEPT["metadata"]:
        if key in metadata:
            value = metadata[key]
            if key in _INTERNED and isinstance(value, str):
                value = sys.intern(value)
            elif key == "labels" and isinstance(value, Mapping):
                value = {k: sys.intern(v) if isinstance(v, str) and len(v) <= 63 else v
                         for k, v in value.items() if k in KEPT_LABELS}
            kept[key] = value
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
    phase = status.get("phase") if isinstance(status, Mapping) else None
    result: Pod = {"metadata": kept}
    result["spec"] = _shared(_shared_specs, "nodeName", sys.intern(node)) if isinstance(node, str) else {}
    if phase is None:
        result["status"] = {}
    else:
        result["status"] = _shared(_shared_statuses, "phase", sys.intern(phase) if isinstance(phase, str) else phase)
    started = status.get("startTime") if isinstance(status, Mapping) else None
    if isinstance(started, str):  # what the API server writes; anything else is no start time
        result["status"] = _started(result["status"], sys.intern(started) if len(started) <= 64 else started)
    return result


_shared_started: dict[tuple[Any, str], dict[str, Any]] = {}
_SHARED_STARTED_MAX = 4096


def _started(status: Mapping[str, Any], started: str) -> dict[str, Any]:
    """``status`` with ``startTime``: one dict per (phase, start time), shared as ``_shared`` does (the
    pods of a gang start within the same few seconds). Start times never repeat for long, so the table
    is emptied when it reaches ``_SHARED_STARTED_MAX`` (dicts already handed out stay as they are)."""
    key = (status.get("phase"), started)
    found = _shared_started.get(key)
    if found is None:
        if len(_shared_started) >= _SHARED_STARTED_MAX:
            _shared_started.clear()
        found = _shared_started[key] = {**status, "startTime": started}
    return found


EVIDENCE_STATUS: Final[frozenset[str]] = frozenset({"phase", "startTime", "reason", "message"})
"""The ``status`` keys ``evidence`` keeps as they are (besides conditions and container statuses)."""
EVIDENCE_CONDITION: Final[frozenset[str]] = frozenset({"type", "status", "reason", "message", "lastTransitionTime"})
EVIDENCE_TERMINATED: Final[frozenset[str]] = frozenset({"exitCode", "signal", "reason", "message", "finishedAt"})
_CONTAINER_LISTS = ("initContainerStatuses", "containerStatuses")


def evidence(pod: Mapping[str, Any]) -> Pod:
    """A new pod dict for a departed pod: ``slim(pod)`` (metadata without annotations, ``spec.nodeName``)
    with the status that says why it failed (module doc: ``status.reason``/``message``, the
    conditions, each container's terminated states). Reads ``pod`` (not modified); shares nothing
    with it that a caller could mutate through the result."""
    kept = slim(pod)
    status = pod.get("status") or {}
    if not isinstance(status, Mapping):
        return kept
    result_status: dict[str, Any] = {key: status[key] for key in sorted(EVIDENCE_STATUS) if key in status}
    conditions = [{key: c[key] for key in sorted(EVIDENCE_CONDITION) if key in c}
                  for c in status.get("conditions") or () if isinstance(c, Mapping)]
    if conditions:
        result_status["conditions"] = conditions
    for list_key in _CONTAINER_LISTS:
        containers = [_container(c) for c in status.get(list_key) or () if isinstance(c, Mapping)]
        if containers:
            result_status[list_key] = containers
    return {"metadata": dict(kept["metadata"]), "spec": dict(kept["spec"]), "status": result_status}


def _container(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container status reduced to its name, restart count and terminated states."""
    kept: dict[str, Any] = {key: container[key] for key in ("name", "restartCount") if key in container}
    for which in ("state", "lastState"):
        state = container.get(which)
        terminated = state.get("terminated") if isinstance(state, Mapping) else None
        if isinstance(terminated, Mapping):
            kept[which] = {"terminated": {key: terminated[key] for key in sorted(EVIDENCE_TERMINATED)
                                          if key in terminated}}
    return kept
