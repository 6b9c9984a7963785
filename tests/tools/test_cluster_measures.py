"""bench.cluster_measures: the audit log's count of the hooks' requests, the hooks' histogram read as
PromQL's ``histogram_quantile`` reads it."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bench.cluster_measures import (
    APF_EXECUTION,
    APF_WAIT,
    ApiServerMetrics,
    HookMetrics,
    add_buckets,
    count_requests,
    over,
    quantile,
    request_key,
    server_seconds,
)


def test_quantiles_interpolate_within_their_bucket() -> None:
    buckets = [(0.1, 50.0), (1.0, 90.0), (10.0, 100.0), (float("inf"), 100.0)]
    assert quantile(buckets, 0.5) == pytest.approx(0.1)
    assert quantile(buckets, 0.25) == pytest.approx(0.05), "the first bucket starts at 0"
    assert quantile(buckets, 0.7) == pytest.approx(0.1 + 0.9 * 20 / 40)
    assert quantile(buckets, 0.99) == pytest.approx(1.0 + 9.0 * 9 / 10)
    assert quantile([(1.0, 0.0), (float("inf"), 4.0)], 0.5) == 1.0, "in +Inf: the highest finite bound"
    assert quantile([(1.0, 0.0), (float("inf"), 0.0)], 0.5) is None


def test_a_scrape_sums_every_hook_and_a_window_is_the_difference() -> None:
    registry = CollectorRegistry()
    requests = Counter("nvcre_hook_requests_total", "", ["hook", "code"], registry=registry)
    duration = Histogram("nvcre_hook_request_duration_seconds", "", ["hook"], buckets=(0.1, 1.0),
                         registry=registry)
    pods = Gauge("podread_watch_pods", "", ["scope"], registry=registry)
    for seconds in (0.05, 0.05, 0.5):
        requests.labels("sync", "200").inc()
        duration.labels("sync").observe(seconds)
    before = HookMetrics.parse(generate_latest(registry).decode())
    requests.labels("finalize", "200").inc()
    duration.labels("finalize").observe(2.0)
    pods.labels("team-a").set(16)
    after = HookMetrics.parse(generate_latest(registry).decode())
    assert (before.calls, after.calls, after.watch_pods) == (3, 4, 16)
    assert after.share_over(1.0) == pytest.approx(0.25)
    window = after.minus(before)
    assert window.calls == 1 and window.observed == 1 and window.share_over(1.0) == 1.0
    with pytest.raises(ValueError, match="not a bucket bound"):
        after.share_over(0.3)


ONE_JOB = "/api/v1/namespaces/ns/pods?labelSelector=nvcre.nvidia.com%2Fjob%3Dtrain-1"


def test_requests_are_keyed_by_verb_resource_and_scope() -> None:
    def event(verb: str, resource: str, namespace: str = "ns", group: str = "", sub: str = "",
              uri: str = ONE_JOB) -> dict[str, object]:
        ref = {"resource": resource, "apiGroup": group, **({"namespace": namespace} if namespace else {}),
               **({"subresource": sub} if sub else {})}
        return {"verb": verb, "objectRef": ref, "stage": "ResponseComplete", "requestURI": uri}

    watch_list = "/api/v1/pods?labelSelector=nvcre.nvidia.com%2Fjob&limit=1"
    events = [event("list", "pods"), event("list", "pods"), event("list", "pods", namespace="", uri=watch_list),
              event("watch", "pods", namespace=""), event("get", "jobs", group="nvcre.nvidia.com"),
              event("list", "jobs", group="batch"), event("create", "pods", sub="eviction"),
              {**event("list", "pods"), "stage": "ResponseStarted"}]
    assert request_key(events[4]) == "get nvjobs"
    assert count_requests(events) == {"list pods": 2, "list pods (watch) (all namespaces)": 1,
                                      "watch pods (all namespaces)": 1, "get nvjobs": 1, "list jobs": 1,
                                      "create pods/eviction": 1}


def test_the_tail_series_are_kept_by_kind_and_labels_and_a_window_is_their_difference() -> None:
    """Issue 36 item 8: the answers by outcome, the reads by method and source, the live Job GETs and
    the effects thread's writes, each its own series (every worker summed), so the bench can say
    which of them make the slow calls."""
    registry = CollectorRegistry()
    outcome = Histogram("nvcre_hook_outcome_duration_seconds", "", ["hook", "outcome"], buckets=(0.25, 1.0),
                        registry=registry)
    reads = Histogram("podread_read_duration_seconds", "", ["method", "source"], buckets=(0.25, 1.0),
                      registry=registry)
    parent = Histogram("nvcre_parent_read_duration_seconds", "", ["read"], buckets=(0.25, 1.0), registry=registry)
    outcome.labels("sync", "checked").observe(0.1)
    earlier = HookMetrics.parse(generate_latest(registry).decode())
    outcome.labels("sync", "checked").observe(0.5)
    outcome.labels("sync", "steady").observe(0.01)
    reads.labels("attempt_jobs", "live").observe(2.0)
    parent.labels("version").observe(0.3)
    later = HookMetrics.parse(generate_latest(registry).decode())
    window = later.minus(earlier)
    assert window.series["answer sync/checked"] == [(0.25, 0.0), (1.0, 1.0), (float("inf"), 1.0)]
    assert window.series["answer sync/steady"] == [(0.25, 1.0), (1.0, 1.0), (float("inf"), 1.0)]
    assert window.series["read attempt_jobs/live"] == [(0.25, 0.0), (1.0, 0.0), (float("inf"), 1.0)]
    assert over(window.series["read attempt_jobs/live"], 1.0) == 1
    assert over(window.series["live Job GET version"], 0.25) == 1
    assert add_buckets(window.series["answer sync/checked"], window.series["answer sync/steady"]) == [
        (0.25, 1.0), (1.0, 2.0), (float("inf"), 2.0)]


def test_the_stand_in_keeps_each_calls_wall_time_and_the_hooks_own_time() -> None:
    from bench.cluster_scale import TimedTransport, _server_seconds
    from tests.e2e.driver import Reply

    class Fixed:
        def post(self, path: str, body: bytes, headers: object) -> Reply:
            return Reply(200, b"{}", 0.4, {"server-timing": "db;dur=1, hook;dur=125.5"})

    transport = TimedTransport(Fixed())  # type: ignore[arg-type]
    assert transport.post("/sync", b"{}", {}).status == 200
    assert transport.calls == [(0.4, pytest.approx(0.1255))]
    assert math.isnan(_server_seconds("")) and math.isnan(_server_seconds("hook;dur=x"))


def test_open_pod_watches_are_those_started_and_not_yet_complete(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from bench.cluster_scale import open_pod_watches

    def event(audit: str, stage: str, second: float, verb: str = "watch", resource: str = "pods") -> str:
        stamp = f"2026-12-07T03:00:{second:09.6f}Z"
        return json.dumps({"auditID": audit, "stage": stage, "verb": verb, "stageTimestamp": stamp,
                           "objectRef": {"resource": resource, "namespace": "ns"}})

    before = event("old", "ResponseStarted", 0) + "\n"
    lines = [event("a", "ResponseStarted", 1), event("b", "ResponseStarted", 2), event("a", "ResponseComplete", 3),
             event("c", "ResponseStarted", 4, resource="jobs"), event("d", "ResponseComplete", 5, verb="list"),
             event("e", "ResponseStarted", 6), event("z", "ResponseComplete", 9, verb="get")]
    log = tmp_path / "audit.log"
    log.write_text(before + "\n".join(lines) + "\n" + event("f", "ResponseStarted", 9)[:20])  # a line being written
    assert open_pod_watches(log, len(before)) == 2  # b and e; not the earlier pass's, nor the half-written line
    assert open_pod_watches(log) == 3
    assert open_pod_watches(tmp_path / "none.log") == 0


def test_a_watch_resumed_between_two_lines_is_still_one_open_watch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The hooks resume their pod watch every few seconds: its end and the next one's start are two
    lines a few milliseconds apart. Counted at a moment of the API server's clock before the newest
    line, a log read between the two still shows the one watch (counted when the log was read, it
    showed none: a recorded pass said 0)."""
    import json

    from bench.cluster_scale import open_pod_watches

    def event(audit: str, stage: str, stamp: str) -> str:
        return json.dumps({"auditID": audit, "stage": stage, "verb": "watch", "stageTimestamp": stamp,
                           "objectRef": {"resource": "pods", "namespace": "ns"}})

    log = tmp_path / "audit.log"
    log.write_text("\n".join([event("one", "ResponseStarted", "2026-12-07T03:17:53.125161Z"),
                              event("one", "ResponseComplete", "2026-12-07T03:17:56.125307Z")]) + "\n")
    assert open_pod_watches(log) == 1  # the next line, the new watch's start, is not written yet
    with log.open("a") as more:
        more.write(event("two", "ResponseStarted", "2026-12-07T03:17:56.127260Z") + "\n")
    assert open_pod_watches(log) == 1
    assert open_pod_watches(log, settle_seconds=0.0) == 1


def test_an_audit_log_shorter_than_the_offset_read_from_fails_the_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The API server rotating its audit log (its default, at 100 MB, which a 1,000-Job pass passes)
    would leave the readers' offsets past the new file's end: every request after it uncounted. The
    tier's plane never rotates it (``--audit-log-maxsize=0``), and a shorter file is an error."""
    from bench.cluster_scale import open_pod_watches
    from tests.cluster.controlplane import ControlPlane, ControlPlaneError, read_audit_log

    log = tmp_path / "audit.log"
    log.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert read_audit_log(log, 9) == b'{"b": 2}\n'
    assert read_audit_log(log, 18) == b""
    with pytest.raises(ControlPlaneError, match="rotated"):
        read_audit_log(log, 19)
    with pytest.raises(ControlPlaneError, match="rotated"):
        open_pod_watches(log, 1_000)
    assert "--audit-log-maxsize=0" in ControlPlane(tmp_path / "bin", tmp_path / "plane")._apiserver_command()


def test_the_time_outside_the_hook_is_the_callers_wall_time_less_the_hooks_own() -> None:
    from bench.cluster_scale import PASSES, PassResult, Window

    result = PassResult(PASSES["large-install"], 1)
    assert result.outside_hook() is None
    result.windows["steady"] = Window(walls=[(0.030, 0.024), (10.0, math.nan)])
    result.windows["transitions"] = Window(walls=[(0.010, 0.008)])
    # (0.006 + 0.002) / 2: a call without Server-Timing is left out
    assert result.outside_hook() == pytest.approx(0.004)
    assert result.row()["outside hook ms"] == "4"


def test_the_api_servers_own_time_is_received_to_response_complete_by_request() -> None:
    def event(verb: str, received: str, completed: str, stage: str = "ResponseComplete") -> dict[str, object]:
        return {"verb": verb, "objectRef": {"resource": "jobs", "apiGroup": "nvcre.nvidia.com", "namespace": "ns"},
                "stage": stage, "requestReceivedTimestamp": received, "stageTimestamp": completed}

    events = [event("get", "2026-12-06T17:24:43.100000Z", "2026-12-06T17:24:43.112500Z"),
              event("get", "2026-12-06T17:24:43.900000Z", "2026-12-06T17:24:44.150000Z"),
              event("get", "2026-12-06T17:24:43.100000Z", "2026-12-06T17:24:45.000000Z", stage="ResponseStarted"),
              event("watch", "2026-12-06T17:00:00.000000Z", "2026-12-06T17:30:00.000000Z")]
    taken = server_seconds(events)
    assert list(taken) == ["get nvjobs"]
    assert taken["get nvjobs"] == pytest.approx([0.0125, 0.25])


def test_priority_and_fairness_waits_are_summed_by_level_and_a_window_is_their_difference() -> None:
    def text(waited: float, executed: float) -> str:
        lines = []
        for schema, level in (("service-accounts", "workload-low"), ("kube-controller-manager", "workload-high"),
                              ("global-default", "global-default")):
            for execute, value in (("true", waited), ("false", 100.0)):
                lines += [f'{APF_WAIT}_bucket{{execute="{execute}",flow_schema="{schema}",priority_level="{level}",'
                          f'le="{bound}"}} {value if bound != "0.1" else value / 2}' for bound in ("0.1", "+Inf")]
            lines += [f'{APF_EXECUTION}_bucket{{flow_schema="{schema}",priority_level="{level}",type="regular",'
                      f'le="{bound}"}} {executed}' for bound in ("0.1", "+Inf")]
        return "\n".join([f"# TYPE {APF_WAIT} histogram", *[x for x in lines if APF_WAIT in x],
                          f"# TYPE {APF_EXECUTION} histogram", *[x for x in lines if APF_EXECUTION in x]]) + "\n"

    before, after = ApiServerMetrics.parse(text(4.0, 10.0)), ApiServerMetrics.parse(text(10.0, 30.0))
    assert after.series["APF wait workload-low"] == [(0.1, 5.0), (math.inf, 10.0)]  # the rejected ones left out
    assert after.minus(before).series["APF wait workload-low"] == [(0.1, 3.0), (math.inf, 6.0)]
    assert after.minus(before).series["APF execution global-default"] == [(0.1, 20.0), (math.inf, 20.0)]


def test_the_tail_table_shows_the_api_servers_own_time_and_its_queues() -> None:
    """The "where the tail is" rows of the API server: its own time of the hooks' reads (the audit
    log's, listed) and Priority and Fairness's histograms, whose buckets have no 0.25 s or 1 s bound:
    their counts over those are not known ("-"), never the whole count."""
    from bench.cluster_scale import LARGE, PassResult, Window

    window = Window(seconds=10.0, server={"get nvjobs": [0.01, 0.02, 0.3], "create events": [0.5]},
                    apiserver=ApiServerMetrics({"APF wait workload-low": [(0.1, 8.0), (0.5, 9.0), (math.inf, 10.0)]}))
    rows = {row["what"]: row for row in PassResult(LARGE, 1, windows={"transitions": window}).tail_rows()}
    own = rows["API server's own time: get nvjobs"]
    assert (own["count"], own[">0.25s"], own[">1s"]) == (3, 1, 0)
    assert "API server's own time: create events" not in rows  # the writes are off the answers' path
    queued = rows["API server: APF wait workload-low"]
    assert (queued["count"], queued[">0.25s"], queued[">1s"]) == (10, "-", "-")


def test_the_pods_memory_is_taken_each_page_once_and_shown_steady_then_under_load() -> None:
    """Issue 36 item 2: the hooks pod's PSS sum and its pages counted once (the RSS sum counts the pages
    the master and a worker share twice), at the steady window's end and after the transitions."""
    import os

    from bench.cluster_scale import _pair_kib, pod_memory_kib

    pss, once = pod_memory_kib(os.getpid(), [])
    assert pss is not None and pss > 0
    assert once is None or once > 0  # None where the kernel hides the page frames
    assert _pair_kib({"steady": (2048, None), "load": (3072, 4096)}, 0) == "2, 3"
    assert _pair_kib({"steady": (2048, None)}, 1) == "-, -"


def test_a_window_is_cut_at_a_scrape_where_every_counted_call_is_in_the_histogram(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that ends while a scrape reads the counter and then the histogram is counted and not yet
    timed: ``HookMetrics.settled`` scrapes again (CI once saw a window of 129 calls and 128 timed),
    and takes the last scrape when the counts never agree."""
    registry = CollectorRegistry()
    requests = Counter("nvcre_hook_requests_total", "", ["hook", "code"], registry=registry)
    duration = Histogram("nvcre_hook_request_duration_seconds", "", ["hook"], buckets=(0.1,), registry=registry)
    requests.labels("sync", "200").inc()  # mid-call: counted, not yet timed
    texts = [generate_latest(registry).decode()]
    duration.labels("sync").observe(0.05)
    texts.append(generate_latest(registry).decode())
    served = iter(texts)
    monkeypatch.setattr(HookMetrics, "scrape", classmethod(lambda cls, url, timeout=10.0: cls.parse(next(served))))
    settled = HookMetrics.settled("http://unused", pause=0)
    assert (settled.calls, settled.observed) == (1, 1)
    always_behind = iter([texts[0]] * 3)
    monkeypatch.setattr(HookMetrics, "scrape",
                        classmethod(lambda cls, url, timeout=10.0: cls.parse(next(always_behind))))
    assert HookMetrics.settled("http://unused", tries=3, pause=0).observed == 0  # the last scrape, as it was
