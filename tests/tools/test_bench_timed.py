"""The timed Jobs of the scale benchmark (``bench.cluster_scale.TimedJobs``, issue 36 item 5), against
a scripted stand-in: how late a deadline and a TTL fired is read from what the status and the Job's
absence say, and a Job never timed is named, not counted. (The whole pass runs in the cluster tier
and in ``python -m bench.cluster_scale --passes large-install-resync120``.)"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from bench.cluster_scale import (
    STUCK_NODE_KEY,
    TIMED_DEADLINE_SECONDS,
    TIMED_STUCK_AFTER_SECONDS,
    TIMED_TTL_SECONDS,
    PassResult,
    TimedJobs,
    _follow_timed,
)
from hooks.core.deadlines import stamp


class World:
    """The stand-in's cache (``job``), the Jobs created, the pods patched and the running pods."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.completed: list[str] = []
        self.deleted: list[str] = []
        self.nodes: list[tuple[str, str, dict[str, Any]]] = []

    # the CustomObjectsApi and CoreV1Api calls _follow_timed makes
    def create_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str,
                                        body: dict[str, Any], **_: Any) -> None:
        self.created.append(body)

    def patch_namespaced_pod(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> None:
        self.completed.append(name)

    def delete_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str, name: str,
                                        **_: Any) -> None:
        self.deleted.append(name)

    # the stuck Job's node: created, Ready at once, then lost and given back
    def create_node(self, body: dict[str, Any], **_: Any) -> None:
        self.nodes.append(("create", body["metadata"]["name"], body))

    def read_node(self, name: str, **_: Any) -> Any:
        ready = SimpleNamespace(type="Ready", status="True")
        taint = SimpleNamespace(key="node.kubernetes.io/not-ready", value=None, effect="NoSchedule")
        return SimpleNamespace(status=SimpleNamespace(conditions=[ready]), spec=SimpleNamespace(taints=[taint]))

    def patch_node(self, name: str, body: dict[str, Any], **_: Any) -> None:
        self.nodes.append(("patch", name, body))

    def patch_node_status(self, name: str, body: dict[str, Any], **_: Any) -> None:
        self.nodes.append(("status", name, body))

    # the driver and the timeline
    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.jobs.get(name)

    def running(self, name: str) -> list[Any]:
        return [SimpleNamespace(name=f"{name}-pod-0")] if name in self.jobs else []


def ago(seconds: float) -> str:
    return stamp(datetime.now(UTC) - timedelta(seconds=seconds))


def test_a_deadline_and_a_ttl_are_timed_from_the_status_and_the_job_gone() -> None:
    world, timed, stop = World(), TimedJobs(), threading.Event()
    follower = threading.Thread(target=_follow_timed, args=(timed, "ns", world, world, world, world, stop, 1, False))
    follower.start()
    try:
        deadline = time.monotonic() + 5
        while len(world.created) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        specs = {body["metadata"]["name"]: body["spec"] for body in world.created}
        assert specs["timed-deadline-0"]["activeDeadlineSeconds"] == TIMED_DEADLINE_SECONDS
        assert specs["timed-ttl-0"]["ttlSecondsAfterFinished"] == TIMED_TTL_SECONDS
        world.jobs["timed-ttl-0"] = {"status": {"phase": "Running"}}
        world.jobs["timed-deadline-0"] = {"status": {"phase": "Running", "startTime": ago(TIMED_DEADLINE_SECONDS + 3),
                                                     "conditions": [{"type": "DeadlineExceeded", "status": "False"}]}}
        time.sleep(0.7)
        assert world.completed == ["timed-ttl-0-pod-0"], "the TTL Job's pods are completed once running"
        assert timed.late["deadline"] == {}, "a DeadlineExceeded that is not True is not the deadline firing"
        world.jobs["timed-deadline-0"]["status"]["conditions"] = [
            {"type": "DeadlineExceeded", "status": "True", "lastTransitionTime": ago(600)}]
        world.jobs["timed-ttl-0"] = {"status": {"phase": "Succeeded", "completionTime": ago(TIMED_TTL_SECONDS + 2)}}
        time.sleep(0.7)
        del world.jobs["timed-ttl-0"]
        follower.join(5)
        assert not follower.is_alive(), "every timed Job timed: the follower ends by itself"
    finally:
        stop.set()
        follower.join(5)
    late_deadline, late_ttl = timed.late["deadline"]["timed-deadline-0"], timed.late["ttl"]["timed-ttl-0"]
    assert 2 <= late_deadline <= 6, "seen now, not the condition's stamped lastTransitionTime (10 minutes ago)"
    assert 1 <= late_ttl <= 6
    assert timed.missing == []
    assert "1 of 1" in timed.summary("deadline") and "1 of 1" in timed.summary("ttl")


def test_a_timed_job_that_never_fires_is_named_missing_and_the_pass_reports_it() -> None:
    world, timed, stop = World(), TimedJobs(), threading.Event()
    follower = threading.Thread(target=_follow_timed, args=(timed, "ns", world, world, world, world, stop, 1, False))
    follower.start()
    time.sleep(0.3)
    stop.set()
    follower.join(5)
    assert timed.missing == ["timed-deadline-0", "timed-ttl-0"]
    assert timed.summary("deadline") == "- (0 of 1)"
    fresh = PassResult(install=SimpleNamespace(kueue=False), jobs=1).timed  # type: ignore[arg-type]
    assert fresh.late == {"deadline": {}, "ttl": {}, "stuck": {}}


def test_a_stuck_drain_is_timed_from_the_delete_on_a_lost_node_of_its_own() -> None:
    world, timed, stop = World(), TimedJobs(), threading.Event()
    follower = threading.Thread(target=_follow_timed, args=(timed, "ns", world, world, world, world, stop, 0, True))
    follower.start()
    try:
        deadline = time.monotonic() + 5
        while not world.created:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        [body] = world.created
        assert body["spec"]["drain"] == {"stuckAfterSeconds": TIMED_STUCK_AFTER_SECONDS}
        pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {STUCK_NODE_KEY: "true"}, "its pods go to its node alone"
        created = world.nodes[0]
        assert created[0] == "create" and created[2]["spec"]["taints"][0]["key"] == STUCK_NODE_KEY
        assert ("patch", created[1], {"spec": {"taints": []}}) in world.nodes, "the not-ready taint removed"
        world.jobs["timed-stuck-0"] = {"status": {"phase": "Running"}}
        world.running = lambda name: [SimpleNamespace(name=f"{name}-pod-{i}") for i in range(2)]  # type: ignore
        while not world.deleted:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        lost = [entry for entry in world.nodes if entry[0] == "status"]
        assert lost and lost[0][2]["status"]["conditions"][0]["status"] == "Unknown", "lost before the delete"
        world.jobs["timed-stuck-0"] = {"status": {"phase": "Terminating", "conditions": [
            {"type": "DrainStuck", "status": "True", "message": "pods on lost nodes"}]}}
        follower.join(5)
        assert not follower.is_alive()
    finally:
        stop.set()
        follower.join(5)
    late = timed.late["stuck"]["timed-stuck-0"]
    assert -TIMED_STUCK_AFTER_SECONDS <= late <= -TIMED_STUCK_AFTER_SECONDS + 3, "seen at once, counted from the delete"
    assert world.nodes[-1][2] == {"metadata": {"labels": {"type": "kwok"}}}, "the node given back to kwok"
