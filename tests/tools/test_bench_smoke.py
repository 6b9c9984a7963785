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
