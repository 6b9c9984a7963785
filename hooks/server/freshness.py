"""The parent checked against the API server before an answer that acts on it is sent.

Metacontroller hands the hooks the Job from its informer cache and writes the answer's status over
the *live* Job (``AtomicStatusUpdate`` GETs it and compares the answer with the live status, not
the cached one). An answer computed from a Job older than the live one therefore overwrites a newer
status, and when two versions each reproduce themselves (a fact the newer one learned and the older
one had no chance to), each call from a lagging cache writes the other back: a status that never
settles. So before a 200 that may change anything, the hooks read the Job's ``resourceVersion``
live (``ParentVersions``) and refuse a request whose parent is not that version: 409
``StaleRequest``, nothing written, no Event, no delete; Metacontroller calls again once its cache
has the newer Job (it already holds the watch event that brought it).

When (``needs_check``): the answer changes the status or the children (a JobSet or Workload
created or left out), asks for writes of the hooks' own (a delete), or the parent's status was
written in the last ``recent_seconds`` (``Settings.recent_status_seconds``: ``RECENT_STATUS_SECONDS``, 30 s,
unless ``NVCRE_RECENT_STATUS_SECONDS`` says otherwise; the newest ``managedFields`` entry of subresource
``status``; a parent without managed fields counts as recent). A Job whose status settled long
ago is answered from the cache alone: no read in the steady state.

When the request's Job is behind the live one (another ``resourceVersion``, or the core found the
request behind the cluster: ``StaleRequest``), the hooks do not refuse at once (issue 36, ADR-0107):
the handler decides again on the whole live Job ``behind`` read (``ParentVersions.live_job``: the one
read of the check, whose ``resourceVersion`` is the one compared; issue 36 item 8), with the
request's children, and answers that. Metacontroller's parent and children informers are
independent, so a parent newer than the children it comes with is a request the hooks already
meet (the core's own checks refuse children that lag: ``hooks.core.barrier``); the live parent
only removes the lag of the parent. Refused still (409, ``StaleRequest`` with its ``cause``): a
Job that is gone (``parent-gone``), another object under the same name (``parent-replaced``), a
deletion the request does not carry, or one it carries that the live Job does not
(``parent-deleting``: Metacontroller calls ``/finalize`` next), and a second ``StaleRequest`` from the
decision on the live Job (the children lag).

RBAC: ``get`` on ``nvcre.nvidia.com`` jobs (``manifests/rbac.yaml``, role ``nvcre-hooks-pod-reader``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hooks.core.barrier import StaleRequest
from hooks.core.claims import utc
from hooks.core.deadlines import time_or_none
from hooks.core.declared import InvalidRequest
from hooks.core.observed import Observed
from hooks.core.status import as_json
from hooks.core.work import Decision
from hooks.server import metrics
from hooks.server.config import RECENT_STATUS_SECONDS
from podread import rest
from podread.environment import load_api_client

GROUP, VERSION, PLURAL = "nvcre.nvidia.com", "v1alpha1", "jobs"
DEFAULT_TIMEOUT_SECONDS = 2.0


class ParentReadError(InvalidRequest):
    """The live Job could not be read: a 503, the hook holds and Metacontroller calls again."""

    def __init__(self, message: str) -> None:
        super().__init__(503, message)


class ParentVersions(Protocol):
    """What tells the live version of a Job."""

    def resource_version(self, namespace: str, name: str) -> str | None:
        """The live Job's ``metadata.resourceVersion``; ``None`` when there is no such Job.
        Raises ``ParentReadError`` when the API server cannot say."""
        ...

    def live_job(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The whole live Job, as the API server has it now; ``None`` when there is no such Job.
        Raises ``ParentReadError`` when the API server cannot say."""
        ...


METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
"""The ``Accept`` of the parent read: the Job's metadata only (a ``PartialObjectMetadata``, what
``kubectl get --show-kind -o name`` and metadata informers ask for), else the whole Job from a
server that cannot convert. Both answers are the same read of the same object, so they carry the
same ``resourceVersion``; the metadata one is smaller to send, encode and decode (issue 32 item 4)."""


class LiveParentVersions:
    """``GET /apis/nvcre.nvidia.com/v1alpha1/namespaces/<ns>/jobs/<name>`` through the kubernetes
    client, straight to the API server (no ``resourceVersion``: a quorum read, never a cache's
    answer), bounded by ``timeout_seconds``. It asks for the Job's metadata only (``METADATA_ONLY``),
    and decodes the raw answer itself (orjson) instead of through the client's deserializer."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self._api_client = api_client
        self._timeout = (timeout_seconds, timeout_seconds)

    def resource_version(self, namespace: str, name: str) -> str | None:
        job = self._get(namespace, name, METADATA_ONLY, "version")
        version = (job.get("metadata") or {}).get("resourceVersion") if job is not None else None
        return version if isinstance(version, str) else None

    def live_job(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._get(namespace, name, "application/json", "job")

    def _get(self, namespace: str, name: str, accept: str, read: str) -> Mapping[str, Any] | None:
        """One quorum GET of the Job with ``accept``: the decoded object, ``None`` on a 404;
        ``ParentReadError`` for anything else (a failed request, an answer that is not an object).
        Timed, failed or not, as ``read`` (``nvcre_parent_read_duration_seconds``)."""
        started = time.perf_counter()
        try:
            return self._get_untimed(namespace, name, accept)
        finally:
            metrics.observe_parent_read(read, time.perf_counter() - started)

    def _get_untimed(self, namespace: str, name: str, accept: str) -> Mapping[str, Any] | None:
        unreadable = f"could not read Job {namespace}/{name} to check the request is current"
        try:
            raw = rest.send(self._api_client, "GET", rest.CUSTOM_OBJECT_PATH, accept=accept, timeout=self._timeout,
                            params={"group": GROUP, "version": VERSION, "namespace": namespace, "plural": PLURAL,
                                    "name": name})
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise ParentReadError(f"{unreadable}: the API server answered {exc.status} {exc.reason}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ParentReadError(f"{unreadable}: {exc}") from exc
        try:
            job = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ParentReadError(f"{unreadable}: the answer is not JSON ({exc})") from exc
        if not isinstance(job, Mapping):
            raise ParentReadError(f"{unreadable}: the answer is not an object")
        return job


class FixedParentVersions:
    """Versions given by hand (tests, replay): ``versions[(namespace, name)]``, ``None`` when absent,
    and the whole live Jobs ``jobs[(namespace, name)]`` (a Job given there also gives its version;
    a version given alone reads as a Job of that version, ``live_job``); every call is counted in
    ``reads``."""

    def __init__(self, versions: Mapping[tuple[str, str], str] | None = None,
                 jobs: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> None:
        self.jobs = dict(jobs or {})
        self.versions = {key: str((job.get("metadata") or {}).get("resourceVersion") or "")
                         for key, job in self.jobs.items()} | dict(versions or {})
        self.reads = 0

    def resource_version(self, namespace: str, name: str) -> str | None:
        self.reads += 1
        return self.versions.get((namespace, name))

    def live_job(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The Job given in ``jobs``; else, for a version given alone, a Job of that version whose
        metadata holds nothing else; else ``None``."""
        self.reads += 1
        key = (namespace, name)
        if key in self.jobs:
            return self.jobs[key]
        return {"metadata": {"resourceVersion": self.versions[key]}} if key in self.versions else None


def needs_check(observed: Observed, decision: Decision, now: datetime,
                recent_seconds: float = RECENT_STATUS_SECONDS) -> bool:
    """Whether ``decision`` (answering ``observed`` at ``now``) may only be sent once the parent is
    known to be the live one: it changes the status or the children, asks for writes, or the
    parent's status was written less than ``recent_seconds`` before ``now``."""
    response = decision.response
    if decision.actions or response.get("status") != as_json(observed.status):
        return True
    observed_children = {("JobSet", _name(child)) for child in observed.jobsets} | {
        ("Workload", _name(child)) for child in observed.workloads}
    if _children(response.get("children") or []) != observed_children:
        return True
    if not observed.status_written:
        return not observed.version_times  # no managed fields at all: when it was written is unknown
    written = time_or_none(observed.status_written)
    return written is None or utc(now) - written < timedelta(seconds=recent_seconds)


def behind(observed: Observed, decided: Decision | StaleRequest, parents: ParentVersions,
           now: datetime, recent_seconds: float = RECENT_STATUS_SECONDS) -> Mapping[str, Any] | None:
    """Whether the answer ``decided`` on ``observed`` at ``now`` (a ``Decision``, or the core's
    ``StaleRequest``) may be sent, asking ``parents`` what the live Job is (``recent_seconds``: the
    window of ``needs_check``).

    Returns ``None`` when it may: a decision that ``needs_check`` says nothing of (no read), or one
    whose Job is the live version. Returns the whole live Job when the request's Job is another
    version than it: the caller decides again on it. Either way one read, of the whole live Job
    (``live_job``: its ``resourceVersion`` with it), never a second one (issue 36 item 8: a
    metadata read first, then the whole Job, was two round trips on the path of every answer
    decided again, and the whole Job costs about what its metadata does to read).
    Raises ``StaleRequest`` (409, with its ``cause``) when the core refused and the request's Job is
    the live one (the children lag: the core's refusal stands), or when the live Job may not stand
    in for the request's: gone (``parent-gone``), another object (``parent-replaced``: another
    ``uid``), or deleted in one and not in the other (``parent-deleting``). Raises
    ``ParentReadError`` (503) when the live Job cannot be read."""
    if isinstance(decided, Decision) and not needs_check(observed, decided, now, recent_seconds):
        return None
    live = parents.live_job(observed.namespace, observed.name)
    metadata = (live or {}).get("metadata") or {}
    version = metadata.get("resourceVersion")
    if live is not None and version and version == observed.resource_version:
        if isinstance(decided, StaleRequest):
            raise decided
        return None
    if live is None:
        raise _refused("parent-gone", observed, "the live one is gone")
    if str(metadata.get("uid") or "") != observed.uid:
        raise _refused("parent-replaced", observed,
                       f"the live one is another object (uid {metadata.get('uid')}, the request's {observed.uid})")
    if bool(metadata.get("deletionTimestamp")) != bool(observed.deletion_timestamp):
        raise _refused("parent-deleting", observed, "its deletion began after the request's copy was taken"
                       if metadata.get("deletionTimestamp") else "the request carries a deletion the live one does not")
    return live


def _refused(cause: str, observed: Observed, shown: str) -> StaleRequest:
    return StaleRequest(f"the request is behind the cluster: its Job is at resourceVersion "
                        f"{observed.resource_version or '(none)'}, {shown}; nothing was answered, "
                        f"Metacontroller calls again with the newer one", cause=cause)


WATCHED_KINDS = frozenset({"JobSet", "Workload"})
"""The children whose creation or removal counts as a change (others, such as a gang's PodGroup,
follow the JobSet they belong to)."""


def _children(children: Iterable[Any]) -> frozenset[tuple[str, str]]:
    return frozenset((str(child.get("kind")), _name(child))
                     for child in children if isinstance(child, Mapping) and child.get("kind") in WATCHED_KINDS)


def _name(child: Mapping[str, Any]) -> str:
    return str((child.get("metadata") or {}).get("name"))


class UnreadableParentVersions:
    """The parent check of a server without cluster configuration: every check fails (503),
    saying why, so no answer that acts on a Job is sent unchecked."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def resource_version(self, namespace: str, name: str) -> str | None:
        raise self._unreadable(namespace, name)

    def live_job(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        raise self._unreadable(namespace, name)

    def _unreadable(self, namespace: str, name: str) -> ParentReadError:
        return ParentReadError(f"could not read Job {namespace}/{name} to check the request is current: "
                               f"no cluster configuration ({self.reason})")


def parents_from_environment(env: Mapping[str, str] | None = None) -> ParentVersions:
    """The production ``ParentVersions``: ``LiveParentVersions`` over the cluster configuration
    podread loads (kubeconfig, then in-cluster), or ``UnreadableParentVersions`` saying why there
    is none."""
    api_client, where = load_api_client(os.environ if env is None else env)
    if api_client is None:
        return UnreadableParentVersions(where)
    return LiveParentVersions(api_client)
