"""The reads the failure policy and the stuck-pod check need: ``Reader.attempt_failure_pods`` (live,
by JobSet's label, the pods that tell why an attempt failed) and ``Reader.node_states`` (live, one GET
per node, only the API server's NotFound for that node is deleted)."""

from __future__ import annotations

from typing import Any

import pytest

from podread import JOBSET_NAME_LABEL, PodReadError, Reader, SnapshotLister, reader_from_snapshot
from podread.nodes import MAX_NODES_PER_READ, NodeClient, SnapshotNodes, node_state, not_found_for
from tests.fakekube.faults import Fault
from tests.fakekube.server import FakeKubeServer, status_body
from tests.support import make_pod

pytest_plugins = ["tests.fakekube.fixtures"]


def pod(name: str, phase: str = "Running", exit_code: int | None = None, disrupted: bool = False,
        workload: str = "train-0", job: str = "train") -> dict[str, Any]:
    made = make_pod(name, job=job, workload=workload, phase=phase)
    if exit_code is not None:
        made["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": exit_code}}}]
    if disrupted:
        made["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    return made


class Recording(SnapshotLister):
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        super().__init__(pods)
        self.selectors: list[Any] = []

    def list_pods(self, selector: Any) -> list[dict[str, Any]]:
        self.selectors.append(selector)
        return super().list_pods(selector)


def test_attempt_failure_pods_reads_live_by_the_workload_label_and_keeps_the_telling_pods() -> None:
    pods = [pod("b-failed", "Failed", 1), pod("a-running"), pod("c-ok-exit", "Succeeded", 0),
            pod("d-disrupted", disrupted=True), pod("e-killed", "Running", 137),
            pod("f-other-attempt", "Failed", 42, workload="train-1"),
            pod("g-launcher-failed", "Failed", 3, job="")]
    cache, live = Recording([]), Recording(pods)
    found = Reader(cache, live).attempt_failure_pods("default", "train-0")
    assert [p["metadata"]["name"] for p in found] == ["b-failed", "d-disrupted", "e-killed", "g-launcher-failed"]
    assert cache.selectors == [] and [s.labels for s in live.selectors] == [{JOBSET_NAME_LABEL: "train-0"}]


def test_attempt_failure_pods_fails_as_a_read_never_as_no_pods() -> None:
    reader = reader_from_snapshot({"live": {"error": "boom", "code": "timeout"}})
    with pytest.raises(PodReadError) as failed:
        reader.attempt_failure_pods("default", "train-0")
    assert (failed.value.method, failed.value.source, failed.value.code) == ("attempt_failure_pods", "live", "timeout")


def test_node_state_reads_ready_and_the_taints_that_matter() -> None:
    gone = node_state("n", None)
    assert (gone.exists, gone.gone, gone.unhealthy, gone.describe()) == (False, True, True, "deleted")
    ready = node_state("n", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert (ready.gone, ready.unhealthy) == (False, False)
    cut_off = node_state("n", {"spec": {"taints": [{"key": "node.kubernetes.io/unreachable"}]},
                               "status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                                          "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert (cut_off.gone, cut_off.unhealthy, cut_off.ready_since, cut_off.describe()) == (
        False, True, "2026-01-01T00:00:00Z", "unreachable")
    shut = node_state("n", {"spec": {"taints": [{"key": "node.kubernetes.io/out-of-service"}]}})
    assert (shut.gone, shut.describe()) == (True, "out of service")


def test_node_states_without_a_node_lister_fail_and_never_read_as_deleted() -> None:
    with pytest.raises(PodReadError) as failed:
        Reader(SnapshotLister(), SnapshotLister()).node_states(["gpu-1"])
    assert failed.value.code == "no-live-client"
    with pytest.raises(PodReadError):
        reader_from_snapshot({"live": {"pods": []}}).node_states(["gpu-1"])  # a snapshot without nodes


def test_node_states_reads_at_most_the_limit_sorted_and_once_each() -> None:
    asked: list[str] = []

    class Nodes(SnapshotNodes):
        def get_node(self, name: str) -> dict[str, Any] | None:
            asked.append(name)
            return super().get_node(name)

    names = [f"n{i:02d}" for i in range(MAX_NODES_PER_READ + 4)]
    states = Reader(SnapshotLister(), SnapshotLister(), nodes=Nodes()).node_states([*reversed(names), names[0]])
    assert asked == names[:MAX_NODES_PER_READ] and sorted(states) == asked


def test_node_client_on_the_wire(fake_kube: FakeKubeServer) -> None:
    fake_kube.writes.nodes["gpu-1"] = {"metadata": {"name": "gpu-1"}, "status": {"conditions": [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    client = NodeClient(fake_kube.api_client(retries=False))
    assert client.get_node("gpu-1")["metadata"]["name"] == "gpu-1"
    assert client.get_node("gpu-2") is None
    assert fake_kube.request_count("/api/v1/nodes/gpu-2") == 1


NOT_THE_SERVERS_NOT_FOUND = {
    "a proxy's plain text": (b"404 page not found\n", "text/plain; charset=utf-8"),
    "a Status about another node": (status_body(404, 'nodes "gpu-9" not found', reason="NotFound",
                                                details={"name": "gpu-9", "kind": "nodes"}), "application/json"),
    "a Status about another kind": (status_body(404, 'pods "gpu-2" not found', reason="NotFound",
                                                details={"name": "gpu-2", "kind": "pods"}), "application/json"),
    "a Status without details": (status_body(404, 'nodes "gpu-2" not found', reason="NotFound"), "application/json"),
    "a Status with another reason": (status_body(404, "the server could not find the requested resource",
                                                 reason="Gone", details={"name": "gpu-2", "kind": "nodes"}),
                                     "application/json"),
    "JSON that is not a Status": (b'{"reason": "NotFound", "details": {"name": "gpu-2", "kind": "nodes"}}',
                                  "application/json"),
    "an empty body": (b"", "application/json"),
}


@pytest.mark.parametrize("case", sorted(NOT_THE_SERVERS_NOT_FOUND))
def test_a_404_that_is_not_the_servers_not_found_for_that_node_is_a_failed_read(fake_kube: FakeKubeServer,
                                                                                  case: str) -> None:
    body, content_type = NOT_THE_SERVERS_NOT_FOUND[case]
    fake_kube.inject(Fault.raw("/api/v1/nodes/gpu-2", 404, body, content_type=content_type))
    reader = Reader(SnapshotLister(), SnapshotLister(), nodes=NodeClient(fake_kube.api_client(retries=False)))
    with pytest.raises(PodReadError) as failed:
        reader.node_states(["gpu-2"])
    assert (failed.value.method, failed.value.source, failed.value.code) == ("node_states", "live", "http-404")
    assert "never a deleted node" in str(failed.value)
    assert fake_kube.request_count("/api/v1/nodes/gpu-2") == 1


def test_the_servers_not_found_for_that_node_is_deleted(fake_kube: FakeKubeServer) -> None:
    reader = Reader(SnapshotLister(), SnapshotLister(), nodes=NodeClient(fake_kube.api_client(retries=False)))
    gone = reader.node_states(["gpu-2"])["gpu-2"]
    assert (gone.exists, gone.gone, gone.describe()) == (False, True, "deleted")


@pytest.mark.parametrize(("body", "expected"), [
    ('{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \\"n\\" not found",'
     '"reason":"NotFound","details":{"name":"n","kind":"nodes"},"code":404}', True),
    (b'{"kind":"Status","reason":"NotFound","details":{"name":"n","kind":"nodes"}}', True),
    (b'{"kind":"Status","reason":"NotFound","details":{"name":"n","kind":"nodes","group":"x"}}', True),
    (b'{"kind":"Status","reason":"NotFound","details":{"name":"m","kind":"nodes"}}', False),
    (b'{"kind":"Status","reason":"NotFound","details":{"name":"n","kind":"Node"}}', False),
    (b'{"kind":"Status","reason":"NotFound","details":"n"}', False),
    (b'[]', False), (b"404 page not found", False), (None, False), (b"\xff", False),
])
def test_not_found_for(body: object, expected: bool) -> None:
    assert not_found_for(body, "n") is expected
