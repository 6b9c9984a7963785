"""The live client and the whole Reader through the real kubernetes client against the fake API server."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import (
    JOB_LABEL,
    ApiError,
    LiveClient,
    PodCache,
    PodReadError,
    PodSelector,
    Reader,
    ReadMetrics,
)
from podread.live import FIRST_PAGE_SIZE, ListVersion
from tests.fakekube import FakeKubeServer, Fault, make_job_pods, make_pod

PODS_PATH = "/api/v1/namespaces/team-a/pods"
JOB = PodSelector(namespace="team-a", labels={JOB_LABEL: "llama"})


def live_client(server: FakeKubeServer, metrics: ReadMetrics | None = None, **options) -> LiveClient:
    options.setdefault("timeout_seconds", 2.0)
    return LiveClient(server.api_client(retries=False), metrics=metrics or ReadMetrics(CollectorRegistry()),
                      **options)


def list_requests(server: FakeKubeServer) -> list:
    return [r for r in server.requests if r.path.endswith("/pods")]


def names(pods: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_a_job_list_selects_on_the_job_label_and_never_sends_a_resource_version(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 4, "team-a") + make_job_pods("gpt", 2, "team-a"))
    pods = live_client(fake_kube).list_pods(JOB)
    assert len(pods) == 4 and all(p["metadata"]["labels"][JOB_LABEL] == "llama" for p in pods)
    (request,) = list_requests(fake_kube)
    assert request.path == PODS_PATH
    assert request.query["labelSelector"] == f"{JOB_LABEL}=llama"
    assert "resourceVersion" not in request.query
    assert isinstance(pods[0], dict) and "metadata" in pods[0]  # raw JSON, not client models


def test_paging_reads_every_pod_once_across_pages(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 10, "team-a"))
    pods = live_client(fake_kube, page_size=3).list_pods(JOB)
    assert len(pods) == 10 and len(set(names(pods))) == 10
    requests = list_requests(fake_kube)
    assert [r.query.get("limit") for r in requests] == ["3"] * 4
    assert "continue" not in requests[0].query and all("continue" in r.query for r in requests[1:])


def test_a_first_page_asks_for_few_and_the_rest_in_the_clients_pages(fake_kube: FakeKubeServer) -> None:
    """Issue 36 item 8: Priority and Fairness sizes a list by its ``limit`` (``FIRST_PAGE_SIZE``'s
    doc), so a Job's list asks for ``FIRST_PAGE_SIZE`` first: one page of a Job's usual handful of
    pods, with the seats of a small list. A larger Job's rest comes in pages of the client's size,
    from the same snapshot, each pod once."""
    fake_kube.put_pods(make_job_pods("llama", 4, "team-a"))
    live_client(fake_kube).list_pods(JOB)
    assert [r.query.get("limit") for r in list_requests(fake_kube)] == [str(FIRST_PAGE_SIZE)]
    fake_kube.clear_requests()
    fake_kube.put_pods(make_job_pods("gpt", FIRST_PAGE_SIZE + 2 * 60 + 1, "team-a"))
    pods = live_client(fake_kube, page_size=60).list_pods(PodSelector(namespace="team-a", labels={JOB_LABEL: "gpt"}))
    assert len(pods) == len(set(names(pods))) == FIRST_PAGE_SIZE + 121
    requests = list_requests(fake_kube)
    assert [r.query.get("limit") for r in requests] == [str(FIRST_PAGE_SIZE), "60", "60", "60"]
    assert "continue" not in requests[0].query and all("continue" in r.query for r in requests[1:])


def test_a_consistent_list_tells_its_version_as_a_typed_value(fake_kube: FakeKubeServer) -> None:
    """``last_version``: the first page's resourceVersion and when it was sent, a ``ListVersion``
    (what a pod watch confirms itself with); continued pages do not replace it."""
    fake_kube.put_pods(make_job_pods("llama", 5, "team-a"))
    now = [100.0]

    def clock() -> float:
        now[0] += 0.01  # every look at the clock is 10 ms later
        return now[0]

    client = live_client(fake_kube, page_size=2, clock=clock)
    assert client.last_version is None
    assert len(client.list_pods(JOB)) == 5
    version = client.last_version
    assert isinstance(version, ListVersion)
    assert version.resource_version == str(fake_kube.resource_version)
    assert version.sent_at == pytest.approx(100.02)  # the first page's request (after the deadline's look-up)
    fake_kube.bump_resource_version()
    assert client.current_version(JOB) == str(fake_kube.resource_version)
    assert client.last_version == ListVersion(str(fake_kube.resource_version), client.last_version.sent_at)
    assert client.last_version.sent_at > version.sent_at
    with pytest.raises(AttributeError):
        client.last_version.sent_at = 0.0  # type: ignore[misc]  # frozen: a value, not a slot to patch


def test_an_expired_continue_token_restarts_the_list_from_the_first_page(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 7, "team-a"))
    fake_kube.inject(Fault.error(PODS_PATH, 410, times=1, query={"continue": ".+"}))
    pods = live_client(fake_kube, page_size=3).list_pods(JOB)
    assert len(pods) == 7 and len(set(names(pods))) == 7
    first_pages = [r for r in list_requests(fake_kube) if "continue" not in r.query]
    assert len(first_pages) == 2


def test_a_list_that_keeps_expiring_fails(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 7, "team-a"))
    fake_kube.inject(Fault.error(PODS_PATH, 410, query={"continue": ".+"}))
    with pytest.raises(ApiError, match=r"answered 410 \(Expired\): The provided continue parameter is too old"):
        live_client(fake_kube, page_size=3).list_pods(JOB)


@pytest.mark.parametrize(("fault", "says"), [
    (Fault.error(PODS_PATH, 500), "answered 500"),
    (Fault.error(PODS_PATH, 503), "answered 503"),
    (Fault.error(PODS_PATH, 429, retry_after=1), "answered 429"),
    (Fault.slow(PODS_PATH, 3.0), "timed out"),
    (Fault.dropped(PODS_PATH), "connection dropped"),
    (Fault.garbled(PODS_PATH), "not valid JSON"),
], ids=["500", "503", "429", "timeout", "dropped", "invalid-json"])
def test_each_fault_surfaces_as_a_podread_error_and_is_counted(fake_kube: FakeKubeServer, fault: Fault,
                                                                says: str) -> None:
    fake_kube.put_pods(make_job_pods("llama", 2, "team-a"))
    fake_kube.inject(fault)
    metrics = ReadMetrics(CollectorRegistry())
    reader = Reader(FakeSource(), live_client(fake_kube, metrics, timeout_seconds=1.0), metrics=metrics)
    with pytest.raises(PodReadError) as raised:
        reader.workload_pods("team-a", "llama-0")
    assert says in str(raised.value)
    assert raised.value.method == "workload_pods" and raised.value.source == "live"
    assert metrics.reads.labels("workload_pods", "live", "error")._value.get() == 1
    assert metrics.api_requests.labels("namespace", "error")._value.get() == 1


def test_a_refused_connection_is_a_podread_error(fake_kube: FakeKubeServer) -> None:
    client = live_client(fake_kube)
    fake_kube.stop()
    with pytest.raises(ApiError, match="connection refused"):
        client.list_pods(JOB)


def test_the_whole_paged_list_is_bounded_in_time(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 9, "team-a"))
    fake_kube.inject(Fault.slow(PODS_PATH, 0.5))
    with pytest.raises(ApiError, match=r"timed out|gave up"):
        live_client(fake_kube, page_size=1, timeout_seconds=1.2).list_pods(JOB)
    assert len(list_requests(fake_kube)) <= 4


class FakeSource:
    """A cache side that must not be used by the live-only reads under test."""

    def list_pods(self, selector: PodSelector) -> list[dict]:
        raise AssertionError("the cache was read")


def reader_over(server: FakeKubeServer, **cache_options) -> tuple[Reader, PodCache]:
    metrics = ReadMetrics(CollectorRegistry())
    live = live_client(server, metrics)
    cache = PodCache(live, metrics=metrics, **cache_options)
    return Reader(cache, live, metrics=metrics), cache


def test_active_job_pods_sees_a_running_pod_the_stale_cache_does_not_hold(fake_kube: FakeKubeServer) -> None:
    """The cache holds attempt 0's finished pods; attempt 1's pod is running only on the server."""
    fake_kube.put_pods(make_job_pods("llama", 3, "team-a", attempt=0, phase="Succeeded"))
    reader, _ = reader_over(fake_kube, ttl_seconds=60)
    assert len(reader.job_pods("team-a", "llama")) == 3
    fake_kube.put_pods(make_job_pods("llama", 1, "team-a", attempt=1, phase="Running"))
    assert len(reader.job_pods("team-a", "llama")) == 3  # still the stale cached list
    active = reader.active_job_pods("team-a", "llama")
    assert [p["metadata"]["labels"]["nvcre.nvidia.com/attempt"] for p in active] == ["1"]
    live_checks = [r for r in list_requests(fake_kube)]
    assert len(live_checks) == 2 and all(r.query["labelSelector"] == f"{JOB_LABEL}=llama" for r in live_checks)


def test_sixteen_threads_missing_one_job_send_one_request(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 8, "team-a"))
    fake_kube.inject(Fault.slow(PODS_PATH, 0.3))
    reader, _ = reader_over(fake_kube)
    barrier = threading.Barrier(16)
    counts: list[int] = []

    def read() -> None:
        barrier.wait()
        counts.append(len(reader.job_pods("team-a", "llama")))

    threads = [threading.Thread(target=read) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts == [8] * 16
    assert len(list_requests(fake_kube)) == 1


def test_job_pods_on_node_lists_all_namespaces_by_node_and_job_label(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods([
        make_pod("w-0", "team-a", labels={JOB_LABEL: "llama"}, node="gpu-1"),
        make_pod("w-1", "team-b", labels={JOB_LABEL: "gpt"}, node="gpu-1"),
        make_pod("w-2", "team-a", labels={JOB_LABEL: "llama"}, node="gpu-2"),
        make_pod("dcgm", "kube-system", labels={"app": "dcgm"}, node="gpu-1"),
    ])
    reader, _ = reader_over(fake_kube)
    assert names(reader.job_pods_on_node("gpu-1")) == ["w-0", "w-1"]
    (request,) = list_requests(fake_kube)
    assert request.path == "/api/v1/pods"
    assert request.query["labelSelector"] == JOB_LABEL and request.query["fieldSelector"] == "spec.nodeName=gpu-1"


def test_namespace_pods_and_workload_pods_go_live(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 2, "team-a", replicated_job="worker")
                       + make_job_pods("llama", 1, "team-a", replicated_job="launcher", launcher=True)
                       + [make_pod("installer", "kube-system")])
    reader, cache = reader_over(fake_kube)
    assert names(reader.namespace_pods("kube-system")) == ["installer"]
    launchers = reader.workload_pods("team-a", "llama-0", "launcher")
    assert len(launchers) == 1 and JOB_LABEL not in launchers[0]["metadata"]["labels"]
    assert len(reader.workload_pods("team-a", "llama-0")) == 3
    assert len(cache) == 0


def test_from_environment_reads_through_the_kubeconfig(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    fake_kube.put_pods(make_job_pods("llama", 3, "team-a", phase="Succeeded"))
    config = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    reader = podread.from_environment({"KUBECONFIG": config, "NVCRE_CACHE_TTL_SECONDS": "30",
                                       "NVCRE_CACHE_MODE": "ttl"})
    assert reader.has_live
    assert len(reader.job_pods("team-a", "llama")) == 3
    assert reader.active_job_pods("team-a", "llama") == []
    assert len(list_requests(fake_kube)) == 2  # the cache fill, then the live check before "none"
    fake_kube.inject(Fault.dropped(PODS_PATH, times=1))
    with pytest.raises(PodReadError):  # no hidden client retries: one dropped answer fails the read
        reader.active_job_pods("team-a", "llama")


def test_a_large_answer_is_decoded_with_the_collector_paused_and_restored(fake_kube: FakeKubeServer,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from podread import live as live_module

    seen: list[bool] = []
    real_loads = live_module.orjson.loads

    def spying_loads(raw: bytes):
        seen.append(gc.isenabled())
        return real_loads(raw)

    monkeypatch.setattr(live_module, "LARGE_BODY_BYTES", 1000)
    monkeypatch.setattr(live_module.orjson, "loads", spying_loads)
    fake_kube.put_pods(make_job_pods("llama", 3, "team-a"))
    assert len(live_client(fake_kube).list_pods(JOB)) == 3
    assert seen == [False] and gc.isenabled()
