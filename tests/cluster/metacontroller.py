"""Metacontroller v4.17.2's stand-in on the cluster tier: ``Metacontroller`` runs CompositeController
``nvcre-jobs`` over a real API server the way Metacontroller's own code does (its source:
``pkg/controller/composite/controller.go``, ``pkg/controller/common/manage_children.go``,
``pkg/controller/common/finalizer/finalizer.go``, ``pkg/dynamic/clientset``, ``pkg/hooks``; the
facts are in reference/metacontroller-facts.md, "Runtime behaviour", numbered as below):

1. The parent and the children come from informer caches. Two modes: ``serve`` (the scale
   benchmark, ``make dev``) runs real informers (tests/cluster/informers.py): per watched resource a
   reflector LISTs, then WATCHes from the list's resourceVersion (bookmarks on), lists again after a
   410 or a broken stream (with client-go's backoff), and each event updates the store at once and
   goes to Metacontroller's handlers (``_on_event``: ``onParentAdd/Update/Delete``, and
   ``onChildAdd/Update/Delete`` with a child update that keeps its resourceVersion ignored and
   orphans matched by selector); the synchronous mode (``refresh``/``reconcile_due``, most tier
   tests) reads a full list per step into ``LaggedCache``s and diffs it into the same events. With
   a ``Staleness`` the request carries what the server held ``lag`` (parents) and ``child_lag``
   (children) seconds ago (under ``serve``: each event applied that much later), and after the API
   server came back from an outage, what it held before it for ``restart_lag`` more seconds; events
   are seen on the cache, not on the server. ``TIER_STALENESS`` in tests/cluster/world.py turns it
   on for the tier's worlds.
2. ``_update_status`` GETs the live Job and writes the answer's status (``observedGeneration``
   added) with the live resourceVersion, retrying on conflict: a stale answer overwrites a newer
   status. Children are managed first; a failed child write does not stop the status write
   (``AlreadyExists`` ignored) but fails the sync afterwards.
3. ``finalized: true`` removes the finalizer (GET live, update) at once, before the children and
   the status: the Job may be gone, and then the last status is never written.
4. With ``foregroundDeletion``/``orphan`` on a Job being deleted, ``/finalize`` is called but no
   child is created or deleted.
5. Omitted children are deleted with ``propagationPolicy: Background`` and a UID precondition,
   children being deleted are skipped, existing ones are never updated (``OnDelete``), except the
   ConfigMap children (``configmaps``: the checkpoint control file, issue 33), declared ``InPlace``:
   one whose desired ``data``, labels or annotations differ from the observed one (its last-applied
   annotation included) is updated at once (``Update`` with the observed resourceVersion; a
   conflict fails the sync), as Metacontroller's dynamic apply does for a ConfigMap.
6. The answer is decoded strictly (v2) into typed fields (``metacontroller_parts.decode_response``);
   anything it refuses fails the sync, and is an invariant violation (the hooks must never).
7. Children are selected by ``controller-uid``; matching orphans are adopted (after a live read of
   the parent), owned children that stop matching are released; a desired child that does not
   match fails the whole sync; a create carries the last-applied annotation.
8. ``workers`` (5) parents are synced at once; every API call of Metacontroller's own goes through
   client-go's QPS 5 / burst 10; a failed sync records a ``SyncError`` Warning Event and is
   requeued by ``DefaultControllerRateLimiter`` (10 qps / burst 100, per item 5 ms doubling); a
   429 is requeued after its ``Retry-After``.
9. ``resyncPeriodSeconds`` re-enqueues every cached parent at once, backing off or not;
   ``resyncAfterSeconds`` requeues that parent once.
10. With ``workloads`` (the manifests-kueue overlay) the ``/customize`` hook is called per Job and
    cached per (uid, generation) for 20 minutes (a failed call fails the sync); the related
    objects come from the cache.
11. ``CompositeControllerStandIn`` builds the controller from the CompositeController object:
    the hook token is read from its Secret then, and only then; it rebuilds when ``spec``
    changes (or Metacontroller restarts); a child type not served by discovery yet stops the build.

The invariants (tests/e2e/invariants.py) are told of every answer and write: a JobSet created while
another attempt's pod is active, one deleted outside a teardown, ``finalized`` too early, a status
write that takes back ``attempt``/``restarts`` or a terminal phase (judged against the live status it
replaces, so a stale answer is caught), and a status that never settles (a hot loop: more than 6
writes of one Job within 10 s that set a field back to an earlier value or change only timestamps;
``SettleJudge``). Progress writes are no loop: Metacontroller writes every changed status.

Differences from the stand-in before issue 21 (``ApiBackend`` + ``tests.e2e.driver.Driver``): fresh
lists every step instead of lagging caches; the status written with the cached resourceVersion (a
conflict failed the sync) instead of the live one (last writer wins); the finalizer removed after
the status write instead of before the children and the status; children managed under a GC
finalizer; a shallow v2 check (unknown fields only) instead of typed decoding; no adoption,
release or selector check, no last-applied annotation; one Job at a time, no client QPS, no global
requeue limit, no ``SyncError`` Event; the resync per Job instead of one timer for all; related
objects without a customize call; a hot loop judged by calls per step, not status writes.
Before issue 36, ``serve``'s informers polled (a full list of every kind every 0.2-1 s, its changes
batched into one pass) instead of watching: the real Metacontroller made about 3x the hook calls per
Job, each event its own. Left out still: events of the related objects (a changed
ResourceFlavor enqueues no parent).
"""

from __future__ import annotations

import base64
import functools
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import kubernetes
import orjson
from kubernetes.client import ApiException

from tests.cluster.informers import WATCH_SECONDS, Informer, Notification, Reflector, StoreKey
from tests.cluster.kube import REQUEST_TIMEOUT, SERVER_ERRORS
from tests.cluster.metacontroller_parts import (
    FRESH,
    CustomizeCache,
    DecodeError,
    LaggedCache,
    RequeueLimiter,
    Response,
    ResyncTimer,
    SelectorError,
    SettleJudge,
    Staleness,
    TokenBucket,
    WorkQueue,
    claim,
    controller_of,
    decode_response,
    desired_children,
    has_gc_finalizer,
    with_last_applied,
)
from tests.e2e.driver import BackendError, Call, Key, Obj, Transport
from tests.e2e.invariants import Invariants

GROUP, VERSION = "nvcre.nvidia.com", "v1alpha1"
JOBSET_GROUP, JOBSET_VERSION = "jobset.x-k8s.io", "v1alpha2"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
SCHEDULING_GROUP, SCHEDULING_VERSION = "scheduling.k8s.io", "v1beta1"
RELATED = (("WorkloadPriorityClass", "workloadpriorityclasses"), ("ResourceFlavor", "resourceflavors"))
"""The related types the manifests-kueue customize hook may name (hooks.core.queueing.customize_response)."""
CHILD_TYPES = {"JobSet": (JOBSET_GROUP, JOBSET_VERSION, "jobsets"),
               "Workload": (KUEUE_GROUP, KUEUE_VERSION, "workloads"),
               "PodGroup": (SCHEDULING_GROUP, SCHEDULING_VERSION, "podgroups"),
               "ConfigMap": ("", "v1", "configmaps")}
GROUP_KEYS = {"JobSet": f"JobSet.{JOBSET_GROUP}/{JOBSET_VERSION}",
              "Workload": f"Workload.{KUEUE_GROUP}/{KUEUE_VERSION}",
              "PodGroup": f"PodGroup.{SCHEDULING_GROUP}/{SCHEDULING_VERSION}",
              "ConfigMap": "ConfigMap.v1"}
IN_PLACE = frozenset({"ConfigMap"})
"""The child types the CompositeController declares ``updateStrategy: InPlace`` (the others: ``OnDelete``)."""
CONTROLLER = "nvcre-jobs"
FINALIZER = f"metacontroller.io/compositecontroller-{CONTROLLER}"
TOKEN_SECRET = ("nvcre-system", "nvcre-hooks-token")
"""The Secret the CompositeController's hooks name (manifests/compositecontroller.yaml); not shipped."""
WORKERS = 5
"""``--workers``: parents synced at once."""
CLIENT_QPS, CLIENT_BURST = 5.0, 10
"""``--client-go-qps`` / ``--client-go-burst``."""
CONFLICT_RETRIES = 4
"""client-go ``retry.DefaultBackoff``: 4 tries, 10 ms times 5 between them."""
MAX_ROUNDS = 10
"""Rounds of syncs in one ``reconcile_due`` (each round: a cache read, then up to ``WORKERS`` syncs)."""


def token_secret(token: str, previous: str = "") -> dict[str, Any]:
    """The hook token Secret as docs/operations.md has the operator create it: key ``token`` (what
    Metacontroller sends, what the hooks accept) and key ``previous`` (also accepted by the hooks;
    empty between rotations)."""
    namespace, name = TOKEN_SECRET
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": {"token": token, "previous": previous}}


class CompositeControllerStandIn:
    """Metacontroller's handling of CompositeController ``name`` (module doc): ``tokens`` holds, per
    hook, the bearer token read from its Secret when the controller was last built; ``builds``
    counts the builds. ``observe`` rebuilds only when the object's ``spec`` changed; ``restart``
    rebuilds as a restarted Metacontroller does; ``drive`` makes a ``Driver`` send the built token.
    A Secret or key that cannot be read, or a child type not in discovery, when building raises
    ``BackendError`` (no controller runs)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, name: str = CONTROLLER) -> None:
        self.api_client = api_client
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.name = name
        self.spec: dict[str, Any] = {}
        self.tokens: dict[str, str] = {}
        self.builds = 0
        self.build()

    @property
    def token(self) -> str:
        """The token the sync hook's calls carry (the finalize hook names the same Secret key)."""
        return self.tokens["sync"]

    def build(self) -> None:
        """Builds the controller: reads the object and, for each hook with ``authorization``, its
        Secret's key, now."""
        spec = self._read()["spec"]
        for child in spec.get("childResources") or []:
            if not self._discovered(child["apiVersion"], child["resource"]):
                raise BackendError(f"building {self.name}: {child['resource']}.{child['apiVersion']} is not in "
                                   "discovery yet: no controller runs until it is")
        tokens = {}
        for hook, definition in (spec.get("hooks") or {}).items():
            ref = (((definition.get("webhook") or {}).get("authorization") or {}).get("secretRef"))
            if ref:
                tokens[hook] = self._secret_key(ref["namespace"], ref["name"], ref["key"])
        if tokens.get("finalize", tokens.get("sync")) != tokens.get("sync"):
            raise BackendError("the stand-in's Driver sends one token: sync and finalize must name the same key")
        self.spec, self.tokens = spec, tokens
        self.builds += 1

    def observe(self) -> bool:
        """What Metacontroller does on an update event of the object: compares the ``spec`` with the
        one it was built from, and rebuilds (re-reading the Secret) only when they differ. Returns
        whether it rebuilt."""
        if self._read()["spec"] == self.spec:
            return False
        self.build()
        return True

    def restart(self) -> None:
        """Metacontroller restarted: every controller is built again, reading its Secret."""
        self.build()

    def drive(self, driver: Any) -> None:
        """Observes the object, then sets the token ``driver`` (a ``tests.e2e.driver.Driver``) sends."""
        self.observe()
        driver.token = self.token

    def _discovered(self, api_version: str, resource: str) -> bool:
        """Whether discovery serves ``resource`` in ``api_version`` (Metacontroller's resource map,
        refreshed every ``--discovery-interval``; read here when building)."""
        group, _, version = api_version.rpartition("/")
        try:
            if group:
                found = self.custom.get_api_resources(group, version, _request_timeout=REQUEST_TIMEOUT)
            else:
                found = self.core.get_api_resources(_request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise BackendError(f"building {self.name}: discovery of {api_version}: {exc.status}") from exc
        return any(r.name == resource for r in found.resources or [])

    def _read(self) -> dict[str, Any]:
        return dict(self.custom.get_cluster_custom_object("metacontroller.k8s.io", "v1alpha1", "compositecontrollers",
                                                          self.name, _request_timeout=REQUEST_TIMEOUT))

    def _secret_key(self, namespace: str, name: str, key: str) -> str:
        try:
            secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            raise BackendError(f"building {self.name}: Secret {namespace}/{name}: {exc.status} {exc.reason}") from exc
        data = secret.data or {}
        if key not in data:
            raise BackendError(f"building {self.name}: Secret {namespace}/{name} has no key {key}")
        return base64.b64decode(data[key]).decode()


@dataclass(frozen=True)
class Snapshot:
    """One full read of what Metacontroller's informers watch: the Jobs, JobSets and Workloads
    of the namespaces, and the related objects by Metacontroller's group key."""

    jobs: tuple[Obj, ...] = ()
    jobsets: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()
    related: tuple[tuple[str, tuple[Obj, ...]], ...] = ()
    podgroups: tuple[Obj, ...] = ()
    configmaps: tuple[Obj, ...] = ()


class ApiBackend:
    """NVCRE Jobs and their children in namespaces ``namespaces`` of a real API server, read and
    written with ``api_client`` (the kubernetes client; Metacontroller's own credentials).

    ``snapshot`` is what the synchronous mode's informers read (a full list), ``list_objects`` and
    ``watch`` what ``serve``'s reflectors ask (``watched``: of which kinds, where); none is
    throttled (a watch is one long request); every other method is one of Metacontroller's own API calls, each
    taken through ``throttle`` (client-go's ``qps`` and ``burst``: Metacontroller's defaults 5 and
    10) and raising ``BackendError`` when the server refuses it or is away
    (a 404 says so where the caller must know)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespaces: Iterable[str], *,
                 workloads: bool = False, podgroups: bool = False, configmaps: bool = False,
                 qps: float = CLIENT_QPS, burst: int = CLIENT_BURST) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.namespaces = sorted(namespaces)
        self.with_workloads = workloads
        self.with_podgroups = podgroups
        self.with_configmaps = configmaps
        self.cluster_wide = False
        """``serve``'s informers watch every namespace (as Metacontroller does; ``make dev``) instead of
        ``namespaces`` one by one (the tier and the benchmark, each in namespaces of its own)."""
        self.throttle = TokenBucket(qps, burst)
        self._lock = threading.Lock()
        self.api_calls = 0
        self.lists = 0
        """LIST requests of the informers (``snapshot``'s and the reflectors'): a list per resource at
        the start and after a broken watch under ``serve``; every resource every refresh otherwise."""
        self.watches = 0
        """WATCH requests of the reflectors (one per resource, again each time the server ends one)."""

    # -- what the informers see --------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Lists everything the informers watch; raises ``SERVER_ERRORS`` when the server is away."""
        jobs, jobsets, workloads, podgroups, configmaps = [], [], [], [], []
        for namespace in self.namespaces:
            if self.with_configmaps:
                configmaps += self._core("list_namespaced_config_map", namespace).get("items") or []
            if self.with_podgroups:
                podgroups += self._list(SCHEDULING_GROUP, SCHEDULING_VERSION, namespace, "podgroups")
            jobs += self._list(GROUP, VERSION, namespace, "jobs")
            jobsets += self._list(JOBSET_GROUP, JOBSET_VERSION, namespace, "jobsets")
            if self.with_workloads:
                workloads += self._list(KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads")
        related: tuple[tuple[str, tuple[Obj, ...]], ...] = ()
        if self.with_workloads:
            for _ in RELATED:
                self._count_list()
            related = tuple((f"{kind}.{KUEUE_GROUP}/{KUEUE_VERSION}", tuple(self.custom.list_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, plural, _request_timeout=REQUEST_TIMEOUT)["items"]))
                for kind, plural in RELATED)
        return Snapshot(tuple(jobs), tuple(jobsets), tuple(workloads), related, tuple(podgroups),
                        tuple({"apiVersion": "v1", "kind": "ConfigMap", **c} for c in configmaps))

    def _core(self, method: str, *args: Any, **kwargs: Any) -> Obj:
        """A core/v1 call answered as plain JSON (the kubernetes client's models left out)."""
        if method.startswith("list_"):
            self._count_list()
        answer = getattr(self.core, method)(*args, _request_timeout=REQUEST_TIMEOUT, _preload_content=False, **kwargs)
        return json.loads(answer.data or b"{}")

    def _list(self, group: str, version: str, namespace: str, plural: str) -> list[Obj]:
        self._count_list()
        answer = self.custom.list_namespaced_custom_object(group, version, namespace, plural,
                                                           _request_timeout=REQUEST_TIMEOUT)
        return list(answer.get("items") or [])

    def _count_list(self) -> None:
        with self._lock:
            self.lists += 1

    # -- what the informers watch (``Metacontroller.serve``) ---------------------------------------

    def watched(self) -> list[tuple[str, str]]:
        """Every (kind, namespace) an informer keeps: the Jobs and the child types in each namespace,
        and the related types (cluster-scoped, namespace ``""``) with ``workloads``."""
        kinds = ["Job", "JobSet", *(["Workload"] if self.with_workloads else []),
                 *(["PodGroup"] if self.with_podgroups else []), *(["ConfigMap"] if self.with_configmaps else [])]
        related = [(f"{kind}.{KUEUE_GROUP}/{KUEUE_VERSION}", "") for kind, _ in RELATED] if self.with_workloads else []
        namespaces = [""] if self.cluster_wide else self.namespaces
        return [(kind, namespace) for namespace in namespaces for kind in kinds] + related

    def list_objects(self, kind: str, namespace: str) -> tuple[list[Obj], str]:
        """A reflector's LIST: the objects (each naming its kind) and the list's resourceVersion;
        raises ``SERVER_ERRORS``."""
        self._count_list()
        answer = json.loads(self._lister(kind, namespace)(_request_timeout=REQUEST_TIMEOUT,
                                                          _preload_content=False).data or b"{}")
        items = [{"apiVersion": "v1", "kind": "ConfigMap", **o} if kind == "ConfigMap" else o
                 for o in answer.get("items") or []]
        return items, str(answer["metadata"]["resourceVersion"])

    def watch(self, kind: str, namespace: str, resource_version: str, seconds: float) -> Any:
        """A reflector's WATCH from ``resource_version`` with bookmarks, ended by the server after
        ``seconds``: the streamed response (urllib3's; read it, then release or close it). Not
        throttled: one long request."""
        with self._lock:
            self.watches += 1
        return self._lister(kind, namespace)(
            watch=True, allow_watch_bookmarks=True, resource_version=resource_version,
            timeout_seconds=max(1, int(seconds)), _preload_content=False,
            _request_timeout=(REQUEST_TIMEOUT[0], seconds + 30))

    def _lister(self, kind: str, namespace: str) -> Callable[..., Any]:
        """The kubernetes client's list method of ``kind`` in ``namespace`` (``""``: every
        namespace, or a cluster-scoped kind), its path bound."""
        if kind == "ConfigMap":
            if not namespace:
                return self.core.list_config_map_for_all_namespaces
            return functools.partial(self.core.list_namespaced_config_map, namespace)
        if kind == "Job" or kind in CHILD_TYPES:
            group, version, plural = (GROUP, VERSION, "jobs") if kind == "Job" else CHILD_TYPES[kind]
        else:
            group, version, plural = KUEUE_GROUP, KUEUE_VERSION, dict(RELATED)[kind.split(".", 1)[0]]
        if not namespace:
            return functools.partial(self.custom.list_cluster_custom_object, group, version, plural)
        return functools.partial(self.custom.list_namespaced_custom_object, group, version, namespace, plural)

    # -- the user's side (kubectl; not Metacontroller's calls) -------------------------------------

    def create_parent(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job",
                "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}
        self._call(self.custom.create_namespaced_custom_object, GROUP, VERSION, namespace, "jobs", body,
                   throttled=False)

    def patch_parent_spec(self, namespace: str, name: str, changes: Mapping[str, Any]) -> bool:
        return self._call(self.custom.patch_namespaced_custom_object, GROUP, VERSION, namespace, "jobs", name,
                          {"spec": dict(changes)}, missing_ok=True, throttled=False) is not None

    def delete_parent(self, namespace: str, name: str) -> bool:
        return self._call(self.custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, "jobs", name,
                          missing_ok=True, throttled=False) is not None

    # -- Metacontroller's calls --------------------------------------------------------------------

    def get_parent(self, namespace: str, name: str) -> Obj | None:
        """The live Job (a quorum read), ``None`` when it is gone."""
        return self._call(self.custom.get_namespaced_custom_object, GROUP, VERSION, namespace, "jobs", name,
                          missing_ok=True)

    def update_parent(self, obj: Obj) -> Obj | None:
        """``Update`` with ``obj``'s resourceVersion; ``None`` when gone. A conflict raises ``Conflict``."""
        metadata = obj["metadata"]
        return self._call(self.custom.replace_namespaced_custom_object, GROUP, VERSION, metadata["namespace"],
                          "jobs", metadata["name"], obj, missing_ok=True)

    def update_parent_status(self, obj: Obj) -> Obj | None:
        """``UpdateStatus`` with ``obj``'s resourceVersion; ``None`` when gone; ``Conflict`` raised."""
        metadata = obj["metadata"]
        return self._call(self.custom.replace_namespaced_custom_object_status, GROUP, VERSION,
                          metadata["namespace"], "jobs", metadata["name"], obj, missing_ok=True)

    def create_child(self, kind: str, obj: Obj) -> bool:
        """Creates a child; False when it already exists (``AlreadyExists``, swallowed)."""
        group, version, plural = CHILD_TYPES[kind]
        try:
            if kind == "ConfigMap":
                self._call(self.core.create_namespaced_config_map, obj["metadata"]["namespace"], obj)
                return True
            self._call(self.custom.create_namespaced_custom_object, group, version, obj["metadata"]["namespace"],
                       plural, obj)
        except AlreadyExists:
            return False
        return True

    def delete_child(self, kind: str, obj: Obj) -> None:
        """Deletes a child with background propagation and a UID precondition (gone: nothing)."""
        group, version, plural = CHILD_TYPES[kind]
        metadata = obj["metadata"]
        options = {"propagationPolicy": "Background", "preconditions": {"uid": metadata["uid"]}}
        if kind == "ConfigMap":
            self._call(self.core.delete_namespaced_config_map, metadata["name"], metadata["namespace"], body=options,
                       missing_ok=True)
            return
        self._call(self.custom.delete_namespaced_custom_object, group, version, metadata["namespace"], plural,
                   metadata["name"], body=options, missing_ok=True)

    def set_owners(self, kind: str, obj: Obj, owners: list[Obj]) -> None:
        """Writes a child's ownerReferences (adoption or release), on its uid (gone: nothing)."""
        group, version, plural = CHILD_TYPES[kind]
        metadata = obj["metadata"]
        patch = {"metadata": {"ownerReferences": owners or None, "uid": metadata["uid"]}}
        if kind == "ConfigMap":
            self._call(self.core.patch_namespaced_config_map, metadata["name"], metadata["namespace"], patch,
                       missing_ok=True)
            return
        self._call(self.custom.patch_namespaced_custom_object, group, version, metadata["namespace"], plural,
                   metadata["name"], patch, missing_ok=True)

    def update_child(self, kind: str, obj: Obj) -> None:
        """``Update`` of an ``IN_PLACE`` child with ``obj``'s resourceVersion (``Conflict`` raised)."""
        assert kind == "ConfigMap", kind
        metadata = obj["metadata"]
        self._call(self.core.replace_namespaced_config_map, metadata["name"], metadata["namespace"], obj)

    def create_event(self, body: Obj) -> None:
        self._call(self.core.create_namespaced_event, body["metadata"]["namespace"], body)

    def patch_event(self, namespace: str, name: str, patch: Obj) -> None:
        self._call(self.core.patch_namespaced_event, name, namespace, patch, missing_ok=True)

    def _call(self, method: Any, *args: Any, missing_ok: bool = False, throttled: bool = True,
              **kwargs: Any) -> Any:
        if throttled:
            with self._lock:
                delay = self.throttle.reserve(time.monotonic())
                self.api_calls += 1
            if delay > 0:
                time.sleep(delay)
        try:
            result = method(*args, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return None
            message = f"{method.__name__}: {exc.status} {exc.reason}: {(exc.body or '')[:300]}"
            if exc.status == 409 and "AlreadyExists" in (exc.body or ""):
                raise AlreadyExists(message) from exc
            if exc.status == 409:
                raise Conflict(message) from exc
            raise BackendError(message) from exc
        except SERVER_ERRORS as exc:
            raise BackendError(f"{method.__name__}: {exc}") from exc
        return result if result is not None else {}


class Conflict(BackendError):
    """The write's resourceVersion is not the live one."""


class AlreadyExists(BackendError):
    """The child to create exists already."""


class SyncFailed(Exception):
    """A sync that Metacontroller counts as failed: a ``SyncError`` Event, then a rate-limited requeue."""


@dataclass
class View:
    """What the informers hold at one instant (``LaggedCache`` views): parents by key, children
    of each type, related objects by group."""

    parents: dict[Key, Obj]
    children: dict[str, list[Obj]]
    related: dict[str, list[Obj]]


class Metacontroller:
    """Metacontroller v4.17.2 running CompositeController ``nvcre-jobs`` over a real API server
    (module doc), for the cluster tier's world: what ``tests.e2e.driver.Driver`` offers the
    tests (``create_job``, ``patch_spec``, ``delete_job``, ``reconcile_due``, ``reconcile``,
    ``calls``, ``token``, ``jobs``), with Metacontroller's caches, queue and order of writes.

    ``backend`` reads and writes the server; ``transport`` reaches the hooks; ``invariants`` is told
    of every answer and write (the status one against the live status it replaces);
    ``version`` is the hooks' version (v2: strict decoding); ``resync_period`` the
    ``resyncPeriodSeconds``; ``workloads`` the manifests-kueue overlay (Workload children, the
    customize hook); ``staleness`` the caches' lag (``FRESH``: none); ``workers`` how many parents
    are synced at once."""

    def __init__(self, backend: ApiBackend, transport: Transport, invariants: Invariants, *,
                 version: str = "v2", token: str | None = None, resync_period: float | None = 30.0,
                 clock: Callable[[], float] = time.monotonic, workloads: bool = False,
                 staleness: Staleness = FRESH, workers: int = WORKERS, podgroups: bool = False,
                 configmaps: bool = False) -> None:
        self.backend, self.transport, self.invariants = backend, transport, invariants
        self.version, self.token, self.workloads, self.workers = version, token, workloads, workers
        self.podgroups = podgroups
        """The manifests-gang overlay (issue 22): PodGroup children."""
        self.configmaps = configmaps
        """ConfigMap children, ``InPlace`` (the base manifests since issue 33: the checkpoint control file)."""
        self.staleness = staleness
        self.clock = clock
        self.parent_cache: LaggedCache[dict[Key, Obj]] = LaggedCache(staleness.lag, staleness.restart_lag)
        self.child_cache: LaggedCache[Snapshot] = LaggedCache(staleness.child_lag, staleness.restart_lag)
        self.queue: WorkQueue[Key] = WorkQueue(clock)
        self.limiter = RequeueLimiter()
        self.resync = ResyncTimer(resync_period, clock())
        self.customize = CustomizeCache()
        self.calls: list[Call] = []
        self.keep_calls = True
        self.sync_errors: list[tuple[Key, str]] = []
        self.status_writes: dict[Key, SettleJudge] = {}
        self.status_log: list[tuple[float, Key, Obj, Obj]] = []
        self.stale_writes = 0
        self.stale_refusals = 0
        """Answers computed from a parent older than the live one and written (``stale_writes``), and
        requests the hooks refused as behind the cluster (409 ``StaleRequest``): the staleness at work."""
        """Status writes over a live status newer than the one the answer was computed from."""
        """Every status write: (time, Job, the live status it replaced, the status written)."""
        self.answers: Counter[int | None] = Counter()
        """The hooks' answers to the /sync and /finalize calls, by HTTP status (``None``: no answer)."""
        self.stale_answers = 0
        """Answers (200) to a request whose parent's status was older than the live one's when the
        answer came back, written or not: since ADR-107 the hooks decide such a request on the live
        Job, so its answer usually equals the live status and nothing is written."""
        self.informer_errors: list[str] = []
        """Lists and watches that failed under ``serve`` (each listed again after a backoff)."""
        self._informers: list[Informer] = []
        self._reflectors: list[Reflector] = []
        self._stores: dict[tuple[str, str], dict[StoreKey, Obj]] = {}
        """Under ``serve``: each informer's store by (kind, namespace), as last installed."""
        self._seen_parents: dict[Key, str] = {}
        self._seen_children: dict[str, Obj] = {}
        self._events: dict[tuple[str, str], tuple[str, int]] = {}
        self._event_spam: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()
        self.read_failures = 0
        self._view = View({}, {}, {})
        self.refresh()

    # -- the user's side ---------------------------------------------------------------------------

    def create_job(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        """Creates an NVCRE Job (``kubectl apply``); Metacontroller sees it once its cache does."""
        self.backend.create_parent(namespace, name, spec)
        self._written()

    def patch_spec(self, namespace: str, name: str, **changes: Any) -> bool:
        """Changes spec fields (``None`` removes one); False when the Job is gone."""
        changed = self.backend.patch_parent_spec(namespace, name, changes)
        self._written()
        return changed

    def delete_job(self, namespace: str, name: str) -> bool:
        """``kubectl delete``: sets the deletionTimestamp (the finalizer keeps the Job)."""
        deleted = self.backend.delete_parent(namespace, name)
        self._written()
        return deleted

    @property
    def jobs(self) -> dict[Key, Obj]:
        """The Jobs in Metacontroller's cache now."""
        return dict(self._view.parents)

    def job(self, namespace: str, name: str) -> Obj | None:
        """The Job as Metacontroller's cache holds it, or ``None``."""
        return self._view.parents.get((namespace, name))

    def stale_after_restart(self) -> None:
        """The API server restarted: the caches serve what they hold for ``restart_lag`` seconds."""
        now = self.clock()
        self.parent_cache.restarted(now)
        self.child_cache.restarted(now)
        for informer in self._informers:
            informer.restarted(now)

    def _written(self) -> None:
        """After the user's write: ``refresh`` (the synchronous mode's read), none under ``serve``
        (its watches deliver the change)."""
        if not self._informers:
            self.refresh()

    # -- the informers -----------------------------------------------------------------------------

    def refresh(self) -> None:
        """One read of the server into the caches (a failed read: the caches keep serving), then
        the informers' events on the view: a parent added, changed or gone, and a child added,
        changed or gone, enqueue the parent (a child by its controllerRef, an orphan every
        parent it matches)."""
        now = self.clock()
        try:
            snapshot = self.backend.snapshot()
        except SERVER_ERRORS:
            self.read_failures += 1
            self.parent_cache.failed(now)
            self.child_cache.failed(now)
        else:
            self.parent_cache.record(now, {(o["metadata"]["namespace"], o["metadata"]["name"]): o
                                           for o in snapshot.jobs})
            self.child_cache.record(now, snapshot)
        parents = self.parent_cache.view(now) or {}
        children = self.child_cache.view(now) or Snapshot()
        self._view = View(parents, {"JobSet": list(children.jobsets), "Workload": list(children.workloads),
                                    "PodGroup": list(children.podgroups),
                                    "ConfigMap": list(children.configmaps)},
                          {group: list(objects) for group, objects in children.related})
        for key, obj in parents.items():
            if self._seen_parents.get(key) != obj["metadata"]["resourceVersion"]:
                self.queue.add(key)
        for key in set(self._seen_parents) - set(parents):
            self.queue.add(key)  # the delete event: the sync finds it gone and does nothing
        self._seen_parents = {key: obj["metadata"]["resourceVersion"] for key, obj in parents.items()}
        by_uid = {obj["metadata"]["uid"]: key for key, obj in parents.items()}
        current = {f"{kind}/{c['metadata']['uid']}": c for kind, objects in self._view.children.items()
                   for c in objects}
        for ident, child in current.items():
            old = self._seen_children.get(ident)
            if old is None or old["metadata"]["resourceVersion"] != child["metadata"]["resourceVersion"]:
                self._child_event(child, by_uid, gone=False)
        for ident, child in self._seen_children.items():
            if ident not in current:
                self._child_event(child, by_uid, gone=True)
        self._seen_children = current
        if self.resync.due(now):
            for key in parents:
                self.queue.add(key)  # the informer's resync: every parent at once, backing off or not

    def _child_event(self, child: Obj, by_uid: Mapping[str, Key], *, gone: bool) -> None:
        """``onChildAdd``/``onChildUpdate``/``onChildDelete``: the controller owner's parent is
        enqueued; an orphan enqueues the parents it matches, unless it is gone or being deleted."""
        owner = controller_of(child)
        if owner is not None:
            if owner.get("uid") in by_uid:
                self.queue.add(by_uid[owner["uid"]])
            return
        if gone or child["metadata"].get("deletionTimestamp"):
            return
        uid = ((child["metadata"].get("labels") or {}).get("controller-uid"))
        if uid in by_uid:
            self.queue.add(by_uid[uid])  # an orphan: the parents it matches may adopt it

    # -- the queue ---------------------------------------------------------------------------------

    def reconcile_due(self) -> int:
        """Refreshes the caches and syncs every ready parent, ``workers`` at a time, until none is
        ready (at most ``MAX_ROUNDS`` rounds); returns the number of syncs."""
        made = 0
        for _ in range(MAX_ROUNDS):
            self.refresh()
            keys = self.queue.take(self.clock(), self.workers)
            if not keys:
                break
            if len(keys) == 1:
                outcomes = [self._process(keys[0])]
            else:
                with ThreadPoolExecutor(max_workers=len(keys)) as pool:
                    outcomes = list(pool.map(self._process, keys))
            made += len(outcomes)
        return made

    def serve(self, stop: threading.Event, *, watch_seconds: float = WATCH_SECONDS) -> None:
        """Runs as Metacontroller does, until ``stop`` is set: an informer per watched resource
        (``ApiBackend.watched``), each fed by a reflector thread (tests/cluster/informers.py: LIST,
        then WATCH from its resourceVersion, each watch ``watch_seconds`` long, a list again after a
        410 or a broken stream), delivers each event as it comes: the store is updated and the
        handler enqueues (``_on_event``); a dispatcher thread applies the events a ``Staleness``
        delays and runs the resync timer; once every informer has listed, ``workers`` threads each
        take one ready parent at a time and sync it, each on its own (``reconcile_due``'s rounds wait
        for their slowest sync; these do not). An error no sync expects is recorded in
        ``sync_errors`` and the worker goes on; a failed list or watch is recorded in
        ``informer_errors``. The caches ``refresh`` fills are left as they are; ``reconcile_due`` and
        ``refresh`` are for the synchronous mode, not for use while this runs. Returns once every
        thread has ended (within about one sync of ``stop``: the streams are shut down)."""
        staleness = self.staleness
        self._stores = {}
        self._informers = [Informer(kind, namespace, self._install,
                                    lag=staleness.lag if kind == "Job" else staleness.child_lag,
                                    restart_lag=staleness.restart_lag)
                           for kind, namespace in self.backend.watched()]
        reflectors = [Reflector(informer, self.backend, stop, self.informer_errors, watch_seconds, self.clock)
                      for informer in self._informers]
        self._reflectors = reflectors

        def dispatcher() -> None:
            while not stop.is_set():
                now = self.clock()
                for informer in self._informers:
                    informer.pump(now)
                if self.resync.due(now):
                    for key in self._view.parents:
                        self.queue.add(key)  # the informer's resync: every parent at once, backing off or not
                stop.wait(0.02)

        def worker() -> None:
            while not stop.is_set() and not all(informer.synced for informer in self._informers):
                stop.wait(0.02)  # WaitForCacheSync
            while not stop.is_set():
                keys = self.queue.take(self.clock(), 1)
                if not keys:
                    stop.wait(0.02)
                    continue
                try:
                    self._process(keys[0])
                except Exception as exc:  # a worker must outlive one broken sync
                    with self._lock:
                        self.sync_errors.append((keys[0], f"unexpected: {exc!r}"))
                    self.queue.done(keys[0])

        threads = [threading.Thread(target=r.run, name=f"metacontroller-reflector-{r.informer.kind}", daemon=True)
                   for r in reflectors]
        threads.append(threading.Thread(target=dispatcher, name="metacontroller-dispatcher", daemon=True))
        threads += [threading.Thread(target=worker, name=f"metacontroller-worker-{n}", daemon=True)
                    for n in range(self.workers)]
        for thread in threads:
            thread.start()
        try:
            stop.wait()
        finally:
            stop.set()
            for reflector in reflectors:
                reflector.close()
            for thread in threads:
                thread.join()
            self._informers, self._reflectors = [], []

    def cut_watches(self) -> None:
        """Under ``serve``: shuts every open watch stream down, as a connection cut on the way (a
        load balancer, an API server going away) does: each reflector lists again after its backoff."""
        for reflector in list(self._reflectors):
            reflector.close()

    def _install(self, informer: Informer, store: dict[StoreKey, Obj], notes: list[Notification]) -> None:
        """An informer applied events: its store goes into the view (a new one: the workers read the
        old one meanwhile), then each change goes to the handler (``_on_event``)."""
        with self._lock:
            self._stores[(informer.kind, informer.namespace)] = store
            parents: dict[Key, Obj] = {}
            children: dict[str, list[Obj]] = {kind: [] for kind in CHILD_TYPES}
            related: dict[str, list[Obj]] = {}
            for (kind, _), objects in self._stores.items():
                if kind == "Job":
                    parents.update(objects)
                elif kind in children:
                    children[kind] += objects.values()
                else:
                    related.setdefault(kind, []).extend(objects.values())
            self._view = View(parents, children, related)
        for old, new in notes:
            self._on_event(informer.kind, old, new)

    def _on_event(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        """Metacontroller's handlers (``pkg/controller/composite/controller.go``): a parent added,
        updated (its resourceVersion changed or not: a relist and the resync enqueue too) or deleted
        is enqueued; a child update that keeps its resourceVersion is ignored (a relist); a child
        added or updated enqueues its controller's parent (``resolveControllerRef``: by name, then
        uid, in the cache), or, an orphan, every parent its labels match, unless it is being
        deleted; a child deleted enqueues its controller's parent. Related objects enqueue nothing."""
        obj = new if new is not None else old
        assert obj is not None
        namespace, name = obj["metadata"].get("namespace") or "", obj["metadata"]["name"]
        if kind == "Job":
            self.queue.add((namespace, name))
            return
        if kind not in CHILD_TYPES:
            return
        if old is not None and new is not None \
                and old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return  # onChildUpdate: a no-op update (a relist)
        parents = self._view.parents
        owner = controller_of(obj)
        if owner is not None:
            parent = parents.get((namespace, str(owner.get("name"))))
            if parent is not None and parent["metadata"]["uid"] == owner.get("uid") \
                    and owner.get("kind") == "Job" and str(owner.get("apiVersion", "")).startswith(f"{GROUP}/"):
                self.queue.add((namespace, parent["metadata"]["name"]))
            return
        if new is None or obj["metadata"].get("deletionTimestamp"):
            return  # an orphan gone or going: never adopted
        uid = (obj["metadata"].get("labels") or {}).get("controller-uid")
        for key, parent in parents.items():
            if key[0] == namespace and parent["metadata"]["uid"] == uid:
                self.queue.add(key)  # findPotentialParents: the parents whose selector matches

    def reconcile(self, namespace: str, name: str) -> Call | None:
        """Syncs the Job now, from the caches as they are (no read of the server first); returns
        the hook call made, or ``None`` when the sync stopped before calling a hook."""
        key = (namespace, name)
        self.queue.processing.add(key)
        return self._process(key)

    def _process(self, key: Key) -> Call | None:
        """``processNextWorkItem``: one sync; a failure records a ``SyncError`` Event and requeues
        rate-limited, a 429 requeues after ``Retry-After``, a success forgets the backoff."""
        outcome: list[Call] = []
        try:
            self._sync(key, outcome)
        except TooManyRequests as exc:
            self.queue.add_after(key, exc.delay, self.clock())
        except (SyncFailed, BackendError) as exc:
            self.sync_errors.append((key, str(exc)))
            self._sync_error_event(key, str(exc))
            with self._lock:
                delay = self.limiter.when(key, self.clock())
            self.queue.add_after(key, delay, self.clock())
        else:
            with self._lock:
                self.limiter.forget(key)
        finally:
            self.queue.done(key)
        return outcome[0] if outcome else None

    # -- one sync (syncParentObject) ---------------------------------------------------------------

    def _sync(self, key: Key, outcome: list[Call]) -> None:
        parent = self._view.parents.get(key)
        if parent is None:
            return  # gone from the cache: nothing to do
        parent = self._sync_finalizer(parent)
        observed = self._claim(parent)
        related = self._related(parent)
        request = self._request(parent, observed, related)
        call = self._call_hook(key, request)
        outcome.append(call)
        response = self._decode(call)
        if response.resync_after > 0:
            self.queue.add_after(key, response.resync_after, self.clock())
        name = key[1]
        if response.finalized:
            if "deletionTimestamp" in parent["metadata"]:
                self.invariants.on_finalized(key[0], name, parent["metadata"]["uid"])
            parent = self._remove_finalizer(parent)
        try:
            desired = desired_children(parent, response.children)
        except SelectorError as exc:
            raise SyncFailed(str(exc)) from exc
        manage_error = None
        if "deletionTimestamp" not in parent["metadata"] or self._should_finalize(parent):
            manage_error = self._manage_children(parent, observed, desired, response, request, call)
        self._update_status(key, parent, response.status)
        call.applied = manage_error is None
        if manage_error is not None:
            raise SyncFailed(manage_error)

    def _sync_finalizer(self, parent: Obj) -> Obj:
        """``finalizer.SyncObject``: adds the finalizer (GET live, add, update) unless the cached
        parent has it or is being deleted; returns the parent the rest of the sync works on."""
        metadata = parent["metadata"]
        if FINALIZER in (metadata.get("finalizers") or []) or metadata.get("deletionTimestamp"):
            return parent
        updated = self._atomic_update(parent, lambda obj: _add_finalizer(obj, FINALIZER))
        if updated is None:
            raise SyncFailed(f"can't sync finalizer for Job {metadata['namespace']}/{metadata['name']}: gone")
        return updated

    def _remove_finalizer(self, parent: Obj) -> Obj:
        """``RemoveFinalizer`` (GET live, remove, update) as soon as an answer says finalized: the
        API server may delete the Job at once. Returns the parent as the update left it."""
        updated = self._atomic_update(parent, lambda obj: _drop_finalizer(obj, FINALIZER))
        if updated is None:  # gone already
            gone = json.loads(json.dumps(parent))
            gone["metadata"]["finalizers"] = [f for f in parent["metadata"].get("finalizers") or []
                                              if f != FINALIZER]
            return gone
        return updated

    def _atomic_update(self, parent: Obj, change: Callable[[Obj], bool]) -> Obj | None:
        """``AtomicUpdate``: GET live, refuse another uid (as gone), apply ``change``, update with
        the live resourceVersion, retry on conflict (client-go's ``DefaultRetry``). ``None`` when
        the Job is gone."""
        namespace, name, uid = parent["metadata"]["namespace"], parent["metadata"]["name"], parent["metadata"]["uid"]
        for attempt in range(CONFLICT_RETRIES):
            live = self.backend.get_parent(namespace, name)
            if live is None or live["metadata"]["uid"] != uid:
                return None
            if not change(live):
                return live
            try:
                return self.backend.update_parent(live)
            except Conflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.01 * 5 ** attempt)
        return None

    def _should_finalize(self, parent: Obj) -> bool:
        """``ShouldFinalize``: children are managed on a Job being deleted only while it carries
        our finalizer and no garbage-collector finalizer."""
        return not has_gc_finalizer(parent) and FINALIZER in (parent["metadata"].get("finalizers") or [])

    def _claim(self, parent: Obj) -> dict[str, list[Obj]]:
        """``claimChildren`` over the cache of each child type: adopt matching orphans (after an
        uncached read of the parent says it is still ours and not being deleted), release owned
        children that stopped matching; returns the owned children by kind."""
        namespace = parent["metadata"]["namespace"]
        observed: dict[str, list[Obj]] = {}
        for kind in self._child_kinds():
            candidates = [c for c in self._view.children.get(kind, []) if c["metadata"]["namespace"] == namespace]
            claimed = claim(parent, candidates)
            if claimed.adopt:
                live = self.backend.get_parent(namespace, parent["metadata"]["name"])
                if live is not None and live["metadata"]["uid"] == parent["metadata"]["uid"] \
                        and not live["metadata"].get("deletionTimestamp"):
                    for child in claimed.adopt:
                        owners = [*(child["metadata"].get("ownerReferences") or []), _controller_ref(parent)]
                        self.backend.set_owners(kind, child, owners)
                        claimed.owned.append(child)
            for child in claimed.release:
                owners = [o for o in child["metadata"].get("ownerReferences") or []
                          if o.get("uid") != parent["metadata"]["uid"]]
                self.backend.set_owners(kind, child, owners)
            observed[kind] = sorted(claimed.owned, key=lambda c: c["metadata"]["name"])
        return observed

    def _child_kinds(self) -> tuple[str, ...]:
        return ("JobSet", *(("Workload",) if self.workloads else ()), *(("PodGroup",) if self.podgroups else ()),
                *(("ConfigMap",) if self.configmaps else ()))

    def _related(self, parent: Obj) -> dict[str, list[Obj]]:
        """The customize hook's rules for the parent (cached per uid and generation for 20
        minutes; a failed call fails the sync), applied to the related objects' cache."""
        if not self.workloads:
            return {}
        metadata = parent["metadata"]
        now = self.clock()
        rules = self.customize.get(metadata["uid"], metadata.get("generation", 0), now)
        if rules is None:
            body = orjson.dumps({"controller": self._controller(), "parent": parent})
            reply = self.transport.post("/customize", body, self._headers())
            if reply.status != 200:
                raise SyncFailed(f"customize hook failed: {reply.status} {reply.error or reply.body[:200]!r}")
            try:
                answer = json.loads(reply.body)
                rules = list(answer["relatedResources"])
            except (ValueError, KeyError, TypeError) as exc:
                raise SyncFailed(f"customize hook answer: {exc}") from exc
            self.customize.put(metadata["uid"], metadata.get("generation", 0), rules, now)
        wanted = {(rule.get("apiVersion"), rule.get("resource")) for rule in rules
                  if rule.get("labelSelector") == {} or rule.get("labelSelector") is None}
        related: dict[str, list[Obj]] = {}
        for kind, plural in RELATED:
            if (f"{KUEUE_GROUP}/{KUEUE_VERSION}", plural) in wanted:
                group = f"{kind}.{KUEUE_GROUP}/{KUEUE_VERSION}"
                related[group] = self._view.related.get(group, [])
        return related

    def _controller(self) -> Obj:
        child_resources = [{"apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}", "resource": "jobsets",
                            "updateStrategy": {"method": "OnDelete"}}]
        if self.workloads:
            child_resources.append({"apiVersion": f"{KUEUE_GROUP}/{KUEUE_VERSION}", "resource": "workloads",
                                    "updateStrategy": {"method": "OnDelete"}})
        if self.podgroups:
            child_resources.append({"apiVersion": f"{SCHEDULING_GROUP}/{SCHEDULING_VERSION}", "resource": "podgroups",
                                    "updateStrategy": {"method": "OnDelete"}})
        if self.configmaps:
            child_resources.append({"apiVersion": "v1", "resource": "configmaps",
                                    "updateStrategy": {"method": "InPlace"}})
        return {"metadata": {"name": CONTROLLER},
                "spec": {"generateSelector": True,
                         "parentResource": {"apiVersion": f"{GROUP}/{VERSION}", "resource": "jobs"},
                         "childResources": child_resources}}

    def _key(self, obj: Mapping[str, Any]) -> str:
        metadata = obj["metadata"]
        return metadata["name"] if self.version == "v1" else f"{metadata['namespace']}/{metadata['name']}"

    def _request(self, parent: Obj, observed: Mapping[str, list[Obj]], related: Mapping[str, list[Obj]]) -> Obj:
        """The hook request: every declared child type present, keyed per the hook version."""
        groups = {GROUP_KEYS[kind]: {self._key(c): c for c in objects} for kind, objects in observed.items()}
        return {"controller": self._controller(), "parent": parent, "children": groups,
                "related": {group: {self._key(o) if "namespace" in o["metadata"] else o["metadata"]["name"]: o
                                    for o in objects} for group, objects in related.items()},
                "finalizing": "deletionTimestamp" in parent["metadata"]}

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token is not None else {}

    def _call_hook(self, key: Key, request: Obj) -> Call:
        hook = "finalize" if request["finalizing"] else "sync"
        reply = self.transport.post(f"/{hook}", orjson.dumps(request), self._headers())
        call = Call(key[1], hook, request if self.keep_calls else {}, reply)
        with self._lock:
            self.answers[reply.status] += 1
        if reply.status == 409 and b"behind the cluster" in bytes(reply.body or b""):
            self.stale_refusals += 1
        if reply.status == 200:
            try:
                call.body = json.loads(reply.body)
            except ValueError:
                call.body = None
        if self.keep_calls:
            self.calls.append(call)
        self.invariants.on_answer(key[1], hook, self.version, reply.status,
                                  call.body if reply.status == 200 else None, reply.seconds)
        return call

    def _decode(self, call: Call) -> Response:
        """A 429 requeues after ``Retry-After``; any other non-200 or an answer the decoder
        refuses fails the sync."""
        reply = call.reply
        if reply.status == 429:
            try:
                delay = float(reply.headers.get("retry-after", "0"))
            except ValueError:
                delay = 0.0
            raise TooManyRequests(delay)
        if reply.status != 200:
            raise SyncFailed(f"{call.hook} hook failed: unsupported status code: {reply.status} "
                             f"{reply.error or reply.body[:200]!r}")
        try:
            return decode_response(reply.body, strict=self.version == "v2")
        except DecodeError as exc:
            self.invariants.fail(f"{call.job}: {call.hook} answer Metacontroller cannot decode: {exc}")
            raise SyncFailed(f"{call.hook} hook failed: {exc}") from exc

    def _manage_children(self, parent: Obj, observed: Mapping[str, list[Obj]], desired: list[Obj],
                         response: Response, request: Obj, call: Call) -> str | None:
        """``ManageChildren``: deletes the observed children not desired (background, UID
        precondition; those being deleted skipped), creates the desired ones not observed
        (last-applied annotation, controller ownerReference; ``AlreadyExists`` swallowed), never
        updates one (``OnDelete``). Every failure is collected, the others still tried; returns
        them in words, or ``None``."""
        namespace, name = parent["metadata"]["namespace"], parent["metadata"]["name"]
        status = dict(response.status or {})
        prior_phase = ((request["parent"].get("status") or {}).get("phase")) or ""
        errors = []
        wanted = {(c["kind"], c["metadata"]["name"]) for c in desired}
        for kind, objects in observed.items():
            for child in objects:
                if child["metadata"].get("deletionTimestamp") or (kind, child["metadata"]["name"]) in wanted:
                    continue
                if kind == "JobSet":
                    self.invariants.on_delete(name, child, status)
                elif kind == "Workload":
                    active = self.invariants.cluster.active_pods(namespace, name)
                    if active:
                        self.invariants.fail(f"{name}: Workload {child['metadata']['name']} (the quota) released "
                                             f"while pods are active: {sorted(p['metadata']['name'] for p in active)}")
                try:
                    self.backend.delete_child(kind, child)
                    call.deleted.append(child["metadata"]["name"] if kind == "JobSet"
                                        else f"{kind}/{child['metadata']['name']}")
                except BackendError as exc:
                    errors.append(str(exc))
        have = {(kind, c["metadata"]["name"]): c for kind, objects in observed.items() for c in objects}
        for child in desired:
            kind = child["kind"]
            if (kind, child["metadata"]["name"]) in have:
                if kind in IN_PLACE:  # InPlace: updated at once when it differs
                    try:
                        self._update_in_place(kind, have[(kind, child["metadata"]["name"])], child, call)
                    except BackendError as exc:
                        errors.append(str(exc))
                continue  # OnDelete: an existing child is never updated
            if kind not in CHILD_TYPES or kind not in self._child_kinds():
                errors.append(f"{name}: {kind} is not a child type of the controller")
                continue
            obj = with_last_applied(child)
            obj["metadata"]["ownerReferences"] = [*(obj["metadata"].get("ownerReferences") or []),
                                                  _controller_ref(parent)]
            if kind == "JobSet":
                self.invariants.on_create(namespace, name, obj, prior_phase)
            try:
                if self.backend.create_child(kind, obj):
                    call.created.append(child["metadata"]["name"] if kind == "JobSet"
                                        else f"{kind}/{child['metadata']['name']}")
            except BackendError as exc:
                errors.append(str(exc))
        return "; ".join(errors) or None

    def _update_in_place(self, kind: str, observed: Obj, desired: Obj, call: Call) -> None:
        """An ``IN_PLACE`` child (a ConfigMap): the dynamic apply's result for the fields the hooks
        own (``data``, labels, annotations with the last-applied one) over the observed object;
        ``Update`` only when it differs. A child being deleted is left alone."""
        if observed["metadata"].get("deletionTimestamp"):
            return
        applied = with_last_applied(desired)
        metadata = observed["metadata"]
        merged = {**observed, "data": applied.get("data") or {}, "metadata": {
            **metadata, "labels": {**(metadata.get("labels") or {}), **(applied["metadata"].get("labels") or {})},
            "annotations": {**(metadata.get("annotations") or {}), **(applied["metadata"].get("annotations") or {})}}}
        if merged == observed:
            return
        self.backend.update_child(kind, merged)
        call.updated.append(f"{kind}/{metadata['name']}")

    def _update_status(self, key: Key, parent: Obj, status: Obj | None) -> None:
        """``updateParentStatus``: the answer's status plus ``observedGeneration`` (of the parent
        the sync worked on) written over the live Job with its live resourceVersion, nothing when
        equal, retried on conflict; a Job gone or a conflict left after the retries is no
        failure. The invariants judge the write against the live status it replaces."""
        status = dict(status or {})
        status["observedGeneration"] = parent["metadata"].get("generation")
        namespace, name, uid = key[0], key[1], parent["metadata"]["uid"]
        for attempt in range(CONFLICT_RETRIES):
            live = self.backend.get_parent(namespace, name)
            if live is None or live["metadata"]["uid"] != uid:
                return
            before = live.get("status") or {}
            behind = before != (parent.get("status") or {})  # the request carried a status older than the live one
            if behind and attempt == 0:
                self.stale_answers += 1
            if before == status:
                return
            if behind:
                self.stale_writes += 1  # the answer was computed from a status older than the live one
            self.invariants.on_status(name, before, status)
            live["status"] = status
            try:
                self.backend.update_parent_status(live)
            except Conflict:
                if attempt == CONFLICT_RETRIES - 1:
                    return  # "we will reconcile again"
                time.sleep(0.01 * 5 ** attempt)
                continue
            self._count_status_write(key, before, status)
            with self._lock:
                self.status_log.append((self.clock(), key, before, status))
            return

    def _count_status_write(self, key: Key, before: Obj, after: Obj) -> None:
        """Judge the write with the Job's ``SettleJudge`` (a status that never settles is a hot loop)."""
        with self._lock:
            judge = self.status_writes.setdefault(key, SettleJudge())
            churn = judge.record(self.clock(), before, after)
        if churn is not None:
            self.invariants.fail(f"{key[1]}: {judge.limit + 1} status writes in {judge.seconds:g} s that set a field "
                                 f"back or changed only timestamps: the hooks' status never settles (a hot loop); "
                                 f"they changed {churn}")

    def _sync_error_event(self, key: Key, message: str) -> None:
        """The ``SyncError`` Warning Event on the parent, as client-go's recorder sends it: an
        identical one again raises its count; more than 25 for one parent in a burst are dropped
        (one more each 5 minutes). A failed write of the Event is dropped too."""
        parent = self._view.parents.get(key)
        if parent is None:
            return
        metadata = parent["metadata"]
        text = f"Sync error: {message}"[:1024]
        now = self.clock()
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            spam = self._event_spam.setdefault(metadata["uid"], TokenBucket(1 / 300, 25))
            if not spam.try_take(now):
                return
            known = self._events.get((metadata["uid"], text))
            name = known[0] if known else f"{metadata['name']}.{uuid.uuid4().hex[:16]}"
            count = (known[1] + 1) if known else 1
            self._events[(metadata["uid"], text)] = (name, count)
        try:
            if known:
                self.backend.patch_event(key[0], name, {"count": count, "lastTimestamp": stamp})
                return
            self.backend.create_event({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": key[0]},
                "involvedObject": {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job", "name": metadata["name"],
                                   "namespace": key[0], "uid": metadata["uid"],
                                   "resourceVersion": metadata.get("resourceVersion")},
                "reason": "SyncError", "message": text, "type": "Warning", "count": 1,
                "source": {"component": "metacontroller"}, "firstTimestamp": stamp, "lastTimestamp": stamp,
                "reportingComponent": "metacontroller"})
        except BackendError:
            pass


class TooManyRequests(Exception):
    """A 429 from a hook: requeue after ``delay`` seconds, no Event, no backoff."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"429, retry after {delay:g}s")
        self.delay = delay


def _controller_ref(parent: Mapping[str, Any]) -> Obj:
    metadata = parent["metadata"]
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job", "name": metadata["name"], "uid": metadata["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _add_finalizer(obj: Obj, name: str) -> bool:
    finalizers = list(obj["metadata"].get("finalizers") or [])
    if name in finalizers:
        return False
    obj["metadata"]["finalizers"] = [*finalizers, name]
    return True


def _drop_finalizer(obj: Obj, name: str) -> bool:
    finalizers = list(obj["metadata"].get("finalizers") or [])
    if name not in finalizers:
        return False
    obj["metadata"]["finalizers"] = [f for f in finalizers if f != name]
    return True
