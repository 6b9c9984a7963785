"""Issue 36 on the real control plane, with the hooks' own ServiceAccount token (``get``, ``list``
and ``watch`` on nodes): the stuck-pod check's node cache answers an existing Node from one GET
for its TTL, the Node watch answers a Ready node with no GET, and "deleted" is the real server's
NotFound, read by a GET in every call that asks."""

from __future__ import annotations

import time
from collections.abc import Iterator

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


def test_the_node_watch_answers_a_ready_node_with_no_get_and_deleted_is_still_the_servers_not_found(
        control_plane: ControlPlane, installed: dict, hooks_token: str, node_name: str) -> None:
    """With the hooks' token (``list`` and ``watch`` on nodes, manifests/rbac.yaml): the Node watch
    lists and watches the real server; a Ready node is answered from it, no GET; once deleted, the
    watch licenses nothing: the answer "deleted" is the GET's NotFound in that call."""
    admin = kubernetes.client.CoreV1Api(control_plane.api_client())
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    admin.patch_node_status(node_name, {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test",
         "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, _request_timeout=REQUEST_TIMEOUT)
    metrics = podread.ReadMetrics(registry=CollectorRegistry())
    client = control_plane.api_client(hooks_token)
    watch = NodeWatch(NodeWatchClient(client, metrics=metrics), WatchedNodes(metrics=metrics), metrics=metrics)
    reader = podread.Reader(podread.SnapshotLister(), podread.SnapshotLister(), nodes=NodeClient(client),
                            metrics=metrics, node_watch=watch)
    try:
        watch.start()
        deadline = time.monotonic() + 30
        while watch.store.answer(node_name) is None:
            assert time.monotonic() < deadline, "the Node watch never held the Ready node (list/watch denied?)"
            time.sleep(0.1)
        for _ in range(3):
            assert reader.node_states([node_name])[node_name].ready == "True"
        assert metrics.node_reads.labels("watch")._value.get() == 3
        assert metrics.node_reads.labels("get")._value.get() == 0
        admin.delete_node(node_name, _request_timeout=REQUEST_TIMEOUT)
        while len(watch.store) and watch.store.answer(node_name) is not None:
            assert time.monotonic() < deadline + 30
            time.sleep(0.1)
        assert reader.node_states([node_name])[node_name].describe() == "deleted"
        assert metrics.node_reads.labels("get")._value.get() == 1, "deleted is the server's NotFound, by a GET"
    finally:
        reader.close()
