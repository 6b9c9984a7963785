"""Hook authentication, body and nesting limits, and log hygiene, end to end through gunicorn.

The server runs with ``NVCRE_HOOK_TOKEN_FILE`` (bearer token), ``NVCRE_MAX_BODY_BYTES`` 64 KiB and
the default JSON depth limit (64). A Metacontroller-shaped driver without the token, or with a
wrong one, gets 401 and nothing about the Job changes; with it, the lifecycle completes. Every
request below carries a unique marker string in its content; gunicorn's whole log (stderr: the
server's JSON lines and the access log) never contains it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import orjson
import pytest

from tests.e2e.fuzz import base_request
from tests.e2e.harness import Harness, job_spec
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer

TOKEN = "s3cret-" + uuid.uuid4().hex
MARKER = "MARKER-" + uuid.uuid4().hex
MAX_BODY = 64 * 1024


@pytest.fixture(scope="module")
def secured() -> Iterator[tuple[FakeKubeServer, HookServer]]:
    with FakeKubeServer() as fake, HookServer(fake, token=TOKEN, env={"NVCRE_MAX_BODY_BYTES": str(MAX_BODY)}) as server:
        yield fake, server


def marked_request() -> dict[str, object]:
    """A valid request whose spec, status, child and controller all carry the marker."""
    request = base_request("running")
    parent = request["parent"]
    parent["spec"] = job_spec(2, max_restarts=2, marker=MARKER)
    parent["metadata"]["annotations"] = {"note": MARKER}
    parent["metadata"]["resourceVersion"] = "5"
    parent["status"]["message"] = MARKER
    child = next(iter(request["children"]["JobSet.jobset.x-k8s.io/v1alpha2"].values()))
    child["metadata"]["annotations"] = {"note": MARKER}
    request["controller"]["spec"] = {"marker": MARKER}
    return request


def error_body(data: bytes) -> str:
    body = json.loads(data)
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    return body["error"]


def test_probes_and_metrics_are_open(secured: tuple[FakeKubeServer, HookServer]) -> None:
    """Probes on the hook port, metrics on the metrics port (the hook port has no /metrics)."""
    _, server = secured
    for path in ("/healthz", "/readyz"):
        assert server.get(path)[0] == 200, path
    assert server.get("/metrics")[0] == 404
    assert "nvcre_hook_request_duration_seconds_count{hook=\"sync\"}" in server.metrics()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "],
                         ids=["none", "wrong", "basic", "longer", "empty"])  # ids without the random token
def test_hooks_refuse_a_missing_or_wrong_token(
    secured: tuple[FakeKubeServer, HookServer], authorization: str | None
) -> None:
    _, server = secured
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    for hook in ("/sync", "/finalize"):
        status, data, response_headers = server.request("POST", hook, orjson.dumps(marked_request()), headers)
        assert status == 401, data
        assert "token" in error_body(data)
        assert response_headers.get("www-authenticate", "").startswith("Bearer")


def test_without_the_token_nothing_is_decided_and_with_it_the_lifecycle_completes(
    secured: tuple[FakeKubeServer, HookServer],
) -> None:
    fake, server = secured
    h = Harness.e2e(fake, server, namespace="auth", version="v2", token="wrong-token")
    h.create_job("guarded")
    h.step(5)
    calls = h.driver.calls
    assert calls and all(call.reply.status == 401 for call in calls)
    assert h.status("guarded") == {} and h.jobsets("guarded") == []  # nothing written, nothing created
    h.driver.token = None
    h.step(3)
    assert h.status("guarded") == {} and h.jobsets("guarded") == []
    h.driver.token = TOKEN
    h.run_until(lambda: h.phase("guarded") == "Running", "Running with the token")
    h.cluster.succeed_workers(h.namespace, "guarded-0")
    h.reconcile()
    h.run_until(lambda: h.phase("guarded") == "Succeeded", "Succeeded")
    h.driver.delete_job(h.namespace, "guarded")
    h.reconcile()
    h.run_until(lambda: h.gone("guarded"), "finalized")
    h.assert_safe()


def test_a_body_over_the_limit_is_refused_before_parsing(secured: tuple[FakeKubeServer, HookServer]) -> None:
    _, server = secured
    request = marked_request()
    request["parent"]["metadata"]["annotations"] = {"big": MARKER + "x" * (4 * MAX_BODY)}  # type: ignore[index]
    data = orjson.dumps(request)
    started = time.perf_counter()
    status, body = server.post("/sync", data, token=TOKEN)
    seconds = time.perf_counter() - started
    assert status == 413, body
    assert str(MAX_BODY) in error_body(body)
    assert seconds < 1.0
    # the limit also holds for a body that is not even JSON, and without reading it all
    status, body = server.post("/sync", b"{" * (MAX_BODY + 1), token=TOKEN)
    assert status == 413


def test_json_nested_deeper_than_the_limit_is_a_400(secured: tuple[FakeKubeServer, HookServer]) -> None:
    _, server = secured
    request = marked_request()
    deep: object = MARKER
    for _ in range(100):
        deep = {"d": deep}
    request["parent"]["spec"]["extra"] = deep  # type: ignore[index]
    status, body = server.post("/sync", orjson.dumps(request), token=TOKEN)
    assert status == 400
    assert "nested" in error_body(body)
    status, body = server.post("/finalize", b"[" * 2000 + b"]" * 2000, token=TOKEN)
    assert status == 400


def test_logs_carry_names_and_sizes_never_request_content(secured: tuple[FakeKubeServer, HookServer]) -> None:
    fake, server = secured
    good = marked_request()
    fake.put_job(good["parent"])  # type: ignore[arg-type]  # the live Job the request is checked against
    answered = server.post("/sync", orjson.dumps(good), token=TOKEN)
    assert answered[0] == 200, answered
    finalizing = marked_request()
    finalizing["finalizing"] = True
    assert server.post("/finalize", orjson.dumps(finalizing), token=TOKEN)[0] == 200
    wrong_type = marked_request()
    wrong_type["parent"]["spec"]["maxRestarts"] = MARKER  # type: ignore[index]
    assert server.post("/sync", orjson.dumps(wrong_type), token=TOKEN)[0] == 400
    wrong_kind = marked_request()
    wrong_kind["parent"]["kind"] = MARKER  # type: ignore[index]
    assert server.post("/sync", orjson.dumps(wrong_kind), token=TOKEN)[0] == 422
    assert server.post("/sync", MARKER.encode() + b"{", token=TOKEN)[0] == 400
    assert server.post("/sync", orjson.dumps(good))[0] == 401
    time.sleep(0.3)  # let gunicorn's workers flush their log lines
    logs = server.logs()
    assert '"job":"fz"' in logs.replace(" ", "") or '"job": "fz"' in logs, "the hook calls are logged"
    assert MARKER not in logs
    assert TOKEN not in logs
