"""PodCache: label scope, TTL with an injected clock, single-flight misses, no cached errors, bounds."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from podread import JOB_LABEL, CacheScopeError, NoSourceError, PodCache, PodReadError, PodSelector, ReadMetrics
from podread.cached import CachedLister, CachedRead
from tests.support.fake_lister import FakeLister, failing, pod

JOB = PodSelector(namespace="team-a", labels={JOB_LABEL: "llama"})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(source: FakeLister | None, **options) -> PodCache:
    return PodCache(source, metrics=ReadMetrics(CollectorRegistry()), **options)


def test_every_fill_selects_on_the_job_label() -> None:
    source = FakeLister([pod("w-0", node="n1")])
    cache = make(source)
    cache.list_pods(JOB)
    cache.list_pods(PodSelector(has_labels=(JOB_LABEL,), node_name="n1"))
    assert [call.label_selector() for call in source.calls] == [f"{JOB_LABEL}=llama", JOB_LABEL]
    assert source.calls[1].field_selector() == "spec.nodeName=n1"


@pytest.mark.parametrize("selector", [
    PodSelector(namespace="kube-system"),
    PodSelector(),
    PodSelector(namespace="team-a", labels={"app": "x"}),
    PodSelector(node_name="n1"),
])
def test_a_read_not_scoped_by_the_job_label_raises_and_sends_nothing(selector: PodSelector) -> None:
    source = FakeLister([pod("w-0")])
    with pytest.raises(CacheScopeError):
        make(source).list_pods(selector)
    assert source.calls == []


def test_pods_without_the_job_label_are_never_stored() -> None:
    class Careless(FakeLister):
        def list_pods(self, selector):
            return list(self.pods)

    cache = make(Careless([pod("w-0"), pod("stray", job=None)]))
    assert [p["metadata"]["name"] for p in cache.list_pods(JOB)] == ["w-0"]
    stored = next(iter(cache._entries.values()))
    assert [p["metadata"]["name"] for p in stored.pods] == ["w-0"] and stored.active == 1


def test_cached_pods_are_slim_and_the_source_is_not_mutated() -> None:
    original = pod("w-0", node="n1", deleting=True)
    cached = make(FakeLister([original])).list_pods(JOB)[0]
    assert set(cached) == {"metadata", "spec", "status"}
    assert set(cached["metadata"]) == {"name", "namespace", "labels", "deletionTimestamp"}
    assert cached["spec"] == {"nodeName": "n1"} and cached["status"] == {"phase": "Running"}
    assert "managedFields" in original["metadata"] and original["kind"] == "Pod"


def test_one_list_per_job_per_ttl_whatever_the_number_of_reads() -> None:
    clock = Clock()
    source = FakeLister([pod("w-0")])
    cache = make(source, ttl_seconds=5, clock=clock)
    for _ in range(50):
        cache.list_pods(JOB)
        clock.now += 0.09
    assert len(source.calls) == 1


def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    source = FakeLister([pod("w-0")])
    cache = make(source, ttl_seconds=5, clock=clock)
    cache.list_pods(JOB)
    source.pods = [pod("w-0"), pod("w-1")]
    clock.now += 4.9
    assert len(cache.list_pods(JOB)) == 1
    clock.now += 0.2
    assert len(cache.list_pods(JOB)) == 2
    assert len(source.calls) == 2


def test_jobs_and_nodes_have_their_own_keys() -> None:
    source = FakeLister([pod("w-0", node="n1"), pod("g-0", job="gpt", node="n1")])
    cache = make(source)
    assert len(cache.list_pods(JOB)) == 1
    assert len(cache.list_pods(PodSelector(namespace="team-a", labels={JOB_LABEL: "gpt"}))) == 1
    assert len(cache.list_pods(PodSelector(has_labels=(JOB_LABEL,), node_name="n1"))) == 2
    assert len(source.calls) == 3 and len(cache) == 3


def test_sixteen_threads_missing_the_same_key_make_one_request() -> None:
    source = FakeLister([pod("w-0")], delay=0.2)
    cache = make(source)
    barrier = threading.Barrier(16)
    results: list[int] = []

    def read() -> None:
        barrier.wait()
        results.append(len(cache.list_pods(JOB)))

    threads = [threading.Thread(target=read) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [1] * 16
    assert len(source.calls) == 1


def test_a_failed_fill_raises_to_every_waiter_and_is_not_cached() -> None:
    source = FakeLister([pod("w-0")], delay=0.2)
    source.fail_with = failing("503 Service Unavailable")
    cache = make(source)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def read() -> None:
        barrier.wait()
        try:
            cache.list_pods(JOB)
        except PodReadError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 8 and all("503" in str(e) for e in errors)
    assert len(source.calls) == 1
    source.fail_with = None
    source.delay = 0
    assert len(cache.list_pods(JOB)) == 1  # the error was not cached as "no pods"
    assert len(source.calls) == 2


def test_the_cache_is_bounded_in_size() -> None:
    source = FakeLister([pod(f"w-{i}", job=f"job-{i}") for i in range(20)])
    cache = make(source, max_entries=5)
    for i in range(20):
        cache.list_pods(PodSelector(namespace="team-a", labels={JOB_LABEL: f"job-{i}"}))
    assert len(cache) == 5


def test_no_source_fails_clearly() -> None:
    cache = make(None, no_source_reason="no cluster configuration")
    with pytest.raises(NoSourceError, match="no cluster configuration"):
        cache.list_pods(JOB)


def test_bad_bounds_are_rejected() -> None:
    with pytest.raises(ValueError):
        make(FakeLister(), ttl_seconds=0)
    with pytest.raises(ValueError):
        make(FakeLister(), max_entries=0)


def test_lookups_and_fills_are_counted() -> None:
    metrics = ReadMetrics(CollectorRegistry())
    cache = PodCache(FakeLister([pod("w-0")]), metrics=metrics)
    cache.list_pods(JOB)
    cache.list_pods(JOB)
    from podread.constants import JOB_INDEX_FIELD
    assert metrics.cache_lookups.labels(JOB_INDEX_FIELD, "miss")._value.get() == 1
    assert metrics.cache_lookups.labels(JOB_INDEX_FIELD, "hit")._value.get() == 1
    assert metrics.cache_fills.labels(JOB_INDEX_FIELD, "ok")._value.get() == 1


def test_a_fill_keeps_only_what_its_selector_selects() -> None:
    """A source that ignores selectors cannot put another job's pods under this job's key."""

    class Careless(FakeLister):
        def list_pods(self, selector):
            return list(self.pods)

    cache = make(Careless([pod("w-0"), pod("g-0", job="gpt"), pod("x-0", namespace="team-b")]))
    assert [p["metadata"]["name"] for p in cache.list_pods(JOB)] == ["w-0"]


def test_read_says_whether_this_call_filled_the_entry_and_from_which_source() -> None:
    source = FakeLister([pod("w-0")])
    cache = make(source)
    filled = cache.read(JOB)
    assert isinstance(cache, CachedLister)
    assert filled == CachedRead(filled.pods, listed_from=source, active=1) and filled.filled
    assert [p["metadata"]["name"] for p in filled.pods] == ["w-0"]
    hit = cache.read(JOB)
    assert hit.listed_from is None and not hit.filled and hit.pods == filled.pods


def test_a_job_read_says_how_many_pods_are_active_counted_once_per_entry() -> None:
    """The entry's pods are counted when it is filled (``CachedRead.active``, what
    ``Reader.counted_job_pods`` writes as ``activePods``), never per read; a narrower selector than
    the entry's gets its own pods and no count (the Reader counts those itself)."""
    from podread.selector import count_active

    source = FakeLister([pod("w-0"), pod("w-1", phase="Succeeded"), pod("w-2", phase="Failed"),
                         pod("w-3", phase="Pending"), pod("w-4", deleting=True)])
    cache = make(source)
    for _ in range(2):  # the fill, then a hit
        read = cache.read(JOB)
        assert read.active == count_active(read.pods) == 3
    narrower = PodSelector(namespace="team-a", labels={JOB_LABEL: "llama", "extra": "x"})
    assert cache.read(narrower).active is None


def test_each_reader_waiting_on_a_failed_fill_names_its_own_method() -> None:
    from podread import Reader

    source = FakeLister([pod("w-0")], delay=0.3)
    source.fail_with = failing("boom")
    reader = Reader(make(source), source)
    errors: dict[str, str] = {}

    def read(method: str) -> None:
        try:
            getattr(reader, method)("team-a", "llama")
        except PodReadError as exc:
            errors[method] = str(exc)

    threads = [threading.Thread(target=read, args=(m,)) for m in ("job_pods", "active_job_pods")]
    threads[0].start()
    time.sleep(0.1)  # job_pods leads the fill; active_job_pods waits on it
    threads[1].start()
    for thread in threads:
        thread.join()
    assert errors == {"job_pods": "job_pods from cache: boom", "active_job_pods": "active_job_pods from cache: boom"}
    assert len(source.calls) == 1
