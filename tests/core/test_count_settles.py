"""``activePods`` settles whichever hooks process answers (issue 36 item 7).

Each gunicorn worker holds its own TTL pod cache (``NVCRE_CACHE_MODE=ttl``), filled at its own time.
A Job whose pods all finished is seen by one worker's entry, listed before, as 8 Running and by the
other's, listed after, as none: a count taken from whichever cache answered moved the status back and
forth (each write is a new sync, answered by the other worker) until the older entry expired. These
tests drive ``decide`` with two real ``podread.Reader``s, each over its own ``PodCache`` (a fake
clock, one fake API server), feed each answer's status back as ``parent.status`` and require a
fixed point.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from hooks.core.decide import decide
from hooks.core.observed import parse_request
from podread import PodCache, Reader, ReadMetrics
from tests.support import job_request, jobset_child, make_pod
from tests.support.fake_lister import FakeLister

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TTL = 5.0
RUNNING = {"activePods": 8, "message": ""}
ENDED = {"activePods": 0,
         "message": "no pod of JobSet train-0 is active: waiting for the JobSet to report how it ended"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pods(phase: str) -> list[dict[str, Any]]:
    return [make_pod(f"train-0-worker-0-{i}", job="train", phase=phase) for i in range(8)]


def worker(api: FakeLister, clock: Clock) -> Reader:
    """One hooks process: its own TTL cache over the shared API server, which is also its live client."""
    metrics = ReadMetrics(CollectorRegistry())
    return Reader(PodCache(api, ttl_seconds=TTL, clock=clock, metrics=metrics), api, metrics=metrics)


def sync(reader: Reader, status: dict[str, Any]) -> dict[str, Any]:
    """One sync of a Job whose JobSet train-0 is observed (not yet Completed); returns the status."""
    observed = parse_request(job_request(jobsets=[jobset_child("train", 0)], status=status), "sync")
    return decide(observed, reader, NOW).response["status"]


def said(status: dict[str, Any]) -> dict[str, Any]:
    return {"activePods": status["activePods"], "message": status["message"]}


def test_a_count_from_an_older_cache_does_not_move_the_status_back() -> None:
    clock, api = Clock(), FakeLister(pods("Running"))
    first, second = worker(api, clock), worker(api, clock)
    status = sync(first, {"phase": "Running", "attempt": 0})
    assert said(status) == RUNNING  # the first worker's entry: 8 Running, kept for the TTL
    api.pods = pods("Succeeded")
    clock.now += 1.0
    status = sync(second, status)  # the second worker fills its entry now: every pod finished
    assert said(status) == ENDED
    written = [status]
    for reader in (first, second) * 4:  # a hot loop within the first worker's TTL
        clock.now += 0.3
        status = sync(reader, status)
        written.append(status)
    assert clock.now - 1000.0 < TTL  # the first worker's entry has not expired: it still says 8 Running
    assert [said(s) for s in written] == [ENDED] * len(written)  # a fixed point, whichever worker answers
    assert all(s["phase"] == "Running" for s in written)


def test_a_cache_that_expires_between_calls_reaches_the_fixed_point() -> None:
    """The pods finish in two steps (8, 4, then 0 active) while each worker's entry expires between
    its calls, at times of its own: fed back, the count only ever follows the pods (it never goes back
    up to an older list's), and once they stop changing so does the status, on either worker."""
    clock, api = Clock(), FakeLister(pods("Running"))
    first, second = worker(api, clock), worker(api, clock)
    status = sync(first, {"phase": "Running", "attempt": 0})  # t=0: the first worker's entry, 8 active
    counts = [status["activePods"]]
    api.pods = pods("Running")[:4] + pods("Succeeded")[4:]  # before the second worker's first list
    for step in range(16):  # a sync every 0.8 s, alternating: each entry answers 3 or 4 syncs
        clock.now += 0.8
        if step == 6:
            api.pods = pods("Succeeded")
        status = sync((second, first)[step % 2], status)
        counts.append(status["activePods"])
    assert counts == sorted(counts, reverse=True)  # the pods only finish: the count never climbs back
    assert said(status) == ENDED
    settled = status
    for step in range(8):  # entries of both workers expire again along the way: nothing moves
        clock.now += 0.8
        status = sync((first, second)[step % 2], status)
        assert status == settled


def test_the_count_follows_the_pods_as_they_start_and_stop() -> None:
    """Confirming a changed count never hides a real change: each change of the pods reaches the
    status on the next sync, whichever worker's cache is older."""
    clock, api = Clock(), FakeLister(pods("Running"))
    first, second = worker(api, clock), worker(api, clock)
    status = sync(first, {"phase": "Pending", "attempt": 0})
    assert (status["phase"], status["activePods"]) == ("Running", 8)
    sync(second, status)  # the second worker's entry, from now
    api.pods = pods("Running")[:3] + pods("Succeeded")[3:]
    clock.now += 1.0
    status = sync(first, status)  # its entry is 1 s old and still says 8 active
    assert status["activePods"] == 8
    clock.now += TTL  # both entries expired
    status = sync(second, status)
    assert status["activePods"] == 3
    assert sync(first, status) == status  # the first worker's entry expired too: it lists 3 active now
    api.pods = pods("Succeeded")
    status = sync(first, status)  # its entry, listed 0 s ago, says 3 active as the status does: kept
    assert status["activePods"] == 3
    clock.now += TTL
    status = sync(first, status)
    assert said(status) == ENDED
    assert said(sync(second, status)) == ENDED


def test_a_sync_walks_the_job_s_pods_once_to_count_them(monkeypatch: Any) -> None:
    """The count the Reader checks against the status (``Reader.counted_job_pods``) is the count the
    status is given (``hooks.core.reads.counted``): the cache's, counted once when it keeps the pods
    (``CachedRead.active``), or, when the count moves, one pass over the API server's (issue 32 item 4)."""
    import podread.selector

    walks: list[int] = []
    count_active = podread.selector.count_active

    def counting(listed: Any) -> int:
        walks.append(len(listed))
        return count_active(listed)

    for module in ("podread.selector", "podread.reader", "hooks.core.reads"):  # wherever it is called from
        monkeypatch.setattr(f"{module}.count_active", counting, raising=False)
    api = FakeLister(pods("Running"))
    reader = worker(api, Clock())
    reader.job_pods("default", "train")  # the cache filled before the sync, as a warm cache is
    assert walks == [8], "the cache counts the pods it keeps once, when it keeps them"
    walks.clear()
    assert said(sync(reader, RUNNING)) == RUNNING
    assert walks == [], "the cache's count: no walk of the cached pods per sync"
    assert sync(reader, {**RUNNING, "activePods": 3})["activePods"] == 8
    assert walks == [8], "the API server's pods that settle the new count, counted once"
