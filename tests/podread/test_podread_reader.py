"""Reader: each method's source and filter, the live check of active_job_pods, live=None, metrics."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import CollectorRegistry

import podread
from podread import (
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    REPLICATED_JOB_LABEL,
    NoLiveReaderError,
    PodCache,
    PodReadError,
    Reader,
    ReadMetrics,
    recording,
)
from podread.cached import CachedLister, CachedRead, Uncached, as_cached
from podread.selector import count_active
from tests.support.fake_lister import FakeLister, failing, pod


def names(pods: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


@pytest.fixture()
def metrics() -> ReadMetrics:
    return ReadMetrics(CollectorRegistry())


def reads(metrics: ReadMetrics, method: str, source: str, outcome: str) -> float:
    return metrics.reads.labels(method, source, outcome)._value.get()


def test_constants_have_the_seed_values() -> None:
    assert podread.JOB_LABEL == "nvcre.nvidia.com/job"
    assert podread.LAUNCHER_LABEL == "nvcre.nvidia.com/launcher"
    assert podread.JOB_INDEX_FIELD == "metadata.labels.nvcre.nvidia.com/job"
    assert podread.NODE_NAME_INDEX_FIELD == "spec.nodeName"


def test_job_pods_reads_only_the_cache_and_selects_the_job(metrics: ReadMetrics) -> None:
    cached = FakeLister([pod("w-0"), pod("w-1", phase="Succeeded"), pod("other", job="gpt"),
                         pod("elsewhere", namespace="team-b")])
    live = FakeLister([pod("live-only")])
    reader = Reader(cached, live, metrics=metrics)
    assert names(reader.job_pods("team-a", "llama")) == ["w-0", "w-1"]
    assert live.calls == []
    assert cached.calls[0].labels == {JOB_LABEL: "llama"} and cached.calls[0].namespace == "team-a"
    assert reads(metrics, "job_pods", "cache", "ok") == 1


def test_job_pods_empty_is_an_empty_list_not_an_error(metrics: ReadMetrics) -> None:
    assert Reader(FakeLister(), FakeLister(), metrics=metrics).job_pods("team-a", "llama") == []


def test_active_job_pods_answers_from_the_cache_when_it_holds_an_active_pod(metrics: ReadMetrics) -> None:
    cached = FakeLister([pod("w-0"), pod("w-1", phase="Failed")])
    live = FakeLister([])
    reader = Reader(cached, live, metrics=metrics)
    assert names(reader.active_job_pods("team-a", "llama")) == ["w-0"]
    assert live.calls == []


def test_active_job_pods_checks_live_when_the_cache_holds_only_finished_pods(metrics: ReadMetrics) -> None:
    """Finished pods cached, a newer running pod only live: the running one is returned."""
    cached = FakeLister([pod("w-0", phase="Succeeded"), pod("w-1", phase="Failed")])
    live = FakeLister([pod("w-0", phase="Succeeded"), pod("w-1", phase="Failed"), pod("w-2", phase="Running")])
    reader = Reader(cached, live, metrics=metrics)
    assert names(reader.active_job_pods("team-a", "llama")) == ["w-2"]
    assert len(live.calls) == 1
    assert live.calls[0].labels == {JOB_LABEL: "llama"} and live.calls[0].namespace == "team-a"
    assert reads(metrics, "active_job_pods", "live", "ok") == 1


def test_active_job_pods_checks_live_when_nothing_is_cached() -> None:
    live = FakeLister([pod("w-0", phase="Pending"), pod("w-1", phase="Unknown")])
    assert names(Reader(FakeLister(), live).active_job_pods("team-a", "llama")) == ["w-0", "w-1"]


def test_active_job_pods_with_nothing_anywhere_is_none_after_asking_live() -> None:
    live = FakeLister([])
    assert Reader(FakeLister(), live).active_job_pods("team-a", "llama") == []
    assert len(live.calls) == 1


def test_a_terminating_pod_is_active() -> None:
    cached = FakeLister([pod("w-0", phase="Running", deleting=True)])
    assert names(Reader(cached, FakeLister()).active_job_pods("team-a", "llama")) == ["w-0"]


@pytest.mark.parametrize("statuses", [
    [], [None], [{}], [{"phase": "Running"}, {"phase": "Succeeded"}, {"phase": "Failed"}, {"phase": "Pending"}],
    [{"phase": "Unknown"}, {"phase": None}, None, {"phase": "Failed"}, {"phase": "Failed"}],
])
def test_count_active_counts_what_is_active_says(statuses: list[dict[str, object] | None]) -> None:
    """``podread.selector.count_active`` (issue 32 item 4: one pass, no call per pod) is ``is_active``
    counted: a pod with no status, no phase or an unknown one is active; Succeeded and Failed are not."""
    pods = [{"metadata": {"name": f"w-{i}"}} if status is None else {"metadata": {"name": f"w-{i}"}, "status": status}
            for i, status in enumerate(statuses)]
    assert count_active(pods) == sum(1 for one in pods if podread.is_active(one))


def test_active_job_pods_live_failure_raises_never_none(metrics: ReadMetrics) -> None:
    live = FakeLister()
    live.fail_with = failing()
    reader = Reader(FakeLister([pod("w-0", phase="Succeeded")]), live, metrics=metrics)
    with pytest.raises(PodReadError) as raised:
        reader.active_job_pods("team-a", "llama")
    assert raised.value.method == "active_job_pods" and raised.value.source == "live"
    assert reads(metrics, "active_job_pods", "live", "error") == 1


def test_counted_job_pods_answers_from_the_cache_when_its_count_is_the_reported_one(metrics: ReadMetrics) -> None:
    cached = FakeLister([pod("w-0"), pod("w-1", phase="Succeeded"), pod("other", job="gpt")])
    live = FakeLister([pod("live-only")])
    reader = Reader(cached, live, metrics=metrics)
    answer = reader.counted_job_pods("team-a", "llama", 1)
    assert names(answer.pods) == ["w-0", "w-1"] and answer.active == 1  # counted once, where it was read
    assert live.calls == [] and cached.calls[0].labels == {JOB_LABEL: "llama"}
    assert reads(metrics, "counted_job_pods", "cache", "ok") == 1


@pytest.mark.parametrize("reported", [0, 2, None])
def test_counted_job_pods_reads_live_when_the_cache_counts_otherwise(reported: int | None,
                                                                     metrics: ReadMetrics) -> None:
    """A count that would change the status (or that none was reported before) is the API server's."""
    cached = FakeLister([pod("w-0"), pod("w-1", phase="Succeeded")])  # one active, cached
    live = FakeLister([pod("w-0", phase="Succeeded"), pod("w-1", phase="Succeeded")])
    reader = Reader(cached, live, metrics=metrics)
    answer = reader.counted_job_pods("team-a", "llama", reported)
    assert [p["status"]["phase"] for p in answer.pods] == ["Succeeded", "Succeeded"] and answer.active == 0
    assert live.calls[0].labels == {JOB_LABEL: "llama"} and live.calls[0].namespace == "team-a"
    assert reads(metrics, "counted_job_pods", "live", "ok") == 1


def test_counted_job_pods_takes_this_calls_own_live_fill_as_the_check() -> None:
    live = FakeLister([pod("w-0")])
    reader = Reader(PodCache(live), live)
    with recording() as records:
        answer = reader.counted_job_pods("team-a", "llama", 0)
        assert names(answer.pods) == ["w-0"] and answer.active == 1
    assert [(r.source, r.filled) for r in records] == [("cache", True)] and len(live.calls) == 1
    with recording() as records:
        assert names(reader.counted_job_pods("team-a", "llama", 0).pods) == ["w-0"]  # a hit that counts 1: confirmed
    assert [r.source for r in records] == ["cache", "live"] and len(live.calls) == 2


def test_counted_job_pods_live_failure_raises_never_none(metrics: ReadMetrics) -> None:
    live = FakeLister()
    live.fail_with = failing()
    reader = Reader(FakeLister([pod("w-0")]), live, metrics=metrics)
    with pytest.raises(PodReadError) as raised:
        reader.counted_job_pods("team-a", "llama", 0)
    assert raised.value.method == "counted_job_pods" and raised.value.source == "live"
    assert reads(metrics, "counted_job_pods", "live", "error") == 1


def test_cache_failure_raises_with_method_and_source(metrics: ReadMetrics) -> None:
    cached = FakeLister()
    cached.fail_with = failing("boom")
    with pytest.raises(PodReadError, match="job_pods from cache: boom"):
        Reader(cached, FakeLister(), metrics=metrics).job_pods("team-a", "llama")
    assert reads(metrics, "job_pods", "cache", "error") == 1


def test_an_unexpected_lister_exception_becomes_a_pod_read_error() -> None:
    cached = FakeLister()
    cached.fail_with = KeyError("items")
    with pytest.raises(PodReadError, match="unexpected error"):
        Reader(cached, FakeLister()).job_pods("team-a", "llama")


def test_job_pods_on_node_uses_the_node_and_the_job_label() -> None:
    cached = FakeLister([pod("w-0", node="n1"), pod("w-1", node="n2"),
                         pod("installer", job=None, node="n1", namespace="kube-system")])
    reader = Reader(cached, FakeLister())
    assert names(reader.job_pods_on_node("n1")) == ["w-0"]
    call = cached.calls[0]
    assert call.node_name == "n1" and JOB_LABEL in call.has_labels and call.namespace is None


def test_namespace_pods_reads_live_every_pod_of_the_namespace() -> None:
    cached = FakeLister([pod("w-0")])
    live = FakeLister([pod("installer", job=None, namespace="kube-system"), pod("w-0")])
    reader = Reader(cached, live)
    assert names(reader.namespace_pods("kube-system")) == ["installer"]
    assert cached.calls == [] and live.calls[0].label_selector() == ""


def test_workload_pods_selects_jobset_labels_live() -> None:
    launcher = pod("l-0", job=None, labels={LAUNCHER_LABEL: "llama", JOBSET_NAME_LABEL: "llama-0",
                                            REPLICATED_JOB_LABEL: "launcher"})
    worker = pod("w-0", labels={JOBSET_NAME_LABEL: "llama-0", REPLICATED_JOB_LABEL: "worker"})
    older = pod("w-old", labels={JOBSET_NAME_LABEL: "llama-1", REPLICATED_JOB_LABEL: "worker"})
    cached = FakeLister([worker])
    live = FakeLister([launcher, worker, older])
    reader = Reader(cached, live)
    assert names(reader.workload_pods("team-a", "llama-0")) == ["l-0", "w-0"]
    assert names(reader.workload_pods("team-a", "llama-0", "launcher")) == ["l-0"]
    assert cached.calls == []
    assert live.calls[1].labels == {JOBSET_NAME_LABEL: "llama-0", REPLICATED_JOB_LABEL: "launcher"}


@pytest.mark.parametrize("read", [
    lambda r: r.active_job_pods("team-a", "llama"),
    lambda r: r.counted_job_pods("team-a", "llama", 1),  # the cache counts 0: confirmed live
    lambda r: r.namespace_pods("kube-system"),
    lambda r: r.workload_pods("team-a", "llama-0"),
])
def test_live_none_makes_every_live_read_raise_and_is_counted(read, metrics: ReadMetrics) -> None:
    cached = FakeLister([pod("w-0", phase="Succeeded")])
    reader = Reader(cached, None, metrics=metrics)
    with pytest.raises(NoLiveReaderError) as raised:
        read(reader)
    assert raised.value.source == "live"
    assert isinstance(raised.value, PodReadError)
    errors = sum(metrics.reads.labels(m, "live", "error")._value.get()
                 for m in ("active_job_pods", "counted_job_pods", "namespace_pods", "workload_pods"))
    assert errors == 1


def test_live_none_is_not_replaced_by_the_cache() -> None:
    """With only finished pods cached and no live client, the answer is an error, never 'none'."""
    reader = Reader(FakeLister([pod("w-0", phase="Succeeded")]), None)
    assert reader.job_pods("team-a", "llama")  # cached reads still work
    with pytest.raises(NoLiveReaderError):
        reader.active_job_pods("team-a", "llama")


def test_a_failed_read_is_logged_with_what_and_where(caplog: pytest.LogCaptureFixture) -> None:
    cached = FakeLister()
    cached.fail_with = failing("connection refused")
    with caplog.at_level("WARNING", logger="podread"), pytest.raises(PodReadError):
        Reader(cached, FakeLister()).job_pods("team-a", "llama")
    assert "job_pods from cache" in caplog.text and "connection refused" in caplog.text
    assert "nvcre.nvidia.com/job=llama" in caplog.text


def test_reads_are_timed(metrics: ReadMetrics) -> None:
    Reader(FakeLister(), FakeLister(), metrics=metrics).job_pods("team-a", "llama")
    count = metrics.read_seconds.labels("job_pods", "cache")._sum.get()
    assert count >= 0
    samples = {s.name: s.value for m in metrics.read_seconds.collect() for s in m.samples
               if s.labels.get("method") == "job_pods"}
    assert samples["podread_read_duration_seconds_count"] == 1


def test_recording_collects_each_read_with_its_source() -> None:
    cached = FakeLister([pod("w-0", phase="Succeeded")])
    live = FakeLister([pod("w-1")])
    reader = Reader(cached, live)
    with recording(keep_pods=True) as records:
        reader.active_job_pods("team-a", "llama")
    assert [(r.method, r.source, r.pods) for r in records] == [("active_job_pods", "cache", 1),
                                                               ("active_job_pods", "live", 1)]
    assert records[1].items is not None and records[1].items[0]["metadata"]["name"] == "w-1"
    reader.job_pods("team-a", "llama")
    assert len(records) == 2  # closed recordings collect nothing more


def test_the_cache_never_returns_a_pod_without_the_job_label_through_the_reader() -> None:
    """Even a source that wrongly returns unlabelled pods cannot leak them through the cache."""

    class Careless(FakeLister):
        def list_pods(self, selector):  # ignores the label terms, as a buggy source would
            self.calls.append(selector)
            return list(self.pods)

    source = Careless([pod("w-0", node="n1"), pod("installer", job=None, node="n1")])
    reader = Reader(PodCache(source), source)
    assert names(reader.job_pods_on_node("n1")) == ["w-0"]


def test_a_cache_fill_from_the_live_client_in_this_call_is_the_live_check() -> None:
    """Cache missed, this call listed the job from the live client and found none active: that
    list is the API server's answer, so the same list is not sent again."""
    live = FakeLister([pod("w-0", phase="Succeeded")])
    reader = Reader(PodCache(live), live)
    with recording() as first:
        assert reader.active_job_pods("team-a", "llama") == []
    assert len(live.calls) == 1
    assert [(r.source, r.filled) for r in first] == [("cache", True)]
    with recording() as records:
        assert reader.active_job_pods("team-a", "llama") == []  # a hit: the live check is made
    assert [r.source for r in records] == ["cache", "live"] and len(live.calls) == 2


def test_a_cache_over_another_source_never_stands_for_the_live_check() -> None:
    cached_source = FakeLister([pod("w-0", phase="Succeeded")])
    live = FakeLister([pod("w-1")])
    reader = Reader(PodCache(cached_source), live)
    assert names(reader.active_job_pods("team-a", "llama")) == ["w-1"]


def test_a_fill_started_by_another_thread_does_not_stand_for_the_live_check() -> None:
    live = FakeLister([pod("w-0", phase="Succeeded")], delay=0.3)
    reader = Reader(PodCache(live), live)
    leader = threading.Thread(target=reader.job_pods, args=("team-a", "llama"))
    leader.start()
    time.sleep(0.1)  # the leader's fill is in flight
    assert reader.active_job_pods("team-a", "llama") == []
    leader.join()
    assert len(live.calls) == 2  # the shared fill, then this call's own live check


# --- the cached side is an interface (issue 32 item 2) -------------------------------------------


class ScriptedCache:
    """A ``CachedLister`` that is not a ``PodCache``: answers ``pods``, naming ``listed_from`` as the
    source this call listed from; records each selector and whether it was closed."""

    def __init__(self, pods: list[dict], listed_from: object = None) -> None:
        self.pods, self.listed_from = pods, listed_from
        self.calls: list[podread.PodSelector] = []
        self.closed = False

    def read(self, selector: podread.PodSelector) -> CachedRead:
        self.calls.append(selector)
        return CachedRead([p for p in self.pods if selector.matches(p)], self.listed_from)  # type: ignore[arg-type]

    def close(self) -> None:
        self.closed = True


def test_any_cached_lister_is_the_cached_side_and_its_fill_from_the_live_client_is_the_live_check() -> None:
    live = FakeLister([pod("w-1")])
    cache = ScriptedCache([pod("w-0", phase="Succeeded")], listed_from=live)
    reader = Reader(cache, live)
    with recording() as records:
        assert reader.active_job_pods("team-a", "llama") == []  # this call's own list from live: no second one
    assert live.calls == [] and len(cache.calls) == 1
    assert [(r.source, r.filled) for r in records] == [("cache", True)]
    reader.close()
    assert cache.closed


def test_a_cached_lister_that_listed_from_another_source_never_stands_for_the_live_check() -> None:
    live = FakeLister([pod("w-1")])
    cache = ScriptedCache([pod("w-0", phase="Succeeded")], listed_from=FakeLister())
    assert names(Reader(cache, live).active_job_pods("team-a", "llama")) == ["w-1"]
    assert len(live.calls) == 1
    unfilled = ScriptedCache([pod("w-0", phase="Succeeded")])
    assert names(Reader(unfilled, live).active_job_pods("team-a", "llama")) == ["w-1"]
    assert len(live.calls) == 2


def test_a_plain_lister_as_the_cached_side_is_adapted_once_and_is_never_a_fill() -> None:
    """``Reader(live, live)`` (the live-only mode): the cached read lists from the same client, and
    the live check is still sent, as before the seam."""
    live = FakeLister([pod("w-0", phase="Succeeded")])
    reader = Reader(live, live)
    assert isinstance(reader._cached, Uncached) and reader._cached.lister is live
    plain = FakeLister([pod("w-2")])
    assert Uncached(plain).read(podread.PodSelector(namespace="team-a")) == CachedRead(plain.pods)
    with recording() as records:
        assert reader.active_job_pods("team-a", "llama") == []
    assert [(r.source, r.filled) for r in records] == [("cache", False), ("live", False)]
    assert len(live.calls) == 2
    reader.close()  # nothing to stop; reads still work
    assert reader.job_pods("team-a", "llama") != []


def test_a_pod_cache_is_a_cached_lister_used_as_is() -> None:
    cache = PodCache(FakeLister([pod("w-0")]))
    assert isinstance(cache, CachedLister) and as_cached(cache) is cache
    assert Reader(cache, None)._cached is cache


# --- the hot path (issue 32 item 4) ---------------------------------------------------------------


class Describing(podread.PodSelector):
    """A PodSelector that counts its ``describe()`` calls."""

    described = 0

    def describe(self) -> str:
        type(self).described += 1
        return super().describe()


def test_a_read_is_noted_with_its_selector_and_described_only_when_asked() -> None:
    reader = Reader(FakeLister([pod("w-0")]), FakeLister())
    selector = podread.PodSelector(namespace="team-a", labels={JOB_LABEL: "llama"})
    with recording() as records:
        reader.job_pods("team-a", "llama")
    record = records[0]
    assert record.query == selector and "selector" not in vars(record)  # nothing described yet
    assert record.selector == selector.describe() == f"namespace=team-a labels={JOB_LABEL}=llama"
    text = podread.ReadRecord("node_states", "live", "nodes=a,b", "ok", 2, 0.0)
    assert text.selector == "nodes=a,b"  # a record made from text keeps it


def test_describe_runs_only_for_a_record_whose_selector_is_read() -> None:
    Describing.described = 0
    record = podread.ReadRecord("job_pods", "cache", Describing(namespace="team-a"), "ok", 0, 0.0)
    assert Describing.described == 0
    assert record.selector == record.selector == "namespace=team-a"
    assert Describing.described == 1  # computed once, kept


def test_read_metrics_children_are_bound_once(metrics: ReadMetrics, monkeypatch: pytest.MonkeyPatch) -> None:
    cached, live = FakeLister([pod("w-0", phase="Succeeded")]), FakeLister()
    reader = Reader(cached, live, metrics=metrics)
    reader.active_job_pods("team-a", "llama")  # binds (active_job_pods, cache) and (active_job_pods, live)
    live.fail_with = PodReadError("down", code="timeout")
    with pytest.raises(PodReadError):
        reader.active_job_pods("team-a", "llama")  # binds the error children
    bound: list[tuple] = []
    for metric in (metrics.reads, metrics.read_seconds, metrics.read_errors):
        real = metric.labels
        monkeypatch.setattr(metric, "labels", lambda *values, real=real: bound.append(values) or real(*values))
    for _ in range(3):
        with pytest.raises(PodReadError):
            reader.active_job_pods("team-a", "llama")
    live.fail_with = None
    reader.active_job_pods("team-a", "llama")
    assert bound == []  # no labels() look-up on the hot path once bound
    monkeypatch.undo()
    assert reads(metrics, "active_job_pods", "cache", "ok") == 6
    assert reads(metrics, "active_job_pods", "live", "ok") == 2
    assert reads(metrics, "active_job_pods", "live", "error") == 4
    assert metrics.read_errors.labels("active_job_pods", "live", "timeout")._value.get() == 4
    histogram = {s.name: s.value for m in metrics.read_seconds.collect() for s in m.samples
                 if s.labels.get("method") == "active_job_pods" and s.labels.get("source") == "live"}
    assert histogram["podread_read_duration_seconds_count"] == 6


def test_cache_lookups_and_fills_are_counted_through_bound_children(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = ReadMetrics(CollectorRegistry())
    cache = PodCache(FakeLister([pod("w-0")]), metrics=metrics)
    reader = Reader(cache, None, metrics=metrics)
    reader.job_pods("team-a", "llama")  # a miss and a fill
    reader.job_pods("team-a", "llama")  # a hit
    bound: list[tuple] = []
    for metric in (metrics.cache_lookups, metrics.cache_fills, metrics.reads, metrics.read_seconds):
        real = metric.labels
        monkeypatch.setattr(metric, "labels", lambda *values, real=real: bound.append(values) or real(*values))
    reader.job_pods("team-a", "llama")
    assert bound == []
    monkeypatch.undo()
    lookups = {s.labels["result"]: s.value for m in metrics.cache_lookups.collect() for s in m.samples
               if s.name.endswith("_total")}
    assert lookups == {"miss": 1, "hit": 2}
