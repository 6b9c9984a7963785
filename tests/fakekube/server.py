"""A small wire-level fake of kube-apiserver's pod read API, for tests that drive the real client.

It serves ``GET /api/v1/pods``, ``/api/v1/namespaces/{ns}/pods`` and ``.../pods/{name}`` as JSON
with label and field selectors, ``limit``/``continue`` paging over consistent snapshots and
Kubernetes ``Status`` errors, and watches of pods (``?watch=true``, see ``tests.fakekube.watch``);
it records every request and can inject faults. See ``FakeKubeServer``.
The hooks' own writes and Node reads (Events, Job and pod deletes, ``GET`` of a Node) are
served by ``tests.fakekube.writes`` (``FakeKubeServer.writes``). Batch Job lists
(``GET /apis/batch/v1/namespaces/{ns}/jobs``, label selectors and paging as for pods, no watch) are
served from a store of their own (``put_batch_job``). Nodes (``put_node``, ``delete_node``) are
listed and watched (``GET /api/v1/nodes``, paging, bookmarks and 410 as for pods, from a store of
their own) and read by name (``writes``, the real server's NotFound for a missing one).
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import kubernetes

from tests.fakekube.faults import Fault, FaultList
from tests.fakekube.selectors import SelectorError, parse_field_selector, parse_label_selector
from tests.fakekube.store import ContinueError, PodStore, dumps
from tests.fakekube.watch import Watcher, expired_line, initial_lines, lines_for, parse_timeout
from tests.fakekube.writes import WriteRoutes

Pod = dict[str, Any]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_FAULT_MESSAGES = {
    410: "The provided continue parameter is too old to display a consistent list result.",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: fakekube injected fault",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
    "processing the request",
}
_INVALID_JSON = (
    b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":'
)
_OPEN_PATHS = frozenset({"/version", "/healthz", "/readyz", "/livez"})
_NAMESPACED = re.compile(r"^/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?/?$")
_BATCH_JOBS = re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs/?$")
_NODES = re.compile(r"^/api/v1/nodes/?$")


def status_body(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    details: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> bytes:
    """A Kubernetes ``Status`` failure object as compact JSON."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(metadata or {}),
        "status": "Failure",
        "message": message,
        "reason": reason or _REASONS.get(code, "Unknown"),
        "code": code,
    }
    if details:
        body["details"] = dict(details)
    return dumps(body)


@dataclass
class RecordedRequest:
    """One request the fake received and what it answered.

    ``query`` holds each parameter's (last) value; ``status`` is 0 for a dropped connection;
    ``bytes_sent`` counts the response body (0 when it could not be written); ``time`` is when it
    arrived (``time.time()``); ``duration`` how long computing the answer took (including an injected
    delay); ``fault`` is the kind of fault that took it (``"status:500"``, ``"delay"``, ``"drop"``,
    ``"invalid_json"``) or ``None``;
    ``client_gone`` is true when the client had gone before the answer could be written;
    ``headers`` are the request headers with lower-case names.
    """

    method: str
    path: str
    query: Mapping[str, str]
    status: int
    bytes_sent: int
    time: float
    duration: float
    fault: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    client_gone: bool = False


@dataclass
class _Answer:
    """What to write back: status, body and extra headers, or nothing at all (``drop``)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    drop: bool = False
    fault: str | None = None
    stream: Callable[[Callable[[bytes], None], Callable[[], bool]], None] | None = None


class _Handler(BaseHTTPRequestHandler):
    """Turns one HTTP request into a call to ``FakeKubeServer._answer`` and writes the result."""

    protocol_version = "HTTP/1.1"
    server_version = "fakekube"
    sys_version = ""
    timeout = 60
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read ``FakeKubeServer.requests`` instead of a log."""

    def setup(self) -> None:
        """Register the connection so ``stop`` can close it; no Nagle delay (Go servers set it too)."""
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.connections_opened(self.connection)

    def finish(self) -> None:
        """Unregister the connection."""
        try:
            super().finish()
        finally:
            self.server.connections_closed(self.connection)

    def do_GET(self) -> None:
        """Serve a read."""
        self._serve("GET")

    def do_HEAD(self) -> None:
        """Refuse (405), as for any method the fake does not serve."""
        self._serve("HEAD")

    def do_POST(self) -> None:
        """Refuse (405)."""
        self._serve("POST")

    def do_PUT(self) -> None:
        """Refuse (405)."""
        self._serve("PUT")

    def do_PATCH(self) -> None:
        """Refuse (405)."""
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        """Refuse (405)."""
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        """Read the request, compute the answer, write it (or drop the connection), record it."""
        arrived, start = time.time(), time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        path = unquote(split.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake = self.server.fake
        answer = fake._answer(method, path, query, headers, body)
        # Recorded before the answer is written, so a client that got its answer always finds it here.
        record = RecordedRequest(
            method=method,
            path=path,
            query=query,
            status=0 if answer.drop else answer.status,
            bytes_sent=0 if answer.drop else len(answer.body),
            time=arrived,
            duration=time.perf_counter() - start,
            fault=answer.fault,
            headers=headers,
        )
        fake._record(record)
        if answer.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if answer.stream is not None:
            self._stream(answer, record)
            return
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(answer.body)
        except OSError:
            record.client_gone = True
            record.bytes_sent = 0
            self.close_connection = True


    def _stream(self, answer: _Answer, record: RecordedRequest) -> None:
        """Write a chunked, streaming answer (a watch); ``record.bytes_sent`` counts what was written.
        A stream that ends cleanly keeps the connection for the next request (keep-alive, as the
        real server does); one that breaks (``ConnectionError``) drops it without the final chunk."""
        assert answer.stream is not None
        record.bytes_sent = 0

        def write(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            record.bytes_sent += len(data)

        def gone() -> bool:
            """Whether the client closed its end (as Go's server notices, with nothing to write)."""
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
            except (OSError, ValueError):
                return True

        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            answer.stream(write, gone)
            self.wfile.write(b"0\r\n\r\n")  # a clean end: the connection stays open, as Go's server keeps it
            self.wfile.flush()
        except ConnectionError:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            self.close_connection = True
            record.client_gone = True


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its fake and its open connections."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], fake: FakeKubeServer) -> None:
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer (a read timeout, a test's stop) is expected here: stay
        quiet about socket errors instead of printing a traceback into the test run."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return
        super().handle_error(request, client_address)

    def connections_opened(self, connection: socket.socket) -> None:
        """Remember an open client connection."""
        with self._connections_lock:
            self._connections.add(connection)

    def connections_closed(self, connection: socket.socket) -> None:
        """Forget a client connection."""
        with self._connections_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        """Shut every open client connection, so idle keep-alive threads end now."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _TimeoutApiClient(kubernetes.client.ApiClient):
    """An ``ApiClient`` whose calls default to a request timeout when the caller gives none."""

    def __init__(self, configuration: kubernetes.client.Configuration, timeout: float | None) -> None:
        super().__init__(configuration)
        self._default_timeout = timeout

    def call_api(self, *args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        """Forward to the real ``call_api`` with the default timeout filled in."""
        timeout = self._default_timeout if _request_timeout is None else _request_timeout
        return super().call_api(*args, _request_timeout=timeout, **kwargs)


class FakeKubeServer:
    """A fake kube-apiserver for pods on ``127.0.0.1``, bound at construction, served once started.

    Thread-safe: tests may change pods, faults and tokens while clients read. Every request must
    carry ``Authorization: Bearer <token>`` unless ``require_auth`` is false (the generated
    kubeconfig and ``api_client`` do); ``/version`` and the health paths are open, as on a real
    cluster. At most ``max_continue_snapshots`` paged lists stay resumable; older tokens answer
    410 Expired, as after an etcd compaction.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str = "fakekube-token",
        require_auth: bool = True,
        max_continue_snapshots: int = 1000,
        bookmark_interval: float = 60.0,
    ) -> None:
        self.token = token
        self.bookmark_interval = bookmark_interval
        self._watchers: list[Watcher] = []
        self._watchers_lock = threading.Lock()
        self.require_auth = require_auth
        self._store = PodStore(max_continue_snapshots)
        self._batch_jobs = PodStore(max_continue_snapshots)
        """batch/v1 Jobs, in a store of their own (the same paging and selectors as pods)."""
        self._nodes = PodStore(max_continue_snapshots)
        """Nodes, listed and watched from a store of their own (resourceVersions of their own)."""
        self.writes = WriteRoutes(self._store, status_body)
        """Events, Jobs, deleted objects and Nodes of the write routes (``tests.fakekube.writes``)."""
        self._faults = FaultList()
        self._requests: list[RecordedRequest] = []
        self._requests_lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer((host, port), self)
        self._thread: threading.Thread | None = None
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeKubeServer:
        """Start serving in a background thread (idempotent); returns ``self``."""
        if self._stopped:
            raise RuntimeError("a stopped FakeKubeServer cannot be restarted; make a new one")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"fakekube-{self.url}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections (ending injected delays and watches) and free the port."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        self.break_watches()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> FakeKubeServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- client configuration ----------------------------------------------------------------------

    def kubeconfig_dict(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig (as a dict) whose current context points at this server with the token."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fakekube", "cluster": {"server": self.url}}],
            "users": [{"name": "fakekube", "user": {"token": self.token}}],
            "contexts": [
                {
                    "name": "fakekube",
                    "context": {"cluster": "fakekube", "user": "fakekube", "namespace": namespace},
                }
            ],
            "current-context": "fakekube",
        }

    def write_kubeconfig(self, path: str | Path) -> str:
        """Write ``kubeconfig_dict()`` to ``path`` (JSON, which kubeconfig loaders read as YAML)."""
        Path(path).write_text(json.dumps(self.kubeconfig_dict(), indent=2))
        return str(path)

    def api_client(
        self, timeout: float | None = None, retries: int | bool | None = None
    ) -> kubernetes.client.ApiClient:
        """A real ``kubernetes.client.ApiClient`` for this server, configured through the kubeconfig loader.

        ``timeout`` (seconds) applies to every call that passes no ``_request_timeout``. ``retries``
        sets ``Configuration.retries``; left ``None`` the client keeps urllib3's default (3 retries on
        connection errors, read timeouts and Retry-After answers), which hides one-shot faults.
        """
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config_from_dict(
            self.kubeconfig_dict(), client_configuration=configuration
        )
        if retries is not None:
            configuration.retries = retries
        return _TimeoutApiClient(configuration, timeout)

    # -- pods --------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion (bumped by every mutation)."""
        return self._store.resource_version

    @property
    def watch_cache_version(self) -> int:
        """The pods' watch cache resourceVersion: what a bookmark carries (see ``PodStore``)."""
        return self._store.watch_cache_version

    def bump_resource_version(self) -> int:
        """Move the global resourceVersion as a change to another kind of object would (no pod event)."""
        return self._store.bump_resource_version()

    def put_pod(self, pod: Mapping[str, Any]) -> Pod:
        """Create or replace a pod; returns the stored copy (resourceVersion, uid, timestamps set)."""
        return self._store.put([pod])[0].pod()

    def put_pods(self, pods: Iterable[Mapping[str, Any]]) -> int:
        """Create or replace several pods under one lock; returns how many (read them back with ``pods``)."""
        return len(self._store.put(pods))

    def set_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """Replace every pod with ``pods``."""
        self._store.replace_all(pods)

    def update_pod(self, namespace: str, name: str, mutate: Callable[[Pod], Pod | None]) -> Pod:
        """Atomically change a stored pod: ``mutate`` edits a copy in place or returns a new dict.

        Raises ``KeyError`` when the pod does not exist.
        """
        return self._store.update(namespace, name, mutate)

    def delete_pod(self, namespace: str, name: str) -> Pod | None:
        """Remove a pod at once (no graceful deletion); returns it, or ``None`` when absent."""
        return self._store.delete(namespace, name)

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        """A copy of a stored pod, or ``None``."""
        entry = self._store.get(namespace, name)
        return None if entry is None else entry.pod()

    def pods(self) -> list[Pod]:
        """Copies of every pod, ordered by namespace and name."""
        return self._store.all_pods()

    def expire_continue_tokens(self) -> int:
        """Make every continue token handed out so far answer 410 Expired; returns how many lists."""
        return self._store.expire_snapshots() + self._batch_jobs.expire_snapshots()

    # -- NVCRE Jobs (the parents) -----------------------------------------------------------------

    def put_job(self, job: Mapping[str, Any]) -> None:
        """Stores an NVCRE Job (a request's ``parent``, say) by its namespace and name: what the
        hooks' live check of a request's Job (``GET .../jobs/{name}``) and their TTL delete find."""
        metadata = job["metadata"]
        self.writes.jobs[(str(metadata.get("namespace", "")), str(metadata["name"]))] = json.loads(json.dumps(job))

    # -- batch Jobs --------------------------------------------------------------------------------

    def put_batch_job(self, job: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace a ``batch/v1`` Job; returns the stored copy."""
        return self._batch_jobs.put([job])[0].pod()

    def delete_batch_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Remove a batch Job at once; returns it, or ``None`` when absent."""
        return self._batch_jobs.delete(namespace, name)

    def batch_jobs(self) -> list[dict[str, Any]]:
        """Copies of every batch Job, ordered by namespace and name."""
        return self._batch_jobs.all_pods()

    # -- Nodes -------------------------------------------------------------------------------------

    def put_node(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """Create or replace a Node: listed and watched (an ADDED or MODIFIED event) and read by
        name (``writes.nodes``). Returns the stored copy (its resourceVersion set)."""
        stored = self._nodes.put([node])[0].pod()
        self.writes.nodes[str(stored["metadata"]["name"])] = stored
        return stored

    def delete_node(self, name: str) -> dict[str, Any] | None:
        """Delete a Node at once (a DELETED event; a GET answers the server's NotFound)."""
        self.writes.nodes.pop(name, None)
        return self._nodes.delete("default", name)

    def compact_nodes(self) -> int:
        """Forget the Nodes' event history: a node watch from an older resourceVersion gets 410."""
        return self._nodes.compact()

    # -- watches -----------------------------------------------------------------------------------

    @property
    def watches(self) -> int:
        """How many watches are open now."""
        with self._watchers_lock:
            return len(self._watchers)

    def _each_watcher(self, action: Callable[[Watcher], None]) -> int:
        with self._watchers_lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            action(watcher)
        return len(watchers)

    def bookmark(self) -> int:
        """Send a BOOKMARK now on every open watch that allows them; returns how many watches."""
        return self._each_watcher(Watcher.bookmark)

    def break_watches(self) -> int:
        """Cut every open watch mid-stream (the connection drops, no final chunk); returns how many."""
        return self._each_watcher(Watcher.break_)

    def end_watches(self) -> int:
        """End every open watch cleanly, as at its timeout; returns how many."""
        return self._each_watcher(Watcher.end)

    def hold_watch_events(self) -> int:
        """Hold back the events of every open watch (no bookmark passes them either)."""
        return self._each_watcher(Watcher.hold)

    def release_watch_events(self, *, reverse: bool = False) -> int:
        """Send the held events, in reverse order with ``reverse``: events out of order."""
        return self._each_watcher(lambda watcher: watcher.release(reverse=reverse))

    def replay_watch_events(self, since: int) -> int:
        """Send every open watch the events after resourceVersion ``since`` again: duplicates."""
        changes = self._store.history_since(since)
        return self._each_watcher(lambda watcher: watcher.push(lines_for(watcher, changes)))

    def compact(self) -> int:
        """Forget the event history (an etcd compaction): a watch from an older resourceVersion gets an
        ERROR event with a 410 Expired Status. Returns the resourceVersion history starts at."""
        return self._store.compact()

    # -- faults and recording ----------------------------------------------------------------------

    def inject(self, fault: Fault) -> Fault:
        """Put a fault in force (see ``Fault``); returns it so tests can read ``fault.hits``."""
        return self._faults.add(fault)

    def clear_faults(self) -> None:
        """Remove every fault."""
        self._faults.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of every request received since start or the last ``clear_requests``."""
        with self._requests_lock:
            return list(self._requests)

    def request_count(
        self, path: str | None = None, predicate: Callable[[RecordedRequest], bool] | None = None
    ) -> int:
        """How many recorded requests had exactly ``path`` (if given) and satisfy ``predicate``."""
        return sum(
            1
            for request in self.requests
            if (path is None or request.path == path) and (predicate is None or predicate(request))
        )

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        with self._requests_lock:
            self._requests.clear()

    def _record(self, request: RecordedRequest) -> None:
        """Append one finished request."""
        with self._requests_lock:
            self._requests.append(request)

    # -- answering ---------------------------------------------------------------------------------

    def _answer(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes = b""
    ) -> _Answer:
        """Decide the answer to one request: an injected fault first, then auth, then the route."""
        fault = self._faults.take(method, path, query)
        if fault is not None:
            if fault.delay > 0 and self._stopping.wait(fault.delay):
                return _Answer(drop=True, fault=fault.kind)
            answer = self._fault_answer(fault)
            if answer is not None:
                return answer
        answer = self._route(method, path, query, headers, body)
        if fault is not None:
            answer.fault = fault.kind
        return answer

    @staticmethod
    def _fault_answer(fault: Fault) -> _Answer | None:
        """The answer a fault forces, or ``None`` when it only delays."""
        if fault.drop:
            return _Answer(drop=True, fault=fault.kind)
        if fault.status is not None and fault.body is not None:
            return _Answer(fault.status, fault.body, content_type=fault.content_type, fault=fault.kind)
        if fault.status is not None:
            headers: dict[str, str] = {}
            details: dict[str, Any] = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = str(fault.retry_after)
                details["retryAfterSeconds"] = fault.retry_after
            message = _FAULT_MESSAGES.get(fault.status, f"fakekube injected status {fault.status}")
            body = status_body(fault.status, message, details=details)
            return _Answer(fault.status, body, headers, fault=fault.kind)
        if fault.invalid_json:
            return _Answer(200, _INVALID_JSON, fault=fault.kind)
        if fault.body is not None:
            return _Answer(200, fault.body, fault=fault.kind)
        return None

    def _route(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes = b""
    ) -> _Answer:
        """Serve a request that no fault took."""
        if (
            self.require_auth
            and path not in _OPEN_PATHS
            and headers.get("authorization") != f"Bearer {self.token}"
        ):
            return _Answer(401, status_body(401, "Unauthorized"))
        written = self.writes.answer(method, path, body)
        if written is not None:
            return _Answer(*written)
        if method != "GET":
            return _Answer(
                405,
                status_body(
                    405,
                    f"the server does not allow this method on the requested "
                    f"resource (fakekube serves reads only: {method})",
                ),
            )
        if path in ("/healthz", "/readyz", "/livez"):
            return _Answer(200, b"ok", content_type="text/plain; charset=utf-8")
        static = self._static(path)
        if static is not None:
            return _Answer(200, dumps(static))
        if path in ("/api/v1/pods", "/api/v1/pods/"):
            return self._list(None, query)
        if _NODES.match(path):
            return self._list(None, query, store=self._nodes, kind=b"NodeList")
        jobs = _BATCH_JOBS.match(path)
        if jobs is not None:
            if query.get("watch", "").lower() in ("true", "1"):
                return _Answer(400, status_body(400, "fakekube does not serve watches of batch jobs"))
            return self._list(jobs.group(1), query, store=self._batch_jobs, kind=b"JobList", api_version=b"batch/v1")
        match = _NAMESPACED.match(path)
        if match is None:
            return _Answer(404, status_body(404, "the server could not find the requested resource"))
        namespace, name = match.groups()
        if name is None:
            return self._list(namespace, query)
        return self._get(namespace, name)

    def _static(self, path: str) -> dict[str, Any] | None:
        """The discovery and version documents, or ``None`` for any other path."""
        if path == "/version":
            return {
                "major": "1",
                "minor": "31",
                "gitVersion": "v1.31.0-fakekube",
                "gitCommit": "fakekube",
                "gitTreeState": "clean",
                "buildDate": "2024-08-13T00:00:00Z",
                "goVersion": "go1.22.5",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        if path == "/api":
            host = self.url.removeprefix("http://")
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
            }
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        if path == "/api/v1":
            return {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {
                        "name": "pods",
                        "singularName": "pod",
                        "namespaced": True,
                        "kind": "Pod",
                        "verbs": ["get", "list", "watch"],
                        "shortNames": ["po"],
                    }
                ],
            }
        return None

    def _get(self, namespace: str, name: str) -> _Answer:
        """``GET .../pods/{name}``: the pod with ``kind``/``apiVersion``, or a 404 ``Status``."""
        entry = self._store.get(namespace, name)
        if entry is None:
            return _Answer(
                404, status_body(404, f'pods "{name}" not found', details={"name": name, "kind": "pods"})
            )
        return _Answer(200, b'{"kind":"Pod","apiVersion":"v1",' + entry.raw[1:])

    def _list(self, namespace: str | None, query: Mapping[str, str], *, store: PodStore | None = None,
              kind: bytes = b"PodList", api_version: bytes = b"v1") -> _Answer:
        """A ``PodList`` page (a ``kind`` list from ``store``) for the query's selectors, ``limit``,
        ``continue`` and ``resourceVersion``."""
        store = self._store if store is None else store
        if query.get("watch", "").lower() in ("true", "1"):
            return self._watch(namespace, query, store)
        label_text = query.get("labelSelector", "")
        field_text = query.get("fieldSelector", "")
        token = query.get("continue", "")
        rv = query.get("resourceVersion", "")
        try:
            labels = parse_label_selector(label_text)
            fields = parse_field_selector(field_text)
            limit = int(query.get("limit") or 0)
        except SelectorError as error:
            return _Answer(400, status_body(400, str(error)))
        except ValueError:
            return _Answer(400, status_body(400, f"limit: Invalid value: {query.get('limit')!r}"))
        if rv:
            if token and rv != "0":
                return _Answer(
                    400, status_body(400, "specifying resource version is not allowed when using continue")
                )
            if not rv.isdigit():
                return _Answer(
                    400, status_body(400, f'resourceVersion: Invalid value: "{rv}": invalid resource version')
                )
            current = store.resource_version
            if int(rv) > current:
                return _Answer(
                    504,
                    status_body(
                        504,
                        f"Too large resource version: {rv}, current: {current}",
                        details={
                            "causes": [
                                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                            ],
                            "retryAfterSeconds": 1,
                        },
                    ),
                )
        try:
            page = store.list(
                namespace, labels, fields, (namespace or "", label_text, field_text), limit, token
            )
        except ContinueError as error:
            metadata = {"continue": error.inconsistent_token} if error.inconsistent_token else None
            return _Answer(error.code, status_body(error.code, str(error), metadata=metadata))
        metadata: dict[str, Any] = {"resourceVersion": str(page.rv)}
        if page.continue_token:
            metadata["continue"] = page.continue_token
            if page.remaining is not None:
                metadata["remainingItemCount"] = page.remaining
        body = b"".join(
            (
                b'{"kind":"' + kind + b'","apiVersion":"' + api_version + b'","metadata":',
                dumps(metadata),
                b',"items":[',
                b",".join(entry.raw for entry in page.entries),
                b"]}",
            )
        )
        return _Answer(200, body)

    def _watch(self, namespace: str | None, query: Mapping[str, str], store: PodStore | None = None) -> _Answer:
        """A watch of pods (of ``store``'s objects): a streaming answer, or a ``Status`` error (see
        ``tests.fakekube.watch``)."""
        store = self._store if store is None else store
        rv = query.get("resourceVersion", "")
        try:
            labels = parse_label_selector(query.get("labelSelector", ""))
            fields = parse_field_selector(query.get("fieldSelector", ""))
            timeout = parse_timeout(query)
        except SelectorError as error:
            return _Answer(400, status_body(400, str(error)))
        except ValueError:
            return _Answer(400, status_body(400, f"timeoutSeconds: Invalid value: {query.get('timeoutSeconds')!r}"))
        if rv and not rv.isdigit():
            return _Answer(400, status_body(400, f'resourceVersion: Invalid value: "{rv}": invalid resource version'))
        since = int(rv) if rv and rv != "0" else None
        if since is not None and since > store.resource_version:
            current = store.resource_version
            return _Answer(504, status_body(504, f"Too large resource version: {since}, current: {current}",
                                            details={"retryAfterSeconds": 1}))
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        watcher = Watcher(namespace, labels, fields, timeout=timeout, bookmarks=bookmarks,
                          bookmark_interval=self.bookmark_interval)
        try:
            backlog, entries, current = store.subscribe(since, watcher.offer)
        except ContinueError as error:
            message = str(error)
            return _Answer(200, b"", stream=lambda write, gone: write(expired_line(message)))
        watcher.started_at(current)
        first = initial_lines(watcher, backlog, entries)

        def stream(write: Callable[[bytes], None], gone: Callable[[], bool]) -> None:
            with self._watchers_lock:
                self._watchers.append(watcher)
            try:
                if first:
                    write(b"".join(first))
                while True:
                    lines, finished = watcher.next_lines(self._stopping, gone)
                    if lines:
                        write(b"".join(lines))
                    if finished:
                        return
            finally:
                store.unsubscribe(watcher.offer)
                with self._watchers_lock:
                    if watcher in self._watchers:
                        self._watchers.remove(watcher)

        return _Answer(200, b"", stream=stream)
