"""The fake API server, driven through the real ``kubernetes`` client as the project's code drives it."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeKubeServer, Fault, make_job_pods, make_pod

NS_PODS = "/api/v1/namespaces/ns1/pods"


def _names(body: dict[str, Any]) -> list[str]:
    """The pod names of a PodList, in order."""
    return [item["metadata"]["name"] for item in body["items"]]


def _list(api: CoreV1Api, namespace: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """One raw list call, as podread's live client makes it; returns the parsed JSON."""
    if namespace is None:
        response = api.list_pod_for_all_namespaces(_preload_content=False, **kwargs)
    else:
        response = api.list_namespaced_pod(namespace, _preload_content=False, **kwargs)
    return json.loads(response.data)


def _status(error: ApiException) -> dict[str, Any]:
    """The ``Status`` body of a failed call."""
    return json.loads(error.body)


@pytest.fixture(scope="module")
def shared() -> Iterator[FakeKubeServer]:
    """One server with a fixed set of labelled pods, for the read-only selector tests."""
    with FakeKubeServer() as server:
        server.put_pods(
            [
                make_pod("a", "ns1", {"app": "web", "tier": "front"}, node="n1"),
                make_pod("b", "ns1", {"app": "web", "tier": "back"}, node="n2", phase="Pending"),
                make_pod("c", "ns1", {"app": "db"}, node="n1", phase="Succeeded"),
                make_pod("d", "ns1", {}, phase="Pending"),
                make_pod("e", "ns2", {"app": "web", "gen": "7"}, node="n1"),
            ]
        )
        yield server


@pytest.fixture
def server() -> Iterator[FakeKubeServer]:
    """A fresh server for tests that change pods, faults or tokens."""
    with FakeKubeServer() as fresh:
        yield fresh


@pytest.fixture
def api(server: FakeKubeServer) -> CoreV1Api:
    """A client for ``server`` that does not retry, so each fault reaches the caller."""
    return CoreV1Api(server.api_client(timeout=5, retries=False))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["a", "b", "c", "d"]),
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web,db)", ["a", "b", "c"]),
        ("app in (db)", ["c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("app=web, !tier", []),
        ("app in (web), tier notin (front)", ["b"]),
        ("app=nothing", []),
    ],
)
def test_label_selector_operators(shared: FakeKubeServer, selector: str, expected: list[str]) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    assert _names(_list(api, "ns1", label_selector=selector)) == expected


def test_label_selector_across_namespaces_and_numeric_operators(shared: FakeKubeServer) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    assert _names(_list(api, label_selector="app=web")) == ["a", "b", "e"]
    assert _names(_list(api, label_selector="gen>5")) == ["e"]
    assert _names(_list(api, label_selector="gen<5")) == []


@pytest.mark.parametrize(
    "selector", ["app=web=x", "app in web", "app in (web", "=web", "app=web,", "a b", "app=we b", "-bad-=x"]
)
def test_malformed_label_selector_is_400(shared: FakeKubeServer, selector: str) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", label_selector=selector)
    assert raised.value.status == 400
    assert _status(raised.value)["reason"] == "BadRequest"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=n1", ["a", "c", "e"]),
        ("spec.nodeName==n2", ["b"]),
        ("spec.nodeName!=n1", ["b", "d"]),
        ("spec.nodeName=", ["d"]),
        ("status.phase=Pending", ["b", "d"]),
        ("status.phase!=Succeeded,spec.nodeName=n1", ["a", "e"]),
        ("metadata.name=c", ["c"]),
        ("metadata.namespace=ns2", ["e"]),
        ("metadata.namespace!=ns2,metadata.name!=a", ["b", "c", "d"]),
    ],
)
def test_field_selectors(shared: FakeKubeServer, selector: str, expected: list[str]) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    assert _names(_list(api, field_selector=selector)) == expected


def test_unsupported_field_selector_is_400(shared: FakeKubeServer) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", field_selector="spec.hostname=x")
    assert raised.value.status == 400
    assert _status(raised.value)["message"] == "field label not supported: spec.hostname"
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", field_selector="spec.nodeName")
    assert raised.value.status == 400


def test_get_pod_and_404(shared: FakeKubeServer) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    pod = json.loads(api.read_namespaced_pod("a", "ns1", _preload_content=False).data)
    assert (pod["kind"], pod["apiVersion"], pod["spec"]["nodeName"]) == ("Pod", "v1", "n1")
    with pytest.raises(ApiException) as raised:
        api.read_namespaced_pod("missing", "ns1")
    assert raised.value.status == 404
    assert _status(raised.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "missing" not found',
        "reason": "NotFound",
        "code": 404,
        "details": {"name": "missing", "kind": "pods"},
    }


def test_list_shape_matches_the_api_server(shared: FakeKubeServer) -> None:
    api = CoreV1Api(shared.api_client(timeout=5))
    body = _list(api, "ns1")
    assert (body["kind"], body["apiVersion"]) == ("PodList", "v1")
    assert body["metadata"] == {"resourceVersion": str(shared.resource_version)}
    assert "kind" not in body["items"][0]
    typed = api.list_namespaced_pod("ns1", label_selector="app=web")
    assert [pod.metadata.name for pod in typed.items] == ["a", "b"]


def test_paging_serves_a_consistent_snapshot(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods(make_pod(f"p{i:02d}", "ns1", {"app": "x"}) for i in range(10))
    first = _list(api, "ns1", label_selector="app=x", limit=3)
    rv = first["metadata"]["resourceVersion"]
    seen, token, pages = _names(first), first["metadata"].get("continue"), 1
    while token:
        # Change the cluster between pages: none of it shows in the rest of this list.
        server.delete_pod("ns1", "p09")
        server.put_pod(make_pod(f"new{pages}", "ns1", {"app": "x"}))
        server.update_pod("ns1", "p05", lambda pod: pod["metadata"]["labels"].update(app="y"))
        page = _list(api, "ns1", label_selector="app=x", limit=3, _continue=token)
        assert page["metadata"]["resourceVersion"] == rv
        seen += _names(page)
        token, pages = page["metadata"].get("continue"), pages + 1
    assert pages == 4
    assert seen == [f"p{i:02d}" for i in range(10)]
    assert _names(_list(api, "ns1", label_selector="app=x")) == [
        "new1",
        "new2",
        "new3",
        *[f"p{i:02d}" for i in range(9) if i != 5],
    ]


def test_paging_all_namespaces_and_remaining_count(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods([*make_job_pods("j1", 4, "ns1"), *make_job_pods("j2", 3, "ns2")])
    page = _list(api, limit=5)
    assert page["metadata"]["remainingItemCount"] == 2
    rest = _list(api, limit=5, _continue=page["metadata"]["continue"])
    assert "continue" not in rest["metadata"]
    assert [p["metadata"]["namespace"] for p in page["items"] + rest["items"]] == ["ns1"] * 4 + ["ns2"] * 3


def test_expired_continue_token_is_410(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods(make_pod(f"p{i}", "ns1") for i in range(5))
    first = _list(api, "ns1", limit=2)
    assert server.expire_continue_tokens() == 1
    server.delete_pod("ns1", "p3")
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", limit=2, _continue=first["metadata"]["continue"])
    status = _status(raised.value)
    assert (raised.value.status, status["reason"], status["code"]) == (410, "Expired", 410)
    # Like the real server, the 410 offers an inconsistent token for the rest of the current state.
    rest = _list(api, "ns1", _continue=status["metadata"]["continue"])
    assert _names(rest) == ["p2", "p4"]
    # A new list works as usual.
    assert _names(_list(api, "ns1")) == ["p0", "p1", "p2", "p4"]


def test_bad_continue_tokens_and_resource_versions(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods(make_pod(f"p{i}", "ns1") for i in range(3))
    token = _list(api, "ns1", limit=1)["metadata"]["continue"]
    for kwargs in (
        {"_continue": "not-a-token"},
        {"_continue": token, "label_selector": "app=x"},
        {"_continue": token, "resource_version": "5"},
        {"resource_version": "abc"},
    ):
        with pytest.raises(ApiException) as raised:
            _list(api, "ns1", limit=1, **kwargs)
        assert raised.value.status == 400, kwargs
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", resource_version=str(server.resource_version + 10))
    assert raised.value.status == 504
    assert len(_list(api, "ns1", resource_version="0")["items"]) == 3
    assert server.request_count(NS_PODS, lambda r: r.query.get("resourceVersion") == "0") == 1


def test_mutations_bump_the_resource_version(server: FakeKubeServer) -> None:
    start = server.resource_version
    stored = server.put_pod(make_pod("p", "ns1", uid=None))
    assert stored["metadata"]["resourceVersion"] == str(start + 1)
    assert stored["metadata"]["uid"] and stored["metadata"]["creationTimestamp"]
    replaced = server.put_pod({"metadata": {"name": "p", "namespace": "ns1"}, "status": {"phase": "Failed"}})
    assert replaced["metadata"]["uid"] == stored["metadata"]["uid"]
    assert replaced["metadata"]["resourceVersion"] == str(start + 2)
    assert server.delete_pod("ns1", "p") is not None
    assert server.delete_pod("ns1", "p") is None
    assert server.resource_version == start + 3
    server.set_pods([make_pod("q", "ns2")])
    assert [pod["metadata"]["name"] for pod in server.pods()] == ["q"]
    with pytest.raises(KeyError):
        server.update_pod("ns1", "p", lambda pod: None)


def test_fault_error_statuses(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pod(make_pod("p", "ns1"))
    server.inject(Fault.error(NS_PODS, 500, times=1))
    server.inject(Fault.error(NS_PODS, 429, times=1, retry_after=1))
    server.inject(Fault.error(NS_PODS, 503, times=1))
    for code, reason in ((500, "InternalError"), (429, "TooManyRequests"), (503, "ServiceUnavailable")):
        with pytest.raises(ApiException) as raised:
            _list(api, "ns1")
        assert (raised.value.status, _status(raised.value)["reason"]) == (code, reason)
        if code == 429:
            assert raised.value.headers["Retry-After"] == "1"
    assert _names(_list(api, "ns1")) == ["p"]
    assert [r.fault for r in server.requests] == ["status:500", "status:429", "status:503", None]


def test_fault_410_only_on_continue_requests(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods(make_pod(f"p{i}", "ns1") for i in range(4))
    fault = server.inject(Fault.error(NS_PODS, 410, times=1, query={"continue": ".+"}))
    first = _list(api, "ns1", limit=2)
    with pytest.raises(ApiException) as raised:
        _list(api, "ns1", limit=2, _continue=first["metadata"]["continue"])
    assert _status(raised.value)["reason"] == "Expired"
    assert fault.hits == 1
    assert _names(_list(api, "ns1", limit=2, _continue=first["metadata"]["continue"])) == ["p2", "p3"]


def test_fault_delay_hits_the_client_timeout(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pod(make_pod("p", "ns1"))
    server.inject(Fault.slow(NS_PODS, 0.3, times=1))
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        _list(api, "ns1", _request_timeout=0.1)
    assert time.monotonic() - started < 0.25
    server.inject(Fault.slow(NS_PODS, 0.1, times=1))
    started = time.monotonic()
    assert _names(_list(api, "ns1", _request_timeout=2)) == ["p"]
    assert time.monotonic() - started >= 0.1


def test_fault_dropped_connection(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.inject(Fault.dropped(NS_PODS, times=1))
    with pytest.raises(urllib3.exceptions.HTTPError):
        _list(api, "ns1")
    assert server.requests[-1].status == 0
    assert _list(api, "ns1")["items"] == []


def test_default_client_retries_hide_a_single_drop(server: FakeKubeServer) -> None:
    api = CoreV1Api(server.api_client(timeout=5))
    server.inject(Fault.dropped(NS_PODS, times=1))
    assert _list(api, "ns1")["items"] == []
    assert [r.status for r in server.requests] == [0, 200]


def test_fault_invalid_json(server: FakeKubeServer, api: CoreV1Api) -> None:
    fault = server.inject(Fault.garbled(r"/api/v1/namespaces/[^/]+/pods$"))
    for _ in range(2):
        response = api.list_namespaced_pod("ns1", _preload_content=False)
        with pytest.raises(json.JSONDecodeError):
            json.loads(response.data)
    server.clear_faults()
    assert _list(api, "ns1")["items"] == []
    assert fault.hits == 2


def test_request_recording(server: FakeKubeServer, api: CoreV1Api) -> None:
    server.put_pods(make_job_pods("j1", 3, "ns1"))
    response = api.list_namespaced_pod(
        "ns1", label_selector="nvcre.nvidia.com/job=j1", limit=10, _preload_content=False
    )
    api.list_namespaced_pod("ns2", _preload_content=False)
    recorded = server.requests
    assert [(r.method, r.path, r.status) for r in recorded] == [
        ("GET", NS_PODS, 200),
        ("GET", "/api/v1/namespaces/ns2/pods", 200),
    ]
    assert recorded[0].query == {"labelSelector": "nvcre.nvidia.com/job=j1", "limit": "10"}
    assert recorded[0].bytes_sent == len(response.data)
    assert recorded[0].headers["authorization"] == f"Bearer {server.token}"
    assert server.request_count() == 2
    assert server.request_count(NS_PODS) == 1
    assert server.request_count(predicate=lambda r: "limit" in r.query) == 1
    server.clear_requests()
    assert server.request_count() == 0


def test_kubeconfig_auth_and_other_paths(server: FakeKubeServer, tmp_path: Path) -> None:
    server.put_pod(make_pod("p", "ns1"))
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    api = CoreV1Api(kubernetes.config.new_client_from_config(config_file=path))
    assert [pod.metadata.name for pod in api.list_namespaced_pod("ns1").items] == ["p"]
    with urllib.request.urlopen(f"{server.url}/version", timeout=5) as response:
        assert json.loads(response.read())["major"] == "1"
    for path_, code in ((NS_PODS, 401), ("/api/v1/namespaces/ns1/services", 404)):
        request = urllib.request.Request(
            f"{server.url}{path_}", headers={"Authorization": f"Bearer {server.token}"} if code != 401 else {}
        )
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=5)
        assert raised.value.code == code
        assert json.loads(raised.value.read())["kind"] == "Status"


def test_concurrent_reads_while_pods_change(server: FakeKubeServer) -> None:
    server.put_pods(make_job_pods("j1", 64, "ns1"))
    errors: list[BaseException] = []
    stop = threading.Event()

    def mutate() -> None:
        phase = 0
        while not stop.is_set():
            phase += 1
            for pod in server.pods()[:8]:
                server.update_pod(
                    "ns1",
                    pod["metadata"]["name"],
                    lambda p, n=phase: p["status"].update(phase="Failed" if n % 2 else "Running"),
                )

    def read() -> None:
        api = CoreV1Api(server.api_client(timeout=5))
        try:
            for _ in range(15):
                assert (
                    len(_list(api, "ns1", label_selector="nvcre.nvidia.com/job=j1", limit=20)["items"]) == 20
                )
        except BaseException as error:  # reported to the main thread
            errors.append(error)

    writer = threading.Thread(target=mutate)
    readers = [threading.Thread(target=read) for _ in range(4)]
    writer.start()
    for thread in readers:
        thread.start()
    for thread in readers:
        thread.join()
    stop.set()
    writer.join()
    assert errors == []


def test_one_job_list_stays_fast_among_many(server: FakeKubeServer, api: CoreV1Api) -> None:
    pods = (pod for job in range(200) for pod in make_job_pods(f"job{job}", 64, f"ns{job % 10}"))
    assert server.put_pods(pods) == 12_800
    started = time.perf_counter()
    for job in range(0, 200, 4):
        body = _list(api, f"ns{job % 10}", label_selector=f"nvcre.nvidia.com/job=job{job}")
        assert len(body["items"]) == 64
    assert time.perf_counter() - started < 2.0


def test_stop_is_prompt_even_with_a_delayed_request() -> None:
    server = FakeKubeServer().start()
    fault = server.inject(Fault.slow(None, 30))
    api = CoreV1Api(server.api_client(retries=False))
    failures: list[BaseException] = []

    def read() -> None:
        try:
            _list(api, "ns1")
        except (urllib3.exceptions.HTTPError, ApiException) as error:
            failures.append(error)

    worker = threading.Thread(target=read)
    worker.start()
    deadline = time.monotonic() + 2
    while not fault.hits and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert time.monotonic() - started < 1.0
    assert len(failures) == 1
