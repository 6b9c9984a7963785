"""The watch of Nodes that feeds the stuck-pod check's node states (issue 36 item 3, ADR 0102).

The TTL ``NodeCache`` left 0.31-0.37 Node GETs per hook call in transitions at 1,000 Jobs: every
Job whose pods sit on a node re-read it once its few seconds passed. One list and one watch of Nodes
per worker (cluster-scoped, read-only) answer the common case, a node that is healthy, with no
request at all. Three parts (and ``kept``: what it keeps of a Node):

- ``NodeWatchClient``: ``GET /api/v1/nodes`` (paged, consistent: ``podread.live.PagedList``) and its
  watch (``?watch=true&allowWatchBookmarks=true``), through the kubernetes client, raw JSON;
- ``WatchedNodes``: what the watch keeps of each Node (``podread.nodes.slim_node``: its name, its
  taints and its ``Ready`` condition, nothing else), its resourceVersion, and when the watch last
  confirmed it (the list, a bookmark, an event past a request's first bookmark, or a nudge);
- ``NodeWatch``: the thread that lists, then watches from the list's resourceVersion, resumes after
  an error (``podread.watch.Backoff``), lists again on 410 Gone (the pod watch's loop:
  ``podread.watch.Reflector``), and nudges a quiet watch (one consistent list of at most one Node:
  ``WatchedNodes.progress``).

The rule: a state from the watch may only delay, never license. ``WatchedNodes.answer`` answers a
name only while the watch is synced and confirmed less than ``max_staleness`` seconds ago, and only
with a state that says "not stuck yet": the node exists, is ``Ready``, and carries neither an
unreachable/not-ready taint nor the out-of-service taint (``NodeState.unhealthy`` False). Anything
else (a name the watch does not hold, a deleted, out-of-service, NotReady or unreachable node) is
read by a GET in the same call (``podread.nodes.read_states``), and "deleted" is the API server's own
NotFound from that GET, never the watch's DELETED event or absence. So a lagging watch delays a
``DrainStuck`` verdict by at most ``max_staleness``; it can never start a force delete. A failure's
class is judged once (``hooks.core.history``): a node the lagging watch still holds Ready classes
that failure ``unknown`` instead of ``node`` (the user's budget, not the infrastructure's), as a GET
would in the ~40 s before the node controller marks a dead node NotReady; the watch widens that
window by at most ``max_staleness``, and only while it lags.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from podread import rest
from podread.live import DEFAULT_PAGE_SIZE, PagedList, http_error, list_items, transport_error
from podread.metrics import ReadMetrics, default_metrics
from podread.nodes import Node, NodeState, node_state, slim_node
from podread.selector import PodSelector
from podread.watch import Backoff, Reflector, WatchCounters, _version, reached

log = logging.getLogger("podread")

DEFAULT_NODE_WATCH_STALENESS = 30.0
"""How long after its last confirmation the watch still answers (``WatchedNodes.max_staleness``):
the most a healthy state from the watch can delay a stuck verdict. Under the default
``spec.drain.stuckAfterSeconds`` (300 s) by a tenth."""
NODE_WATCH_SECONDS = 20
"""``timeoutSeconds`` of each node watch request: the API server sends a bookmark 2 s before it,
so a quiet watch is confirmed about every 20 s, inside ``DEFAULT_NODE_WATCH_STALENESS``."""
NODE_LIST_TIMEOUT_SECONDS = 60.0
"""How long the watch's own list of every Node may take (in the watch's thread, not a hook call)."""
NODE_SCOPE = "nodes"
_ALL = PodSelector()


def kept(node: Node) -> Node:
    """What the watch keeps of ``node``: only what ``node_state`` reads (its name, its taints' keys,
    its ``Ready`` condition's status and ``lastTransitionTime``: ``node_state(name, kept(node)) ==
    node_state(name, node)``) and its ``resourceVersion`` (to drop an event older than what is
    held). Not the heartbeat, the messages, images, addresses or capacity."""
    slim = slim_node(node)
    slim["spec"]["taints"] = [{"key": t.get("key", "")} for t in slim["spec"]["taints"] if isinstance(t, Mapping)]
    slim["status"]["conditions"] = [{k: c[k] for k in ("type", "status", "lastTransitionTime") if k in c}
                                    for c in slim["status"]["conditions"]]
    version = (node.get("metadata") or {}).get("resourceVersion")
    if version:
        slim["metadata"]["resourceVersion"] = str(version)
    return slim


class NodeWatchClient(PagedList):
    """Lists and watches Nodes with the official kubernetes client (``GET /api/v1/nodes``): the
    paged, consistent list of ``PagedList`` (code ``not-a-node-list`` for a 200 that is not a
    NodeList), counted in ``podread_node_watch_requests_total``; ``open_watch`` opens a watch."""

    NOUN = "nodes"
    LIST_KIND = "NodeList"
    NOT_A_LIST = "not-a-node-list"

    def __init__(self, api_client: k8s.ApiClient, *, timeout_seconds: float = NODE_LIST_TIMEOUT_SECONDS,
                 page_size: int = DEFAULT_PAGE_SIZE, metrics: ReadMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(api_client, timeout_seconds=timeout_seconds, page_size=page_size, metrics=metrics,
                         clock=clock)

    def list_nodes(self) -> tuple[list[Node], str]:
        """Every Node, slim (``slim_node``, as each page is decoded), and the list's resourceVersion."""
        return self.list_snapshot(_ALL, project=kept)

    def current_version(self) -> str:
        """The API server's current resourceVersion, from one consistent list of at most one Node
        (it also makes the server's watch cache of Nodes catch up, so the next bookmark carries it)."""
        what = "list nodes (limit 1, for the resourceVersion)"
        body = self._page(_ALL, None, self._clock() + self._timeout, self._timeout, what, limit=1)
        assert isinstance(body, dict)  # a first page never answers "expired"
        list_items(body, what, self.LIST_KIND, self.NOT_A_LIST)
        metadata = body.get("metadata") or {}
        return str(metadata.get("resourceVersion") or "") if isinstance(metadata, dict) else ""

    def open_watch(self, resource_version: str, timeout_seconds: int) -> Any:
        """``GET /api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=<rv>&timeoutSeconds=<n>``,
        raw: the streaming urllib3 response. An HTTP error (410 included) or a transport error raises
        ``ApiError``."""
        what = f"watch nodes from resourceVersion {resource_version}"
        try:
            return self._open(_ALL, [("watch", True), ("allowWatchBookmarks", True),
                                     ("resourceVersion", resource_version), ("timeoutSeconds", timeout_seconds)],
                              (min(self._timeout, 10.0), timeout_seconds + 10.0))
        except ApiException as exc:
            raise http_error(what, exc) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(what, exc) from exc

    def _target(self, selector: PodSelector) -> tuple[str, dict[str, str]]:
        return rest.NODES_PATH, {}

    def _requests(self) -> Any:
        return self._metrics.node_watch_requests


class WatchedNodes:
    """The slim Nodes the watch keeps, by name, its resourceVersion and its last confirmation.
    Thread-safe. ``clock`` is ``time.monotonic`` unless a test gives another."""

    def __init__(self, *, max_staleness: float = DEFAULT_NODE_WATCH_STALENESS,
                 clock: Callable[[], float] = time.monotonic, metrics: ReadMetrics | None = None) -> None:
        if max_staleness <= 0:
            raise ValueError(f"max_staleness must be > 0, got {max_staleness}")
        self.max_staleness = max_staleness
        self._clock = clock
        self._metrics = metrics or default_metrics()
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[NodeState, Node]] = {}
        self._gone: dict[str, int] = {}  # name -> resourceVersion of its deletion, cleared by a list
        self._synced = False
        self._confirmed_at: float | None = None
        self.resource_version = ""

    def now(self) -> float:
        """The store's clock."""
        return self._clock()

    def reset(self) -> None:
        """Forgets everything (a new process after a fork): unsynced until the next ``replace``."""
        with self._lock:
            self._nodes.clear()
            self._gone.clear()
            self._synced, self._confirmed_at, self.resource_version = False, None, ""
        self._publish()

    def replace(self, nodes: list[Node], resource_version: str, listed_at: float) -> None:
        """Makes ``nodes`` (a whole list, at ``resource_version``, sent at ``listed_at``) what is held."""
        with self._lock:
            self._nodes = {name: (node_state(name, n), kept(n)) for n in nodes
                           if (name := str((n.get("metadata") or {}).get("name") or ""))}
            self._gone.clear()
            self._synced, self.resource_version = True, resource_version
            self._confirmed_at = listed_at
        self._publish()

    def apply(self, kind: str, node: Node, *, confirm: bool) -> bool:
        """One ADDED, MODIFIED or DELETED event; returns whether it changed the store (False: older
        than what is held, or than the node's deletion). With ``confirm`` (an event past the
        request's first bookmark) the store counts as confirmed now."""
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name") or "")
        version = _version(metadata.get("resourceVersion"))
        with self._lock:
            held = self._nodes.get(name)
            held_version = None if held is None else _version(held[1]["metadata"].get("resourceVersion"))
            floor = held_version if held is not None else self._gone.get(name)
            stale = version is not None and floor is not None and version <= floor
            if version is not None and version > (_version(self.resource_version) or 0):
                self.resource_version = str(version)
            if confirm:
                self._confirmed_at = self._clock()
            if stale or not name:
                return False
            if kind == "DELETED":
                self._nodes.pop(name, None)
                if version is not None:
                    self._gone[name] = version
            else:
                self._gone.pop(name, None)
                self._nodes[name] = (node_state(name, node), kept(node))
        self._publish()
        return True

    def bookmark(self, resource_version: str) -> None:
        """Every event up to ``resource_version`` was sent: confirms the store now."""
        with self._lock:
            version = _version(resource_version)
            if version is not None and version > (_version(self.resource_version) or 0):
                self.resource_version = resource_version
            self._confirmed_at = self._clock()

    def progress(self, resource_version: str, sent_at: float) -> bool:
        """A consistent list sent at ``sent_at`` saw ``resource_version``: when the watch has reached
        it, confirms the store as of ``sent_at`` and returns True; otherwise nothing changes."""
        with self._lock:
            if not self._synced or not reached(self.resource_version, resource_version):
                return False
            if self._confirmed_at is None or sent_at > self._confirmed_at:
                self._confirmed_at = sent_at
            return True

    def staleness(self) -> float | None:
        """Seconds since the last confirmation, or ``None`` while not synced."""
        with self._lock:
            if not self._synced or self._confirmed_at is None:
                return None
            return self._clock() - self._confirmed_at

    def fresh(self) -> bool:
        """Synced and confirmed less than ``max_staleness`` seconds ago: its answers may be used."""
        age = self.staleness()
        return age is not None and age < self.max_staleness

    def answer(self, name: str) -> tuple[NodeState, Node] | None:
        """``name``'s state and slim Node when the watch is ``fresh`` and the state says "not stuck
        yet" (``NodeState.unhealthy`` False); ``None`` otherwise: the caller GETs the node."""
        if not self.fresh():
            return None
        with self._lock:
            held = self._nodes.get(name)
        if held is None or held[0].unhealthy:
            return None
        return held

    def __len__(self) -> int:
        with self._lock:
            return len(self._nodes)

    def __contains__(self, name: object) -> bool:
        """Whether the watch holds a Node of this name (whatever its state)."""
        with self._lock:
            return name in self._nodes

    def _publish(self) -> None:
        self._metrics.node_watch_nodes.set(len(self))


class NodeWatch(Reflector):
    """The thread that keeps a ``WatchedNodes`` current: list, watch, resume; list again on 410.

    Reads ``client.list_nodes`` then ``client.open_watch`` from the list's resourceVersion (requests
    of ``watch_seconds``, resumed from the last resourceVersion seen). Decides, per request's end:
    ``ended`` (resume at once), ``expired`` (410 Gone, as an answer or an ERROR event: list again),
    ``error`` (back off, resume). A second thread nudges a quiet watch every ``nudge_every`` seconds
    once it is unconfirmed for half ``max_staleness`` (``client.current_version``, then
    ``WatchedNodes.progress``). Counted in ``podread_node_watch_{lists,events,restarts,nudges}_total``.
    ``start`` is idempotent and starts anew in a forked child; ``stop`` shuts the open request and
    joins the threads. The watch never answers a read itself: ``read_states`` asks the store.
    """

    ERROR_PREFIX = "node watch"

    def __init__(self, client: Any, store: WatchedNodes, *, watch_seconds: int = NODE_WATCH_SECONDS,
                 backoff: Backoff | None = None, metrics: ReadMetrics | None = None,
                 nudge_every: float | None = 5.0) -> None:
        self._client = client
        metrics = metrics or default_metrics()
        super().__init__(store, name="node watch", watch_seconds=watch_seconds, backoff=backoff,
                         counters=WatchCounters(metrics.node_watch_lists, metrics.node_watch_events,
                                                metrics.node_watch_restarts, metrics.node_watch_nudges),
                         nudge_every=nudge_every)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Starts the threads unless they run in this process already."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's threads and nodes are not ours
                self._forget_parent()
                self._threads = []
            if self._stop.is_set() or any(t.is_alive() for t in self._threads):
                return
            self._threads = [threading.Thread(target=self._run, name="podread-node-watch", daemon=True)]
            if self.nudge_every is not None:
                self._threads.append(threading.Thread(target=self._nudge_loop, name="podread-node-nudge", daemon=True))
            for thread in self._threads:
                thread.start()

    @property
    def running(self) -> bool:
        """Whether the watch thread runs in this process."""
        return self._pid == os.getpid() and bool(self._threads) and self._threads[0].is_alive()

    def _joinable(self) -> tuple[threading.Thread | None, ...]:
        return tuple(self._threads)

    def nudge(self) -> bool | None:
        """When the store is synced and unconfirmed for half ``max_staleness`` or more: one list of at
        most one Node, then ``WatchedNodes.progress``. Returns whether that confirmed the store, or
        ``None`` when none was needed or it failed."""
        age = self.store.staleness()
        if age is None or age < self.store.max_staleness / 2:
            return None
        return self._nudge_by_list()

    def _list(self) -> tuple[list[Any], str]:
        """Every Node, kept (``kept``), and the list's resourceVersion."""
        return self._client.list_nodes()

    def _open(self, resource_version: str) -> Any:
        return self._client.open_watch(resource_version, self.watch_seconds)

    def _current_version(self) -> str:
        return self._client.current_version()

    def _apply(self, kind: str, obj: dict[str, Any], live: bool) -> bool:
        """The Node as the event shows it (``WatchedNodes.apply`` keeps what it needs)."""
        return self.store.apply(kind, obj, confirm=live)
