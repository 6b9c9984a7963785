"""The Flask app: routes, JSON errors, authentication, the metrics it counts and the per-call log line.

``create_app`` reads no environment: it is given its parts (the Reader, the settings, the writer,
middleware such as the recorder). Production builds them from the environment in one place, the
composition root ``hooks.wsgi`` (``gunicorn 'hooks.wsgi:production_app()'``, once in every worker
process, no preload, so every worker has its own Reader and cache). The decision itself lives in
``hooks.server.handler``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from flask import Flask, Response, request
from werkzeug.exceptions import ClientDisconnected, HTTPException, MethodNotAllowed, NotFound, RequestEntityTooLarge
from werkzeug.http import HTTP_STATUS_CODES

import podread
from hooks.core import queueing
from hooks.core.observed import HOOKS, PODGROUP_GROUP
from hooks.server import logs, metrics
from hooks.server.auth import BearerToken
from hooks.server.config import Settings
from hooks.server.discovery import PodGroupDiscovery
from hooks.server.effects import Effects
from hooks.server.freshness import ParentVersions
from hooks.server.handler import Answer, HookResult, encode, handle
from hooks.server.writer import NullWriter, Writer

log = logging.getLogger("nvcre.hooks.app")

HOOK_ROUTES = {f"/{hook}": hook for hook in HOOKS}


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC: the production clock of decisions."""
    return datetime.now(UTC)


class Middleware(Protocol):
    """A part of the app around every answered hook call (the recorder, ``hooks.tools.record``):
    ``wrap`` returns the ``Answer`` to use instead of the one it is given, calling it."""

    def wrap(self, answer: Answer) -> Answer: ...


def create_app(
    reader: podread.Reader,
    *,
    clock: Callable[[], datetime] | None = None,
    settings: Settings | None = None,
    writer: Writer | None = None,
    middleware: Sequence[Middleware] = (),
    discovery: PodGroupDiscovery | None = None,
    parents: ParentVersions | None = None,
) -> Flask:
    """Builds the hook server from its parts; reads no environment (``hooks.wsgi`` builds
    production's parts from it).

    ``reader`` is the podread Reader every decision reads pods through. Defaults: ``clock`` the
    UTC wall clock, ``settings`` ``Settings()`` (the built-in defaults), ``writer`` (the hooks' own
    writes: Events, TTL deletes, force deletes; ``hooks.server.writer``) a ``NullWriter`` whose
    writes fail, counted. The writer is wrapped in one ``hooks.server.effects.Effects`` per app
    (its queue and thread). ``middleware`` wraps ``hooks.server.handler.handle`` for every hook
    call, the first innermost (the recorder: ``hooks.tools.record.Recorder``). ``discovery``
    (issue 22): asked, for a request that holds no PodGroup children, what the API server serves of
    PodGroups; its words reach the core as ``Settings.gang_api_note``. ``parents`` tells
    the live version of a Job (``hooks.server.freshness``): with it, an answer that may act on a
    Job is sent only when the request carries the live Job (else 409); production always gives
    it, tests that feed recorded payloads without an API server leave it out. Raises
    ``ValueError`` on bad configuration, including a missing or empty ``NVCRE_HOOK_TOKEN_FILE``,
    so a worker fails at start-up.

    Routes: ``POST /sync``, ``POST /finalize``, ``POST /customize`` (the Kueue overlay's customize
    hook: relates every WorkloadPriorityClass, the same answer for every Job), ``GET /healthz``,
    ``GET /readyz``. Not ``/metrics``: the gunicorn master serves it on its own port
    (``NVCRE_METRICS_PORT``, ``hooks.server.metrics.serve``), which only the monitoring namespace reaches.
    Every error is JSON ``{"error": ...}``.
    """
    settings = Settings() if settings is None else settings
    logs.configure(settings.log_level)
    token = (BearerToken(settings.hook_token_file, settings.hook_previous_token_file)
             if settings.hook_token_file else None)
    clock = utc_now if clock is None else clock
    effects = Effects(NullWriter("no writer was given to the app") if writer is None else writer)
    answer: Answer = handle
    for part in middleware:
        answer = part.wrap(answer)

    app = Flask("hooks")
    app.extensions["nvcre_middleware"] = tuple(middleware)
    app.extensions["nvcre_effects"] = effects
    app.extensions["nvcre_reader"] = reader  # closed by gunicorn's worker_exit (stops the pod watch)
    # One byte over the limit: werkzeug cuts a chunked body (no Content-Length) at exactly this many
    # bytes without an error, so handle() sees limit + 1 bytes and answers the 413 itself.
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes + 1

    listed = f'"{PODGROUP_GROUP}"'.encode()

    def call_settings(raw: bytes) -> Settings:
        """The settings of one call: with discovery's words when the request lists no PodGroups."""
        if discovery is None or listed in raw:
            return settings
        return dataclasses.replace(settings, gang_api_note=discovery.note())

    def answered(hook: str, raw: bytes) -> HookResult:
        """Answers the hook call whose body is ``raw`` (the token already checked) and accounts for it:
        what both the Flask view and the direct path (``_HookCalls``) send."""
        counted = None if parents is None else _CountedParents(parents)
        result = answer(raw, hook, reader=reader, clock=clock, settings=call_settings(raw), effects=effects,
                        parents=counted)
        _account(hook, result, len(raw), clock, live_reads=counted.reads if counted is not None else 0)
        return result

    def hook_view(hook: str) -> Callable[[], Response]:
        def view() -> Response:
            started = time.perf_counter()
            if token is not None and not token.allows(request.headers.get("Authorization")):
                return _refuse(hook, started)
            try:
                raw = request.get_data(cache=False)
            except RequestEntityTooLarge:
                result = _too_large(started, settings.max_body_bytes)
                _account(hook, result, request.content_length or 0)
                return Response(result.encoded, status=413, mimetype="application/json")
            result = answered(hook, raw)
            response = Response(result.encoded, status=result.status_code, mimetype="application/json")
            response.headers["Server-Timing"] = server_timing(result)
            return response

        view.__name__ = f"{hook}_hook"
        return view

    for path, hook in HOOK_ROUTES.items():
        app.add_url_rule(path, view_func=hook_view(hook), methods=["POST"], provide_automatic_options=False)
    app.wsgi_app = _HookCalls(app.wsgi_app, answered, token, settings.max_body_bytes)  # type: ignore[method-assign]

    @app.post("/customize")
    def customize() -> Response:
        """Metacontroller's customize hook: which related objects each sync carries."""
        if token is not None and not token.allows(request.headers.get("Authorization")):
            return _json(401, {"error": "missing or wrong bearer token"})
        return _json(200, queueing.customize_response())

    @app.get("/healthz")
    def healthz() -> Response:
        """Alive: the process answers HTTP."""
        return _json(200, {"status": "alive"})

    @app.get("/readyz")
    def readyz() -> Response:
        """Ready: the app was built (configuration valid, Reader built). Deliberately independent of
        the API server: a failed read is answered per contract, and every replica must answer."""
        return _json(200, {"status": "ready"})

    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _internal_error)
    log.debug("hook app built", extra={"fields": {"auth": token is not None}})
    return app


def server_timing(result: HookResult) -> str:
    """The ``Server-Timing`` header of an answered hook call: how long ``handle`` took, in ms."""
    return f"hook;dur={result.seconds * 1000:.2f}"


StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class _HookCalls:
    """The WSGI app in front of Flask (``app.wsgi_app``): a hook call in the usual shape is answered
    directly, without Flask's request context, routing and ``Response`` (issue 32 item 4: they cost
    about as much as the floor app's whole call); every other request goes to Flask as before.

    The usual shape: ``POST`` to exactly ``/sync`` or ``/finalize``, a ``Content-Length`` of at most
    ``max_body_bytes`` and no ``Transfer-Encoding``. Such a call is answered by ``answered``, the
    very function behind the Flask view, and sent with the view's status line and headers
    (``Content-Type``, ``Content-Length``, ``Server-Timing``, in that order): byte for byte what the
    view sends (tests/server/test_direct_path.py). A refused token is the view's 401 (``_refuse``,
    counted). The body is read as Flask reads it (``_body``): one that ends before its
    ``Content-Length`` is the 400 Flask answers werkzeug's ``ClientDisconnected`` with
    (``_http_error``; under gunicorn, which terminates the input itself, the bytes that came are
    answered, as by the view). An exception outside
    ``handle`` is the 500 of ``_internal_error``, logged the same way. Anything else (another path or
    method, no or a larger length: the 413, a chunked body) goes to Flask untouched, which answers
    it as it always did.
    """

    def __init__(self, flask_app: WsgiApp, answered: Callable[[str, bytes], HookResult],
                 token: BearerToken | None, max_body_bytes: int) -> None:
        self._flask = flask_app
        self._answered = answered
        self._token = token
        self._max = max_body_bytes
        self._digits = len(str(max_body_bytes))
        """The most digits a ``Content-Length`` the direct path takes may have: a longer one (a padded
        or absurd number, past Python's 4,300 digits for ``int`` even) goes to Flask, which answers it."""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        hook = HOOK_ROUTES.get(environ.get("PATH_INFO", ""))
        length = environ.get("CONTENT_LENGTH") or ""
        if (hook is None or environ.get("REQUEST_METHOD") != "POST" or len(length) > self._digits
                or not (length.isascii() and length.isdigit()) or int(length) > self._max
                or "HTTP_TRANSFER_ENCODING" in environ):
            return self._flask(environ, start_response)
        started = time.perf_counter()
        if self._token is not None and not self._token.allows(environ.get("HTTP_AUTHORIZATION")):
            return _refuse(hook, started)(environ, start_response)  # the view's own 401
        raw = self._body(environ, int(length))
        if raw is None:  # the body ended early: what werkzeug's read raises, as Flask answers it
            return _http_error(ClientDisconnected())(environ, start_response)
        try:
            result = self._answered(hook, raw)
            status, encoded = _STATUS_LINES[result.status_code], result.encoded
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(encoded))),
                       ("Server-Timing", server_timing(result))]
        except Exception as exc:
            return _failed(exc, "POST", environ.get("PATH_INFO", ""))(environ, start_response)
        start_response(status, headers)
        return [encoded]

    def _body(self, environ: dict[str, Any], length: int) -> bytes | None:
        """The body as Flask's ``request.get_data`` reads it (werkzeug's ``get_input_stream`` with
        ``MAX_CONTENT_LENGTH``, whose ``LimitedStream`` reads in small pieces: about 20 µs a call):
        when the server ends the input itself (``wsgi.input_terminated``, gunicorn), whatever it gives
        up to the limit plus one byte; else ``length`` bytes, ``None`` when the stream ends before
        (werkzeug's ``ClientDisconnected``)."""
        terminated = "wsgi.input_terminated" in environ
        wanted = self._max + 1 if terminated else length
        stream, chunks, got = environ["wsgi.input"], [], 0
        while got < wanted:
            chunk = stream.read(wanted - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks) if terminated or got == wanted else None


_STATUS_LINES = {code: f"{code} {reason.upper()}" for code, reason in HTTP_STATUS_CODES.items()}
"""werkzeug's status line of each code (``Response.status``): ``409 CONFLICT``."""


def _refuse(hook: str, started: float) -> Response:
    """The 401 for a hook request without the right bearer token; counted and logged, nothing decided."""
    seconds = time.perf_counter() - started
    metrics.count_auth_failure()
    metrics.observe_request(hook, 401, seconds, "invalid")
    logs.log_hook_call(hook=hook, namespace="", job="", code=401, seconds=seconds, body_bytes=0)
    response = _json(401, {"error": "missing or wrong bearer token"})
    response.headers["WWW-Authenticate"] = 'Bearer realm="nvcre-hooks"'
    return response


def _too_large(started: float, limit: int) -> HookResult:
    """The 413 for a body Flask refused to read (``MAX_CONTENT_LENGTH``), in the shape ``handle`` answers."""
    size = f"{request.content_length} bytes" if request.content_length is not None else "larger"
    message = f"request body is {size}, more than the limit of {limit}"
    return HookResult(413, {"error": message}, None, [], time.perf_counter() - started)


class _CountedParents:
    """``parents`` for one call, counting the live Job reads made through it (``reads``): what tells a
    ``checked`` answer from a ``steady`` one (``metrics.outcome_of``)."""

    def __init__(self, parents: ParentVersions) -> None:
        self._parents = parents
        self.reads = 0

    def resource_version(self, namespace: str, name: str) -> str | None:
        self.reads += 1
        return self._parents.resource_version(namespace, name)

    def live_job(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.reads += 1
        return self._parents.live_job(namespace, name)


def _account(hook: str, result: HookResult, body_bytes: int, clock: Callable[[], datetime] | None = None, *,
             live_reads: int = 0) -> None:
    """Counts, times and logs one answered hook call, its time also by what the answer did
    (``metrics.outcome_of``, ``live_reads`` reads of the live Job made for it). A held decision whose
    drain waits is also counted by the ``Drained`` reason, with the drain's age at ``clock()``
    (``metrics.count_drain_hold``)."""
    outcome = metrics.outcome_of(result.status_code, bool(result.decided_on), live_reads)
    metrics.observe_request(hook, result.status_code, result.seconds, outcome)
    if result.refusal:
        metrics.count_refusal(hook, result.refusal, (result.namespace, result.job))
    decision = result.decision
    if decision is not None:
        metrics.count_answered((result.namespace, result.job), bool(result.decided_on), hook)
        metrics.count_decision(decision.kind)
        metrics.count_phase(decision.phase_after)
        if decision.kind == "held" and clock is not None:
            metrics.count_drain_hold(decision.response.get("status") or {}, clock())
        if decision.stuck_pods:
            metrics.count_drain_stuck(decision.stuck_pods)
    logs.log_hook_call(
        hook=hook,
        namespace=result.namespace,
        job=result.job,
        code=result.status_code,
        seconds=result.seconds,
        body_bytes=body_bytes,
        reads=result.reads,
        phase_before=decision.phase_before if decision else "",
        phase_after=decision.phase_after if decision else "",
        decision=decision.kind if decision else "",
    )


def _json(status: int, body: dict[str, object]) -> Response:
    """A JSON response with deterministic (sorted-key) bytes."""
    return Response(encode(body), status=status, mimetype="application/json")


def _http_error(exc: HTTPException) -> Response:
    """Any HTTP error Flask raises (404, 405, 413, ...) as JSON, keeping its headers (``Allow``)."""
    if isinstance(exc, NotFound):
        message = f"no route {request.path}"
    elif isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(exc.valid_methods or [])
        message = f"method {request.method} not allowed on {request.path}; allowed: {allowed}"
    elif isinstance(exc, RequestEntityTooLarge):
        message = "request body is too large"
    else:
        message = exc.description or exc.name
    response = exc.get_response()
    response.set_data(encode({"error": message}))
    response.mimetype = "application/json"
    return response


def _internal_error(exc: Exception) -> Response:
    """An exception outside ``handle`` (which catches its own), as Flask hands it over: ``_failed``."""
    return _failed(exc, request.method, request.path)


def _failed(exc: Exception, method: str, path: str) -> Response:
    """The 500 of an exception outside ``handle`` on ``method path``, raised in Flask's view or in the
    direct path (``_HookCalls``): logged with its traceback (call it while handling ``exc``), JSON
    naming the type only."""
    log.exception("unhandled error on %s %s", method, path)
    return _json(500, {"error": f"internal error: {type(exc).__name__}"})
