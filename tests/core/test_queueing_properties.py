"""Properties of ``decide`` for queue-managed Jobs (docs/adr/0103) over generated states:
the rule that a Workload (the quota) is left out only when no pod of the Job is active on the API
server, that no JobSet is created without admission, determinism and the status fixed point."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.core.test_decide_properties import JOB, LATER, NOW, decide, fast, no_live_pod_of_the_job, observe, scenarios
from tests.support import FakeReader, workload_child
from tests.support.settling import drain_dated

STATES = ["", "pending", "admitted", "evicted"]


@st.composite
def queued(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A generated scenario made queue-managed, with its Workload in some state (or absent: ``-``)."""
    request, reader_args = draw(scenarios())
    request["parent"]["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    state = draw(st.sampled_from([*STATES, "-"]))
    deleting = draw(st.sampled_from(["", "", "2026-01-01T00:00:00Z"]))
    workloads = [] if state == "-" else [workload_child(JOB, state=state, deleting=deleting)]
    keying = request["controller"]["spec"]["hooks"]["sync"]["version"]
    request["children"]["Workload.kueue.x-k8s.io/v1beta2"] = {
        (w["metadata"]["name"] if keying == "v1" else f"default/{w['metadata']['name']}"): w for w in workloads}
    return request, reader_args, state


def live_pods_clear(reader_args: dict[str, Any]) -> bool:
    """Whether the API server (the fake's live view) shows no active pod of the Job by any identity,
    and the live reads work."""
    if reader_args["fail"] & {"live", "active_job_pods", "active_launcher_pods", "active_attempt_pods"}:
        return False
    return no_live_pod_of_the_job(reader_args)


@fast
@given(queued())
def test_the_quota_is_released_only_when_no_pod_is_active(scenario: tuple[dict[str, Any], dict[str, Any], str]) -> None:
    request, reader_args, _ = scenario
    observed = observe(request)
    decision = decide(observed, FakeReader(**reader_args), NOW)
    kept = {c["metadata"]["name"] for c in decision.response["children"] if c["kind"] == "Workload"}
    for workload in observed.workloads:
        if not workload["metadata"].get("deletionTimestamp") and workload["metadata"]["name"] not in kept:
            assert live_pods_clear(reader_args), "a Workload left out while a pod may be active"


@fast
@given(queued())
def test_no_jobset_is_created_without_admission(scenario: tuple[dict[str, Any], dict[str, Any], str]) -> None:
    request, reader_args, state = scenario
    observed = observe(request)
    decision = decide(observed, FakeReader(**reader_args), NOW)
    seen = {js["metadata"]["name"] for js in observed.jobsets}
    created = [c for c in decision.response["children"] if c["kind"] == "JobSet" and c["metadata"]["name"] not in seen]
    if created:
        workload = observed.workloads[0] if observed.workloads else None
        assert state == "admitted" and workload is not None and not workload["metadata"].get("deletionTimestamp")


@fast
@given(queued())
def test_queue_managed_decisions_are_deterministic_and_a_fixed_point(
        scenario: tuple[dict[str, Any], dict[str, Any], str]) -> None:
    request, reader_args, _ = scenario
    first = decide(observe(request), FakeReader(**reader_args), NOW)
    assert decide(observe(request), FakeReader(**reader_args), NOW) == first
    request["parent"]["status"] = first.response["status"]
    again = decide(observe(request), FakeReader(**reader_args), NOW)
    if drain_dated(first.response["status"], again.response["status"]):  # once: tests/support/settling.py
        first, request["parent"]["status"] = again, again.response["status"]
        again = decide(observe(request), FakeReader(**reader_args), NOW)
    assert again.response["status"] == first.response["status"]
    # an hour later too, unless a time limit (deadline, TTL, stuck drain) can pass meanwhile
    # (as in test_decide_properties)
    timed = "activeDeadlineSeconds" in request["parent"]["spec"] or reader_args.get("nodes") is not None
    if not timed:
        later = decide(observe(request), FakeReader(**reader_args), LATER)
        assert later.response["status"] == first.response["status"]
