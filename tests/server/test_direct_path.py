"""The direct path of the hook calls (``hooks.server.app._HookCalls``, issue 32 item 4): a ``POST``
to ``/sync`` or ``/finalize`` with a ``Content-Length`` is answered without Flask's request context,
and what it sends is byte for byte what the Flask view sends for the same request; everything else
is Flask's, untouched.

Each request is sent twice to one app: to ``app.wsgi_app`` (the direct path in front of Flask) and
to the Flask app behind it (``_HookCalls._flask``, the view as it always ran). The status lines,
the headers (the ``Server-Timing`` value is a duration: only its shape is compared) and the bodies
must be equal.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from flask import Flask
from werkzeug.test import EnvironBuilder

import hooks.server.app
from hooks.server.app import create_app
from hooks.server.config import Settings
from tests.server.test_app_http import NOW, empty_reader, job_request

TOKEN = "direct-path-token"
TIMING = re.compile(r"hook;dur=\d+\.\d\d")


def make_app(tmp_path: Path | None = None, **settings: Any) -> Flask:
    if tmp_path is not None:
        (tmp_path / "token").write_text(TOKEN + "\n")
        settings["hook_token_file"] = str(tmp_path / "token")
    return create_app(empty_reader(), clock=lambda: NOW, settings=Settings(**settings))


def environ(path: str = "/sync", body: bytes | None = None, *, method: str = "POST",
            headers: dict[str, str] | None = None, length: int | None = None,
            terminated: bool = False) -> dict[str, Any]:
    """A WSGI environ of one request; ``length`` overrides the ``Content-Length`` (a body shorter
    than it is a client that went away, a longer one a stream that says less than it holds);
    ``terminated`` says the server ends the input itself (``wsgi.input_terminated``, as gunicorn)."""
    body = orjson.dumps(job_request()) if body is None else body
    built = EnvironBuilder(path=path, method=method, data=body, content_type="application/json",
                           headers=headers or {}).get_environ()
    if length is not None:
        built["CONTENT_LENGTH"] = str(length)
    if terminated:
        built["wsgi.input_terminated"] = True
    return built


def sent(wsgi: Callable[..., Any], env: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """What ``wsgi`` sends for ``env`` (a copy, with its own body stream): status line, headers, body;
    the ``Server-Timing`` value checked for its shape and left out."""
    env = {**env, "wsgi.input": io.BytesIO(env["wsgi.input"].getvalue())}
    started: list[Any] = []
    chunks = wsgi(env, lambda status, headers, exc_info=None: started.append((status, headers)))
    body = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    status, headers = started[0]
    for name, value in headers:
        if name == "Server-Timing":
            assert TIMING.fullmatch(value), value
    return status, [(name, "" if name == "Server-Timing" else value) for name, value in headers], body


def both(app: Flask, env: dict[str, Any]) -> tuple[Any, Any]:
    """What the direct path and the Flask view behind it each send for ``env``."""
    direct = app.wsgi_app
    assert isinstance(direct, hooks.server.app._HookCalls)
    return sent(direct, env), sent(direct._flask, env)


SAME = {
    "sync": environ(),
    "finalize": environ("/finalize", orjson.dumps(job_request(finalizing=True))),
    "not JSON": environ(body=b"{"),
    "not an object": environ(body=b"[]"),
    "empty body": environ(body=b""),
    "invalid request": environ(body=orjson.dumps({"parent": {}})),
    "too deep": environ(body=b"[" * 200 + b"]" * 200),
    "client went away": environ(length=len(orjson.dumps(job_request())) + 10),
    "client went away, gunicorn": environ(length=len(orjson.dumps(job_request())) + 10, terminated=True),
    "sync, gunicorn": environ(terminated=True),
    "stream over the limit, gunicorn": environ(body=orjson.dumps(job_request()) + b" " * 100, terminated=True,
                                               length=len(orjson.dumps(job_request()))),
    "over the limit": environ(body=b" " * 70 + orjson.dumps(job_request())),
    "odd length": {**environ(), "CONTENT_LENGTH": "\u00b2"},
    "a length of 5,000 digits": {**environ(), "CONTENT_LENGTH": "9" * 5000},  # past int()'s 4,300: never a 500
    "a zero-padded length": {**environ(), "CONTENT_LENGTH": "0" * 5000 + str(len(orjson.dumps(job_request())))},
    "GET": environ(method="GET"),
    "another path": environ("/sync/"),
}


@pytest.mark.parametrize("env", SAME.values(), ids=SAME.keys())
def test_the_direct_path_sends_what_the_view_sends(env: dict[str, Any]) -> None:
    app = make_app(max_body_bytes=len(orjson.dumps(job_request())) + 40)
    direct, view = both(app, env)
    assert direct == view
    assert direct[0].split()[0].isdigit()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Bearer {TOKEN}"], ids=["missing", "wrong", "right"])
def test_the_token_is_checked_as_the_view_checks_it(tmp_path: Path, authorization: str | None) -> None:
    app = make_app(tmp_path)
    env = environ(headers={} if authorization is None else {"Authorization": authorization})
    direct, view = both(app, env)
    assert direct == view
    assert direct[0] == ("200 OK" if authorization == f"Bearer {TOKEN}" else "401 UNAUTHORIZED")


def test_an_error_outside_handle_is_the_views_500(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("accounting broke")

    monkeypatch.setattr(hooks.server.app, "_account", broken)
    direct, view = both(make_app(), environ())
    assert direct == view
    assert direct[0] == "500 INTERNAL SERVER ERROR"
    assert orjson.loads(direct[2]) == {"error": "internal error: RuntimeError"}


@pytest.mark.parametrize(("env", "direct"), [
    (environ(), True),
    (environ("/finalize", orjson.dumps(job_request(finalizing=True))), True),
    (environ(body=b"{"), True),
    (environ(method="GET"), False),
    (environ("/healthz", method="GET"), False),
    (environ("/sync/"), False),
    (environ(body=b" " * 10_000), False),  # over max_body_bytes: Flask's 413
    ({**environ(), "HTTP_TRANSFER_ENCODING": "chunked"}, False),
    ({**environ(), "CONTENT_LENGTH": "\u00b2"}, False),  # a digit to str.isdigit, no length to werkzeug
], ids=["sync", "finalize", "bad JSON", "GET", "healthz", "trailing slash", "too large", "chunked", "odd length"])
def test_only_hook_calls_of_the_usual_shape_leave_flask_out(env: dict[str, Any], direct: bool) -> None:
    app = make_app(max_body_bytes=5_000)
    front = app.wsgi_app
    assert isinstance(front, hooks.server.app._HookCalls)
    entered: list[str] = []
    flask_app = front._flask

    def spy(environ: dict[str, Any], start_response: Any) -> Any:
        entered.append(environ["PATH_INFO"])
        return flask_app(environ, start_response)

    front._flask = spy
    sent(front, env)
    assert entered == ([] if direct else [env["PATH_INFO"]])


class Trickle(io.BytesIO):
    """A body stream that gives at most 7 bytes a read, as a socket may."""

    def read(self, size: int | None = -1) -> bytes:
        return super().read(7 if size is None or size < 0 else min(size, 7))


@pytest.mark.parametrize("terminated", [False, True], ids=["werkzeug", "gunicorn"])
@pytest.mark.parametrize("extra", [0, 10, -10], ids=["whole", "longer stream", "cut short"])
def test_a_body_that_comes_in_pieces_is_read_as_the_view_reads_it(terminated: bool, extra: int) -> None:
    body = orjson.dumps(job_request())
    app = make_app(max_body_bytes=len(body) + 40)
    direct = app.wsgi_app
    assert isinstance(direct, hooks.server.app._HookCalls)
    answers = []
    for wsgi in (direct, direct._flask):
        env = environ(body=body + b" " * max(extra, 0), length=len(body) if extra >= 0 else len(body) - extra,
                      terminated=terminated)
        env["wsgi.input"] = Trickle(env["wsgi.input"].getvalue())
        statuses: list[str] = []
        sent_body = b"".join(wsgi(env, lambda status, headers, exc_info=None, seen=statuses: seen.append(status)))
        answers.append((statuses[0], sent_body))
    assert answers[0] == answers[1]
