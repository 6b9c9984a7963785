"""Issue 36 on the real control plane, with the hooks' own ServiceAccount token (``get``, ``list``
and ``watch`` on nodes): the stuck-pod check's node cache answers an existing Node from one GET
for its TTL, the Node watch answers a Ready node with no GET, and "deleted" is the real server's
NotFound, read by a GET in every call that asks."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import kubernetes
import pytest
from kubernetes.client import ApiException
from prometheus_client import CollectorRegistry

import podread
from podread.nodes import NodeCache, NodeClient
from podread.nodewatch import NodeWatch, NodeWatchClient, WatchedNodes
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT

pytestmark = pytest.mark.cluster

TTL = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def node_name(control_plane: ControlPlane, installed: dict) -> Iterator[str]:
    name = f"node-cache-{str(int(time.time() * 1000))[-7:]}"
    core = kubernetes.client.CoreV1Api(control_plane.api_client())
    core.create_node({"metadata": {"name": name}}, _request_timeout=REQUEST_TIMEOUT)
    yield name
    try:
        core.delete_node(name, _request_timeout=REQUEST_TIMEOUT)
    except ApiException as exc:
        if exc.status != 404:
            raise


def test_an_existing_node_is_one_get_per_ttl_and_deleted_is_the_servers_not_found_every_time(
        control_plane: ControlPlane, installed: dict, hooks_token: str, node_name: str) -> None:
    clock = Clock()
    metrics = podread.ReadMetrics(registry=CollectorRegistry())
    reader = podread.Reader(podread.SnapshotLister(), podread.SnapshotLister(),
                            nodes=NodeClient(control_plane.api_client(hooks_token)),
                            node_cache=NodeCache(ttl_seconds=TTL, clock=clock), metrics=metrics)

    def lookups(result: str) -> float:
        return metrics.node_cache_lookups.labels(result)._value.get()

    for _ in range(3):
        assert reader.node_states([node_name])[node_name].exists
    assert (lookups("miss"), lookups("hit")) == (1, 2), "one GET, then answered from the cache"
    kubernetes.client.CoreV1Api(control_plane.api_client()).delete_node(node_name, _request_timeout=REQUEST_TIMEOUT)
    assert reader.node_states([node_name])[node_name].exists, "within the TTL: the cached state (it licenses nothing)"
    clock.now += TTL
    for _ in range(2):
        assert reader.node_states([node_name])[node_name].describe() == "deleted"
    assert (lookups("miss"), lookups("hit")) == (3, 3), "each deleted answer is the server's NotFound, read by a GET"


def _ready(core: kubernetes.client.CoreV1Api, name: str, status: str) -> None:
    """Sets the Node's ``Ready`` condition (no kubelet runs here) and, for ``True``, clears the
    ``not-ready`` taint kube-apiserver's TaintNodesByCondition admission put on it at create."""
    if status == "True":
        core.patch_node(name, {"spec": {"taints": None}}, _request_timeout=REQUEST_TIMEOUT)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    core.patch_node_status(name, {"status": {"conditions": [
        {"type": "Ready", "status": status, "reason": "Test", "message": "set by the test",
         "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, _request_timeout=REQUEST_TIMEOUT)


def test_the_node_watch_answers_a_ready_node_with_no_get_and_deleted_is_still_the_servers_not_found(
        control_plane: ControlPlane, installed: dict, hooks_token: str, node_name: str) -> None:
    """With the hooks' token (``list`` and ``watch`` on nodes, manifests/rbac.yaml): the Node watch
    lists and watches the real server; a Ready, untainted node is answered from it, no GET; once
    NotReady it is a GET again; once deleted, the watch licenses nothing: "deleted" is the GET's
    NotFound in that call."""
    admin = kubernetes.client.CoreV1Api(control_plane.api_client())
    metrics = podread.ReadMetrics(registry=CollectorRegistry())
    client = control_plane.api_client(hooks_token)
    watch = NodeWatch(NodeWatchClient(client, metrics=metrics), WatchedNodes(metrics=metrics), metrics=metrics)
    reader = podread.Reader(podread.SnapshotLister(), podread.SnapshotLister(), nodes=NodeClient(client),
                            metrics=metrics, node_watch=watch)

    def reads(source: str) -> float:
        return metrics.node_reads.labels(source)._value.get()

    def until(condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 30
        while not condition():
            assert time.monotonic() < deadline, (
                f"{what}: lists {metrics.node_watch_lists.labels('ok')._value.get()} ok, "
                f"{metrics.node_watch_lists.labels('error')._value.get()} failed; {len(watch.store)} held")
            time.sleep(0.1)

    try:
        watch.start()
        _ready(admin, node_name, "True")
        until(lambda: watch.store.answer(node_name) is not None, "the watch never answered the Ready node")
        for _ in range(3):
            assert reader.node_states([node_name])[node_name].ready == "True"
        assert (reads("watch"), reads("get")) == (3, 0), "a Ready node: no GET"
        _ready(admin, node_name, "False")
        until(lambda: watch.store.answer(node_name) is None, "the watch never saw the node NotReady")
        assert reader.node_states([node_name])[node_name].ready == "False"
        assert reads("get") == 1, "a node that is not Ready is read by a GET"
        admin.delete_node(node_name, _request_timeout=REQUEST_TIMEOUT)
        until(lambda: node_name not in watch.store, "the watch never saw the deletion")
        assert reader.node_states([node_name])[node_name].describe() == "deleted"
        assert reads("get") == 2, "deleted is the server's NotFound, read by a GET"
    finally:
        reader.close()
