"""The batch Job read of the drain barrier: ``JobClient`` through the real kubernetes
client against the fake API server (paged, consistent, bounded, every failure an ``ApiError``),
``Reader.attempt_jobs`` (the attempts' names, the MAX_SET_VALUES fallback, counted and traced) and
the snapshot lister."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import (
    JOBSET_NAME_LABEL,
    ApiError,
    DeadlineExceeded,
    JobClient,
    PodSelector,
    Reader,
    ReadMetrics,
    SnapshotJobs,
    calldeadline,
    reader_from_snapshot,
)
from podread import reader as reader_module
from podread.reader import MAX_SET_VALUES
from tests.fakekube import FakeKubeServer, Fault
from tests.support import make_batch_job
from tests.support.fake_lister import FakeLister

JOBS_PATH = "/apis/batch/v1/namespaces/team-a/jobs"


def job_client(server: FakeKubeServer, metrics: ReadMetrics | None = None, **options) -> JobClient:
    options.setdefault("timeout_seconds", 2.0)
    return JobClient(server.api_client(retries=False), metrics=metrics or ReadMetrics(CollectorRegistry()), **options)


def reader(server: FakeKubeServer, metrics: ReadMetrics | None = None, **options) -> Reader:
    metrics = metrics or ReadMetrics(CollectorRegistry())
    return Reader(FakeLister(), FakeLister(), metrics=metrics, jobs=job_client(server, metrics, **options))


def names(objects: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


def put_attempts(server: FakeKubeServer) -> None:
    for workload, index in (("llama-0", 0), ("llama-0", 1), ("llama-2", 0), ("llama-9", 0), ("gpt-0", 0)):
        server.put_batch_job(make_batch_job(workload, name=f"{workload}-worker-{index}", namespace="team-a"))
    server.put_batch_job(make_batch_job("llama-0", name="llama-0-worker-0", namespace="other"))


def test_attempt_jobs_lists_the_attempts_batch_jobs_live_by_jobsets_label(fake_kube: FakeKubeServer) -> None:
    put_attempts(fake_kube)
    fake_kube.put_batch_job(make_batch_job("llama-1", namespace="team-a", deleting="2026-01-01T00:00:00Z"))
    fake_kube.put_batch_job(make_batch_job("llama-7", namespace="team-a", job="llama"))  # past the bound
    fake_kube.put_batch_job(make_batch_job("llama-2", name="llama-2-worker-1", namespace="team-a", job="llama"))
    found = reader(fake_kube).attempt_jobs("team-a", "llama", 2)
    # a Job being deleted counts: it still exists (the barrier decides which may create a pod); each Job once
    assert names(found) == ["llama-0-worker-0", "llama-0-worker-1", "llama-1-worker-0", "llama-2-worker-0",
                            "llama-2-worker-1", "llama-7-worker-0"]
    # the two lists are sent at once (issue 36 item 8): told apart by their selectors, not their order
    labelled, named = sorted((r for r in fake_kube.requests if r.path == JOBS_PATH),
                             key=lambda r: not r.query["labelSelector"].startswith("nvcre.nvidia.com/job="))
    assert labelled.query["labelSelector"] == "nvcre.nvidia.com/job=llama", "every attempt, no bound"
    assert named.query["labelSelector"] == f"{JOBSET_NAME_LABEL} in (llama-0,llama-1,llama-2)"
    assert not {"resourceVersion"} & {*labelled.query, *named.query}, "consistent reads: never from a cache"


def test_no_batch_job_left_is_an_empty_list(fake_kube: FakeKubeServer) -> None:
    fake_kube.put_batch_job(make_batch_job("gpt-0", namespace="team-a"))
    assert reader(fake_kube).attempt_jobs("team-a", "llama", 3) == []


def test_past_max_set_values_every_jobset_labelled_job_is_listed_and_the_jobs_own_kept(
        fake_kube: FakeKubeServer) -> None:
    put_attempts(fake_kube)
    fake_kube.put_batch_job(make_batch_job(f"llama-{MAX_SET_VALUES + 7}", namespace="team-a"))
    fake_kube.put_batch_job(make_batch_job("llama-x", namespace="team-a"))
    found = reader(fake_kube).attempt_jobs("team-a", "llama", MAX_SET_VALUES)
    assert names(found) == ["llama-0-worker-0", "llama-0-worker-1", "llama-2-worker-0",
                            f"llama-{MAX_SET_VALUES + 7}-worker-0", "llama-9-worker-0"]
    selectors = sorted(r.query["labelSelector"] for r in fake_kube.requests if r.path == JOBS_PATH)
    assert selectors == [JOBSET_NAME_LABEL, "nvcre.nvidia.com/job=llama"]


def test_the_list_is_paged_and_restarts_after_an_expired_continue(fake_kube: FakeKubeServer) -> None:
    for index in range(7):
        fake_kube.put_batch_job(make_batch_job("llama-0", name=f"llama-0-worker-{index}", namespace="team-a"))
    found = reader(fake_kube, page_size=3).attempt_jobs("team-a", "llama", 0)
    assert len(found) == 7
    pages = [r for r in fake_kube.requests if r.path == JOBS_PATH]
    # the labelled list (none carry the label: one page) and the named one in three, sent at once
    assert [r.query.get("limit") for r in pages] == ["3", "3", "3", "3"]
    assert sum("continue" in r.query for r in pages) == 2
    fake_kube.clear_requests()
    fake_kube.inject(Fault(path=JOBS_PATH, status=410, times=1))
    # the first page answered 410 is not a continued list: it fails, never "no Jobs"
    with pytest.raises(ApiError) as raised:
        reader(fake_kube, page_size=3).attempt_jobs("team-a", "llama", 0)
    assert raised.value.code == "http-410"


def test_an_expired_continue_token_restarts_the_list_from_the_first_page(fake_kube: FakeKubeServer) -> None:
    for index in range(4):
        fake_kube.put_batch_job(make_batch_job("llama-0", name=f"llama-0-worker-{index}", namespace="team-a"))
    client = job_client(fake_kube, page_size=2)
    original = client._page
    expired = []

    def page(*args, **kwargs):
        body = original(*args, **kwargs)
        if not expired and isinstance(body, dict) and (body.get("metadata") or {}).get("continue"):
            expired.append(fake_kube.expire_continue_tokens())
        return body

    client._page = page  # type: ignore[method-assign]
    found = Reader(FakeLister(), FakeLister(), jobs=client).attempt_jobs("team-a", "llama", 0)
    assert len(found) == 4 and expired == [1]
    firsts = [r for r in fake_kube.requests if r.path == JOBS_PATH and "continue" not in r.query]
    assert len(firsts) == 3, "the labelled list, then the named one started again from its first page"


@pytest.mark.parametrize(("fault", "code"), [
    (Fault(path=JOBS_PATH, status=403), "http-403"),
    (Fault(path=JOBS_PATH, status=503), "http-503"),
    (Fault(path=JOBS_PATH, drop=True), "dropped"),
    (Fault(path=JOBS_PATH, invalid_json=True), "invalid-json"),
    (Fault.answer(JOBS_PATH, b'{"kind":"PodList","items":[]}'), "not-a-job-list"),
    (Fault.answer(JOBS_PATH, b'{"kind":"JobList","items":null}'), "not-a-job-list"),
    (Fault.answer(JOBS_PATH, b"{}"), "not-a-job-list"),
    (Fault.answer(JOBS_PATH, b'{"kind":"Status","status":"Failure"}'), "not-a-job-list"),
    (Fault(path=JOBS_PATH, delay=3.0), "timeout"),
], ids=["403", "503", "dropped", "invalid-json", "a-pod-list", "items-null", "empty-object", "status-200",
        "slow"])
def test_every_failure_is_an_api_error_with_its_class_never_none(fake_kube: FakeKubeServer, fault: Fault,
                                                                  code: str) -> None:
    put_attempts(fake_kube)
    fake_kube.inject(fault)
    metrics = ReadMetrics(CollectorRegistry())
    with pytest.raises(podread.PodReadError) as raised:
        reader(fake_kube, metrics, timeout_seconds=1.0).attempt_jobs("team-a", "llama", 0)
    assert raised.value.code == code and raised.value.cause != podread.CAUSES["failed"]
    assert (raised.value.method, raised.value.source) == ("attempt_jobs", "live")
    # both lists are sent at once (issue 36 item 8): each one that failed is counted, the first raised
    assert metrics.read_errors.labels("attempt_jobs", "live", code)._value.get() >= 1
    sent = sum(metrics.job_api_requests.labels("namespace", outcome)._value.get() for outcome in ("ok", "error"))
    assert sent >= 1 and metrics.api_requests.labels("namespace", "error")._value.get() == 0


def test_the_hook_calls_deadline_bounds_the_list(fake_kube: FakeKubeServer) -> None:
    put_attempts(fake_kube)
    fake_kube.inject(Fault(path=JOBS_PATH, delay=3.0))
    read = reader(fake_kube, timeout_seconds=2.5)
    began = time.monotonic()
    with pytest.raises(podread.PodReadError), podread.deadline(0.4):
        read.attempt_jobs("team-a", "llama", 0)
    assert time.monotonic() - began < 1.5
    fake_kube.clear_requests()
    with pytest.raises(DeadlineExceeded), podread.deadline(0.05):
        time.sleep(0.1)
        read.attempt_jobs("team-a", "llama", 0)
    assert [r for r in fake_kube.requests if r.path == JOBS_PATH] == [], "nothing sent past the deadline"


def test_counted_timed_and_traced_as_a_reader_read(fake_kube: FakeKubeServer) -> None:
    put_attempts(fake_kube)
    metrics = ReadMetrics(CollectorRegistry())
    with podread.recording(keep_pods=True) as reads:
        found = reader(fake_kube, metrics).attempt_jobs("team-a", "llama", 0)
    assert metrics.reads.labels("attempt_jobs", "live", "ok")._value.get() == 2, "the labelled and the named list"
    assert metrics.job_api_requests.labels("namespace", "ok")._value.get() == 2
    assert metrics.api_requests.labels("namespace", "ok")._value.get() == 0, "no pod list was sent"
    labelled, named = reads
    assert (labelled.method, labelled.source, labelled.outcome, labelled.pods) == ("attempt_jobs", "live", "ok", 0)
    assert (named.method, named.source, named.outcome, named.pods) == ("attempt_jobs", "live", "ok", 2)
    assert named.items == tuple(found)


def test_without_a_job_lister_the_read_fails_never_none() -> None:
    with pytest.raises(podread.NoLiveReaderError):
        Reader(FakeLister(), FakeLister()).attempt_jobs("team-a", "llama", 0)


def test_a_job_list_is_namespaced() -> None:
    client = JobClient(FakeKubeServer().api_client(retries=False))
    with pytest.raises(ValueError):
        client.list_jobs(PodSelector(labels={JOBSET_NAME_LABEL: "llama-0"}))


def test_snapshot_jobs_and_the_snapshot_forms() -> None:
    jobs = [make_batch_job("llama-0", namespace="team-a"), make_batch_job("llama-4", namespace="team-a")]
    assert names(Reader(FakeLister(), FakeLister(), jobs=SnapshotJobs(jobs)).attempt_jobs("team-a", "llama", 1)) \
        == ["llama-0-worker-0"]
    scenario = reader_from_snapshot({"live": {"pods": []}, "jobs": {"items": jobs}})
    assert names(scenario.attempt_jobs("team-a", "llama", 4)) == ["llama-0-worker-0", "llama-4-worker-0"]
    failing = reader_from_snapshot({"live": {"pods": []}, "jobs": {"error": "boom", "code": "http-503"}})
    with pytest.raises(ApiError) as raised:
        failing.attempt_jobs("team-a", "llama", 0)
    assert raised.value.code == "http-503"
    # a snapshot that does not say which Jobs exist, a PodList included: unknown, not "none"
    for doc in ({"live": {"pods": []}}, {"kind": "PodList", "items": []}):
        with pytest.raises(ApiError) as raised:
            reader_from_snapshot(doc).attempt_jobs("team-a", "llama", 0)
        assert raised.value.code == "not-in-snapshot" and "snapshot" in raised.value.cause
    listed = reader_from_snapshot({"kind": "List", "items": [{"kind": "Job", **jobs[0]}]})
    assert names(listed.attempt_jobs("team-a", "llama", 0)) == ["llama-0-worker-0"]
    with pytest.raises(ValueError):
        reader_from_snapshot({"live": {"pods": []}, "jobs": {"items": None}})


class Meeting:
    """A ``JobLister`` whose lists each wait until ``parties`` of them are in flight at once (or
    ``timeout`` seconds: then that list fails), answering ``jobs`` for every selector."""

    def __init__(self, parties: int, jobs: list[dict] | None = None, timeout: float = 5.0,
                 fail: str = "") -> None:
        self.barrier = threading.Barrier(parties, timeout=timeout)
        self.jobs, self.fail = jobs or [], fail
        self.deadlines: list[float | None] = []

    def list_jobs(self, selector: PodSelector) -> list[dict]:
        self.deadlines.append(calldeadline.remaining())
        self.barrier.wait()  # BrokenBarrierError when the other list is not sent meanwhile
        if self.fail and self.fail in selector.describe():
            raise ApiError("list batch jobs: the API server answered 503", code="http-503")
        return list(self.jobs)


def test_the_two_lists_are_sent_at_once_within_the_calls_deadline() -> None:
    """Issue 36 item 8: a drain's batch Job read waits one round trip, not two: the second list does
    not wait for the first (each here waits until the other is in flight, else fails). Both are bounded
    by the hook call's deadline, and traced in the selectors' order."""
    lister = Meeting(2, [make_batch_job("llama-0", namespace="team-a", job="llama")])
    read = Reader(FakeLister(), FakeLister(), metrics=ReadMetrics(CollectorRegistry()), jobs=lister)
    with podread.recording() as reads, podread.deadline(5.0):
        found = read.attempt_jobs("team-a", "llama", 0)
    assert names(found) == ["llama-0-worker-0"], "the same Job from both lists, once"
    assert len(lister.deadlines) == 2 and all(left is not None and 0 < left <= 5.0 for left in lister.deadlines)
    assert [r.query.describe() for r in reads] == [
        "namespace=team-a labels=nvcre.nvidia.com/job=llama",
        f"namespace=team-a labels={JOBSET_NAME_LABEL} in (llama-0)"]


@pytest.mark.parametrize("failing", ["nvcre.nvidia.com/job", JOBSET_NAME_LABEL])
def test_either_list_failing_fails_the_read_never_fewer_jobs(failing: str) -> None:
    """Sent at once, the lists still answer together: one failed is a ``PodReadError``, never the
    other's Jobs alone (a failed read is never "no Jobs")."""
    lister = Meeting(2, [make_batch_job("llama-0", namespace="team-a", job="llama")], fail=failing)
    metrics = ReadMetrics(CollectorRegistry())
    with pytest.raises(podread.PodReadError) as raised:
        Reader(FakeLister(), FakeLister(), metrics=metrics, jobs=lister).attempt_jobs("team-a", "llama", 0)
    assert raised.value.code == "http-503" and (raised.value.method, raised.value.source) == ("attempt_jobs", "live")
    assert metrics.reads.labels("attempt_jobs", "live", "ok")._value.get() == 1
    assert metrics.read_errors.labels("attempt_jobs", "live", "http-503")._value.get() == 1


class Bounded:
    """A ``JobLister`` that answers ``jobs`` at once, bounded by the hook call's deadline as
    ``JobClient`` is (``calldeadline.budget``: a list whose deadline passed is not sent)."""

    def __init__(self, jobs: list[dict]) -> None:
        self.jobs = jobs

    def list_jobs(self, selector: PodSelector) -> list[dict]:
        calldeadline.budget("list batch jobs", 5.0)
        return list(self.jobs)


def test_busy_helper_threads_never_hold_the_read_past_the_calls_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first list waits on a helper thread. When every helper is busy (a large install answers 20
    calls at once on 16 helpers, each list bounded only by its own call's deadline), the read still
    ends by this call's deadline: a failed read (``DeadlineExceeded``, the call holds), never a wait for
    another call's list, and never the other list's Jobs alone."""
    busy = ThreadPoolExecutor(1, thread_name_prefix="test-busy-helper")
    release = threading.Event()
    busy.submit(release.wait, 10.0)  # the only helper is taken by another call's list
    monkeypatch.setattr(reader_module, "_helper_pool", busy)
    read = Reader(FakeLister(), FakeLister(), metrics=ReadMetrics(CollectorRegistry()),
                  jobs=Bounded([make_batch_job("llama-0", namespace="team-a", job="llama")]))
    try:
        started = time.monotonic()
        with pytest.raises(podread.PodReadError) as raised, podread.deadline(0.3):
            read.attempt_jobs("team-a", "llama", 0)
        waited = time.monotonic() - started
    finally:
        release.set()
        busy.shutdown(wait=True)
    assert isinstance(raised.value, DeadlineExceeded) and raised.value.method == "attempt_jobs"
    assert waited < 2.0, f"the read waited {waited:.1f} s for a busy helper, past its 0.3 s deadline"


def test_a_forked_child_sends_its_lists_on_helper_threads_of_its_own() -> None:
    """A fork copies only the forking thread: the parent's helper threads are not in the child, and a
    list handed to the parent's pool there would never run (a read with no deadline would wait for
    ever). The child starts helpers of its own and reads as the parent does."""
    import os

    read = Reader(FakeLister(), FakeLister(), metrics=ReadMetrics(CollectorRegistry()),
                  jobs=Bounded([make_batch_job("llama-0", namespace="team-a", job="llama")]))
    assert names(read.attempt_jobs("team-a", "llama", 0)) == ["llama-0-worker-0"]  # the parent's pool started
    parent_pool = reader_module._helper_pool
    assert parent_pool is not None
    child = os.fork()
    if child == 0:  # the child: exit 0 only if it reads without the parent's threads, within 5 s
        code = 1
        try:
            done = threading.Event()
            found: list[str] = []

            def attempt() -> None:
                found.extend(names(read.attempt_jobs("team-a", "llama", 0)))
                done.set()

            threading.Thread(target=attempt, daemon=True).start()
            code = 0 if done.wait(5.0) and found == ["llama-0-worker-0"] and \
                reader_module._helper_pool is not parent_pool else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child's read did not end on helpers of its own"
