"""The stuck-pod check's node cache (issue 36): ``Reader.node_states`` answers a node state that
licenses nothing (the node exists, not out of service) from a small TTL cache shared by a worker's
threads, and never answers "deleted" or "out of service" from it: those come from a GET sent in the
same call. A failed GET is never a cached state, never "deleted"."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import PodReadError, Reader, ReadMetrics, SnapshotLister
from podread.errors import ApiError
from podread.nodes import (
    MAX_NODE_TTL_SECONDS,
    NodeCache,
    NodeClient,
    SnapshotNodes,
    node_state,
    slim_node,
)
from tests.fakekube.server import FakeKubeServer
from tests.support.nodes import node

pytest_plugins = ["tests.fakekube.fixtures"]

TTL = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Nodes:
    """A ``NodeLister`` over a dict the test changes: a name absent is the server's NotFound;
    ``fail`` makes every GET fail as the API server would (503). Counts the GETs by name."""

    def __init__(self, *held: dict[str, Any]) -> None:
        self.held = {n["metadata"]["name"]: n for n in held}
        self.fail = False
        self.gets: list[str] = []
        self._lock = threading.Lock()

    def get_node(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            self.gets.append(name)
        if self.fail:
            raise ApiError("get node: HTTP 503", status=503)
        return self.held.get(name)


def reader(nodes: Nodes, clock: Clock, *, ttl: float = TTL) -> tuple[Reader, ReadMetrics]:
    metrics = ReadMetrics(registry=CollectorRegistry())
    cache = NodeCache(ttl_seconds=ttl, clock=clock)
    return Reader(SnapshotLister(), SnapshotLister(), nodes=nodes, metrics=metrics, node_cache=cache), metrics


def lookups(metrics: ReadMetrics, result: str) -> float:
    return metrics.node_cache_lookups.labels(result)._value.get()


def reads(metrics: ReadMetrics, source: str) -> float:
    return metrics.reads.labels("node_states", source, "ok")._value.get()


def test_a_node_read_twice_within_the_ttl_is_one_get_and_after_it_two() -> None:
    nodes, clock = Nodes(node("gpu-1", ready="False")), Clock()
    cached, metrics = reader(nodes, clock)
    first = cached.node_states(["gpu-1"])
    clock.now += TTL - 0.01
    again = cached.node_states(["gpu-1"])
    assert again == first and first["gpu-1"].ready == "False"
    assert nodes.gets == ["gpu-1"], "the second read within the TTL is answered from the cache"
    assert (lookups(metrics, "miss"), lookups(metrics, "hit")) == (1, 1)
    assert (reads(metrics, "live"), reads(metrics, "cache")) == (1, 1), "no GET: counted as a cache read"
    clock.now += 0.01
    cached.node_states(["gpu-1"])
    assert nodes.gets == ["gpu-1", "gpu-1"], "at the TTL the entry has expired: a GET"
    assert (lookups(metrics, "miss"), lookups(metrics, "hit")) == (2, 1)


def test_a_cached_state_only_delays_a_change_by_the_ttl() -> None:
    nodes, clock = Nodes(node("gpu-1")), Clock()
    cached, _ = reader(nodes, clock)
    assert not cached.node_states(["gpu-1"])["gpu-1"].unhealthy
    nodes.held["gpu-1"] = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/unreachable",))
    assert not cached.node_states(["gpu-1"])["gpu-1"].unhealthy, "within the TTL: the old, healthy state"
    clock.now += TTL
    assert cached.node_states(["gpu-1"])["gpu-1"].describe() == "unreachable"


@pytest.mark.parametrize("gone", ["deleted", "out of service"])
def test_a_state_that_licenses_a_force_delete_is_never_answered_from_the_cache(gone: str) -> None:
    shut = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/out-of-service",))
    nodes, clock = Nodes(*([] if gone == "deleted" else [shut])), Clock()
    cached, metrics = reader(nodes, clock)
    for _ in range(3):
        state = cached.node_states(["gpu-1"])["gpu-1"]
        assert state.gone and state.describe() == gone
    assert nodes.gets == ["gpu-1"] * 3, "each call confirms it with its own GET"
    assert (lookups(metrics, "hit"), lookups(metrics, "miss")) == (0, 3)


def test_a_node_read_healthy_then_deleted_drops_its_entry_and_the_next_read_is_a_get() -> None:
    nodes, clock = Nodes(node("gpu-1")), Clock()
    cache = NodeCache(ttl_seconds=TTL, clock=clock)
    cached = Reader(SnapshotLister(), SnapshotLister(), nodes=nodes, node_cache=cache,
                    metrics=ReadMetrics(registry=CollectorRegistry()))
    cached.node_states(["gpu-1"])
    clock.now += TTL
    del nodes.held["gpu-1"]
    assert cached.node_states(["gpu-1"])["gpu-1"].describe() == "deleted"
    assert len(cache) == 0 and cache.get("gpu-1") is None, "deleted is never kept"
    assert not cached.node_states(["gpu-1"])["gpu-1"].exists
    assert nodes.gets == ["gpu-1"] * 3


def test_a_cache_never_answers_a_gone_state_even_if_one_was_kept() -> None:
    clock = Clock()
    cache = NodeCache(ttl_seconds=TTL, clock=clock)
    cache.put(node_state("gpu-1", None), None, clock())
    cache.put(node_state("gpu-2", node("gpu-2", taints=("node.kubernetes.io/out-of-service",))),
              node("gpu-2", taints=("node.kubernetes.io/out-of-service",)), clock())
    assert (cache.get("gpu-1"), cache.get("gpu-2"), len(cache)) == (None, None, 0)
    cache.put(node_state("gpu-3", node("gpu-3")), node("gpu-3"), clock())
    entry = cache.get("gpu-3")
    assert entry is not None and not entry.state.gone
    cache.put(node_state("gpu-3", None), None, clock())
    assert cache.get("gpu-3") is None, "a GET that found it deleted drops the entry"


def test_a_failed_get_is_never_healthy_nor_deleted_nor_a_stale_cached_state() -> None:
    nodes, clock = Nodes(node("gpu-1"), node("gpu-2")), Clock()
    cached, metrics = reader(nodes, clock)
    cached.node_states(["gpu-1"])
    nodes.fail = True
    with pytest.raises(PodReadError) as failed:
        cached.node_states(["gpu-1", "gpu-2"])
    assert (failed.value.method, failed.value.source, failed.value.code) == ("node_states", "live", "http-503")
    clock.now += TTL
    with pytest.raises(PodReadError):
        cached.node_states(["gpu-1"])  # expired: the failed GET is not replaced by the old state
    with pytest.raises(PodReadError):
        cached.node_states(["gpu-3"])
    assert metrics.read_errors.labels("node_states", "live", "http-503")._value.get() == 3
    nodes.fail = False
    assert not cached.node_states(["gpu-3"])["gpu-3"].exists, "nothing was kept from the failed reads"


def test_the_ttl_counts_from_when_the_get_was_sent() -> None:
    clock = Clock()

    class Slow(Nodes):
        def get_node(self, name: str) -> dict[str, Any] | None:
            clock.now += 2.0  # the GET takes 2 s
            return super().get_node(name)

    nodes = Slow(node("gpu-1"))
    cached, _ = reader(nodes, clock)
    cached.node_states(["gpu-1"])
    clock.now += TTL - 2.0
    cached.node_states(["gpu-1"])
    assert nodes.gets == ["gpu-1", "gpu-1"]


def test_a_cache_hit_is_noted_with_the_node_so_a_recording_replays_it() -> None:
    nodes, clock = Nodes(node("gpu-1", ready="False")), Clock()
    cached, _ = reader(nodes, clock)
    cached.node_states(["gpu-1"])
    with podread.recording(keep_pods=True) as records:
        cached.node_states(["gpu-1"])
    (record,) = records
    assert (record.method, record.source, record.query, record.pods) == ("node_states", "cache", "nodes=gpu-1", 1)
    assert record.items is not None
    replayed = Reader(SnapshotLister(), SnapshotLister(), nodes=SnapshotNodes(record.items))
    assert replayed.node_states(["gpu-1"]) == cached.node_states(["gpu-1"])


def test_the_cache_keeps_only_what_node_state_reads() -> None:
    whole = node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/unreachable",))
    slim = slim_node(whole)
    assert node_state("gpu-1", slim) == node_state("gpu-1", whole)
    assert "images" not in slim["status"] and [c["type"] for c in slim["status"]["conditions"]] == ["Ready"]


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    clock = Clock()
    cache = NodeCache(ttl_seconds=TTL, max_entries=2, clock=clock)
    for name in ("a", "b"):
        cache.put(node_state(name, node(name)), node(name), clock())
    assert cache.get("a") is not None  # a used: b is the least recently used
    cache.put(node_state("c", node("c")), node("c"), clock())
    assert (len(cache), cache.get("b"), cache.get("a") is not None) == (2, None, True)


def test_a_newer_read_is_not_replaced_by_an_older_one() -> None:
    clock = Clock()
    cache = NodeCache(ttl_seconds=TTL, clock=clock)
    newer, older = node("gpu-1", ready="False"), node("gpu-1")
    cache.put(node_state("gpu-1", newer), newer, clock.now)
    cache.put(node_state("gpu-1", older), older, clock.now - 1)  # a GET sent earlier, answered later
    entry = cache.get("gpu-1")
    assert entry is not None and entry.state.ready == "False"


@pytest.mark.parametrize("ttl", [0, -1, MAX_NODE_TTL_SECONDS + 1, float("nan")])
def test_a_cache_needs_a_short_positive_ttl(ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl_seconds"):
        NodeCache(ttl_seconds=ttl)


def test_threads_share_the_cache_and_never_see_a_torn_or_gone_entry() -> None:
    names = [f"gpu-{i}" for i in range(8)]
    nodes, clock = Nodes(*(node(n, ready="False") for n in names[:6])), Clock()  # gpu-6, gpu-7: deleted
    cached, metrics = reader(nodes, clock)
    seen: list[dict[str, Any]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work() -> None:
        try:
            start.wait()
            for _ in range(200):
                seen.append(cached.node_states(names))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = {n: node_state(n, nodes.held.get(n)) for n in names}
    assert all(states == expected for states in seen)
    gets = {n: nodes.gets.count(n) for n in names}
    assert gets["gpu-6"] == gets["gpu-7"] == 1600, "every call confirms the deleted nodes with a GET"
    assert all(gets[n] <= 8 for n in names[:6]), "the existing ones: one GET, or one per racing thread"
    assert lookups(metrics, "hit") + lookups(metrics, "miss") == 1600 * 8


def test_the_environment_builds_a_node_cache_with_its_ttl_and_zero_turns_it_off(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: "
                      "{server: 'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\n"
                      "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    env = {"KUBECONFIG": str(config)}
    default = podread.from_environment(env)
    assert isinstance(default._nodes, NodeClient) and default._node_cache is not None
    assert default._node_cache.ttl_seconds == 5
    assert podread.from_environment({**env, "NVCRE_NODE_CACHE_TTL_SECONDS": "2.5"})._node_cache.ttl_seconds == 2.5
    assert podread.from_environment({**env, "NVCRE_NODE_CACHE_TTL_SECONDS": "0"})._node_cache is None
    assert podread.from_environment({**env, "NVCRE_CACHE_MODE": "live"})._node_cache is None, "the baseline"


@pytest.mark.parametrize(("value", "says"), [("soon", "is not a number"), ("-1", "from 0 to 60"),
                                             ("61", "from 0 to 60"), ("nan", "from 0 to 60")])
def test_a_bad_node_cache_ttl_is_a_startup_error_naming_the_variable(value: str, says: str) -> None:
    with pytest.raises(ValueError, match="NVCRE_NODE_CACHE_TTL_SECONDS") as raised:
        podread.from_environment({"HOME": "/nonexistent-home", "NVCRE_NODE_CACHE_TTL_SECONDS": value})
    assert says in str(raised.value)


def test_on_the_wire_one_get_per_ttl_and_every_not_found_confirmed(fake_kube: FakeKubeServer) -> None:
    fake_kube.writes.nodes["gpu-1"] = node("gpu-1", ready="False")
    clock = Clock()
    cached = Reader(SnapshotLister(), SnapshotLister(), nodes=NodeClient(fake_kube.api_client(retries=False)),
                    node_cache=NodeCache(ttl_seconds=TTL, clock=clock),
                    metrics=ReadMetrics(registry=CollectorRegistry()))
    for _ in range(3):
        states = cached.node_states(["gpu-1", "gpu-2"])
        assert (states["gpu-1"].ready, states["gpu-2"].describe()) == ("False", "deleted")
    assert fake_kube.request_count("/api/v1/nodes/gpu-1") == 1
    assert fake_kube.request_count("/api/v1/nodes/gpu-2") == 3
