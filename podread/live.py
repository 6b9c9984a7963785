"""LiveClient: Pod lists straight from the API server through the official kubernetes client."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from podread import calldeadline, rest
from podread.errors import ApiError, DeadlineExceeded
from podread.metrics import ReadMetrics, default_metrics
from podread.selector import Pod, PodSelector

DEFAULT_TIMEOUT_SECONDS = 3.0
DEFAULT_PAGE_SIZE = 500
FIRST_PAGE_SIZE = 50
"""The ``limit`` of a list's first page (at most the client's page size; the later pages are of that
size). The API server's Priority and Fairness admits a list by an estimate of its work that grows
with its ``limit``, not with what its selector matches (``listWorkEstimator``: ``limit`` times the
average object size, 100 kB a seat, at most 10 seats from the watch cache): a Job's list of 8 pods
with ``limit=500`` took the 10 seats of a list of 500, and the hooks' reads in flight at once filled
their priority level (``workload-low``, every ServiceAccount's): at 100 Jobs under the large-install
flags its queue wait had p99 481 ms; with first pages of 50, 38 ms (issue 36 item 8). A Job of more
pods than this pays one more round trip, in pages of ``DEFAULT_PAGE_SIZE``."""
LARGE_BODY_BYTES = 1 << 20
"""Answers at least this large are decoded with the cyclic GC paused (see ``_loads``)."""
MAX_LIST_RESTARTS = 2
"""How many times a paged list restarts from the first page after 410 Gone (an expired continue)."""


@dataclass(frozen=True)
class ListVersion:
    """The ``resourceVersion`` a consistent list was read at (its first page's), and when the
    request was sent (``sent_at``, on the listing client's clock)."""

    resource_version: str
    sent_at: float


class VersionedLister(Protocol):
    """A client whose consistent lists tell the API server's resourceVersion: ``last_version`` is
    the newest one it got (``None`` before any), what a pod watch may confirm itself with
    (``podread.watch.PodWatch.nudge``)."""

    @property
    def last_version(self) -> ListVersion | None: ...


class PagedList:
    """One kind of list straight from the API server: consistent, paged, bounded in time, raw JSON.

    The paging, deadline and error handling every live list shares (``LiveClient`` for pods,
    ``podread.jobs.JobClient`` for batch Jobs). A subclass names what it lists (``NOUN``,
    ``LIST_KIND``, ``NOT_A_LIST``: the error code of an answer that is not that list), sends one
    request to its path (``_target``, ``podread.rest``) and says which counter its requests go to
    (``_requests``).
    """

    NOUN = "pods"
    LIST_KIND = "PodList"
    NOT_A_LIST = "not-a-pod-list"

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        page_size: int = DEFAULT_PAGE_SIZE,
        metrics: ReadMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self._api_client = api_client
        self._timeout = timeout_seconds
        self._page_size = page_size
        self._metrics = metrics or default_metrics()
        self._clock = clock
        self.last_version: ListVersion | None = None
        """The resourceVersion of the last consistent list (a first page) this client got, and when
        (on ``clock``) it was sent: what the pod watch may confirm itself with (``PodWatch.nudge``);
        a ``VersionedLister``."""

    def _target(self, selector: PodSelector) -> tuple[str, dict[str, str]]:
        """The path a list of ``selector`` is sent to (one of ``podread.rest``'s) and its parameters."""
        raise NotImplementedError

    def _query(self, selector: PodSelector) -> list[tuple[str, str]]:
        """The selectors of a list of ``selector`` (``labelSelector``, ``fieldSelector``)."""
        query = []
        if selector.label_selector():
            query.append(("labelSelector", selector.label_selector()))
        if selector.field_selector():
            query.append(("fieldSelector", selector.field_selector()))
        return query

    def _send(self, selector: PodSelector, query: rest.Query, timeout: tuple[float, float]) -> bytes:
        """Sends one list request of ``selector`` with ``query``; returns the answer's body. Raises
        as ``rest.send`` does."""
        path, params = self._target(selector)
        return rest.send(self._api_client, "GET", path, params=params, query=query, timeout=timeout)

    def _open(self, selector: PodSelector, query: rest.Query, timeout: tuple[float, float]) -> Any:
        """Opens one watch of ``selector`` with ``query``: the streaming urllib3 response
        (``rest.open_stream``)."""
        path, params = self._target(selector)
        return rest.open_stream(self._api_client, path, params=params, query=query, timeout=timeout)

    def _requests(self) -> Any:
        """The counter of the requests (pages) this client sends, by scope and outcome."""
        return self._metrics.api_requests

    def _items(self, body: Any, what: str) -> list[Pod]:
        return list_items(body, what, self.LIST_KIND, self.NOT_A_LIST)

    def _list_all_pages(
        self, selector: PodSelector, deadline: float, budget: float, what: str,
        project: Callable[[Pod], Pod] | None = None, page_size: int | None = None,
    ) -> tuple[list[Pod], str, str | None]:
        """Lists page after page; returns (pods, resourceVersion, None), or ([], "", the server's
        words) when a continue token expired (the list must start again: the rest of it would not
        be consistent with the pages already read). Every page holds ``page_size`` objects when it
        is given; otherwise the first ``FIRST_PAGE_SIZE`` (at most the client's page size) and the
        rest the client's page size."""
        pods: list[Pod] = []
        token: str | None = None
        version = ""
        while True:
            limit = page_size or (self._page_size if token else min(FIRST_PAGE_SIZE, self._page_size))
            body = self._page(selector, token, deadline, budget, what, limit)
            if isinstance(body, str):
                return [], "", body
            items = self._items(body, what)
            pods.extend(items if project is None else [project(item) for item in items])
            metadata = body.get("metadata") or {}
            if token is None and isinstance(metadata, dict):
                version = str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue") if isinstance(metadata, dict) else None
            if token is not None and not isinstance(token, str):
                raise ApiError(f"{what}: the answer's metadata.continue is not a string", code=self.NOT_A_LIST)
            if not token:
                return pods, version, None

    def _page(
        self, selector: PodSelector, token: str | None, deadline: float, budget: float, what: str,
        limit: int | None = None,
    ) -> dict[str, Any] | str:
        """One list request. Returns the decoded answer (a JSON object), or, on 410 Gone for a
        continued list, the server's reason and message (a string). A first page's resourceVersion
        is noted in ``last_version``."""
        sent_at = self._clock()
        remaining = deadline - sent_at
        if remaining <= 0:
            if budget < self._timeout:
                raise DeadlineExceeded(f"{what}: the hook call's deadline for reads passed after {budget:g}s")
            raise ApiError(f"{what}: gave up after {self._timeout:g}s (the list did not finish in time)",
                           code="gave-up")
        query: list[tuple[str, Any]] = [*self._query(selector), ("limit", limit or self._page_size),
                                        ("timeoutSeconds", max(1, math.ceil(remaining)))]
        if token:
            query.append(("continue", token))
        scope = "namespace" if selector.namespace is not None else "cluster"
        try:
            raw = self._send(selector, query, (min(remaining, self._timeout), min(remaining, self._timeout)))
        except ApiException as exc:
            self._requests().labels(scope, "error").inc()
            if exc.status == 410 and token:
                return _reason(exc)
            raise http_error(what, exc) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self._requests().labels(scope, "error").inc()
            raise transport_error(what, exc) from exc
        try:
            body = _loads(raw)
        except orjson.JSONDecodeError as exc:
            self._requests().labels(scope, "error").inc()
            raise ApiError(f"{what}: the answer is not valid JSON ({exc})", code="invalid-json") from exc
        if not isinstance(body, dict):
            self._requests().labels(scope, "error").inc()
            raise ApiError(f"{what}: the answer is a JSON {type(body).__name__}, not a {self.LIST_KIND} object",
                           code=self.NOT_A_LIST)
        self._requests().labels(scope, "ok").inc()
        metadata = body.get("metadata")
        if token is None and isinstance(metadata, dict) and metadata.get("resourceVersion"):
            self.last_version = ListVersion(str(metadata["resourceVersion"]), sent_at)
        return body

    def list_snapshot(
        self, selector: PodSelector, project: Callable[[Pod], Pod] | None = None, *, page_size: int | None = None,
    ) -> tuple[list[Pod], str]:
        """Every object ``selector`` selects, from the API server's current state, and the list's
        ``resourceVersion`` (the state every page was read at, from which a watch resumes). With
        ``project``, each page's objects are passed through it as the page is decoded, so a large
        list never holds every whole object at once; ``page_size`` (default: the client's) sets how
        many objects a page holds.

        The whole list ends by ``timeout_seconds`` from now, or by the deadline of the hook call in
        force (``podread.deadline``) when that comes first; with that deadline already gone nothing
        is sent and ``DeadlineExceeded`` is raised.
        """
        what = f"list {self.NOUN} ({selector.describe()})"
        budget = calldeadline.budget(what, self._timeout)
        deadline = self._clock() + budget
        expired: str | None = None
        for _ in range(MAX_LIST_RESTARTS + 1):
            pods, version, expired = self._list_all_pages(selector, deadline, budget, what, project, page_size)
            if expired is None:
                return pods, version
        raise ApiError(f"{what}: continue token expired {MAX_LIST_RESTARTS + 1} times; the API server answered "
                       f"410 {expired}", status=410, code="expired")


class LiveClient(PagedList):
    """Lists pods from the API server: consistent, paged, bounded in time, as raw JSON dicts.

    Reads: ``list_pods(selector)`` sends ``GET /api/v1/namespaces/<ns>/pods`` (or ``/api/v1/pods``
    for all namespaces) with the selector's labelSelector and fieldSelector.
    - Consistent: ``resourceVersion`` is never sent, so the server answers from its most recent
      state (a quorum read), never from a cache that may be older than what we already saw.
    - Paged: ``limit=page_size`` and ``continue`` until the server returns no token; all pages come
      from the first page's snapshot. On 410 Gone (the token expired) the list restarts from the
      first page, at most MAX_LIST_RESTARTS times.
    - Bounded: each request has client-side connect and read timeouts, and the whole list gives up
      after ``timeout_seconds`` in all, or at the hook call's deadline (``podread.deadline``) when
      that is sooner, so a hook answers before Metacontroller's 10 s timeout.
    - Raw JSON (``podread.rest``): the client's model building is 6-20x slower and takes about 3x
      the memory.
    Every failure (HTTP 4xx/5xx including 429, a timeout, a refused or dropped connection, a body
    that is not a PodList, even with 200) raises ``ApiError`` saying which list failed and why, with
    the error's class in ``code``; a deadline that passed raises ``DeadlineExceeded``. Returns every pod
    the selector selects; never a partial list. Thread-safe (the kubernetes client's pool is).
    """

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        page_size: int = DEFAULT_PAGE_SIZE,
        metrics: ReadMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(api_client, timeout_seconds=timeout_seconds, page_size=page_size, metrics=metrics,
                         clock=clock)

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """Returns every pod ``selector`` selects, from the API server's current state.

        The whole list ends by ``timeout_seconds`` from now, or by the deadline of the hook call in
        force (``podread.deadline``) when that comes first; with that deadline already gone nothing
        is sent and ``DeadlineExceeded`` is raised.
        """
        return self.list_snapshot(selector)[0]

    def _target(self, selector: PodSelector) -> tuple[str, dict[str, str]]:
        if selector.namespace is not None:
            return rest.PODS_PATH, {"namespace": selector.namespace}
        return rest.ALL_PODS_PATH, {}

    def current_version(self, selector: PodSelector) -> str:
        """The API server's current resourceVersion, from one consistent list of at most one pod
        (``limit=1``) of ``selector``: cheap, and on the real server it also makes the watch cache
        catch up (the cacher asks etcd for progress before answering a consistent list), so that
        the next bookmark of a quiet watch carries it. Raises ``ApiError`` like ``list_pods``."""
        what = f"list pods ({selector.describe()}, limit 1, for the resourceVersion)"
        body = self._page(selector, None, self._clock() + self._timeout, self._timeout, what, limit=1)
        assert isinstance(body, dict)  # a first page never answers "expired"
        pod_list_items(body, what)
        metadata = body.get("metadata") or {}
        return str(metadata.get("resourceVersion") or "") if isinstance(metadata, dict) else ""

    def open_watch(self, selector: PodSelector, resource_version: str, timeout_seconds: int) -> Any:
        """Opens a watch of the pods ``selector`` selects, after ``resource_version``: ``GET .../pods
        ?watch=true&allowWatchBookmarks=true&resourceVersion=<rv>&timeoutSeconds=<n>``, raw
        (``podread.rest``). Returns the streaming urllib3 response, one JSON watch event
        per line, which the server ends after ``timeout_seconds``. The connect timeout is the
        client's timeout (at most 10 s), the socket read timeout ``timeout_seconds`` + 10 s (the
        server's bookmark before its timeout, or its close, comes first). An HTTP error (410 Gone
        included) or a transport error raises ``ApiError``.
        """
        what = f"watch pods ({selector.describe()}) from resourceVersion {resource_version}"
        query = [*self._query(selector), ("watch", True), ("allowWatchBookmarks", True),
                 ("resourceVersion", resource_version), ("timeoutSeconds", timeout_seconds)]
        try:
            return self._open(selector, query, (min(self._timeout, 10.0), timeout_seconds + 10.0))
        except ApiException as exc:
            raise http_error(what, exc) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise transport_error(what, exc) from exc


def pod_list_items(body: Any, what: str) -> list[Pod]:
    """The pods of one decoded list answer, which must be a PodList (``list_items``).

    Raises ``ApiError`` (code ``not-a-pod-list``) for anything else, ``{}``, ``items: null`` and a
    ``kind: Status`` body answered with 200 included: such an answer is a failed read, never "no pods".
    """
    return list_items(body, what, "PodList", "not-a-pod-list")


def list_items(body: Any, what: str, kind_wanted: str, code: str) -> list[Pod]:
    """The items of one decoded list answer, which must be a ``kind_wanted`` list: a JSON object
    whose ``items`` is a list of objects and whose ``kind``, when present, is ``kind_wanted``.
    Raises ``ApiError`` of class ``code`` for anything else: never an empty list."""
    if not isinstance(body, dict):
        raise ApiError(f"{what}: the answer is not a {kind_wanted} object", code=code)
    kind = body.get("kind")
    if kind is not None and kind != kind_wanted:
        raise ApiError(f"{what}: the answer is a {str(kind)[:40]!r}, not a {kind_wanted}", code=code)
    items = body.get("items")
    if not isinstance(items, list):
        got = "missing" if "items" not in body else f"a JSON {type(items).__name__}"
        raise ApiError(f"{what}: the answer's items are {got}, not a list", code=code)
    if not all(isinstance(item, dict) for item in items):
        raise ApiError(f"{what}: the answer's items are not a list of objects", code=code)
    return items


def http_error(what: str, exc: ApiException) -> ApiError:
    """The ``ApiError`` of an HTTP error answer: code ``http-<status>``, the server's own words in
    the reason."""
    status = exc.status if isinstance(exc.status, int) else None
    error = ApiError(f"{what}: the API server answered {exc.status} {_reason(exc)}", status=status)
    if status is None:
        error.code = "unreachable"
    return error


def transport_error(what: str, exc: BaseException) -> ApiError:
    """The ``ApiError`` of an error below HTTP: a timeout, a refused or dropped connection."""
    code, text = _transport_reason(exc)
    return ApiError(f"{what}: {text}", code=code)


def _loads(raw: bytes) -> Any:
    """Decodes a list answer. Large answers are decoded with the cyclic garbage collector paused:
    decoding thousands of pods creates millions of objects, and collections triggered along the way
    took 60-70% of the time (bench/raw_json.py). Nothing decoded here holds a reference cycle.
    The collector is re-enabled only by the call that paused it.
    """
    if len(raw) < LARGE_BODY_BYTES or not gc.isenabled():
        return orjson.loads(raw)
    gc.disable()
    try:
        return orjson.loads(raw)
    finally:
        gc.enable()


MAX_TEXT_BODY = 200
"""The most characters of a plain-text error body (``404 page not found``) kept in a reason."""


def _reason(exc: ApiException) -> str:
    """The API server's own message from a Status body, else the HTTP reason phrase followed by a
    plain-text body's first line (the real server answers a path it does not serve with
    ``404 page not found`` as text/plain)."""
    body = exc.body or b""
    try:
        status = orjson.loads(body)
        if isinstance(status, dict) and status.get("message"):
            return f"({status.get('reason') or exc.reason}): {status['message']}"
    except (orjson.JSONDecodeError, TypeError):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        first = text.strip().splitlines()[0][:MAX_TEXT_BODY] if text.strip() else ""
        if first and not first.lstrip().startswith(("{", "<")):
            return f"({exc.reason}): {first}"
    return f"({exc.reason})"


def _transport_reason(exc: BaseException) -> tuple[str, str]:
    """The class (an error code) and a short cause of an error below HTTP: a timeout, a refused or
    dropped connection."""
    text = str(getattr(exc, "reason", None) or exc)
    if "refused" in text.lower():  # urllib3 files a refused connection under its connect timeouts
        return "refused", f"connection refused ({text})"
    if isinstance(exc, urllib3.exceptions.TimeoutError) or "timed out" in text.lower():
        return "timeout", f"timed out ({text})"
    if isinstance(exc, urllib3.exceptions.ProtocolError) or "closed" in text.lower() or "reset" in text.lower():
        return "dropped", f"connection dropped ({text})"
    return "unreachable", f"could not reach the API server ({text})"
