"""Issue 36 on the real control plane, with the hooks' own ServiceAccount token (``get`` on nodes,
no ``list`` or ``watch``): the stuck-pod check's node cache answers an existing Node from one GET
for its TTL, and "deleted" is the real server's NotFound, read by a GET in every call that asks."""

from __future__ import annotations

import time
from collections.abc import Iterator

import kubernetes
import pytest
from kubernetes.client import ApiException
from prometheus_client import CollectorRegistry

import podread
from podread.nodes import NodeCache, NodeClient
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
