"""Evidence that outlives a pod (issue 34 item 5): ``WatchedPods`` keeps the pods its watch saw deleted
that tell a failure, bounded in count and age, and ``Reader.attempt_failure_pods`` returns them beside
the live failing pods, annotated ``DEPARTED_ANNOTATION``; a live pod of the same name wins, and a failed
live read is still a failed read. Over the wire (the fake API server) as in production, then through a
recording and its replay."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from hooks.tools.scenario import pods_document
from podread import (
    DEPARTED_ANNOTATION,
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LiveClient,
    PodCache,
    Reader,
    ReadMetrics,
    reader_from_snapshot,
    recording,
)
from podread import watch as watch_module
from podread.errors import PodReadError
from podread.slim import evidence, slim
from podread.snapshot import SnapshotLister
from podread.watch import Backoff, PodWatch, WatchedPods
from tests.fakekube import FakeKubeServer, Fault, make_job_pods

NS = "team-a"
WORKLOAD = "llama-0"
WALL = 1_780_000_000.0  # 2026-05-28T20:26:40Z


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def preempted(name: str, rv: int, *, workload: str = WORKLOAD, namespace: str = NS, reason: str =
              "PreemptionByScheduler", phase: str = "Running") -> dict[str, Any]:
    """A worker as the API server sends it in the DELETED event of a preemption: whole, with
    ``DisruptionTarget``, a terminated container and fields the evidence drops."""
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": str(rv),
                     "labels": {JOB_LABEL: "llama", JOBSET_NAME_LABEL: workload},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * 500},
                     "managedFields": [{"manager": "kube-scheduler"}],
                     "deletionTimestamp": "2026-05-28T20:26:00Z"},
        "spec": {"nodeName": "node-7", "containers": [{"name": "worker", "image": "big"}]},
        "status": {"phase": phase, "reason": "Preempted", "message": "preempted by high/job",
                   "startTime": "2026-05-28T20:20:00Z",
                   "conditions": [{"type": "Ready", "status": "False"},
                                  {"type": "DisruptionTarget", "status": "True", "reason": reason,
                                   "message": "high/job preempted it", "lastTransitionTime": "2026-05-28T20:25:59Z",
                                   "observedGeneration": 1}],
                   "containerStatuses": [{"name": "worker", "restartCount": 0, "image": "big", "imageID": "sha",
                                          "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                                                   "message": "out of memory", "signal": 9,
                                                                   "finishedAt": "2026-05-28T20:26:00Z",
                                                                   "containerID": "containerd://x"}}}]},
    }


def quiet(name: str, rv: int) -> dict[str, Any]:
    """A running worker with nothing to say: deleted, it is not kept."""
    pod = preempted(name, rv)
    pod["status"] = {"phase": "Running"}
    return pod


def store(clock: Clock | None = None) -> WatchedPods:
    return WatchedPods(None, ttl_seconds=5.0, clock=clock or Clock(), metrics=ReadMetrics(CollectorRegistry()),
                       wall_clock=lambda: WALL)


def delete(held: WatchedPods, pod: dict[str, Any], rv: int | None = None) -> bool:
    gone = copy.deepcopy(pod)
    if rv is not None:
        gone["metadata"]["resourceVersion"] = str(rv)
    return held.apply("DELETED", slim(gone), last_seen=evidence(gone))


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# ---- the projection -----------------------------------------------------------------------------------

def test_the_evidence_keeps_what_a_classifier_reads_and_drops_the_rest() -> None:
    kept = evidence(preempted("w-0", 5))
    status = kept["status"]
    assert kept["spec"] == {"nodeName": "node-7"}
    assert (status["phase"], status["reason"], status["message"]) == ("Running", "Preempted", "preempted by high/job")
    assert {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": "high/job preempted it", "lastTransitionTime": "2026-05-28T20:25:59Z"} in status["conditions"]
    assert status["containerStatuses"] == [{"name": "worker", "restartCount": 0, "state": {"terminated": {
        "exitCode": 137, "reason": "OOMKilled", "message": "out of memory", "signal": 9,
        "finishedAt": "2026-05-28T20:26:00Z"}}}]
    assert "annotations" not in kept["metadata"] and "managedFields" not in kept["metadata"]
    assert kept["metadata"]["labels"][JOBSET_NAME_LABEL] == WORKLOAD


def test_an_admission_error_s_status_is_kept() -> None:
    pod = preempted("w-0", 5, phase="Failed")
    pod["status"] = {"phase": "Failed", "reason": "UnexpectedAdmissionError",
                     "message": "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu"}
    assert evidence(pod)["status"] == pod["status"]


# ---- WatchedPods ------------------------------------------------------------------------------------------

def test_a_watch_that_sees_deleted_keeps_the_pod_as_last_seen_and_annotated() -> None:
    held = store()
    victim = preempted("w-0", 5)
    held.replace([slim(victim), slim(quiet("w-1", 6))], "6")
    assert delete(held, victim, 7) and delete(held, quiet("w-1", 6), 8)
    found = held.departed(NS, WORKLOAD)
    assert names(found) == ["w-0"], "a deleted pod that tells no failure is not kept"
    assert found[0]["metadata"]["annotations"] == {DEPARTED_ANNOTATION: "2026-05-28T20:26:40Z"}
    assert found[0]["status"]["conditions"][1]["reason"] == "PreemptionByScheduler"
    assert held.answer((watch_module.JOB_INDEX_FIELD, NS, "llama")) == [], "gone from the cache itself"
    assert held.departed(NS, "llama-1") == [] and held.departed("other", WORKLOAD) == []


def test_a_stale_deleted_event_keeps_nothing() -> None:
    held = store()
    held.replace([slim(preempted("w-0", 9))], "9")
    assert not delete(held, preempted("w-0", 4))
    assert held.departed(NS, WORKLOAD) == []


def test_departed_pods_are_bounded_in_age(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    held = store(clock)
    held.replace([], "1")
    delete(held, preempted("w-0", 2))
    clock.now += watch_module.DEPARTED_SECONDS - 1
    delete(held, preempted("w-1", 3))
    assert names(held.departed(NS, WORKLOAD)) == ["w-0", "w-1"]
    clock.now += 1
    assert names(held.departed(NS, WORKLOAD)) == ["w-1"]
    clock.now += watch_module.DEPARTED_SECONDS
    assert held.departed(NS, WORKLOAD) == [] and held.departed_count() == 0


def test_departed_pods_are_bounded_in_count_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "MAX_DEPARTED", 3)
    held = store()
    held.replace([], "1")
    for index in range(5):
        delete(held, preempted(f"w-{index}", 10 + index))
    assert names(held.departed(NS, WORKLOAD)) == ["w-2", "w-3", "w-4"] and held.departed_count() == 3


def test_a_relist_keeps_departed_pods_and_a_reset_forgets_them() -> None:
    held = store()
    held.replace([], "1")
    delete(held, preempted("w-0", 2))
    held.replace([], "5")
    assert names(held.departed(NS, WORKLOAD)) == ["w-0"]
    held.reset()
    assert held.departed(NS, WORKLOAD) == []


def test_departed_pods_are_answered_when_the_store_is_stale() -> None:
    clock = Clock()
    held = store(clock)
    held.replace([], "1")
    delete(held, preempted("w-0", 2))
    clock.now += 60  # far past the TTL: the cache answers nothing, the past is still the past
    assert held.answer((watch_module.JOB_INDEX_FIELD, NS, "llama")) is None
    assert names(held.departed(NS, WORKLOAD)) == ["w-0"]


# ---- the Reader ----------------------------------------------------------------------------------------

class Departed:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods

    def departed_pods(self, namespace: str, workload: str) -> list[dict[str, Any]]:
        return [p for p in self.pods if p["metadata"]["labels"][JOBSET_NAME_LABEL] == workload]


def annotated(pod: dict[str, Any]) -> dict[str, Any]:
    kept = evidence(pod)
    kept["metadata"]["annotations"] = {DEPARTED_ANNOTATION: "2026-05-28T20:26:40Z"}
    return kept


def test_the_reader_adds_departed_pods_and_a_live_pod_of_the_same_name_wins() -> None:
    live_failed = preempted("w-2", 9, phase="Failed")
    live_running = quiet("w-1", 8)  # the same name as a departed pod: the live one is newer, and says nothing
    live = SnapshotLister([live_failed, live_running])
    departed = Departed([annotated(preempted("w-0", 3)), annotated(preempted("w-1", 4)),
                         annotated(preempted("w-2", 5)), annotated(preempted("x-0", 6, workload="llama-1"))])
    found = Reader(live, live, departed=departed).attempt_failure_pods(NS, WORKLOAD)
    assert names(found) == ["w-0", "w-2"]
    assert DEPARTED_ANNOTATION in found[0]["metadata"]["annotations"]
    assert found[1] is live_failed, "the live pod, not the departed one"


def test_a_failed_live_read_is_a_failed_read_never_departed_pods_alone() -> None:
    failing = SnapshotLister(error="connection refused", code="transport")
    reader = Reader(failing, failing, departed=Departed([annotated(preempted("w-0", 3))]))
    with pytest.raises(PodReadError) as failed:
        reader.attempt_failure_pods(NS, WORKLOAD)
    assert (failed.value.method, failed.value.source) == ("attempt_failure_pods", "live")


def test_without_a_departed_source_nothing_is_added() -> None:
    live = SnapshotLister([preempted("w-2", 9, phase="Failed")])
    assert names(Reader(live, live).attempt_failure_pods(NS, WORKLOAD)) == ["w-2"]


def test_a_recording_replays_the_departed_pods_as_they_were_and_never_as_live_pods() -> None:
    departed_pod = annotated(preempted("w-0", 3))
    live = SnapshotLister([preempted("w-2", 9, phase="Failed")])
    reader = Reader(live, live, departed=Departed([departed_pod]))
    with recording(keep_pods=True) as reads:
        answered = reader.attempt_failure_pods(NS, WORKLOAD)
    assert [(r.method, r.source, r.pods) for r in reads] == [("attempt_failure_pods", "live", 1),
                                                            ("attempt_failure_pods", "departed", 1)]
    document = pods_document(reads)
    assert document["departed"] == {"pods": [departed_pod]} and names(document["live"]["pods"]) == ["w-2"]
    replayed = reader_from_snapshot(document)
    assert replayed.attempt_failure_pods(NS, WORKLOAD) == answered
    assert names(replayed.active_attempt_pods(NS, "llama", 0)) == [], "a departed pod is no pod of the server"


def test_a_recording_without_departed_pods_has_no_departed_side() -> None:
    live = SnapshotLister([preempted("w-2", 9, phase="Failed")])
    with recording(keep_pods=True) as reads:
        Reader(live, live, departed=Departed([])).attempt_failure_pods(NS, WORKLOAD)
    assert "departed" not in pods_document(reads)


# ---- over the wire ---------------------------------------------------------------------------------------

def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


@pytest.fixture
def wired() -> Iterator[tuple[FakeKubeServer, Reader, PodWatch]]:
    with FakeKubeServer() as server:
        metrics = ReadMetrics(CollectorRegistry())
        live = LiveClient(server.api_client(retries=False), timeout_seconds=5, metrics=metrics)
        held = WatchedPods(None, ttl_seconds=5.0, metrics=metrics)
        watch = PodWatch(live, held, watch_seconds=30, metrics=metrics, backoff=Backoff(0.01, 0.05), nudge_every=None)
        reader = Reader(PodCache(live, ttl_seconds=5.0, metrics=metrics, watches=[watch]), live, metrics=metrics)
        try:
            yield server, reader, watch
        finally:
            watch.stop()


def test_a_preempted_pod_deleted_on_the_server_is_still_read_as_a_failure(
        wired: tuple[FakeKubeServer, Reader, PodWatch]) -> None:
    server, reader, watch = wired
    made = make_job_pods("llama", 2, NS)
    server.put_pods(made)
    victim = made[0]["metadata"]["name"]
    watch.start()
    wait_until(lambda: watch.store.staleness() is not None and server.watches >= 1)
    server.update_pod(NS, victim, lambda p: p["status"].setdefault("conditions", []).append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}))
    server.delete_pod(NS, victim)
    wait_until(lambda: watch.store.departed_count() == 1)
    found = reader.attempt_failure_pods(NS, WORKLOAD)
    assert names(found) == [victim]
    assert found[0]["status"]["conditions"][-1]["reason"] == "PreemptionByScheduler"
    assert DEPARTED_ANNOTATION in found[0]["metadata"]["annotations"]
    server.inject(Fault(path=f"/api/v1/namespaces/{NS}/pods", status=503))
    with pytest.raises(PodReadError):
        reader.attempt_failure_pods(NS, WORKLOAD)
