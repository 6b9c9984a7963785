"""``client.KubeCluster``'s list and watch of NVCRE Jobs over HTTP, through the real kubernetes client:
the query each sends (label and field selectors, resourceVersion, timeoutSeconds) and how each answer
is read (the list's resourceVersion; watch events as ``(type, object)``; an ``ERROR`` event, a 410
Expired, as kubectl's line). A small server of its own answers on a free loopback port (the
project's fake API server serves pods only); the real API server's answers are the cluster tier's
(tests/cluster/test_nvjob.py runs ``get -w`` and ``-l`` against it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client as k8s

from hooks.tools.nvjob import client

JOBS = "/apis/nvcre.nvidia.com/v1alpha1/namespaces/team-a/jobs"


def job(name: str, phase: str, version: str) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team-a", "resourceVersion": version}, "status": {"phase": phase}}


class Server:
    """Answers the list with two Jobs at resourceVersion 40, and a watch with ``events`` (one JSON
    line each), then ends it; records each request's path and query."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                owner.requests.append((url.path, query))
                if url.path != JOBS:
                    self.send_error(404)
                    return
                if query.get("watch") == ["true"]:
                    body = b"".join(json.dumps(event).encode() + b"\n" for event in events)
                else:
                    body = json.dumps({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "JobList",
                                       "metadata": {"resourceVersion": "40"},
                                       "items": [job("gpt", "Running", "39"), job("bert", "Pending", "38")]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def cluster(self) -> client.KubeCluster:
        configuration = k8s.Configuration()
        configuration.host = f"http://127.0.0.1:{self.http.server_address[1]}"
        configuration.retries = False
        target = client.Target(k8s.ApiClient(configuration), "team-a", configuration.host)
        return client.KubeCluster(target, timeout_seconds=5)


def serving(events: list[dict[str, Any]]) -> Iterator[Server]:
    server = Server(events)
    server.thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    yield from serving(getattr(request, "param", []))


def test_the_list_sends_the_selector_and_keeps_the_lists_resource_version(server: Server) -> None:
    listed = server.cluster().list_jobs("team-a", "team=nlp,size!=xl")
    assert [j["metadata"]["name"] for j in listed.items] == ["bert", "gpt"], "sorted by namespace and name"
    assert listed.resource_version == "40"
    path, query = server.requests[-1]
    assert (path, query["labelSelector"]) == (JOBS, ["team=nlp,size!=xl"])


@pytest.mark.parametrize("server", [[{"type": "MODIFIED", "object": job("gpt", "Restarting", "41")},
                                     {"type": "DELETED", "object": job("bert", "Pending", "42")}]], indirect=True)
def test_the_watch_sends_where_it_starts_and_yields_each_change(server: Server) -> None:
    seen = list(server.cluster().watch_jobs("team-a", selector="team", name="gpt", resource_version="40",
                                            timeout_seconds=3))
    assert [(kind, j["metadata"]["name"], j["status"]["phase"]) for kind, j in seen] == [
        ("MODIFIED", "gpt", "Restarting"), ("DELETED", "bert", "Pending")]
    path, query = server.requests[-1]
    assert path == JOBS
    assert {key: query[key] for key in ("watch", "labelSelector", "fieldSelector", "resourceVersion",
                                        "timeoutSeconds")} == {
        "watch": ["true"], "labelSelector": ["team"], "fieldSelector": ["metadata.name=gpt"],
        "resourceVersion": ["40"], "timeoutSeconds": ["3"]}


@pytest.mark.parametrize("server", [[{"type": "ERROR", "object": {
    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
    "message": "too old resource version: 40 (52)"}}]], indirect=True)
def test_an_expired_watch_is_kubectls_error_line(server: Server) -> None:
    with pytest.raises(client.CommandError) as raised:
        list(server.cluster().watch_jobs("team-a", resource_version="40", timeout_seconds=3))
    assert raised.value.message == "Error from server (Expired): too old resource version: 40 (52)"
