"""The watch-fed pod cache on the real API server: what the server sends, and the barrier when the
watch breaks.

- The real server's watch: bookmarks carry only ``metadata.resourceVersion``, come 2 s before
  ``timeoutSeconds`` and only when the pods' watch cache moved past what the watch has seen, and
  the server ends the watch at ``timeoutSeconds``; a pod that loses JOB_LABEL arrives as a DELETED
  carrying its previous content. (A 410 cannot be had on cue here: the watch cache serves every
  resourceVersion since it started, even after an etcd compaction; the wire-level fake covers the
  410 as an ERROR event and as an HTTP answer.)
  ``PodWatch`` over it: events reach the store, a cut watch resumes, a 410 relists.
- A watch that stalls while a drain waits (a TCP proxy between the watch and the server stops
  passing bytes): a pod the cache has not seen keeps the barrier holding (``active_job_pods``
  asks the server when the cache shows none), and past the TTL the cache fills from a list again.
- A lifecycle through the real hooks (watch mode, the default) whose API server restarts while
  the drain waits: nothing proceeds until the pods are gone.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import kubernetes
import orjson
import pytest
from prometheus_client import CollectorRegistry

from hooks.server.config import Settings
from hooks.server.handler import handle
from podread import JOB_LABEL, JobClient, LiveClient, PodCache, PodSelector, Reader, ReadMetrics
from podread.constants import JOB_INDEX_FIELD
from podread.watch import Backoff, PodWatch, WatchedPods, events
from tests.cluster.conftest import HOOK_TOKEN
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import UNSCHEDULED, ensure_namespace
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.server import HookServer
from tests.support import job_request, job_spec

pytestmark = pytest.mark.cluster

SELECTOR = PodSelector(has_labels=(JOB_LABEL,))


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout:g}s: {what}")
        time.sleep(0.05)


def worker_pod(name: str, job: str, phase: str = "Running") -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {JOB_LABEL: job}},
            "spec": {"schedulerName": UNSCHEDULED, "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": phase}}


class Pods:
    """Admin writes of pods in one namespace (no kubelet: phases are set through the status)."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.core = kubernetes.client.CoreV1Api(plane.api_client())
        self.namespace = namespace
        ensure_namespace(plane.api_client(), namespace)

    def create(self, name: str, job: str, phase: str = "Running") -> None:
        pod = worker_pod(name, job, phase)
        self.core.create_namespaced_pod(self.namespace, pod)
        self.set_phase(name, phase)

    def set_phase(self, name: str, phase: str) -> None:
        self.core.patch_namespaced_pod_status(name, self.namespace, {"status": {"phase": phase}})

    def relabel(self, name: str, labels: dict) -> None:
        self.core.patch_namespaced_pod(name, self.namespace, {"metadata": {"labels": labels}})

    def delete(self, name: str) -> None:
        self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)


class Proxy:
    """A TCP forwarder to the API server that can stall (stop passing bytes) or cut its connections."""

    def __init__(self, port: int) -> None:
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.stalled = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                data = source.recv(65536)
                if not data:
                    break
                while self.stalled.is_set() and not self._closed:
                    time.sleep(0.05)
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        self.stalled.clear()
        self.cut()
        self._listener.close()


def client_via(plane: ControlPlane, port: int | None = None) -> kubernetes.client.ApiClient:
    """An admin ApiClient for the API server, or for ``127.0.0.1:<port>`` (the proxy) when given."""
    kubeconfig = plane.kubeconfig_dict()
    if port is not None:
        kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"  # type: ignore[index]
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config_from_dict(kubeconfig, client_configuration=configuration)
    configuration.retries = False
    return kubernetes.client.ApiClient(configuration)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Watched:
    """A Reader in watch mode whose watch reads through ``Proxy`` and whose live reads do not."""

    def __init__(self, plane: ControlPlane, namespace: str, *, ttl: float = 5.0, watch_seconds: int = 30) -> None:
        self.proxy = Proxy(plane.port)
        self.clock = Clock()
        self.registry = CollectorRegistry()
        metrics = ReadMetrics(self.registry)
        self.live = LiveClient(client_via(plane), timeout_seconds=5, metrics=metrics)
        watch_live = LiveClient(client_via(plane, self.proxy.port), timeout_seconds=10, metrics=metrics)
        self.store = WatchedPods(namespace, ttl_seconds=ttl, clock=self.clock, metrics=metrics)
        self.watch = PodWatch(watch_live, self.store, watch_seconds=watch_seconds, metrics=metrics,
                              backoff=Backoff(0.05, 0.5), nudge_every=None)
        self.cache = PodCache(self.live, ttl_seconds=ttl, clock=self.clock, metrics=metrics, watches=[self.watch])
        self.reader = Reader(self.cache, self.live, metrics=metrics,
                             jobs=JobClient(client_via(plane), timeout_seconds=5, metrics=metrics))
        self.namespace = namespace

    def sample(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def synced(self) -> None:
        self.watch.start()
        wait_until(lambda: self.store.staleness() is not None, "the watch listed")

    def names(self, job: str) -> list[str]:
        return [p["metadata"]["name"] for p in self.store.answer((JOB_INDEX_FIELD, self.namespace, job)) or []]

    def close(self) -> None:
        self.proxy.close()
        self.watch.stop()


@pytest.fixture
def watched(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[Watched]:
    namespace = "watch-" + request.node.name.replace("_", "-")[5:40].strip("-")
    built = Watched(control_plane, namespace)
    yield built
    built.close()


# ---- what the real server sends ---------------------------------------------------------------------

def test_real_bookmarks_come_before_the_timeout_only_when_the_watch_cache_moved(control_plane: ControlPlane) -> None:
    """The cacher sends a watch a bookmark only when its pods watch cache has moved past the version
    the watch started from. That cache is cluster-wide, and since ConsistentListFromCache any
    consistent pod list anywhere in the cluster asks etcd for progress and moves it too, so a watch
    on quiet pods may still get one bookmark (CI saw it; once the same one twice): never an event,
    and never an old version.
    A pod created elsewhere makes the bookmark certain."""
    pods = Pods(control_plane, "watch-bookmarks")
    other = Pods(control_plane, "watch-bookmarks-other")
    pods.create("w-0", "llama")
    live = LiveClient(control_plane.api_client(), timeout_seconds=5)
    selector = PodSelector(namespace="watch-bookmarks", has_labels=(JOB_LABEL,))
    _, version = live.list_snapshot(selector)
    started = time.monotonic()
    quiet = list(events(live.open_watch(selector, version, 4)))
    assert all(e["type"] == "BOOKMARK" for e in quiet), f"no pod of ours changed: bookmarks at most: {quiet}"
    # one bookmark at most as a rule; the cacher once sent the same one twice (both at one version)
    assert len({e["object"]["metadata"]["resourceVersion"] for e in quiet}) <= 1 and len(quiet) <= 2, \
        f"one bookmark at most, 2 s before the timeout: {quiet}"
    assert all(int(e["object"]["metadata"]["resourceVersion"]) > int(version) for e in quiet), \
        f"a bookmark only when the watch cache moved past {version}: {quiet}"
    assert 3.5 <= time.monotonic() - started <= 6.0  # the server ends the watch at timeoutSeconds
    started = time.monotonic()
    response = live.open_watch(selector, version, 4)
    other.create("elsewhere", "other-job")  # the pods' watch cache moves; no event for this watch
    got = [(round(time.monotonic() - started, 1), event) for event in events(response)]
    ended = time.monotonic() - started
    bookmarks = [(at, e) for at, e in got if e["type"] == "BOOKMARK"]
    assert bookmarks and len(got) == len(bookmarks), f"one bookmark and nothing else: {got}"
    at, bookmark = bookmarks[0]
    assert 1.0 <= at <= 3.5  # 2 s before the 4 s timeout, on the watch cache's ~1 s timer
    assert set(bookmark["object"]["metadata"]) <= {"resourceVersion", "creationTimestamp"}
    assert bookmark["object"]["metadata"]["resourceVersion"].isdigit()
    assert 3.5 <= ended <= 6.0  # the server ends the watch at timeoutSeconds


def test_a_pod_that_loses_the_label_arrives_as_deleted_with_its_previous_content(control_plane: ControlPlane) -> None:
    pods = Pods(control_plane, "watch-relabel")
    pods.create("w-0", "llama")
    live = LiveClient(control_plane.api_client(), timeout_seconds=5)
    selector = PodSelector(namespace="watch-relabel", has_labels=(JOB_LABEL,))
    _, version = live.list_snapshot(selector)
    response = live.open_watch(selector, version, 5)
    pods.relabel("w-0", {JOB_LABEL: None, "app": "other"})
    first = next(e for e in events(response) if e["type"] != "BOOKMARK")
    response.close()
    assert first["type"] == "DELETED"
    assert first["object"]["metadata"]["labels"] == {JOB_LABEL: "llama"}  # as it was, under the new version
    assert int(first["object"]["metadata"]["resourceVersion"]) > int(version)


# ---- PodWatch over the real server -------------------------------------------------------------------

def test_the_watch_follows_the_pods_and_resumes_after_a_cut(control_plane: ControlPlane, watched: Watched) -> None:
    pods = Pods(control_plane, watched.namespace)
    pods.create("w-0", "llama")
    watched.synced()
    assert watched.names("llama") == ["w-0"]
    pods.create("w-1", "llama")
    wait_until(lambda: watched.names("llama") == ["w-0", "w-1"], "the ADDED event applied")
    pods.relabel("w-1", {JOB_LABEL: "other"})
    wait_until(lambda: watched.names("llama") == ["w-0"] and watched.names("other") == ["w-1"], "the move")
    lists = watched.sample("podread_watch_lists_total", scope=watched.namespace, outcome="ok")
    watched.proxy.cut()
    pods.delete("w-0")
    wait_until(lambda: watched.names("llama") == [], "the deletion seen after the watch resumed")
    assert watched.sample("podread_watch_lists_total", scope=watched.namespace, outcome="ok") == lists
    assert watched.sample("podread_watch_restarts_total", scope=watched.namespace, reason="error") >= 1
    assert len(watched.reader.job_pods(watched.namespace, "other")) == 1  # served by the watch, no list


def test_a_barrier_read_with_a_stalled_watch_never_passes_on_a_stale_entry(
    control_plane: ControlPlane, watched: Watched,
) -> None:
    ns = watched.namespace
    pods = Pods(control_plane, ns)
    pods.create("done-0", "llama", phase="Succeeded")
    watched.synced()
    wait_until(lambda: watched.names("llama") == ["done-0"], "the finished pod cached")
    watched.proxy.stalled.set()  # the watch stops hearing anything; the server is fine
    pods.create("late-0", "llama")  # a worker the cache has not seen
    assert watched.names("llama") == ["done-0"]  # the cache is stale, and still within the TTL
    body = job_request(name="llama", namespace=ns, spec=job_spec(workers=1), status={
        "phase": "Terminating", "attempt": 0, "restarts": 0, "workload": "", "activePods": 0, "conditions": []},
        jobsets=[], finalizing=True, deleting="2026-01-01T00:00:00Z")
    now = datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    result = handle(orjson.dumps(body), "finalize", reader=watched.reader, clock=lambda: now,
                    settings=Settings(resync_seconds=2.0))
    assert result.status_code == 200
    assert result.body.get("finalized") is not True, json.dumps(result.body)
    assert "late-0" in result.body["status"]["message"]
    watched.clock.now += 5.0  # past the TTL with the watch still stalled: the cache lists again
    assert [p["metadata"]["name"] for p in watched.reader.job_pods(ns, "llama")] == ["done-0", "late-0"]
    watched.proxy.stalled.clear()


# ---- a lifecycle through the real hooks --------------------------------------------------------------

@pytest.fixture(scope="module")
def hooks(control_plane: ControlPlane, hooks_token: str) -> Iterator[HookServer]:
    """The real hook server with the production cache TTL (5 s). The tier's default (0.3 s, to make
    staleness show within a test) is shorter than a quiet watch's bookmarks and nudges can confirm,
    so with it the watch answers a read only by chance."""
    source = KubeconfigSource(control_plane, hooks_token, "nvcre-hooks")
    with HookServer(source, token=HOOK_TOKEN, env={"NVCRE_CACHE_TTL_SECONDS": "5"}) as server:
        yield server


def hook_metrics(hooks: HookServer) -> dict[str, float]:
    """The hook server's podread samples (``name{labels}`` -> value), summed over its workers."""
    text = urllib.request.urlopen(hooks.metrics_url, timeout=10).read().decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("podread_"):
            name, value = line.rsplit(" ", 1)
            samples[name] = samples.get(name, 0.0) + float(value)
    return samples


def sample(samples: dict[str, float], prefix: str, *labels: str) -> float:
    return sum(v for k, v in samples.items() if k.startswith(prefix + "{") and all(x in k for x in labels))


@pytest.mark.timeout(240)
def test_the_hooks_watch_breaks_with_the_api_server_while_a_drain_waits(world: ClusterWorld,
                                                                         hooks: HookServer) -> None:
    world.create_job("rewatch")
    pods = world.run_until_pods_run("rewatch", 2)
    # the hooks answer from their watch once it has confirmed the pods within the TTL
    world.run_until(lambda: sample(hook_metrics(hooks), "podread_cache_lookups_total", 'result="watch"') > 0,
                    "a cached read answered by the hooks' watch", timeout=60)
    world.pods.hold(*pods)
    world.driver.delete_job(world.namespace, "rewatch")
    world.run_until(lambda: world.phase("rewatch") == "Terminating", "Terminating")
    plane = world.plane
    plane.stop_apiserver()
    try:
        time.sleep(2)  # the hooks' watches break and back off
    finally:
        plane.start_apiserver()
    calls = len(world.driver.calls)
    world.run_for(6)  # the watches come back (resumed or re-listed) while the pods still run
    for call in world.driver.calls[calls:]:
        assert call.body is None or call.body.get("finalized") is not True, "nothing proceeds while pods run"
    assert not world.gone("rewatch")
    world.pods.release()
    world.run_until(lambda: world.gone("rewatch"), "the Job finalized once its pods are gone", timeout=120)
    world.assert_safe()
    samples = hook_metrics(hooks)  # the hooks' watch broke with the API server and came back
    assert sample(samples, "podread_watch_restarts_total", 'reason="error"') >= 1
    assert sample(samples, "podread_watch_lists_total", 'outcome="ok"') >= 1
