"""Smoke test of the benchmarks: each runs at a tiny size and returns well-formed figures.

No timing is asserted (the machine is shared and noisy); only that the code runs, the counts add
up and the two Readers of the API-call replay decide alike where they must.
"""

from __future__ import annotations

import json

import pytest

from bench import api_calls, cache_memory, raw_json, sync_http, sync_profile
from bench.__main__ import report
from bench.common import BenchResult


def _check(result: BenchResult) -> None:
    assert result.figures
    for figure in result.figures:
        assert figure.value == figure.value  # not NaN
    json.dumps(result.as_dict(), default=str)
    assert report(result)


def test_api_calls_tiny() -> None:
    result = api_calls.run(jobs=12, sweep_jobs=12, minutes=3.0, ttls=(5.0,))
    _check(result)
    decisions = result.tables["decisions"][0]
    assert decisions["unsafe"] == 0
    assert decisions["other"] == 0
    http, live, _watch, floor, _strict = result.tables["ttl5_http"]
    assert 0 < http["list_requests"] < live["list_requests"]
    assert http["list_requests"] >= floor["list_requests"] - result.tables["floor_terms"][0][
        "live_checks_right_after_a_fill_in_the_same_sync"]
    assert str(http["list_requests"]) in result.notes[0]
    watch = result.tables["watch_mode"][0]
    assert watch["unsafe"] == 0
    assert watch["answered_from_cache"] > watch["fills"]  # the watch answers most cached reads
    assert watch["fills"] > 0  # the outage made reads fill from lists, and they are counted


def test_raw_json_tiny() -> None:
    _check(raw_json.run(quick=True, pods=60, memory_pods=30))


def test_cache_memory_tiny() -> None:
    row = cache_memory.growth_row(10, 5, 2)
    assert row["jobs"] == 7
    assert row["cached_pods"] == 4 * 10 + 3 * 64  # 2 + 2 probe jobs of 10 pods, 3 others of 64
    retained, pods, json_bytes, store = cache_memory.watched_store(2)
    assert pods == len(store) == 128 and 0 < json_bytes < retained
    kept_bytes, kept = cache_memory.departed_store(50)
    assert kept == 50 and kept_bytes > 0
    longer, _ = cache_memory.departed_store(50, "x" * 4096)
    assert longer > kept_bytes + 50 * 2 * 4096 * 0.9, "each departed container keeps its own termination message"


@pytest.mark.slow
def test_sync_http_tiny() -> None:
    result = sync_http.run(seconds=0.2, levels=(1, 2))
    _check(result)
    assert all(row["errors"] == 0 and row["requests"] > 0 for row in result.tables["load"])
    assert any(row["app"].startswith("sync (settled") for row in result.tables["load"]), "the steady state"


def test_sync_profile_tiny() -> None:
    _check(sync_profile.run(quick=True))


def test_process_memory_reads_rss_and_pss_of_a_live_process_and_none_of_a_gone_one() -> None:
    import os

    me = cache_memory.process_memory(os.getpid(), "master")
    assert me is not None and me.rss_kib > 1000 and me.role == "master"
    assert me.pss_kib is None or 0 < me.pss_kib <= me.rss_kib + 1024
    assert cache_memory.process_memory(2**22 + 7, "worker") is None  # above pid_max's default: no such process
    memory = cache_memory.PodMemory(("--workers", "2"), 100, [
        cache_memory.ProcessMemory(1, "master", 1024, 512), cache_memory.ProcessMemory(2, "worker", 2048, 1024),
        cache_memory.ProcessMemory(3, "worker", 3072, None)])
    assert memory.workers == 2 and memory.rss_mib == 6.0 and memory.pss_mib is None  # one PSS unknown: no sum
    assert memory.row()["worker PSS / RSS MiB"] == "1.0 / 2.0, - / 3.0"
    assert me.pss_anon_kib is None or 0 <= me.pss_anon_kib <= (me.pss_kib or 0)


def test_unique_kib_counts_a_page_two_processes_share_once() -> None:
    """Two interpreters map the same libpython and libc pages: counted by frame number, the pages of
    both are fewer than their RSS summed and at least the larger one's. Without CAP_SYS_ADMIN the
    frame numbers read as zero and the count is ``None``, not a wrong number."""
    import subprocess
    import sys
    import time

    children = [subprocess.Popen([sys.executable, "-c", "import sys, time; print(1, flush=True); time.sleep(30)"],
                                 stdout=subprocess.PIPE) for _ in range(2)]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == b"1"
        time.sleep(0.1)
        memories = [cache_memory.process_memory(child.pid, "worker") for child in children]
        both = cache_memory.unique_kib([child.pid for child in children])
        rss = [m.rss_kib for m in memories if m is not None]
        assert len(rss) == 2
        if both is not None:
            assert max(rss) <= both + 64 and both < sum(rss), (both, rss)
        assert cache_memory.unique_kib([2**22 + 7]) is None  # a process that is gone
    finally:
        for child in children:
            child.kill()
            child.wait()


@pytest.mark.slow
def test_hooks_pod_memory_under_load_holds_drains_over_tls_while_the_pods_come_and_change() -> None:
    """The "under load" reproduction (issue 36 item 2): held drains (each answer checked: not
    finalized, held by the active pods), the pods created and written again during the calls, TLS."""
    load = cache_memory.Load(clients=4, seconds=3.0, drain_every=2, start=True, churn=1, tls=True)
    memory = cache_memory.hooks_pod_memory(128, ("--threads", "4"), cache_memory.IMAGE_ENV, pods_per_job=8, load=load)
    assert memory.watched_pods == 128 and memory.drains > 0 and memory.syncs > 0, memory.row()
    assert memory.load == load and "over TLS" in load.describe()


def test_held_drain_request_is_the_finalize_of_a_job_whose_jobset_is_gone() -> None:
    from tests.server.test_load import running_request

    drain = json.loads(cache_memory.held_drain_request(running_request(3, 8)))
    assert drain["finalizing"] is True and all(not group for group in drain["children"].values())
    assert drain["parent"]["status"]["activePods"] == 8


def test_hooks_pod_memory_sums_the_master_and_every_worker_once_their_watches_hold_every_pod() -> None:
    shipped, shipped_env = cache_memory.LAYOUTS["as shipped"]
    one = cache_memory.hooks_pod_memory(128, shipped, shipped_env, load=cache_memory.Load(seconds=0.3))
    assert one.workers == 1 and one.watched_pods == 128, one.row()  # the production layout: one watch
    assert [p.role for p in one.processes] == ["master", "worker"]
    assert one.rss_mib == sum(p.rss_kib for p in one.processes) / 1024 > 40
    two = cache_memory.hooks_pod_memory(128, ("--workers", "2", "--threads", "2"), load=cache_memory.Load(seconds=0.3))
    assert two.workers == 2 and two.watched_pods == 256, two.row()  # each worker its own cache
    assert two.rss_mib > one.rss_mib
    [figure, _] = cache_memory.pod_memory_figures([one, two])
    # the pod's PSS sum (each page once) is the figure; the RSS sum, counting shared pages twice, is not less
    assert one.pss_mib is not None and one.pss_mib <= one.rss_mib
    # every page once, the shared libraries' in full: never less than the PSS sum, which gives the pod
    # only its part of a page other processes on the machine map too
    assert one.unique_kib is None or one.pss_mib - 1 <= one.unique_kib / 1024 <= one.rss_mib + 1
    assert figure.unit == "MiB" and figure.value == one.pss_mib and figure.met is None  # no target under 8,000 pods
