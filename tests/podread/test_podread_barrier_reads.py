"""The reads the drain barrier needs beyond JOB_LABEL (a pod whose job label was removed must still be
found): launchers by their own label, workload pods by JobSet's labels, list answers that must be
PodLists, and one deadline per call."""

from __future__ import annotations

import threading
import time

import orjson
import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import (
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    ApiError,
    DeadlineExceeded,
    LiveClient,
    PodCache,
    PodSelector,
    Reader,
    ReadMetrics,
    reader_from_snapshot,
)
from podread.reader import MAX_SET_VALUES
from tests.fakekube import FakeKubeServer, Fault, make_job_pods
from tests.support.fake_lister import FakeLister, pod

PODS_PATH = "/api/v1/namespaces/team-a/pods"
JOB = PodSelector(namespace="team-a", labels={JOB_LABEL: "llama"})


def names(pods: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def live_client(server: FakeKubeServer, **options) -> LiveClient:
    options.setdefault("timeout_seconds", 2.0)
    return LiveClient(server.api_client(retries=False), metrics=ReadMetrics(CollectorRegistry()), **options)


# ---- launchers by LAUNCHER_LABEL, every attempt -----------------------------------------------------

def test_active_launcher_pods_reads_every_attempt_live_by_the_launcher_label() -> None:
    launchers = [pod(f"l-{attempt}", job=None, phase=phase,
                     labels={LAUNCHER_LABEL: "llama", JOBSET_NAME_LABEL: f"llama-{attempt}"})
                 for attempt, phase in ((0, "Running"), (3, "Pending"), (5, "Succeeded"))]
    other = pod("l-gpt", job=None, labels={LAUNCHER_LABEL: "gpt"})
    cached = FakeLister(launchers)
    live = FakeLister([*launchers, other, pod("w-0")])
    reader = Reader(cached, live)
    assert names(reader.active_launcher_pods("team-a", "llama")) == ["l-0", "l-3"]
    assert cached.calls == []
    assert live.calls[0].label_selector() == f"{LAUNCHER_LABEL}=llama" and live.calls[0].namespace == "team-a"


def test_active_launcher_pods_with_no_live_client_raises() -> None:
    with pytest.raises(podread.NoLiveReaderError):
        Reader(FakeLister(), None).active_launcher_pods("team-a", "llama")


# ---- pods by the labels JobSet writes -----------------------------------------------------------------

def test_active_attempt_pods_finds_pods_whose_nvcre_labels_were_removed_or_changed() -> None:
    stripped = pod("w-stripped", job=None, labels={JOBSET_NAME_LABEL: "llama-1"})
    changed = pod("w-changed", job="gpt", labels={JOBSET_NAME_LABEL: "llama-0"})
    done = pod("w-done", job=None, phase="Failed", labels={JOBSET_NAME_LABEL: "llama-0"})
    later = pod("w-later", job=None, labels={JOBSET_NAME_LABEL: "llama-3"})
    lookalikes = [pod("x-1", job=None, labels={JOBSET_NAME_LABEL: "llama-0-1"}),
                  pod("x-2", job=None, labels={JOBSET_NAME_LABEL: "llama-x"})]
    live = FakeLister([stripped, changed, done, later, *lookalikes])
    reader = Reader(FakeLister(), live)
    assert names(reader.active_attempt_pods("team-a", "llama", 2)) == ["w-changed", "w-stripped"]
    (selector,) = live.calls
    assert selector.label_selector() == f"{JOBSET_NAME_LABEL} in (llama-0,llama-1,llama-2)"


def test_active_attempt_pods_past_the_set_limit_reads_every_jobset_pod_once() -> None:
    pods = [pod(f"w-{n}", job=None, labels={JOBSET_NAME_LABEL: f"llama-{n}"}) for n in (0, 70, 4000)]
    pods += [pod("x-1", job=None, labels={JOBSET_NAME_LABEL: "llama-007"}),
             pod("x-2", job=None, labels={JOBSET_NAME_LABEL: "llama2-1"})]
    live = FakeLister(pods)
    found = Reader(FakeLister(), live).active_attempt_pods("team-a", "llama", MAX_SET_VALUES)
    assert names(found) == ["w-0", "w-4000", "w-70"]  # every attempt, never another Job's
    (selector,) = live.calls
    assert selector.label_selector() == JOBSET_NAME_LABEL


def test_active_attempt_pods_through_the_real_client_and_the_fake_api_server(fake_kube: FakeKubeServer) -> None:
    workers = make_job_pods("llama", 2, "team-a", attempt=1)
    for worker in workers:
        del worker["metadata"]["labels"][JOB_LABEL]
    fake_kube.put_pods([*workers, *make_job_pods("llama", 1, "team-a", attempt=7),
                        *make_job_pods("gpt", 2, "team-a", attempt=1)])
    reader = Reader(FakeLister(), live_client(fake_kube))
    assert len(reader.active_attempt_pods("team-a", "llama", 3)) == 2
    request = [r for r in fake_kube.requests if r.path == PODS_PATH][-1]
    assert request.query["labelSelector"] == f"{JOBSET_NAME_LABEL} in (llama-0,llama-1,llama-2,llama-3)"


def test_a_set_term_needs_a_value_and_renders_sorted() -> None:
    with pytest.raises(ValueError):
        PodSelector(label_in={JOBSET_NAME_LABEL: ()})
    selector = PodSelector(label_in={JOBSET_NAME_LABEL: ("b", "a", "b")}, labels={JOB_LABEL: "j"})
    assert selector.label_selector() == f"{JOB_LABEL}=j,{JOBSET_NAME_LABEL} in (a,b)"
    assert selector.matches({"metadata": {"labels": {JOB_LABEL: "j", JOBSET_NAME_LABEL: "a"}}})
    assert not selector.matches({"metadata": {"labels": {JOB_LABEL: "j", JOBSET_NAME_LABEL: "c"}}})


# ---- a 200 that is not a PodList is a failed read --------------------------------------------------

NOT_POD_LISTS = {
    "empty-object": b"{}",
    "items-null": b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}',
    "no-items": b'{"kind":"PodList","apiVersion":"v1","metadata":{}}',
    "status-200": b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}',
    "items-object": b'{"kind":"PodList","items":{}}',
    "items-of-strings": b'{"kind":"PodList","items":["a"]}',
    "bare-items-of-another-kind": b'{"kind":"NodeList","items":[]}',
    "array": b"[]",
    "continue-not-a-string": b'{"kind":"PodList","items":[],"metadata":{"continue":7}}',
}


@pytest.mark.parametrize("body", list(NOT_POD_LISTS.values()), ids=list(NOT_POD_LISTS))
def test_a_200_that_is_not_a_pod_list_is_a_failed_read(fake_kube: FakeKubeServer, body: bytes) -> None:
    fake_kube.put_pods(make_job_pods("llama", 1, "team-a", phase="Succeeded"))
    fake_kube.inject(Fault.answer(PODS_PATH, body))
    metrics = ReadMetrics(CollectorRegistry())
    live = live_client(fake_kube)
    reader = Reader(PodCache(FakeLister([pod("w-0", phase="Succeeded")])), live, metrics=metrics)
    with pytest.raises(ApiError) as raised:
        reader.active_job_pods("team-a", "llama")  # the finished cached pod sends it live
    assert raised.value.code == "not-a-pod-list"
    assert raised.value.cause == "the API server's answer is not a PodList"
    assert metrics.read_errors.labels("active_job_pods", "live", "not-a-pod-list")._value.get() == 1


def test_a_pod_list_without_kind_is_still_read() -> None:
    from podread.live import pod_list_items

    assert pod_list_items({"items": [{"metadata": {"name": "a"}}]}, "list") == [{"metadata": {"name": "a"}}]


@pytest.mark.parametrize("doc", [{"items": None}, {"kind": "Status", "items": []}, {"kind": "Status"},
                                 {"kind": "PodList"}])
def test_a_snapshot_that_is_not_a_pod_list_is_refused(doc: dict) -> None:
    with pytest.raises(ValueError):
        reader_from_snapshot(doc)


def test_a_snapshot_error_keeps_its_class() -> None:
    reader = reader_from_snapshot({"live": {"error": "read timeout=2.7", "code": "timeout"}})
    with pytest.raises(ApiError) as raised:
        reader.active_launcher_pods("team-a", "llama")
    assert (raised.value.code, raised.value.cause) == ("timeout", "the API server did not answer in time")
    http = reader_from_snapshot({"live": {"error": "boom", "code": "http-503"}})
    with pytest.raises(ApiError) as raised:
        http.namespace_pods("x")
    assert raised.value.status == 503 and raised.value.cause == "the API server answered HTTP 503"


# ---- one deadline for every read of a call -----------------------------------------------------------

def test_sequential_lists_share_one_deadline(fake_kube: FakeKubeServer) -> None:
    """Three lists of 0.6 s each under a 1.0 s deadline: the second is cut short, the third is not
    even sent, and the whole takes about the deadline, not 1.8 s."""
    fake_kube.put_pods(make_job_pods("llama", 1, "team-a"))
    fake_kube.inject(Fault.slow(PODS_PATH, 0.6))
    client = live_client(fake_kube, timeout_seconds=3.0)
    outcomes: list[str] = []
    started = time.monotonic()
    with podread.deadline(1.0):
        for _ in range(3):
            try:
                client.list_pods(JOB)
                outcomes.append("ok")
            except podread.PodReadError as error:
                outcomes.append(error.code)
    took = time.monotonic() - started
    assert outcomes[0] == "ok" and outcomes[1] == "timeout" and outcomes[2] == "deadline"
    assert took < 1.4
    assert len([r for r in fake_kube.requests if r.path == PODS_PATH]) <= 2  # the third was never sent


def test_a_passed_deadline_sends_no_live_read_at_all() -> None:
    live = FakeLister([pod("w-0")])
    reader = Reader(FakeLister([pod("w-0", phase="Succeeded")]), live)
    with podread.deadline(0.01):
        time.sleep(0.02)
        for read in (lambda: reader.active_job_pods("team-a", "llama"),
                     lambda: reader.active_launcher_pods("team-a", "llama"),
                     lambda: reader.active_attempt_pods("team-a", "llama", 1)):
            with pytest.raises(DeadlineExceeded) as raised:
                read()
            assert raised.value.source == "live"
    assert live.calls == []
    assert reader.active_launcher_pods("team-a", "llama") == []  # outside the deadline it reads again


def test_deadlines_nest_and_the_earlier_wins() -> None:
    with podread.deadline(5.0) as outer, podread.deadline(60.0) as inner:
        assert inner == outer
    assert podread.calldeadline.remaining() is None


def test_a_waiter_on_another_threads_cache_fill_waits_no_longer_than_its_deadline() -> None:
    slow = FakeLister([pod("w-0")], delay=1.0)
    cache = PodCache(slow)
    leader = threading.Thread(target=cache.list_pods, args=(JOB,))
    leader.start()
    time.sleep(0.1)
    started = time.monotonic()
    with podread.deadline(0.2), pytest.raises(DeadlineExceeded):
        cache.list_pods(JOB)
    assert time.monotonic() - started < 0.6
    leader.join()


def test_a_slow_page_is_given_only_what_is_left(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_pods(make_job_pods("llama", 1, "team-a"))
    client = live_client(fake_kube, timeout_seconds=5.0)
    with podread.deadline(0.5):
        client.list_pods(JOB)
    request = [r for r in fake_kube.requests if r.path == PODS_PATH][-1]
    assert request.query["timeoutSeconds"] == "1"  # the server-side timeout follows the deadline


def test_the_whole_story_goes_to_the_log_and_the_class_to_the_status(fake_kube: FakeKubeServer) -> None:
    fake_kube.inject(Fault.answer(PODS_PATH, orjson.dumps({"kind": "Status", "message": "secret detail 42"})))
    with pytest.raises(ApiError) as raised:
        live_client(fake_kube).list_pods(JOB)
    assert "Status" in str(raised.value) and "42" not in raised.value.cause
