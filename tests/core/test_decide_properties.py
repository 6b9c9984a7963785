"""Properties of ``decide`` over generated observed states, pods (cache vs live) and read failures.

Each property runs ~150 examples so the whole file stays well under 30 s.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from hooks.core.actions import ForceDeletePod
from hooks.core.barrier import StaleRequest
from hooks.core.decide import Decision
from hooks.core.decide import decide as decide_or_refuse
from hooks.core.evidence import current_attempt
from hooks.core.observed import Observed, parse_request
from podread import JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, is_active
from tests.contract.test_jobset import schema_errors
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.settling import drain_dated


def decide(observed: Observed, reader: FakeReader, now: datetime) -> Decision:
    """``hooks.core.decide.decide``; a request the hooks refuse as behind the cluster (``StaleRequest``,
    a 409: no answer, nothing written) is no case of the properties about answers."""
    try:
        return decide_or_refuse(observed, reader, now)
    except StaleRequest:
        reject()

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(hours=1)
JOB = "train"
PHASES = ["", "Pending", "Running", "Restarting", "Suspending", "Suspended", "Succeeded", "Failed", "Terminating"]
TEARDOWN_PHASES = {"Terminating", "Suspending", "Suspended", "Restarting"}
FAILURES = ["cache", "live", "job_pods", "counted_job_pods", "active_job_pods", "workload_pods", "active_launcher_pods",
            "active_attempt_pods", "attempt_failure_pods", "node_states"]
RULES = [{"name": "fatal", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
         {"name": "preempted", "action": "RestartJobIgnoreMaxRestarts",
          "onPodConditions": [{"type": "DisruptionTarget"}]},
         {"name": "any", "action": "RestartJob"}]
GONE_NODE = {"metadata": {"name": "node-a"}, "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service"}]},
             "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}

EXAMPLES = int(os.environ.get("NVCRE_PROPERTY_EXAMPLES", "150"))  # raise it for a longer local run
fast = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def pods(draw: st.DrawFn, max_attempt: int = 3) -> list[dict[str, Any]]:
    """Worker pods of the job, launcher pods of some attempt, and pods that kept only JobSet's label
    (their nvcre labels removed) of an attempt up to ``max_attempt``, in any phase, maybe terminating."""
    out = []
    for index in range(draw(st.integers(0, 4))):
        phase = draw(st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]))
        deleting = draw(st.sampled_from(["", "", "2025-12-31T23:59:00Z"]))
        kind = draw(st.sampled_from(["worker", "launcher", "stripped"]))
        if kind == "worker":
            out.append(make_pod(f"w-{index}", job=JOB, phase=phase, deleting=deleting))
        elif kind == "launcher":
            attempt = draw(st.integers(0, 3))
            out.append(make_pod(f"l-{index}", launcher=JOB, workload=f"{JOB}-{attempt}", replicated_job="launcher",
                                phase=phase, deleting=deleting))
        else:
            attempt = draw(st.integers(0, max_attempt))
            out.append(make_pod(f"s-{index}", workload=f"{JOB}-{attempt}", replicated_job="worker", phase=phase,
                                deleting=deleting))
    return out


@st.composite
def history_entries(draw: st.DrawFn, attempt: int) -> list[dict[str, Any]]:
    """``status.attempts`` entries for some attempts up to ``attempt + 1``: open, ended, or draining."""
    entries = []
    for number in sorted(draw(st.sets(st.integers(0, attempt + 1), max_size=3))):  # one past: only forged
        entry: dict[str, Any] = {"attempt": number, "jobSet": f"{JOB}-{number}", "created": "2025-12-31T22:00:00Z"}
        end = draw(st.sampled_from(["", "Failed", "Suspended", "Succeeded"]))
        if end:
            entry.update(outcome=end, ended="2025-12-31T23:00:00Z")
            if end == "Failed" and draw(st.booleans()):
                entry["cause"] = "default"
            if draw(st.booleans()):
                entry.update(drainSeconds=5, drainStuck=False)
        entries.append(entry)
    return entries


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request body and the FakeReader arguments."""
    spec = job_spec(launcher=draw(st.sampled_from(["", "launcher"])), max_restarts=draw(st.integers(0, 3)),
                    suspend=draw(st.booleans()))
    if draw(st.booleans()):  # failure policy, deadlines, TTL, stuck drains
        rules = draw(st.lists(st.sampled_from(RULES), max_size=3, unique_by=lambda r: r["name"]))
        spec["failurePolicy"] = {"rules": rules}
        spec["activeDeadlineSeconds"] = draw(st.sampled_from([60, 7200, 10**6]))
        spec["ttlSecondsAfterFinished"] = draw(st.sampled_from([0, 3600]))
        spec["drain"] = {"stuckAfterSeconds": 60, "forceDeleteStuckPodsAfterSeconds": draw(st.sampled_from([60, 600]))}
    if draw(st.integers(0, 9)) == 0:
        spec = {"replicatedJobs": [], "suspend": spec["suspend"]}
    attempt = draw(st.integers(0, 3))
    status: dict[str, Any] = {
        "phase": draw(st.sampled_from(PHASES)), "attempt": attempt, "restarts": draw(st.integers(0, 3)),
        "workload": draw(st.sampled_from(["", f"{JOB}-{attempt}"])), "activePods": draw(st.integers(0, 5)),
        "observedGeneration": 1,
    }
    if draw(st.booleans()):
        status["startTime"] = draw(st.sampled_from(["2025-12-31T23:00:00Z", "2025-12-01T00:00:00Z"]))
    if status["phase"] in ("Succeeded", "Failed") and draw(st.booleans()):
        status["completionTime"] = "2025-12-31T23:30:00Z"
    if draw(st.booleans()):
        status["conditions"] = [{"type": "Drained", "status": draw(st.sampled_from(["True", "False", "Unknown"])),
                                 "reason": "X", "message": "", "lastTransitionTime": "2025-12-01T00:00:00Z"}]
    if draw(st.booleans()):  # the attempt history: entries of earlier attempts, some still draining
        status["attempts"] = draw(history_entries(attempt))
        if draw(st.booleans()):
            status["attemptsDropped"] = draw(st.integers(0, 20))
    if draw(st.booleans()):
        spec["attemptsHistoryLimit"] = draw(st.sampled_from([1, 2, 10]))
    children = []
    for child_attempt in sorted(draw(st.sets(st.integers(0, 4), max_size=3))):
        state = draw(st.sampled_from(["", "", "Failed", "Completed"]))
        children.append(jobset_child(JOB, child_attempt, state=state))
    request = job_request(spec=spec, status=status, jobsets=children, keying=draw(st.sampled_from(["v1", "v2"])),
                          finalizing=draw(st.integers(0, 4)) == 0)
    # Pods that kept only JobSet's label are found up to one past the highest attempt the status,
    # the children and the other pods name (the documented reach of the barrier's JobSet-label read).
    reach = max(attempt, *(int(js["metadata"]["name"].rsplit("-", 1)[1]) for js in children)) + 1 \
        if children else attempt + 1
    cache = draw(pods(reach))
    live = draw(st.one_of(st.none(), pods(reach)))
    fail = draw(st.sets(st.sampled_from(FAILURES), max_size=2)) if draw(st.integers(0, 3)) == 0 else set()
    for pod in cache:  # some pods carry the evidence a failure policy reads
        if draw(st.integers(0, 2)) == 0:
            pod["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {
                "exitCode": draw(st.sampled_from([0, 1, 42, 143]))}}}]
        if draw(st.integers(0, 3)) == 0:
            pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    nodes = draw(st.sampled_from([None, [], [GONE_NODE]]))
    return request, {"pods": cache, "live_pods": live, "fail": fail, "nodes": nodes}


def observe(request: dict[str, Any]) -> Observed:
    return parse_request(request, "finalize" if request["finalizing"] else "sync")


def live_view_clear(observed: Observed, reader_args: dict[str, Any], attempt: int) -> bool:
    """Whether the API server (the fake's live view) shows the teardown as complete."""
    if observed.jobsets or reader_args["fail"] & {"live", "active_job_pods"}:
        return False
    return no_live_pod_of_the_job(reader_args)


def no_live_pod_of_the_job(reader_args: dict[str, Any]) -> bool:
    """Whether the fake's live view holds no active pod of the Job by any identity it carries (job
    label, launcher label, JobSet's name label for ``<job>-<n>``)."""
    live = reader_args["live_pods"] if reader_args["live_pods"] is not None else reader_args["pods"]
    for pod in live:
        labels = pod["metadata"]["labels"]
        workload = labels.get(JOBSET_NAME_LABEL, "")
        mine = workload.startswith(f"{JOB}-") and workload[len(JOB) + 1:].isdigit()
        if is_active(pod) and (JOB in (labels.get(JOB_LABEL), labels.get(LAUNCHER_LABEL)) or mine):
            return False
    return True


@fast
@given(scenarios())
def test_deterministic(scenario: tuple[dict[str, Any], dict[str, Any]]) -> None:
    request, reader_args = scenario
    first = decide(observe(request), FakeReader(**reader_args), NOW)
    second = decide(observe(request), FakeReader(**reader_args), NOW)
    assert first == second


@fast
@given(scenarios())
def test_status_is_a_fixed_point(scenario: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Fed back, the status stays: at the same moment always; an hour later too unless a time limit
    can pass meanwhile (a deadline, a TTL, a drain becoming stuck on a dead node)."""
    request, reader_args = scenario
    first = decide(observe(request), FakeReader(**reader_args), NOW)
    request["parent"]["status"] = first.response["status"]
    again = decide(observe(request), FakeReader(**reader_args), NOW)
    if drain_dated(first.response["status"], again.response["status"]):  # once: tests/support/settling.py
        first, request["parent"]["status"] = again, again.response["status"]
        again = decide(observe(request), FakeReader(**reader_args), NOW)
    assert again.response["status"] == first.response["status"]
    timed = "activeDeadlineSeconds" in request["parent"]["spec"] or reader_args["nodes"] is not None
    if not timed:
        later = decide(observe(request), FakeReader(**reader_args), LATER)
        assert later.response["status"] == first.response["status"]


@fast
@given(scenarios())
def test_safety(scenario: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Teardown only in teardown rows; a healthy JobSet is left out only when the spec says so
    (deletion, suspend), never on the status' word; finalize and new attempts only after a
    live-confirmed drain of every pod of the Job, whatever labels it kept; counters never decrease;
    every child is a valid JobSet; more than one child only when holding on a status mismatch; past
    the active deadline a healthy JobSet may go too; a force delete only on a node confirmed gone."""
    request, reader_args = scenario
    observed = observe(request)
    decision = decide(observed, FakeReader(**reader_args), NOW)
    out = decision.response["status"]
    attempt = current_attempt(observed)
    current = f"{JOB}-{attempt}"
    emitted = [child["metadata"]["name"] for child in decision.response["children"]]
    if any(js["metadata"]["name"] == current for js in observed.jobsets) and current not in emitted:
        assert decision.phase_after in TEARDOWN_PHASES
    if decision.response.get("finalized"):
        assert live_view_clear(observed, reader_args, attempt)
    if out["attempt"] > attempt:
        assert out["attempt"] == attempt + 1
        assert live_view_clear(observed, reader_args, attempt)
    assert out["attempt"] >= observed.status.attempt
    assert observed.status.restarts <= out["restarts"] <= observed.status.restarts + 1
    assert ("finalized" in decision.response) == observed.finalizing
    assert isinstance(decision.response["children"], list)
    for jobset in observed.jobsets:
        healthy = not jobset["metadata"].get("deletionTimestamp") and not jobset["status"].get("terminalState")
        if healthy and jobset["metadata"]["name"] not in emitted:
            past_deadline = any(c["type"] == "DeadlineExceeded" and c["status"] == "True" for c in out["conditions"])
            assert observed.finalizing or observed.spec.suspend or past_deadline
    for action in decision.actions:  # a force delete only for a node confirmed gone
        if isinstance(action, ForceDeletePod):
            assert reader_args["nodes"] is not None and "node_states" not in reader_args["fail"]
            assert action.node not in {n["metadata"]["name"] for n in reader_args["nodes"]} or \
                reader_args["nodes"][0]["spec"]["taints"][0]["key"] == "node.kubernetes.io/out-of-service"
    mismatch = next((c for c in out["conditions"] if c["type"] == "StatusMismatch"), None)
    if len(emitted) > 1:
        assert mismatch is not None and mismatch["status"] == "True" and decision.kind == "held"
        assert out["attempt"] == observed.status.attempt
    for child in decision.response["children"]:
        assert schema_errors(child) == []


@fast
@given(scenarios())
def test_the_history_is_bounded_and_only_grows(scenario: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """``status.attempts``: at most ``spec.attemptsHistoryLimit`` entries (10 unless set), one per
    attempt, sorted, none past the status' attempt; an entry kept from the prior status loses no
    field and changes none; ``attemptsDropped`` never decreases, and counts every entry let go that
    the hooks could have written (none past the prior status' attempt: those are written by hand)."""
    request, reader_args = scenario
    observed = observe(request)
    out = decide(observed, FakeReader(**reader_args), NOW).response["status"]
    entries = out.get("attempts", [])
    numbers = [entry["attempt"] for entry in entries]
    assert numbers == sorted(set(numbers))
    before = {entry["attempt"]: entry for entry in observed.status.attempts}
    mismatch = any(c["type"] == "StatusMismatch" and c["status"] == "True" for c in out["conditions"])
    if not mismatch:
        assert len(entries) <= request["parent"]["spec"].get("attemptsHistoryLimit", 10)
    assert all(number <= out["attempt"] for number in numbers if number not in before)
    for entry in entries:
        prior = before.get(entry["attempt"], {})
        assert {key: entry.get(key) for key in prior} == dict(prior), "a recorded field never changes"
    dropped = out.get("attemptsDropped", 0)
    assert dropped >= observed.status.attempts_dropped
    let_go = {number for number in before if number <= observed.status.attempt} - set(numbers)
    assert dropped - observed.status.attempts_dropped == len(let_go)
