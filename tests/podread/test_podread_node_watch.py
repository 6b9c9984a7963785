"""The Node watch of the stuck-pod check (issue 36 item 3, ADR 0102): a watch of Nodes answers a
healthy node's state with no request; anything that could license (a node the watch does not hold,
deleted, out of service, NotReady, unreachable) is still a GET in the same call, "deleted" only the
API server's own NotFound; a watch that is not fresh is not asked (the TTL cache and GETs answer).
Driven on the wire against the fake API server (``tests.fakekube``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import PodReadError, Reader, ReadMetrics, SnapshotLister
from podread.environment import node_watch_enabled
from podread.nodes import NodeCache, NodeClient, node_state
from podread.nodewatch import NodeWatch, NodeWatchClient, WatchedNodes
from podread.nodewatch import kept as kept_of
from podread.watch import Backoff
from tests.fakekube.faults import Fault
from tests.fakekube.server import FakeKubeServer
from tests.support.nodes import node

pytest_plugins = ["tests.fakekube.fixtures"]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class Wired:
    """A Reader whose node reads go to ``fake`` (GETs) and whose Node watch watches it."""

    def __init__(self, fake: FakeKubeServer, *, cache: NodeCache | None = None, staleness: float = 30.0) -> None:
        self.fake = fake
        self.metrics = ReadMetrics(registry=CollectorRegistry())
        client = fake.api_client(retries=False)
        self.store = WatchedNodes(max_staleness=staleness, metrics=self.metrics)
        self.watch = NodeWatch(NodeWatchClient(client, metrics=self.metrics), self.store, watch_seconds=30,
                               metrics=self.metrics, nudge_every=None, backoff=Backoff(0.05, 0.2))
        self.reader = Reader(SnapshotLister(), SnapshotLister(), nodes=NodeClient(client), metrics=self.metrics,
                             node_cache=cache, node_watch=self.watch)

    def gets(self, name: str) -> int:
        return self.fake.request_count(f"/api/v1/nodes/{name}")

    def lists(self) -> int:
        return self.fake.request_count("/api/v1/nodes", lambda r: r.query.get("watch") != "true")

    def by_source(self, source: str) -> float:
        return self.metrics.node_reads.labels(source)._value.get()

    def synced(self) -> None:
        self.watch.start()
        wait_for(lambda: self.store.fresh() and self.fake.watches >= 1)


@pytest.fixture
def wired(fake_kube: FakeKubeServer) -> Iterator[Wired]:
    made = Wired(fake_kube)
    try:
        yield made
    finally:
        made.reader.close()


def test_a_healthy_node_is_answered_from_the_watch_with_no_get(wired: Wired) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    for _ in range(5):
        assert wired.reader.node_states(["gpu-1"])["gpu-1"].ready == "True"
    assert wired.gets("gpu-1") == 0
    assert wired.by_source("watch") == 5
    assert wired.lists() == 1


def test_what_the_watch_keeps_of_a_node_is_only_what_the_rules_read(wired: Wired) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    held = wired.store.answer("gpu-1")
    assert held is not None
    kept = held[1]
    assert set(kept) == {"metadata", "spec", "status"}
    assert set(kept["metadata"]) == {"name", "resourceVersion"}
    assert kept["status"]["conditions"] == [{"type": "Ready", "status": "True",
                                             "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    assert held[0] == node_state("gpu-1", node("gpu-1")), "the state of what is kept is the whole Node's"


@pytest.mark.parametrize("taints", [(), ("node.kubernetes.io/out-of-service",), ("node.kubernetes.io/unreachable",)])
@pytest.mark.parametrize("ready", ["True", "False", "Unknown"])
def test_what_the_watch_keeps_reads_as_the_whole_node(ready: str, taints: tuple[str, ...]) -> None:
    whole = node("gpu-1", ready=ready, taints=taints)
    whole["status"]["conditions"][1] |= {"reason": "KubeletReady", "message": "x" * 200,
                                         "lastHeartbeatTime": "2026-01-01T00:00:09Z"}
    assert node_state("gpu-1", kept_of(whole)) == node_state("gpu-1", whole)
    assert len(orjson.dumps(kept_of(whole))) < 250


def test_a_deleted_node_needs_the_api_servers_not_found_in_the_same_call(wired: Wired) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    wired.fake.delete_node("gpu-1")
    wait_for(lambda: "gpu-1" not in wired.store)
    state = wired.reader.node_states(["gpu-1"])["gpu-1"]
    assert state.describe() == "deleted"
    assert wired.gets("gpu-1") == 1  # the watch's DELETED event licensed nothing: the GET's NotFound did


def test_a_node_the_watch_lost_but_a_proxy_404_is_a_failed_read_never_deleted(wired: Wired) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    wired.fake.delete_node("gpu-1")
    wait_for(lambda: len(wired.store) == 0)
    wired.fake.inject(Fault.raw("/api/v1/nodes/gpu-1", 404, b"404 page not found", content_type="text/plain"))
    with pytest.raises(PodReadError) as raised:
        wired.reader.node_states(["gpu-1"])
    assert raised.value.code == "http-404"


@pytest.mark.parametrize(("ready", "taints", "says"), [
    ("True", ("node.kubernetes.io/out-of-service",), "out of service"),
    ("False", (), "not ready"),
    ("Unknown", ("node.kubernetes.io/unreachable",), "unreachable"),
])
def test_a_state_that_could_license_or_report_is_read_by_a_get_in_the_call(
        wired: Wired, ready: str, taints: tuple[str, ...], says: str) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    wired.fake.put_node(node("gpu-1", ready=ready, taints=taints))
    wait_for(lambda: wired.store.answer("gpu-1") is None)
    for _ in range(2):
        state = wired.reader.node_states(["gpu-1"])["gpu-1"]
        assert state.unhealthy and state.describe() == says
    assert wired.gets("gpu-1") == 2
    assert wired.by_source("get") == 2


def test_a_node_the_watch_never_saw_is_a_get(wired: Wired) -> None:
    wired.synced()
    wired.fake.writes.nodes["gpu-9"] = {"metadata": {"name": "gpu-9"}, **{k: v for k, v in node("gpu-9").items()
                                                                          if k != "metadata"}}
    assert wired.reader.node_states(["gpu-9"])["gpu-9"].ready == "True"
    assert wired.gets("gpu-9") == 1


def test_a_watch_that_breaks_resumes_and_after_410_lists_again(wired: Wired) -> None:
    wired.fake.put_node(node("gpu-1"))
    wired.synced()
    wired.fake.break_watches()
    wait_for(lambda: wired.metrics.node_watch_restarts.labels("error")._value.get() >= 1)
    wired.fake.put_node(node("gpu-2"))
    wait_for(lambda: wired.store.answer("gpu-2") is not None)
    assert wired.lists() == 1  # resumed from its resourceVersion, no list
    wired.fake.hold_watch_events()
    wired.fake.put_node(node("gpu-3"))  # the watch has not seen it
    wired.fake.compact_nodes()
    wired.fake.break_watches()  # the resume from before the compaction meets ERROR 410: a new list
    wait_for(lambda: wired.lists() == 2 and wired.store.answer("gpu-3") is not None)
    assert wired.reader.node_states(["gpu-1", "gpu-2", "gpu-3"]).keys() == {"gpu-1", "gpu-2", "gpu-3"}
    assert sum(wired.gets(n) for n in ("gpu-1", "gpu-2", "gpu-3")) == 0
    assert wired.metrics.node_watch_lists.labels("ok")._value.get() == 2


def test_a_relist_forgets_a_node_deleted_while_the_watch_missed_its_deletion(wired: Wired) -> None:
    """A list after 410 replaces what the watch held: a node deleted while its DELETED event was
    missed is not kept as healthy (which would answer "not stuck yet" for as long as the watch stays
    fresh, and never let its pods be found stuck); its read is a GET, the server's NotFound."""
    wired.fake.put_node(node("gpu-1"))
    wired.fake.put_node(node("gpu-2"))
    wired.synced()
    wired.fake.hold_watch_events()
    wired.fake.delete_node("gpu-2")  # the watch does not see the DELETED event
    wired.fake.compact_nodes()
    wired.fake.break_watches()  # the resume meets ERROR 410: a new list, without gpu-2
    wait_for(lambda: wired.metrics.node_watch_lists.labels("ok")._value.get() == 2 and wired.store.fresh())
    assert "gpu-2" not in wired.store and "gpu-1" in wired.store
    states = wired.reader.node_states(["gpu-1", "gpu-2"])
    assert states["gpu-1"].ready == "True" and wired.gets("gpu-1") == 0
    assert not states["gpu-2"].exists and wired.gets("gpu-2") == 1


def test_a_watch_not_fresh_is_not_asked_the_ttl_cache_and_gets_answer(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_node(node("gpu-1"))
    fake_kube.inject(Fault.error("/api/v1/nodes$", 503))  # the watch's list fails: never synced
    made = Wired(fake_kube, cache=NodeCache(ttl_seconds=5.0))
    try:
        for _ in range(3):
            assert made.reader.node_states(["gpu-1"])["gpu-1"].ready == "True"
        assert not made.store.fresh()
        assert made.gets("gpu-1") == 1  # one GET, then the TTL cache
        assert (made.by_source("get"), made.by_source("cache"), made.by_source("watch")) == (1, 2, 0)
    finally:
        made.reader.close()


def test_a_watch_confirmed_longer_ago_than_its_bound_answers_nothing() -> None:
    now = [100.0]
    store = WatchedNodes(max_staleness=30.0, clock=lambda: now[0], metrics=ReadMetrics(registry=CollectorRegistry()))
    store.replace([node("gpu-1") | {"metadata": {"name": "gpu-1", "resourceVersion": "5"}}], "5", listed_at=100.0)
    assert store.answer("gpu-1") is not None
    now[0] = 129.0
    assert store.answer("gpu-1") is not None
    now[0] = 130.0
    assert store.answer("gpu-1") is None
    store.bookmark("6")
    assert store.answer("gpu-1") is not None
    assert store.progress("7", sent_at=140.0) is False  # behind the server: nothing confirmed
    assert store.progress("6", sent_at=140.0) is True


def test_an_event_older_than_what_is_held_or_than_the_deletion_is_ignored() -> None:
    store = WatchedNodes(metrics=ReadMetrics(registry=CollectorRegistry()))
    fresh = {**node("gpu-1"), "metadata": {"name": "gpu-1", "resourceVersion": "10"}}
    store.replace([fresh], "10", listed_at=store.now())
    old = {**node("gpu-1", ready="False"), "metadata": {"name": "gpu-1", "resourceVersion": "9"}}
    assert store.apply("MODIFIED", old, confirm=True) is False
    assert store.answer("gpu-1") is not None
    assert store.apply("DELETED", {**fresh, "metadata": {"name": "gpu-1", "resourceVersion": "11"}}, confirm=True)
    assert store.apply("ADDED", fresh, confirm=True) is False  # a late ADDED does not bring it back
    assert store.answer("gpu-1") is None


@pytest.mark.parametrize(("value", "mode", "on"), [
    ("", "watch", True), ("", "ttl", False), ("", "live", False), ("on", "ttl", True), ("OFF", "watch", False),
])
def test_the_node_watch_follows_the_cache_mode_unless_switched(value: str, mode: str, on: bool) -> None:
    assert node_watch_enabled({"NVCRE_NODE_WATCH": value}, mode) is on


def test_a_bad_node_watch_switch_is_a_startup_error_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="NVCRE_NODE_WATCH"):
        podread.from_environment({"HOME": "/nonexistent-home", "NVCRE_NODE_WATCH": "yes"})


def test_the_environment_builds_the_node_watch_in_watch_mode(kubeconfig: str, tmp_path: Path) -> None:
    built = podread.from_environment({"KUBECONFIG": kubeconfig, "HOME": str(tmp_path)})
    off = podread.from_environment({"KUBECONFIG": kubeconfig, "HOME": str(tmp_path), "NVCRE_NODE_WATCH": "off"})
    one_shot = podread.from_environment({"KUBECONFIG": kubeconfig, "HOME": str(tmp_path)}, watch=False)
    try:
        assert isinstance(built._node_watch, NodeWatch)
        assert off._node_watch is None and one_shot._node_watch is None
    finally:
        for reader in (built, off, one_shot):
            reader.close()
