"""The HTTP surface of the hooks, through Flask's test client: routes, bad input, errors, probes, metrics.

Every error body is JSON with an ``error`` string; nothing about the Job is decided on a 4xx; an
unexpected exception is a 500 that names only the exception type, never a 200.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from werkzeug.test import Client

import hooks.server.handler
from hooks.server import logs
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.handler import handle, nested_deeper_than
from hooks.server.metrics import metrics_app
from podread import reader_from_snapshot
from tests.support import JOB_CREATED
from tests.support.uids import uid

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
JOBSET_KEY = "JobSet.jobset.x-k8s.io/v1alpha2"


def job_request(name: str = "llama", namespace: str = "team-a", **extra: Any) -> dict[str, Any]:
    """A valid sync request: a fresh NVCRE Job with one worker replicated job and no JobSet yet."""
    template = {"spec": {"template": {"spec": {"containers": [{"name": "worker", "image": "trainer:1"}]}}}}
    request = {
        "controller": {"metadata": {"name": "nvcre-jobs"}},
        "parent": {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "uid": uid(f"job/{namespace}/{name}"),
                         "generation": 1, "creationTimestamp": JOB_CREATED},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": template}]},
        },
        "children": {JOBSET_KEY: {}},
        "related": {},
        "finalizing": False,
    }
    request.update(extra)
    return request


def empty_reader() -> Any:
    """A Reader whose cache and API server both hold no pods."""
    return reader_from_snapshot({"cache": {"pods": []}, "live": {"pods": []}, "jobs": {"items": []}})


def make_app(**settings: Any) -> Flask:
    app = create_app(empty_reader(), clock=lambda: NOW, settings=Settings(**settings))
    app.testing = True
    return app


@pytest.fixture
def client() -> Iterator[FlaskClient]:
    with make_app().test_client() as test_client:
        yield test_client


def post(client: FlaskClient, path: str, body: object) -> Any:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return client.post(path, data=data, content_type="application/json")


def error_of(response: Any) -> str:
    """The error message of a JSON error response; fails unless the body is exactly that shape."""
    assert response.mimetype == "application/json"
    body = json.loads(response.data)
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]
    assert set(body) == {"error"}
    return body["error"]


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --- the happy path ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sync", "/finalize"])
def test_a_valid_request_is_answered_with_status_and_children(client: FlaskClient, path: str) -> None:
    finalizing = path == "/finalize"
    response = post(client, path, job_request(finalizing=finalizing))
    assert response.status_code == 200, response.data
    assert response.mimetype == "application/json"
    body = json.loads(response.data)
    assert isinstance(body["status"], dict) and body["status"]["phase"]
    assert isinstance(body["children"], list)
    if not finalizing:
        assert [child["kind"] for child in body["children"]] == ["JobSet"]
        assert body["children"][0]["metadata"]["name"] == "llama-0"


def test_the_same_request_gives_the_same_bytes(client: FlaskClient) -> None:
    first = post(client, "/sync", job_request())
    second = post(client, "/sync", job_request())
    assert first.status_code == 200
    assert first.data == second.data
    assert first.data == orjson.dumps(json.loads(first.data), option=orjson.OPT_SORT_KEYS)


def test_any_content_type_is_accepted(client: FlaskClient) -> None:
    data = orjson.dumps(job_request())
    assert client.post("/sync", data=data, content_type="text/plain").status_code == 200
    assert client.post("/sync", data=data).status_code == 200


def test_a_call_is_counted_and_logged_with_names_not_content(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    requests_before = sample("nvcre_hook_requests_total", hook="sync", code="200")
    decisions_before = sample("nvcre_decisions_total", kind="created")
    with caplog.at_level(logging.INFO, logger="nvcre.hooks"):
        assert post(client, "/sync", job_request()).status_code == 200
    assert sample("nvcre_hook_requests_total", hook="sync", code="200") == requests_before + 1
    assert sample("nvcre_decisions_total", kind="created") == decisions_before + 1
    [line] = [record for record in caplog.records if record.name == "nvcre.hooks"]
    fields = line.fields  # type: ignore[attr-defined]
    assert fields["hook"] == "sync" and fields["namespace"] == "team-a" and fields["job"] == "llama"
    assert fields["code"] == 200 and fields["decision"] == "created"
    assert fields["phase_after"] in ("Pending", "Running")
    assert fields["reads"] and set(fields["reads"]) <= {"cache", "live"}
    assert "trainer:1" not in repr(fields)


def test_the_call_line_is_built_only_when_its_level_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 32 item 4: with INFO filtered out, a 200's line is not built (its reads not even counted);
    a 4xx still is, at WARNING, and the reads are counted by source."""
    class Read:
        def __init__(self, source: str, outcome: str = "ok") -> None:
            self.source, self.outcome = source, outcome

    def untouched() -> Iterator[Read]:
        raise AssertionError("the reads of a line nobody logs were read")
        yield Read("cache")

    with caplog.at_level(logging.WARNING, logger="nvcre.hooks"):
        logs.log_hook_call(hook="sync", namespace="a", job="b", code=200, seconds=0.001, body_bytes=1,
                           reads=untouched())
        logs.log_hook_call(hook="sync", namespace="a", job="b", code=409, seconds=0.001, body_bytes=1,
                           reads=[Read("live"), Read("cache"), Read("cache", "error")])
    [line] = [record for record in caplog.records if record.name == "nvcre.hooks"]
    assert line.levelno == logging.WARNING
    assert line.fields["reads"] == {"cache": 2, "live": 1} and line.fields["read_errors"] == 1  # type: ignore[attr-defined]
    assert list(line.fields["reads"]) == ["cache", "live"]  # type: ignore[attr-defined]


# --- bad input: 4xx with a JSON error, nothing decided ---------------------------------------------


def without_parent() -> dict[str, Any]:
    request = job_request()
    del request["parent"]
    return request


def with_parent(**changes: Any) -> dict[str, Any]:
    request = job_request()
    request["parent"].update(changes)
    return request


def with_metadata(**changes: Any) -> dict[str, Any]:
    request = job_request()
    request["parent"]["metadata"].update(changes)
    return request


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"", 400),
        (b"not json", 400),
        (b'{"parent": ', 400),
        (b"\xff\xfe{}", 400),
        (b'{"parent": NaN}', 400),
        (b"[]", 400),
        (b"[1, 2]", 400),
        (b'"parent"', 400),
        (b"null", 400),
        (without_parent(), 400),
        (with_parent(metadata="llama"), 400),
        (with_parent(spec=[]), 400),
        (with_metadata(name=7), 400),
        (with_metadata(generation="1"), 400),
        (job_request(finalizing="yes"), 400),
        (job_request(children=[]), 400),
        (with_metadata(name="Not_A_Name"), 400),
        (with_metadata(namespace="a/b"), 400),
        (with_parent(apiVersion="batch/v1"), 422),
        (with_parent(kind="JobSet"), 422),
        (with_parent(apiVersion=None), 422),
    ],
    ids=lambda value: value if isinstance(value, int) else None,
)
def test_bad_requests_get_a_json_error(client: FlaskClient, body: object, status: int) -> None:
    before = sample("nvcre_hook_requests_total", hook="sync", code=str(status))
    response = post(client, "/sync", body)
    assert response.status_code == status
    error_of(response)
    assert sample("nvcre_hook_requests_total", hook="sync", code=str(status)) == before + 1


def test_a_body_over_the_limit_is_413() -> None:
    client = make_app(max_body_bytes=1000).test_client()
    response = post(client, "/sync", job_request(padding="x" * 2000))
    assert response.status_code == 413
    assert "1000" in error_of(response)


def test_a_body_exactly_at_the_limit_is_read() -> None:
    raw = orjson.dumps(job_request())
    assert post(make_app(max_body_bytes=len(raw)).test_client(), "/sync", raw).status_code == 200
    assert post(make_app(max_body_bytes=len(raw) - 1).test_client(), "/sync", raw).status_code == 413


def test_handle_checks_the_size_itself() -> None:
    """The CLI replay shares handle(), with no Flask in front of it."""
    result = handle(b"x" * 11, "sync", reader=empty_reader(), clock=lambda: NOW, settings=Settings(max_body_bytes=10))
    assert result.status_code == 413 and result.decision is None


@pytest.mark.parametrize("depth", [65, 200, 1500])
def test_json_nested_too_deep_is_400(client: FlaskClient, depth: int) -> None:
    raw = orjson.dumps(job_request())
    raw = raw[:-1] + b', "deep": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    response = post(client, "/sync", raw)
    assert response.status_code == 400
    assert "nested" in error_of(response) or "depth" in error_of(response)


def test_json_exactly_at_the_depth_limit_is_accepted(client: FlaskClient) -> None:
    body = job_request()
    body["related"] = {"deep": json.loads("[" * 62 + "]" * 62)}  # 1 (request) + 1 (related) + 62 = 64
    assert nested_deeper_than(body, 64) is False
    assert nested_deeper_than(body, 63) is True
    assert post(client, "/sync", body).status_code == 200


def test_nesting_is_counted_per_level() -> None:
    assert nested_deeper_than(1, 0) is False
    assert nested_deeper_than({}, 0) is True
    assert nested_deeper_than({"a": [1, {"b": []}]}, 4) is False
    assert nested_deeper_than({"a": [1, {"b": []}]}, 3) is True


def _former_walk(document: object, limit: int) -> bool:
    """``nested_deeper_than`` as it was before issue 32 item 4's sixth pass (nested loops)."""
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        deeper = []
        for node in level:
            for value in node.values() if isinstance(node, dict) else node:
                if isinstance(value, dict | list):
                    deeper.append(value)
        level = deeper
    return False


def test_nesting_answers_as_the_former_walk() -> None:
    """Every recorded request and random documents, at every limit around their depth."""
    import pathlib
    import random

    rng = random.Random(20261206)

    def nested(depth: int) -> object:
        if depth == 0:
            return rng.choice([1, "x", None, True, 1.5])
        children = [nested(rng.randint(0, depth - 1)) for _ in range(rng.randint(0, 3))]
        return children if rng.random() < 0.5 else {f"k{i}": child for i, child in enumerate(children)}

    documents = [nested(rng.randint(0, 9)) for _ in range(300)]
    documents += [json.loads(path.read_bytes())
                  for path in sorted(pathlib.Path(__file__).parents[1].glob("payloads/*/request.json"))]
    assert len(documents) > 300
    for document in documents:
        for limit in range(12):
            assert nested_deeper_than(document, limit) == _former_walk(document, limit), limit


# --- methods, routes, probes, metrics -------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/sync", "/finalize"])
def test_hooks_accept_only_post(client: FlaskClient, method: str, path: str) -> None:
    response = client.open(path, method=method)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert method in error_of(response)


def test_probes_refuse_post(client: FlaskClient) -> None:
    for path in ("/healthz", "/readyz"):
        response = client.post(path)
        assert response.status_code == 405
        assert "GET" in response.headers["Allow"]
        error_of(response)


def test_the_hook_port_serves_no_metrics(client: FlaskClient) -> None:
    """/metrics is served by the gunicorn master on its own port (NVCRE_METRICS_PORT), not here."""
    response = client.get("/metrics")
    assert response.status_code == 404
    error_of(response)


@pytest.mark.parametrize("path", ["/", "/nope", "/sync/extra", "/v1/sync"])
def test_unknown_paths_are_a_json_404(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert path in error_of(response)


def test_healthz_and_readyz_answer_without_a_cluster() -> None:
    """Readiness does not depend on the API server: a Reader whose every read fails is still ready."""
    failing = reader_from_snapshot({"cache": {"error": "down"}, "live": {"error": "down"}})
    client = create_app(failing, clock=lambda: NOW, settings=Settings()).test_client()
    assert client.get("/healthz").get_json() == {"status": "alive"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json() == {"status": "ready"}


def test_metrics_are_prometheus_text(client: FlaskClient) -> None:
    post(client, "/sync", job_request())
    response = Client(metrics_app).get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    for name in ("nvcre_hook_requests_total", "nvcre_hook_request_duration_seconds_bucket",
                 "nvcre_decisions_total", "nvcre_hook_auth_failures_total", "podread_reads_total"):
        assert f"\n{name}" in text, name
    assert 'nvcre_hook_request_duration_seconds_bucket{hook="sync",le="10.0"}' in text


def test_a_failed_read_holds_per_contract() -> None:
    """With every read failing, /sync answers a 200 that holds (design §5): nothing proceeds, the
    Drained condition is Unknown/ReadFailed, and Metacontroller calls again after NVCRE_RESYNC_SECONDS."""
    failing = reader_from_snapshot({"cache": {"error": "connection refused"}, "live": {"error": "connection refused"}})
    client = create_app(failing, clock=lambda: NOW, settings=Settings(resync_seconds=2.5)).test_client()
    response = post(client, "/sync", job_request())
    assert response.status_code == 200
    body = response.get_json()
    assert body["children"] == []
    assert body["resyncAfterSeconds"] == 2.5
    [drained] = [c for c in body["status"]["conditions"] if c["type"] == "Drained"]
    assert (drained["status"], drained["reason"]) == ("Unknown", "ReadFailed")


# --- unexpected errors: 500, JSON, no traceback, never 200 -----------------------------------------


class Boom(RuntimeError):
    pass


def test_an_exception_in_decide_is_a_500_without_traceback(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise Boom("secret detail /etc/passwd")

    monkeypatch.setattr(hooks.server.handler, "decide", explode)
    with caplog.at_level(logging.ERROR):
        response = post(client, "/sync", job_request())
    assert response.status_code == 500
    assert error_of(response) == "internal error: Boom"
    assert b"Traceback" not in response.data and b"secret" not in response.data
    logged = [record for record in caplog.records if record.exc_info]
    assert logged and logged[0].exc_info[0] is Boom  # type: ignore[index]


@pytest.mark.parametrize(
    "response",
    [
        {},
        {"children": []},
        {"status": {}},
        {"status": None, "children": []},
        [],
        {"status": {"x": {1, 2}}, "children": []},
    ],
    ids=["empty", "no-status", "no-children", "null-status", "not-an-object", "not-serializable"],
)
def test_a_half_done_decision_is_never_a_200(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch, response: Any
) -> None:
    real = hooks.server.handler.decide

    def broken(*args: Any, **kwargs: Any) -> Any:
        decision = real(*args, **kwargs)
        return type(decision)(copy.deepcopy(response), decision.kind, decision.phase_before,
                              decision.phase_after, decision.message)

    monkeypatch.setattr(hooks.server.handler, "decide", broken)
    answer = post(client, "/sync", job_request())
    assert answer.status_code == 500
    assert error_of(answer).startswith("internal error: ")


def test_an_exception_in_a_route_outside_handle_is_a_json_500(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode() -> Any:
        raise Boom()

    monkeypatch.setattr("hooks.server.app.queueing.customize_response", explode)
    response = client.post("/customize", json={"controller": {}, "parent": {}})
    assert response.status_code == 500
    assert error_of(response) == "internal error: Boom"


def test_customize_answers_the_related_priority_classes_and_flavors(client: FlaskClient) -> None:
    response = post(client, "/customize", {"controller": {}, "parent": {}})
    assert response.status_code == 200
    assert json.loads(response.data) == {"relatedResources": [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": resource, "labelSelector": {}}
        for resource in ("workloadpriorityclasses", "resourceflavors")]}


def test_customize_needs_the_token_when_one_is_set(tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    with make_app(hook_token_file=str(token)).test_client() as test_client:
        assert post(test_client, "/customize", {}).status_code == 401
        answer = test_client.post("/customize", data=b"{}", content_type="application/json",
                                  headers={"Authorization": "Bearer s3cret"})
        assert answer.status_code == 200


def test_the_metrics_app_serves_only_get_metrics() -> None:
    metrics_client = Client(metrics_app)
    assert metrics_client.get("/metrics").status_code == 200
    assert metrics_client.head("/metrics").get_data() == b""
    for path in ("/", "/sync", "/metrics/extra"):
        response = metrics_client.get(path)
        assert response.status_code == 404 and path in json.loads(response.get_data())["error"]
    refused = metrics_client.post("/metrics")
    assert refused.status_code == 405 and refused.headers["Allow"] == "GET, HEAD"
