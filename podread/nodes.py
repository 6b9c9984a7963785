"""Node reads: what the drain barrier asks about the nodes its pods are bound to.

The barrier waits on pods; a pod bound to a node that died can stay terminating forever, because
only its kubelet (or a force delete) ends it. To say so, and to know when a force delete is safe,
the decision needs each such node's state. Nodes are read one by one, by name, from the API server
(``GET /api/v1/nodes/<name>``, no ``resourceVersion``: the server's current state, never an
informer's). A node is *deleted* only when the API server itself says so: a 404 whose body is
the server's ``Status`` with ``reason: NotFound``, ``details.kind: nodes`` and ``details.name`` the
node's name (``not_found_for``). Any other 404 (a proxy's plain-text ``404 page not found``, a
``Status`` about another object) is a failed read (``ApiError``, code ``http-404``): it holds, and
licenses nothing. A deleted Node, or the taint ``node.kubernetes.io/out-of-service``, is the only
confirmation that a node's containers are gone.

A ``NodeLister`` is anything with ``get_node(name)``: ``NodeClient`` (the kubernetes client) or
``SnapshotNodes`` (nodes held in memory, for replay and recorded payloads).

A ``NodeCache`` (the production Reader's, ``NVCRE_NODE_CACHE_TTL_SECONDS``) keeps the states a
GET read for a few seconds, shared by a worker's threads, so that the many Jobs whose pods sit on the
same nodes do not each GET them. It keeps only states that license nothing (the node exists and is
not tainted out-of-service: ``NodeState.gone`` is False). Such a state only decides whether a pod is
reported stuck, so an old one delays ``DrainStuck`` by at most the TTL. A state that licenses a
force delete (deleted, out of service) is never kept and never answered from the cache: it comes
from a GET sent in the same call, the API server's own NotFound for a deleted node.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import cachetools
import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from podread import calldeadline, rest, trace
from podread.errors import ApiError, NoLiveReaderError, PodReadError
from podread.live import DEFAULT_TIMEOUT_SECONDS, http_error, transport_error
from podread.metrics import ReadMetrics

if TYPE_CHECKING:  # podread.nodewatch imports this module
    from podread.nodewatch import NodeWatch

log = logging.getLogger("podread")

Node = dict[str, Any]
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
"""Set by an administrator once a node is confirmed shut down (non-graceful node shutdown)."""
UNREACHABLE_TAINTS = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})
"""Set by the node lifecycle controller when a node stops reporting or reports NotReady."""
MAX_NODES_PER_READ = 16
"""The most nodes one ``Reader.node_states`` call reads; the rest are left unknown (not stuck)."""
DEFAULT_NODE_TTL_SECONDS = 5.0
"""How long a ``NodeCache`` answers a state it read (``NVCRE_NODE_CACHE_TTL_SECONDS``)."""
MAX_NODE_TTL_SECONDS = 60.0
"""The longest TTL accepted: a cached state delays a stuck verdict by up to its TTL."""
DEFAULT_NODE_CACHE_ENTRIES = 4096
"""The most nodes a ``NodeCache`` keeps (least recently used dropped first); each entry is slim."""


class NodeLister(Protocol):
    """Reads one Node by name: the Node as the API server's JSON, ``None`` when the API server
    says it does not exist (its NotFound for that node), or raises ``PodReadError`` (a failed
    read, an unconfirmed 404 included, is never "deleted")."""

    def get_node(self, name: str) -> Node | None: ...


@dataclass(frozen=True)
class NodeState:
    """What the barrier needs to know of one node.

    ``exists`` is False only when the API server answered its NotFound for this node. ``ready`` is the ``Ready``
    condition's status (``"True"``, ``"False"``, ``"Unknown"``, ``""`` without one) and
    ``ready_since`` its ``lastTransitionTime``; ``unreachable`` and ``out_of_service`` say whether
    the node carries those taints.
    """

    name: str
    exists: bool
    ready: str = ""
    ready_since: str = ""
    unreachable: bool = False
    out_of_service: bool = False

    @property
    def gone(self) -> bool:
        """Confirmed gone: the Node is deleted, or tainted out-of-service. Only then may a pod
        bound to it be force-deleted: nothing can still be running there."""
        return not self.exists or self.out_of_service

    @property
    def unhealthy(self) -> bool:
        """Gone, not Ready, or tainted unreachable/not-ready: its pods may never finish."""
        return self.gone or self.ready != "True" or self.unreachable

    def describe(self) -> str:
        """A short, fixed phrase for a status message: ``deleted``, ``out of service``, ...."""
        if not self.exists:
            return "deleted"
        if self.out_of_service:
            return "out of service"
        if self.unreachable or self.ready == "Unknown":
            return "unreachable"
        return "not ready"


def node_state(name: str, node: Mapping[str, Any] | None) -> NodeState:
    """The ``NodeState`` of ``node`` (``None``: the server answered 404 for ``name``)."""
    if node is None:
        return NodeState(name=name, exists=False)
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == "Ready"),
                 {})
    taints = {str(t.get("key", "")) for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, Mapping)}
    return NodeState(name=name, exists=True, ready=str(ready.get("status", "")),
                     ready_since=str(ready.get("lastTransitionTime", "")),
                     unreachable=bool(taints & UNREACHABLE_TAINTS), out_of_service=OUT_OF_SERVICE_TAINT in taints)


def slim_node(node: Mapping[str, Any]) -> Node:
    """What ``node_state`` reads of ``node``, and nothing else: its name, its taints and its
    ``Ready`` condition (``node_state(name, slim_node(node)) == node_state(name, node)``). A
    ``NodeCache`` keeps this, not the whole Node (images, addresses, capacity, ...)."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    return {"metadata": {"name": metadata.get("name", "")},
            "spec": {"taints": list(spec.get("taints") or ())},
            "status": {"conditions": [c for c in status.get("conditions") or ()
                                      if isinstance(c, Mapping) and c.get("type") == "Ready"]}}


@dataclass(frozen=True)
class CachedNode:
    """A ``NodeCache`` entry: the state, the slim Node it was read from, and when it expires
    (``NodeCache.clock`` seconds)."""

    state: NodeState
    node: Node
    expires: float


class NodeCache:
    """Node states by name for ``ttl_seconds``, at most ``max_entries`` of them (least recently
    used dropped first), shared by the threads of one Reader: every access holds one lock.

    ``get`` answers only a state that licenses nothing (``NodeState.gone`` False: the node exists
    and is not out of service); ``put`` keeps only such a state, and a gone one drops the name's
    entry. So "deleted" or "out of service" is never answered from here: ``read_states`` sends a
    GET, and the API server's own answer in this call is what can license a force delete. The TTL
    counts from when the GET was sent (``put``'s ``asked``), so an answer is never older than the
    TTL. ``clock`` is ``time.monotonic`` unless a test gives another.
    """

    def __init__(self, *, ttl_seconds: float = DEFAULT_NODE_TTL_SECONDS,
                 max_entries: int = DEFAULT_NODE_CACHE_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < ttl_seconds <= MAX_NODE_TTL_SECONDS:
            raise ValueError(f"ttl_seconds must be > 0 and at most {MAX_NODE_TTL_SECONDS:g}, got {ttl_seconds}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._entries: cachetools.LRUCache[str, CachedNode] = cachetools.LRUCache(maxsize=max_entries)
        self._lock = threading.Lock()

    def get(self, name: str) -> CachedNode | None:
        """The entry for ``name`` while it is younger than the TTL and its state is not gone, else
        ``None`` (an expired entry is dropped)."""
        now = self.clock()
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                return None
            if entry.expires <= now or entry.state.gone:
                self._entries.pop(name, None)
                return None
            return entry

    def put(self, state: NodeState, node: Node | None, asked: float) -> None:
        """Keeps ``state`` (read by a GET sent at ``asked``, a ``clock`` time) with ``node`` slim, unless it
        is gone (then the name's entry is dropped) or a newer read of that name is already kept."""
        with self._lock:
            if state.gone or node is None:
                self._entries.pop(state.name, None)
                return
            expires = asked + self.ttl_seconds
            kept = self._entries.get(state.name)
            if kept is not None and kept.expires > expires:
                return
            self._entries[state.name] = CachedNode(state, slim_node(node), expires)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def read_states(lister: NodeLister | None, names: Iterable[str], metrics: ReadMetrics,
                cache: NodeCache | None = None, watch: NodeWatch | None = None) -> dict[str, NodeState]:
    """What ``Reader.node_states`` does: reads ``names`` (sorted, unique, at most
    ``MAX_NODES_PER_READ``) through ``lister``, one by one, counting and timing the read as method
    ``node_states`` and noting it in an open ``trace.recording()`` (the Nodes that exist as
    ``items``: a name read and not among them was deleted). Raises ``PodReadError``
    (``NoLiveReaderError`` without a lister); a failed read is never "deleted", and never answered
    from the cache instead.

    With a ``cache``, a name it holds (a state that licenses nothing, younger than its TTL) is
    answered from it (``podread_node_cache_lookups_total{result="hit"}``); any other name is read by
    a GET (``miss``), whose state the cache then keeps unless it is gone. A "deleted" or "out of
    service" answer therefore always comes from a GET this call sent. The read is counted with
    source ``cache`` when every name was a hit, else ``live``.

    With a ``watch`` (``podread.nodewatch.NodeWatch``, started here if it is not running in this
    process) whose store is fresh (synced, confirmed within its staleness bound), a name is answered
    from the watch only with a state that says "not stuck yet" (``WatchedNodes.answer``: the node
    exists, Ready, no unreachable or out-of-service taint); every other name is read by a GET (the
    ``NodeCache`` is not asked: the watch is newer than it). A deleted node is therefore still only
    the API server's NotFound for a GET of this call, never the watch's DELETED event. A watch that is
    not fresh (listing, broken past its bound) is not asked: the cache and GETs answer, as without
    one. The read is counted with source ``watch`` when no GET was sent and the watch answered a
    name; each name in ``podread_node_reads_total{source}`` (``watch``, ``cache``, ``get``)."""
    started = time.perf_counter()
    wanted = sorted(set(names))[:MAX_NODES_PER_READ]
    found: dict[str, NodeState] = {}
    existing: list[Node] = []
    sent = cache is None and watch is None
    watched = False
    try:
        if lister is None:
            raise NoLiveReaderError("no node lister: this Reader was built without one")
        if watch is not None:
            watch.start()
        fresh = watch is not None and watch.store.fresh()
        for name in wanted:
            state, node, origin = None, None, "get"
            if fresh:
                assert watch is not None
                held = watch.store.answer(name)
                if held is not None:
                    (state, node), origin = held, "watch"
            elif cache is not None:
                state, node = _cached(cache, name, metrics)
                origin = "cache"
            if state is None:
                asked = cache.clock() if cache is not None else 0.0
                node = lister.get_node(name)
                state, sent, origin = node_state(name, node), True, "get"
                if cache is not None:
                    cache.put(state, node, asked)
            watched = watched or origin == "watch"
            metrics.node_read(origin).inc()
            found[name] = state
            existing += [node] if node is not None else []
    except Exception as exc:
        error = exc if isinstance(exc, PodReadError) else PodReadError(f"unexpected error: {exc!r}", code="unexpected")
        error.located("node_states", "live")
        metrics.reads.labels("node_states", "live", "error").inc()
        metrics.read_errors.labels("node_states", "live", error.code).inc()
        _note(wanted, started, error=error)
        log.warning("node read failed: %s [%s]", error.reason, error.code)
        if error is exc:
            raise
        raise error from exc
    source = "live" if sent else "watch" if watched else "cache"
    metrics.reads.labels("node_states", source, "ok").inc()
    metrics.read_seconds.labels("node_states", source).observe(time.perf_counter() - started)
    _note(wanted, started, nodes=existing, source=source)
    return found


def _cached(cache: NodeCache, name: str, metrics: ReadMetrics) -> tuple[NodeState | None, Node | None]:
    """``name``'s state and slim Node from ``cache``, counted as a ``hit``; ``(None, None)`` and a
    ``miss`` when the cache has none to answer (none kept, expired, or one that would license)."""
    entry = cache.get(name)
    metrics.node_lookup("miss" if entry is None else "hit").inc()
    return (None, None) if entry is None else (entry.state, entry.node)


def _note(names: list[str], started: float, *, nodes: list[Node] | None = None,
          error: PodReadError | None = None, source: str = "live") -> None:
    if trace.recording_open():
        trace.note(trace.ReadRecord(
            method="node_states", source=source, query="nodes=" + ",".join(names),
            outcome="ok" if error is None else "error", pods=len(nodes or ()),
            seconds=time.perf_counter() - started, error=None if error is None else str(error),
            error_code=None if error is None else error.code,
            items=tuple(nodes) if nodes is not None and trace.keeping_pods() else None))


class NodeClient:
    """Reads Nodes from the API server with the official kubernetes client: raw JSON, bounded by
    ``timeout_seconds`` and by the hook call's deadline (``podread.deadline``). The server's
    NotFound for that node (``not_found_for``) is ``None``; every other failure, any other 404
    included, raises ``ApiError`` with the error's class in ``code``."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        self._api_client = api_client
        self._timeout = timeout_seconds

    def get_node(self, name: str) -> Node | None:
        """``GET /api/v1/nodes/<name>``: the Node, or ``None`` when the server answers its NotFound
        for this node; an unconfirmed 404 raises ``ApiError`` (code ``http-404``)."""
        what = f"get node {name}"
        budget = calldeadline.budget(what, self._timeout)
        try:
            body = orjson.loads(rest.send(self._api_client, "GET", rest.NODE_PATH, params={"name": name},
                                          timeout=(budget, budget)))
        except ApiException as exc:
            if exc.status == 404 and not_found_for(exc.body, name):
                return None
            error = http_error(what, exc)
            if exc.status == 404:
                error = ApiError(f"{error.reason}, not the API server's NotFound for this node: a failed read, "
                                 "never a deleted node", status=404)
            raise error from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(what, exc) from exc
        except orjson.JSONDecodeError as exc:
            raise ApiError(f"{what}: the answer is not valid JSON ({exc})", code="invalid-json") from exc
        if not isinstance(body, dict) or body.get("kind") not in (None, "Node"):
            raise ApiError(f"{what}: the answer is not a Node", code="not-a-pod-list")
        return body


def not_found_for(body: object, name: str) -> bool:
    """Whether a 404's ``body`` is the API server's own NotFound for Node ``name``: a JSON
    ``Status`` object with ``reason: NotFound``, ``details.kind: nodes`` and ``details.name``
    ``name`` (what kube-apiserver sends for a missing Node). Anything else, a proxy's plain text,
    a Status about another object or kind, is not."""
    if isinstance(body, str):
        body = body.encode()
    if not isinstance(body, bytes | bytearray):
        return False
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(status, dict) or status.get("kind") != "Status" or status.get("reason") != "NotFound":
        return False
    details = status.get("details")
    return isinstance(details, dict) and details.get("kind") == "nodes" and details.get("name") == name


class SnapshotNodes:
    """A ``NodeLister`` over Nodes held in memory: a name not among them is deleted (404); with
    ``error`` set every read fails as the API server would."""

    def __init__(self, nodes: Iterable[Mapping[str, Any]] = (), error: str | None = None, code: str = "") -> None:
        self._nodes = {str((n.get("metadata") or {}).get("name", "")): dict(n) for n in nodes}
        self._error = error
        self._code = code

    def get_node(self, name: str) -> Node | None:
        """The held Node named ``name``, or ``None``; raises ``ApiError`` for a failing snapshot."""
        if self._error is not None:
            raise ApiError(self._error, code=self._code)
        return self._nodes.get(name)
