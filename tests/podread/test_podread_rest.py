"""``podread.rest``: the hooks' requests sent through the kubernetes client's ``ApiClient`` without
its generated API classes, against the fake API server (what reaches the wire: the path, the query
as the client serializes it, the token, the body as JSON; an answer outside 2xx raised as the
client's ``ApiException`` with its body; a watch streamed), and, in a fresh interpreter, that the
production app loads none of the generated API classes or models (issue 36 item 2: 24 MiB a worker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from podread import rest
from tests.fakekube import FakeKubeServer, Fault
from tests.support import make_pod

ROOT = Path(__file__).resolve().parents[2]


def test_a_list_reaches_its_path_with_the_clients_token_and_query(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods([make_pod("a-0", job="a", namespace="team-a"), make_pod("b-0", job="b", namespace="team-a")])
    api = fake_kube.api_client(retries=False)
    fake_kube.clear_requests()
    raw = rest.send(api, "GET", rest.PODS_PATH, params={"namespace": "team-a"}, timeout=(5, 5),
                    query=[("labelSelector", "nvcre.nvidia.com/job=a"), ("limit", 50), ("allowWatchBookmarks", False)])
    body = orjson.loads(raw)
    assert body["kind"] == "PodList" and [pod["metadata"]["name"] for pod in body["items"]] == ["a-0"]
    [request] = fake_kube.requests
    assert (request.method, request.path) == ("GET", "/api/v1/namespaces/team-a/pods")
    assert dict(request.query) == {"labelSelector": "nvcre.nvidia.com/job=a", "limit": "50",
                                   "allowWatchBookmarks": "false"}, "the client's own serialization"
    assert request.headers["authorization"] == f"Bearer {fake_kube.token}"
    assert request.headers["accept"] == "application/json" and "content-type" not in request.headers


def test_a_body_goes_as_json_and_a_refusal_raises_the_clients_exception_with_its_body(
        fake_kube: FakeKubeServer) -> None:
    pod = fake_kube.put_pod(make_pod("a-0", job="a", namespace="team-a"))
    api = fake_kube.api_client(retries=False)
    params = {"namespace": "team-a", "name": "a-0"}
    with pytest.raises(ApiException) as refused:
        rest.send(api, "DELETE", rest.POD_PATH, params=params, timeout=5,
                  body={"preconditions": {"uid": "another"}})
    assert refused.value.status == 409 and "Precondition failed" in refused.value.body
    assert fake_kube.requests[-1].headers["content-type"] == "application/json"
    deleted = orjson.loads(rest.send(api, "DELETE", rest.POD_PATH, params=params, timeout=5,
                                     body={"preconditions": {"uid": pod["metadata"]["uid"]}}))
    assert deleted["metadata"]["name"] == "a-0" and fake_kube.get_pod("team-a", "a-0") is None
    fake_kube.inject(Fault(path="/api/v1/nodes", status=503, times=1))
    with pytest.raises(ApiException) as failed:
        rest.send(api, "GET", rest.NODE_PATH, params={"name": "n"}, timeout=5)
    assert failed.value.status == 503 and orjson.loads(failed.value.body)["kind"] == "Status"


def test_a_watch_is_streamed_as_its_events_come(fake_kube: FakeKubeServer) -> None:
    api = fake_kube.api_client(retries=False)
    version = orjson.loads(rest.send(api, "GET", rest.ALL_PODS_PATH, query=[("limit", 1)], timeout=5)
                           )["metadata"]["resourceVersion"]
    stream = rest.open_stream(api, rest.PODS_PATH, params={"namespace": "team-a"}, timeout=(5, 10),
                              query=[("watch", True), ("resourceVersion", version), ("timeoutSeconds", 2)])
    try:
        fake_kube.put_pod(make_pod("a-0", job="a", namespace="team-a"))
        lines = b""
        for chunk in stream.stream(1 << 16):
            lines += chunk
            if b"a-0" in lines:
                break
    finally:
        stream.release_conn()
    event = orjson.loads(lines.split(b"\n")[0])
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "a-0"


def test_the_production_app_loads_no_generated_api_class_nor_model(fake_kube: FakeKubeServer,
                                                                    tmp_path: Path) -> None:
    """The memory of every worker: the generated ``*Api`` classes import their models and a pydantic
    validator per method (``podread.rest``'s docstring). A fresh interpreter builds the app the way
    gunicorn's worker does, over a kubeconfig, and lists what it loaded."""
    config = fake_kube.write_kubeconfig(tmp_path / "config")
    code = ("import sys, hooks.wsgi; hooks.wsgi.production_app(); "
            "print(sorted(m for m in sys.modules if m.startswith(('kubernetes.client.api.', "
            "'kubernetes.client.models.'))))")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": config, "NVCRE_LOG_LEVEL": "ERROR"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
