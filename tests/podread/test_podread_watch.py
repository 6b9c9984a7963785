"""The watch-fed cache: WatchedPods in process, PodWatch over the real client and the wire-level fake.

The fake serves watches as kube-apiserver does (tests.fakekube.watch); the faults it can inject
(bookmarks on demand, 410 as an ERROR event or an HTTP answer, cut streams, duplicate and
out-of-order events) are the ones the real server cannot be made to produce on cue.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry

from podread import JOB_LABEL, LiveClient, PodCache, PodSelector, Reader, ReadMetrics
from podread.constants import JOB_INDEX_FIELD, NODE_NAME_INDEX_FIELD
from podread.live import ListVersion
from podread.slim import slim
from podread.watch import Backoff, PodWatch, WatchedPods, events, watch_timeout_seconds
from tests.fakekube import FakeKubeServer, Fault, make_job_pods, make_pod

NS = "team-a"
JOB_KEY = (JOB_INDEX_FIELD, NS, "llama")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, rv: int, *, job: str | None = "llama", node: str = "n1", phase: str = "Running",
        namespace: str = NS) -> dict:
    labels = {JOB_LABEL: job} if job is not None else {"app": "x"}
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": str(rv), "labels": labels},
            "spec": {"nodeName": node}, "status": {"phase": phase}}


def names(pods: list[dict] | None) -> list[str]:
    assert pods is not None
    return [p["metadata"]["name"] for p in pods]


def store(clock: Clock | None = None, namespace: str | None = None, ttl: float = 5.0) -> WatchedPods:
    return WatchedPods(namespace, ttl_seconds=ttl, clock=clock or Clock(), metrics=ReadMetrics(CollectorRegistry()))


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


# ---- WatchedPods, in process -------------------------------------------------------------------------

def test_nothing_is_answered_before_the_first_list() -> None:
    watched = store()
    assert watched.answer(JOB_KEY) is None
    watched.replace([pod("w-0", 10)], "10")
    assert names(watched.answer(JOB_KEY)) == ["w-0"]


def test_an_entry_is_answered_only_while_confirmed_within_the_ttl() -> None:
    clock = Clock()
    watched = store(clock)
    watched.replace([pod("w-0", 10)], "10")
    clock.now += 4.9
    assert names(watched.answer(JOB_KEY)) == ["w-0"]
    clock.now += 0.1  # 5 s since the list, nothing since: the watch may be down
    assert watched.answer(JOB_KEY) is None
    watched.bookmark("12")
    assert names(watched.answer(JOB_KEY)) == ["w-0"] and watched.resource_version == "12"
    clock.now += 5
    assert watched.answer(JOB_KEY) is None
    watched.apply("MODIFIED", pod("w-0", 13, phase="Failed"))  # an event confirms too
    assert watched.answer(JOB_KEY)[0]["status"]["phase"] == "Failed"


def test_duplicate_and_out_of_order_events_are_ignored() -> None:
    watched = store()
    watched.replace([pod("w-0", 10)], "10")
    assert watched.apply("MODIFIED", pod("w-0", 12, phase="Failed"))
    assert not watched.apply("MODIFIED", pod("w-0", 12, phase="Failed"))  # duplicate
    assert not watched.apply("MODIFIED", pod("w-0", 11, phase="Running"))  # older than what is held
    assert watched.answer(JOB_KEY)[0]["status"]["phase"] == "Failed"
    assert watched.apply("DELETED", pod("w-0", 14, phase="Failed"))
    assert not watched.apply("MODIFIED", pod("w-0", 13))  # late, older than the deletion: stays gone
    assert watched.answer(JOB_KEY) == []
    assert watched.apply("ADDED", pod("w-0", 15))  # created again, later
    assert names(watched.answer(JOB_KEY)) == ["w-0"] and watched.resource_version == "15"


def test_a_pod_that_moves_or_loses_the_label_leaves_its_old_entries() -> None:
    watched = store()
    watched.replace([pod("w-0", 10, node="n1"), pod("w-1", 10, node="n1")], "10")
    watched.apply("MODIFIED", pod("w-0", 11, job="other", node="n2"))
    watched.apply("DELETED", pod("w-1", 12, job=None))  # the label was removed: the selector drops it
    assert watched.answer(JOB_KEY) == []
    assert names(watched.answer((JOB_INDEX_FIELD, NS, "other"))) == ["w-0"]
    assert watched.answer((NODE_NAME_INDEX_FIELD, "n1")) == []
    assert names(watched.answer((NODE_NAME_INDEX_FIELD, "n2"))) == ["w-0"]
    watched.apply("MODIFIED", pod("w-0", 13, job=None))  # a MODIFIED without the label removes it too
    assert watched.answer((JOB_INDEX_FIELD, NS, "other")) == [] and len(watched) == 0


def test_a_jobs_answer_kept_between_reads_follows_every_change_and_is_the_callers_own() -> None:
    """``answer`` keeps each Job's sorted pods and their active count from one read to the next;
    every event, list and reset in between must show in the next read as if it were sorted and
    counted afresh (a model of the store, kept by hand, says what each read must be), and a list a
    caller changed must not change the next one."""
    import random

    chooser = random.Random(7)
    watched = store()
    watched.replace([], "1")
    model: dict[str, dict] = {}
    version = 1
    for _ in range(600):
        version += 1
        name = f"w-{chooser.randrange(8)}"
        step = chooser.random()
        if step < 0.02:
            watched.replace([], str(version))  # a relist that finds nothing
            model.clear()
        elif step < 0.3 and name in model:
            watched.apply("DELETED", pod(name, version))
            del model[name]
        else:
            job = chooser.choice(["llama", "llama", "other", None])
            changed = pod(name, version, job=job, phase=chooser.choice(["Running", "Failed"]))
            watched.apply("MODIFIED" if name in model else "ADDED", changed)
            if job is None:
                model.pop(name, None)
            else:
                model[name] = changed
        for job in ("llama", "other"):
            got = watched.answer((JOB_INDEX_FIELD, NS, job))
            wanted = [model[n] for n in sorted(model) if model[n]["metadata"]["labels"].get(JOB_LABEL) == job]
            assert got == wanted
            assert got is not None
            kept = watched.counted_answer((JOB_INDEX_FIELD, NS, job))
            assert kept is not None and kept.pods == wanted
            assert kept.active == sum(p["status"]["phase"] != "Failed" for p in wanted)
            got.clear()  # the caller's own list: the next read is whole
            assert watched.answer((JOB_INDEX_FIELD, NS, job)) == wanted


def test_a_namespaced_watch_answers_only_its_namespace_and_no_node() -> None:
    watched = store(namespace=NS)
    watched.replace([pod("w-0", 10)], "10")
    assert names(watched.answer(JOB_KEY)) == ["w-0"]
    assert watched.answer((JOB_INDEX_FIELD, "team-b", "llama")) is None
    assert watched.answer((NODE_NAME_INDEX_FIELD, "n1")) is None  # node reads span every namespace


def test_the_watch_timeout_gives_a_bookmark_within_the_ttl() -> None:
    assert watch_timeout_seconds(5) == 3 and watch_timeout_seconds(30) == 28
    assert watch_timeout_seconds(1) == 3 and watch_timeout_seconds(600) == 60


def test_backoff_doubles_with_jitter_up_to_its_maximum_and_resets() -> None:
    backoff = Backoff(0.5, 4.0)
    delays = [backoff.next() for _ in range(6)]
    assert 0.25 <= delays[0] <= 0.5 and 2.0 <= delays[-1] <= 4.0
    backoff.reset()
    assert backoff.next() <= 0.5


# ---- PodWatch over the real client and the fake API server -------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as fake:
        yield fake


class Setup:
    def __init__(self, server: FakeKubeServer, *, watch_seconds: int = 30, ttl: float = 5.0) -> None:
        self.server = server
        self.clock = Clock()
        self.registry = CollectorRegistry()
        metrics = ReadMetrics(self.registry)
        self.metrics = metrics
        self.live = LiveClient(server.api_client(retries=False), timeout_seconds=5, metrics=metrics)
        self.store = WatchedPods(None, ttl_seconds=ttl, clock=self.clock, metrics=metrics)
        self.watch = PodWatch(self.live, self.store, watch_seconds=watch_seconds, metrics=metrics,
                              backoff=Backoff(0.01, 0.05), nudge_every=None)
        self.cache = PodCache(self.live, ttl_seconds=ttl, clock=self.clock, metrics=metrics, watches=[self.watch])
        self.reader = Reader(self.cache, self.live, metrics=metrics)

    def lists(self) -> int:
        return self.server.request_count(predicate=lambda r: r.query.get("watch") != "true" and "pods" in r.path)

    def watches(self) -> int:
        return self.server.request_count(predicate=lambda r: r.query.get("watch") == "true")

    def counter(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def synced(self) -> None:
        self.watch.start()
        wait_until(lambda: self.store.staleness() is not None and self.server.watches >= 1)


@pytest.fixture
def setup(server: FakeKubeServer) -> Iterator[Setup]:
    built = Setup(server)
    yield built
    built.watch.stop()


def test_reads_are_answered_from_the_watch_with_no_list(server: FakeKubeServer, setup: Setup) -> None:
    made = make_job_pods("llama", 4, NS)
    server.put_pods(made)
    first, second = made[0]["metadata"]["name"], made[1]["metadata"]["name"]
    setup.synced()
    assert setup.lists() == 1  # the watch's own list
    for _ in range(20):
        assert len(setup.reader.job_pods(NS, "llama")) == 4
    assert setup.lists() == 1
    server.update_pod(NS, first, lambda p: p["status"].update(phase="Failed"))
    wait_until(lambda: sum(p["status"]["phase"] == "Failed" for p in setup.reader.job_pods(NS, "llama")) == 1)
    server.delete_pod(NS, second)
    wait_until(lambda: len(setup.reader.job_pods(NS, "llama")) == 3)
    assert setup.lists() == 1
    assert set(setup.reader.job_pods(NS, "llama")[0]) == {"metadata", "spec", "status"}  # slim


def test_a_quiet_watch_is_kept_fresh_by_bookmarks(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS))
    setup.synced()
    setup.clock.now += 6  # past the TTL with no event: the cache would fill from a list
    assert setup.store.answer((JOB_INDEX_FIELD, NS, "llama")) is None
    server.put_pod(make_pod("elsewhere", namespace="kube-system"))  # moves the RV, no event for us
    server.bookmark()
    wait_until(lambda: setup.store.resource_version == str(server.resource_version))
    assert len(setup.store.answer((JOB_INDEX_FIELD, NS, "llama")) or []) == 2


def test_a_stale_watch_falls_back_to_ttl_fills(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS))
    setup.synced()
    server.hold_watch_events()  # the watch lags: nothing reaches it, no bookmark passes
    server.put_pods(make_job_pods("llama", 3, NS, phase="Succeeded"))
    setup.clock.now += 5.0
    pods = setup.reader.job_pods(NS, "llama")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * 3  # a list, as in TTL mode
    assert setup.lists() == 2
    setup.reader.job_pods(NS, "llama")
    assert setup.lists() == 2  # that fill is a TTL entry
    server.release_watch_events()


def test_active_job_pods_asks_the_api_server_when_the_watch_shows_none(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS, phase="Succeeded"))
    setup.synced()
    server.hold_watch_events()
    server.put_pod(make_pod("late", namespace=NS, labels={JOB_LABEL: "llama"}))  # the watch has not seen it
    active = setup.reader.active_job_pods(NS, "llama")
    assert names(active) == ["late"]
    assert setup.lists() == 2  # the watch's list, then the live check
    server.release_watch_events()


def test_410_in_the_stream_relists(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS))
    setup.synced()
    server.hold_watch_events()
    server.put_pods(make_job_pods("llama", 3, NS))  # the watch has not seen it
    server.compact()
    server.break_watches()  # the resume from the old RV meets the compaction: ERROR 410 Expired
    wait_until(lambda: len(setup.store.answer(JOB_KEY) or []) == 3)
    assert setup.lists() == 2
    assert setup.counter("podread_watch_restarts_total", scope="all-namespaces", reason="expired") >= 1


def test_an_http_410_relists(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS))
    setup.synced()
    server.inject(Fault.error(None, 410, times=1, query={"watch": "true"}))
    server.break_watches()
    wait_until(lambda: setup.lists() == 2 and server.watches >= 1)
    assert len(setup.store.answer(JOB_KEY) or []) == 2


def test_a_cut_stream_resumes_from_the_last_resource_version(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 2, NS))
    setup.synced()
    seen = setup.store.resource_version
    server.break_watches()
    server.put_pods(make_job_pods("llama", 3, NS))  # while no watch is open
    wait_until(lambda: len(setup.store.answer(JOB_KEY) or []) == 3)
    assert setup.lists() == 1  # resumed, not listed again
    resumed = [r for r in server.requests if r.query.get("watch") == "true"][1]
    assert resumed.query["resourceVersion"] == seen and resumed.query["allowWatchBookmarks"] == "true"
    assert setup.counter("podread_watch_restarts_total", scope="all-namespaces", reason="error") >= 1


def test_a_resumed_watch_s_backlog_does_not_confirm_until_its_first_bookmark(
    server: FakeKubeServer, setup: Setup,
) -> None:
    server.put_pods(make_job_pods("llama", 1, NS))
    setup.synced()
    setup.clock.now += 6.0  # the watch's last confirmation is past the TTL
    server.inject(Fault.slow(None, 0.5, times=1, query={"watch": "true"}))  # the resume is slow to come
    server.break_watches()
    server.put_pods(make_job_pods("llama", 3, NS))  # the resumed request replays these: the past
    wait_until(lambda: len(setup.store) == 3)
    assert setup.store.answer(JOB_KEY) is None  # applied, not confirmed
    server.bookmark()  # nothing new since the backlog: the cacher (and the fake) skip it
    time.sleep(0.3)
    assert setup.store.answer(JOB_KEY) is None
    assert setup.watch.nudge() is True  # the watch has reached the server's resourceVersion
    assert len(setup.store.answer(JOB_KEY) or []) == 3


def test_errors_back_off_and_the_watch_comes_back(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 1, NS))
    setup.synced()
    fault = server.inject(Fault.error(None, 500, times=3, query={"watch": "true"}))
    server.break_watches()
    server.put_pods(make_job_pods("llama", 2, NS))
    wait_until(lambda: len(setup.store.answer(JOB_KEY) or []) == 2)
    assert fault.hits == 3 and setup.lists() == 1


def test_duplicate_and_reordered_events_over_the_wire_leave_the_newest_state(
    server: FakeKubeServer, setup: Setup,
) -> None:
    made = make_job_pods("llama", 1, NS)
    server.put_pods(made)
    setup.synced()
    start = server.resource_version
    name = made[0]["metadata"]["name"]
    server.hold_watch_events()
    server.update_pod(NS, name, lambda p: p["status"].update(phase="Pending"))
    server.update_pod(NS, name, lambda p: p["status"].update(phase="Failed"))
    server.release_watch_events(reverse=True)  # Failed arrives first, then the older Pending
    server.replay_watch_events(start)  # and both again
    server.bookmark()
    wait_until(lambda: setup.store.resource_version == str(server.resource_version))
    assert setup.store.answer(JOB_KEY)[0]["status"]["phase"] == "Failed"
    ignored = setup.metrics.watch_events.labels("all-namespaces", "MODIFIED", "ignored")._value.get()
    assert ignored == 3


def test_stop_ends_the_watch_promptly(server: FakeKubeServer, setup: Setup) -> None:
    setup.synced()
    started = time.monotonic()
    setup.watch.stop()
    assert time.monotonic() - started < 2 and not setup.watch.running
    wait_until(lambda: server.watches == 0)
    setup.reader.job_pods(NS, "llama")  # reads go on, from TTL fills
    assert not setup.watch.running


def test_the_server_ends_each_watch_at_its_timeout_and_it_resumes(server: FakeKubeServer) -> None:
    setup = Setup(server, watch_seconds=3)
    try:
        server.put_pods(make_job_pods("llama", 1, NS))
        setup.synced()
        wait_until(lambda: setup.watches() >= 2, timeout=8)
        first = next(r for r in server.requests if r.query.get("watch") == "true")
        assert first.query["timeoutSeconds"] == "3"
        assert setup.lists() == 1
        assert setup.counter("podread_watch_restarts_total", scope="all-namespaces", reason="ended") >= 1
    finally:
        setup.watch.stop()


def test_a_watch_the_server_ends_at_once_with_no_event_backs_off(server: FakeKubeServer) -> None:
    """client-go's "very short watch": a watch that ends in under ``SHORT_WATCH_SECONDS`` with no
    event is a failure and waits its backoff (reason ``short``). Resumed at once, a proxy that
    closes every watch would make the watch a hot loop of requests. The backoff here starts at 0.2 s:
    in about 1.5 s at most 5 watches are sent (0.2, 0.4, 0.8 s apart, each drawn from half of it up),
    against hundreds resumed at once."""
    setup = Setup(server)
    setup.watch._backoff = Backoff(0.2, 5.0)
    try:
        server.put_pods(make_job_pods("llama", 1, NS))
        server.inject(Fault(path="/api/v1/pods", query={"watch": "true"}, body=b""))  # 200, an empty stream
        setup.watch.start()
        wait_until(lambda: setup.watches() >= 1)
        time.sleep(1.5)
        assert 2 <= setup.watches() <= 6
        assert setup.counter("podread_watch_restarts_total", scope="all-namespaces", reason="short") >= 1
        assert setup.counter("podread_watch_restarts_total", scope="all-namespaces", reason="ended") == 0
    finally:
        setup.watch.stop()


def test_the_fake_sends_a_bookmark_before_the_timeout_only_when_its_watch_cache_moved(
    server: FakeKubeServer,
) -> None:
    live = LiveClient(server.api_client(retries=False))
    server.put_pods(make_job_pods("llama", 1, NS))
    _, version = live.list_snapshot(PodSelector(has_labels=(JOB_LABEL,)))
    started = time.monotonic()
    assert list(events(live.open_watch(PodSelector(has_labels=(JOB_LABEL,)), version, 3))) == []  # nothing new
    assert 2.5 <= time.monotonic() - started < 8  # ended at timeoutSeconds (generous: a loaded machine)
    response = live.open_watch(PodSelector(has_labels=(JOB_LABEL,)), version, 3)
    wait_until(lambda: server.watches == 1)
    server.put_pod(make_pod("unlabelled", namespace="kube-system"))  # the watch cache moves, no event for us
    got = list(events(response))
    assert [e["type"] for e in got] == ["BOOKMARK"]
    assert got[0]["object"]["metadata"] == {"resourceVersion": str(server.resource_version),
                                            "creationTimestamp": None}


def test_a_quiet_watch_is_confirmed_by_a_nudge(server: FakeKubeServer, setup: Setup) -> None:
    server.put_pods(make_job_pods("llama", 1, NS))
    setup.synced()
    setup.clock.now += 2.5
    assert setup.watch.nudge() is None  # confirmed 2.5 s ago (TTL 5 s, nudges from 3 s): no list needed
    setup.clock.now += 3.5
    assert setup.store.answer(JOB_KEY) is None
    assert setup.watch.nudge() is True  # nothing changed since: the watch is current as of the nudge
    assert len(setup.store.answer(JOB_KEY) or []) == 1
    setup.clock.now += 6.0
    server.bump_resource_version()  # another kind of object changed: the watch is "behind" the list
    assert setup.watch.nudge() is False
    server.bookmark()  # the nudge's consistent list moved the watch cache: the next bookmark confirms
    wait_until(lambda: setup.store.answer(JOB_KEY) is not None)
    nudges = [r for r in server.requests if r.query.get("limit") == "1"]
    assert len(nudges) == 2 and all(r.query["labelSelector"] == JOB_LABEL for r in nudges)


def test_a_list_the_reader_just_sent_confirms_the_watch_without_a_nudge_list(server: FakeKubeServer) -> None:
    clock = Clock()
    metrics = ReadMetrics(CollectorRegistry())
    live = LiveClient(server.api_client(retries=False), timeout_seconds=5, metrics=metrics, clock=clock)
    store = WatchedPods(None, ttl_seconds=5.0, clock=clock, metrics=metrics)
    watch = PodWatch(LiveClient(server.api_client(retries=False), clock=clock), store, metrics=metrics,
                     nudge_every=None, peers=[live])
    server.put_pods(make_job_pods("llama", 1, NS))
    try:
        watch.start()
        wait_until(lambda: store.staleness() is not None)
        clock.now += 4.5
        live.list_pods(PodSelector(namespace=NS, labels={JOB_LABEL: "other"}))  # a barrier's live check, say
        before = server.request_count()
        assert watch.nudge() is True
        assert server.request_count() == before  # no list of its own
        assert store.staleness() == 0.0  # confirmed as of the Reader's list
    finally:
        watch.stop()


class Peer:
    """Any ``VersionedLister``: a ``last_version`` and nothing else."""

    def __init__(self, version: ListVersion | None) -> None:
        self.last_version = version


class NoLists:
    """A live client that must not be asked: the peers answer the nudge."""

    def current_version(self, selector: PodSelector) -> str:
        raise AssertionError("the nudge sent a list of its own")


def test_a_peers_typed_list_version_confirms_a_quiet_watch() -> None:
    clock = Clock()
    metrics = ReadMetrics(CollectorRegistry())
    watched = WatchedPods(None, ttl_seconds=5.0, clock=clock, metrics=metrics)
    watched.replace([pod("w-0", 7)], "7", clock.now)
    clock.now += 4.5
    old = Peer(ListVersion("7", clock.now - 5.0))  # sent before the store's confirmation: tells nothing
    ahead = Peer(ListVersion("9", clock.now - 0.5))  # the watch has not reached it: tells nothing either
    current = Peer(ListVersion("7", clock.now - 0.5))
    watch = PodWatch(NoLists(), watched, metrics=metrics, nudge_every=None, peers=[Peer(None), old, ahead, current])
    assert watch.nudge() is True
    assert watched.staleness() == 0.5  # confirmed as of the current peer's list
    assert metrics.watch_nudges.labels("all-namespaces", "by-peer")._value.get() == 1


def test_the_store_keeps_slim_pods() -> None:
    watched = store()
    full = make_job_pods("llama", 1, NS)[0]
    full["metadata"]["resourceVersion"] = "10"
    watched.replace([slim(full)], "10")
    kept = watched.answer(JOB_KEY)[0]
    assert "managedFields" not in kept["metadata"] and "containers" not in kept["spec"]
    assert watched.bytes > 0


def test_the_watch_lists_in_pages_of_watch_page_size_while_job_reads_keep_the_clients_pages(
        server: FakeKubeServer, setup: Setup) -> None:
    """The watch's list decodes WATCH_PAGE_SIZE pods at a time (the memory a list leaves behind grows
    with a page: podread.watch.WATCH_PAGE_SIZE), every pod still listed once and the store whole; a
    Job's own list keeps the client's page size."""
    from podread.live import DEFAULT_PAGE_SIZE, FIRST_PAGE_SIZE
    from podread.watch import WATCH_PAGE_SIZE

    assert WATCH_PAGE_SIZE < DEFAULT_PAGE_SIZE
    server.put_pods([p for j in range(5) for p in make_job_pods(f"job-{j}", 50, NS)])  # 250 pods
    setup.synced()
    lists = [r for r in server.requests if r.path.endswith("/pods") and r.query.get("watch") != "true"]
    assert [r.query.get("limit") for r in lists] == [str(WATCH_PAGE_SIZE)] * 3  # 100 + 100 + 50
    assert len(setup.store) == 250
    setup.live.list_pods(PodSelector(namespace=NS, labels={JOB_LABEL: "job-0"}))
    assert server.requests[-1].query.get("limit") == str(FIRST_PAGE_SIZE)  # one page: 50 pods
