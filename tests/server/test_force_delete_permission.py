"""May the hooks delete pods (the opt-in force delete)? ``Reader.pod_delete_allowed`` (a SelfSubjectAccessReview,
live) on the wire-level fake, in snapshots and recordings, and the writer's 403 as a counted outcome."""

from __future__ import annotations

import time

import pytest

import podread
from hooks.core.actions import ForceDeletePod
from hooks.server.effects import WRITES, Effects
from hooks.server.writer import ApiWriter
from hooks.tools.scenario import pods_document
from podread import PodReadError, Reader, SnapshotLister, reader_from_snapshot
from podread.access import AccessClient, SnapshotAccess, allowed_in, review_body
from tests.fakekube.faults import Fault
from tests.fakekube.server import FakeKubeServer
from tests.support import make_pod
from tests.support.uids import uid

pytest_plugins = ["tests.fakekube.fixtures"]

REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def reader_on(fake_kube: FakeKubeServer) -> Reader:
    return Reader(SnapshotLister(), SnapshotLister(), access=AccessClient(fake_kube.api_client(retries=False)))


def test_the_review_asks_for_delete_pods_in_the_namespace_and_reads_allowed(fake_kube: FakeKubeServer) -> None:
    fake_kube.writes.pod_delete_denied.add("team-b")
    reader = reader_on(fake_kube)
    with podread.recording(keep_pods=True) as reads:
        assert reader.pod_delete_allowed("team-a") is True
        assert reader.pod_delete_allowed("team-b") is False
    sent = [r for r in fake_kube.requests if r.path == REVIEWS]
    assert [r.method for r in sent] == ["POST", "POST"]
    assert [(r.method, r.source, r.outcome, r.items) for r in reads] == [
        ("pod_delete_allowed", "live", "ok", ({"namespace": "team-a", "allowed": True},)),
        ("pod_delete_allowed", "live", "ok", ({"namespace": "team-b", "allowed": False},))]
    assert review_body("team-a")["spec"]["resourceAttributes"] == {
        "namespace": "team-a", "verb": "delete", "group": "", "resource": "pods"}


@pytest.mark.parametrize(("fault", "code"), [
    (Fault.error(REVIEWS, 500), "http-500"),
    (Fault.error(REVIEWS, 403), "http-403"),
    (Fault.dropped(REVIEWS), "dropped"),
    (Fault.raw(REVIEWS, 201, b'{"kind": "SelfSubjectAccessReview", "status": {}}'), "invalid-json"),
    (Fault.raw(REVIEWS, 201, b'{"kind": "Status", "status": {"allowed": true}}'), "invalid-json"),
    (Fault.raw(REVIEWS, 201, b"not json"), "invalid-json"),
])
def test_a_review_that_fails_is_unknown_never_allowed(fake_kube: FakeKubeServer, fault: Fault, code: str) -> None:
    fake_kube.inject(fault)
    with pytest.raises(PodReadError) as failed:
        reader_on(fake_kube).pod_delete_allowed("team-a")
    assert (failed.value.method, failed.value.source, failed.value.code) == ("pod_delete_allowed", "live", code)


def test_a_review_is_bounded_by_the_hook_calls_deadline(fake_kube: FakeKubeServer) -> None:
    fake_kube.inject(Fault.slow(REVIEWS, 5.0))
    started = time.monotonic()
    with podread.deadline(0.3), pytest.raises(PodReadError):
        reader_on(fake_kube).pod_delete_allowed("team-a")
    assert time.monotonic() - started < 3.0
    with podread.deadline(0.01) as _, pytest.raises(PodReadError) as late:
        time.sleep(0.05)
        reader_on(fake_kube).pod_delete_allowed("team-a")
    assert late.value.code == "deadline", "not sent once the deadline has passed"


def test_without_a_reviewer_or_in_a_snapshot_without_answers_the_read_fails() -> None:
    with pytest.raises(PodReadError) as failed:
        Reader(SnapshotLister(), SnapshotLister()).pod_delete_allowed("team-a")
    assert failed.value.code == "no-live-client"
    with pytest.raises(PodReadError):
        reader_from_snapshot({"live": {"pods": []}}).pod_delete_allowed("team-a")
    snapshot = reader_from_snapshot({"live": {"pods": []}, "access": {"allowed": {"team-a": True}}})
    assert (snapshot.pod_delete_allowed("team-a"), snapshot.pod_delete_allowed("team-b")) == (True, False)
    with pytest.raises(PodReadError) as refused:
        reader_from_snapshot({"live": {"pods": []}, "access": {"error": "boom", "code": "timeout"}}
                             ).pod_delete_allowed("team-a")
    assert refused.value.code == "timeout"
    with pytest.raises(ValueError):
        reader_from_snapshot({"live": {"pods": []}, "access": {"allowed": {"team-a": "yes"}}})


def test_a_recording_keeps_the_answers_for_replay() -> None:
    reader = Reader(SnapshotLister(), SnapshotLister(), access=SnapshotAccess({"team-a": True}))
    with podread.recording(keep_pods=True) as reads:
        reader.pod_delete_allowed("team-a")
        reader.pod_delete_allowed("team-b")
    document = pods_document(reads)
    assert document["access"] == {"allowed": {"team-a": True, "team-b": False}}
    replay = reader_from_snapshot(document)
    assert (replay.pod_delete_allowed("team-a"), replay.pod_delete_allowed("team-b")) == (True, False)
    failing = Reader(SnapshotLister(), SnapshotLister(), access=SnapshotAccess(error="refused", code="refused"))
    with podread.recording(keep_pods=True) as reads, pytest.raises(PodReadError):
        failing.pod_delete_allowed("team-a")
    assert pods_document(reads)["access"] == {"error": "refused", "code": "refused"}
    assert "live" in pods_document(reads) and "error" not in pods_document(reads)["live"], \
        "a failed review never fails the replay's pod reads"


def test_allowed_in_takes_only_a_boolean() -> None:
    assert allowed_in({"kind": "SelfSubjectAccessReview", "status": {"allowed": False}}, "r") is False
    for body in ({}, {"status": {"allowed": "true"}}, {"status": None}, [], None, {"status": {"allowed": 1}}):
        with pytest.raises(PodReadError):
            allowed_in(body, "r")


def test_a_refused_force_delete_is_counted_as_forbidden_never_raised(fake_kube: FakeKubeServer) -> None:
    pod = make_pod("train-0-worker-0-0", job="train", namespace="team-b", workload="train-0")
    pod["metadata"]["uid"] = uid("pod/x")
    fake_kube.put_pod(pod)
    fake_kube.inject(Fault.error("/api/v1/namespaces/team-b/pods/", 403))
    writer = ApiWriter(fake_kube.api_client(retries=False))
    action = ForceDeletePod("team-b", "train-0-worker-0-0", uid("pod/x"), "gpu-1", "node gpu-1 is deleted")
    assert writer.force_delete_pod(action) == "forbidden"
    assert fake_kube.get_pod("team-b", "train-0-worker-0-0") is not None
    before = WRITES.labels("force-delete-pod", "forbidden")._value.get()
    effects = Effects(writer, instance="test")
    effects._queue_action(action)
    assert effects.flush()
    assert WRITES.labels("force-delete-pod", "forbidden")._value.get() == before + 1
    effects._queue_action(action)
    assert effects.flush()
    assert WRITES.labels("force-delete-pod", "forbidden")._value.get() == before + 2, \
        "a refused delete is not remembered: asked again, it is sent again (the Role may be bound by then)"
