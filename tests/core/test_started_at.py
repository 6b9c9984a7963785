"""``hooks.core.history.started_at`` skips a pod whose status is the very object whose start it took
last (slim pods of one phase and start share one, issue 32 item 4): held equal to the former scan
(kept here) on a gang's slim pods and on random pods that share, or do not share, their statuses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.pods import realistic_job_pods
from hooks.core import deadlines
from hooks.core.history import RAN, started_at
from podread.constants import JOBSET_NAME_LABEL
from podread.slim import slim


def _former(pods: Sequence[Mapping[str, Any]], workload: str) -> datetime | None:
    texts: set[str] = set()
    for pod in pods:
        status = pod.get("status") or {}
        start = status.get("startTime")
        if (isinstance(start, str) and start not in texts and status.get("phase") in RAN
                and ((pod.get("metadata") or {}).get("labels") or {}).get(JOBSET_NAME_LABEL) == workload):
            texts.add(start)
    known = [moment for moment in map(deadlines.time_or_none, texts) if moment is not None]
    return min(known) if known else None


def test_a_gang_s_slim_pods_share_one_status_and_date_the_attempt_as_before() -> None:
    pods = [slim(pod) for pod in realistic_job_pods("llama", 64, "team-a")]
    assert len({id(pod["status"]) for pod in pods}) == 1
    assert started_at(pods, "llama-0") == _former(pods, "llama-0") is not None


STATUSES = [{"phase": "Running", "startTime": "2026-01-01T00:00:05Z"},
            {"phase": "Running", "startTime": "2026-01-01T00:00:01Z"}, {"phase": "Pending"},
            {"phase": "Succeeded", "startTime": "2026-01-01T00:00:03Z"},
            {"phase": "Pending", "startTime": "2026-01-01T00:00:00Z"},
            {"phase": "Failed", "startTime": "not a time"}, {"phase": "Running", "startTime": 5}, {}]


@st.composite
def _pods(draw: st.DrawFn) -> list[dict[str, Any]]:
    shared = [dict(status) for status in STATUSES]  # objects pods may share, as slim pods do
    pods = []
    for _ in range(draw(st.integers(0, 12))):
        index = draw(st.integers(0, len(shared) - 1))
        status = shared[index] if draw(st.booleans()) else dict(STATUSES[index])
        workload = draw(st.sampled_from(["j-0", "j-1", None]))
        labels = {} if workload is None else {JOBSET_NAME_LABEL: workload}
        pod: dict[str, Any] = {"metadata": {"labels": labels}}
        if draw(st.integers(0, 5)):
            pod["status"] = status
        pods.append(pod)
    return pods


@settings(max_examples=800, deadline=None)
@given(pods=_pods(), workload=st.sampled_from(["j-0", "j-1"]))
def test_started_at_is_the_former_scan_on_pods_that_share_statuses(pods: list[dict[str, Any]], workload: str) -> None:
    assert started_at(pods, workload) == _former(pods, workload)
