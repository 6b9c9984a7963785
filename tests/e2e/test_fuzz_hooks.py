"""Bad input: hypothesis-generated requests with one part broken (wrong types at every path the
decision reads, missing and extra fields, huge strings, deep nesting, unicode) and bytes that are
not requests at all, posted to /sync and /finalize. Never a 5xx or a traceback, always
``{"error": ...}`` on a 4xx, and never a 200 that drops an observed current JobSet outside a
teardown (tests/e2e/fuzz.py). Mostly in process (volume), plus a batch through gunicorn.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.server.app import create_app
from hooks.server.config import Settings
from podread import ATTEMPT_LABEL
from tests.e2e.fuzz import (
    BASES,
    GROUP,
    MISSING,
    RAW_BODIES,
    Mutation,
    base_request,
    check_answer,
    encode,
    fuzz_reader,
    mutations,
)
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer, make_job_pods

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def quiet(examples: int) -> settings:
    """Bounded examples, no deadline (gunicorn calls vary), no example database."""
    return settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(scope="module")
def client() -> Iterator[FlaskClient]:
    app = create_app(fuzz_reader(), clock=lambda: NOW, settings=Settings())
    with app.test_client() as test_client:
        yield test_client


@pytest.fixture(scope="module")
def server() -> Iterator[HookServer]:
    with FakeKubeServer() as fake, HookServer(fake) as hook_server:
        fake.put_pods(make_job_pods("fz", 2, "fuzz", attempt=1))
        yield hook_server


def post(client: FlaskClient, hook: str, data: bytes) -> tuple[int, bytes]:
    response = client.post(f"/{hook}", data=data, content_type="application/json")
    return response.status_code, response.get_data()


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_every_base_request_is_valid(client: FlaskClient, base: str, version: str) -> None:
    hook = "finalize" if base == "finalizing" else "sync"
    request = base_request(base, version)
    code, body = post(client, hook, encode(request))
    assert code == 200, body
    assert check_answer(request, code, body) == []


@quiet(400)
@given(mutation=mutations())
def test_broken_requests_in_process(client: FlaskClient, mutation: Mutation) -> None:
    request = mutation.request()
    code, body = post(client, mutation.hook, encode(request))
    assert check_answer(request, code, body) == [], mutation


@pytest.mark.parametrize("where", ["parent", "child"])
def test_a_null_condition_is_a_400(client: FlaskClient, where: str) -> None:
    request = base_request("running")
    if where == "parent":
        request["parent"]["status"]["conditions"] = [None]
    else:
        request["children"][GROUP]["fz-1"]["status"] = {"conditions": [None]}
    code, body = post(client, "sync", encode(request))
    assert code == 400, body
    assert check_answer(request, code, body) == []


def test_a_null_attempt_label_is_not_a_500(client: FlaskClient) -> None:
    request = base_request("running")
    request["children"][GROUP]["fz-1"]["metadata"]["labels"][ATTEMPT_LABEL] = None
    code, body = post(client, "sync", encode(request))
    assert code < 500, body
    assert check_answer(request, code, body) == []


@pytest.mark.parametrize("raw", RAW_BODIES, ids=range(len(RAW_BODIES)))
@pytest.mark.parametrize("hook", ["sync", "finalize"])
def test_bytes_that_are_not_requests(client: FlaskClient, raw: bytes, hook: str) -> None:
    code, body = post(client, hook, raw)
    assert 400 <= code < 500, body
    assert check_answer(MISSING, code, body) == []


@quiet(60)
@given(data=st.binary(max_size=300))
def test_random_bytes_in_process(client: FlaskClient, data: bytes) -> None:
    code, body = post(client, "sync", data)
    assert check_answer(MISSING, code, body) == []


@pytest.mark.slow
@quiet(150)
@given(mutation=mutations())
def test_broken_requests_through_gunicorn(server: HookServer, mutation: Mutation) -> None:
    request = mutation.request()
    code, body = server.post(f"/{mutation.hook}", encode(request))
    assert check_answer(request, code, body) == [], mutation


def test_raw_bodies_through_gunicorn(server: HookServer) -> None:
    for raw in RAW_BODIES:
        code, body = server.post("/sync", raw)
        assert 400 <= code < 500 and check_answer(MISSING, code, body) == [], (raw[:40], body)
    assert "Traceback" not in server.logs() or "internal error" not in server.logs()
