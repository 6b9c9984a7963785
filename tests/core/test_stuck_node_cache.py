"""The stuck-pod check through the production Reader's node cache (issue 36): a cached Node state
only delays a stuck verdict by the cache's TTL; a force delete still needs the API server's own
answer in the same hook call (its NotFound for the node, or the out-of-service taint), never a
state remembered from an earlier call."""

from __future__ import annotations

from podread.nodes import NodeCache
from tests.core.test_decide import condition
from tests.core.test_decide_policies import FORCE, SHUT_DOWN, draining, forced, node, run, stuck_pod
from tests.support import FakeReader

TTL = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def cached_reader(*nodes: dict) -> tuple[FakeReader, Clock]:
    clock = Clock()
    return FakeReader([stuck_pod()], nodes=list(nodes), node_cache=NodeCache(ttl_seconds=TTL, clock=clock)), clock


def test_a_force_delete_needs_the_not_found_of_this_call_not_of_an_earlier_one() -> None:
    reader, _ = cached_reader()  # gpu-1 deleted: the server's NotFound
    assert run(draining(**FORCE), reader).actions == (forced(),)
    reader.fail = {"node_states"}  # within the TTL, the next call's GET fails
    d = run(draining(**FORCE), reader)
    assert d.actions == (), "the earlier NotFound licenses nothing now: the node is unknown"
    assert d.stuck_pods == 0 and condition(d, "DrainStuck") is None, "unknown: nothing is said"
    assert reader.node_gets == ["gpu-1", "gpu-1"], "each call sent its own GET"


def test_out_of_service_is_confirmed_by_a_get_in_every_call() -> None:
    reader, _ = cached_reader(node("gpu-1", ready="Unknown", taints=SHUT_DOWN))
    for _ in range(2):
        assert run(draining(**FORCE), reader).actions == (forced(reason="node gpu-1 is out of service"),)
    reader.nodes = None  # the next GET fails
    assert run(draining(**FORCE), reader).actions == ()
    assert reader.node_gets == ["gpu-1"] * 3


def test_a_cached_state_delays_the_force_delete_by_at_most_the_ttl() -> None:
    reader, clock = cached_reader(node("gpu-1", ready="Unknown", taints=("node.kubernetes.io/unreachable",)))
    d = run(draining(**FORCE), reader)
    assert "node gpu-1 unreachable" in condition(d, "DrainStuck")["message"] and d.actions == ()
    assert reader.nodes is not None
    del reader.nodes["gpu-1"]  # the node is deleted; this worker read it unreachable less than the TTL ago
    d = run(draining(**FORCE), reader)
    assert d.actions == () and "node gpu-1 unreachable" in condition(d, "DrainStuck")["message"], \
        "the cached state is not a license: no force delete yet, the pod still reported stuck"
    assert reader.node_gets == ["gpu-1"]
    clock.now += TTL
    assert run(draining(**FORCE), reader).actions == (forced(),), "at the TTL: a GET, the server's NotFound"
    assert reader.node_gets == ["gpu-1", "gpu-1"]


def test_healthy_nodes_are_read_once_per_ttl_across_calls() -> None:
    reader, clock = cached_reader(node("gpu-1"))
    for _ in range(5):
        d = run(draining(**FORCE), reader)
        assert d.actions == () and d.stuck_pods == 0
    assert reader.node_gets == ["gpu-1"]
    clock.now += TTL
    run(draining(**FORCE), reader)
    assert reader.node_gets == ["gpu-1", "gpu-1"]
