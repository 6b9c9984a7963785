"""``status.attempts`` through ``decide``: each way an attempt ends, its drain, the fixed
point at every step, and the bound over a Job that restarted 10,000 times."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core import history
from hooks.core.decide import Decision, decide
from hooks.core.jobset import MAX_ATTEMPT
from hooks.core.observed import parse_request
from podread import JOB_LABEL, JOBSET_NAME_LABEL, is_active
from podread.attempts import attempt_in_name
from podread.selector import Counted, counted, tells_a_failure
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PREEMPTED = {"name": "preempted", "action": "RestartJobIgnoreMaxRestarts",
             "onPodConditions": [{"type": "DisruptionTarget"}]}


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def run(body: dict[str, Any], reader: FakeReader | None = None, now: datetime = NOW) -> Decision:
    observed = parse_request(body, "finalize" if body.get("finalizing") else "sync")
    return decide(observed, reader if reader is not None else FakeReader(), now)


def step(body: dict[str, Any], reader: FakeReader | None = None, now: datetime = NOW) -> dict[str, Any]:
    """The answer's status, checked to be a fixed point: fed back, at once and an hour later."""
    out = run(body, reader, now).response["status"]
    again = copy.deepcopy(body)
    again["parent"]["status"] = copy.deepcopy(out)
    for later in (now, now + timedelta(hours=1)):
        assert run(again, fresh(reader) if reader else None, later).response["status"] == out
    return out


def fresh(reader: FakeReader) -> FakeReader:
    """A new FakeReader over copies of what ``reader`` holds (the real Reader under it holds a lock, so
    it is rebuilt, not deep-copied)."""
    nodes = None if reader.nodes is None else copy.deepcopy(list(reader.nodes.values()))
    again = FakeReader(copy.deepcopy(reader.pods), copy.deepcopy(reader.live_pods), reader.fail, reader.error,
                       nodes=nodes, jobs=copy.deepcopy(reader.jobs))
    again.delete_allowed = reader.delete_allowed
    return again


def passed(body: dict[str, Any], reader: FakeReader, now: datetime) -> dict[str, Any]:
    """The answer's status to a call in which the drain barrier passes: ``drainSeconds`` is not in
    it yet (the pass is dated by the API server's write of this status, ``history._drained``)."""
    out = run(body, reader, now).response["status"]
    assert all("drainSeconds" not in entry for entry in out["attempts"])
    return out


def written_at(body: dict[str, Any], when: datetime) -> dict[str, Any]:
    """``body`` whose status the API server stored at ``when`` (a ``managedFields`` entry of the
    status subresource, as Metacontroller's status update leaves it)."""
    body["parent"]["metadata"]["managedFields"] = [{"manager": "metacontroller", "operation": "Update",
                                                    "subresource": "status", "time": stamp(when)}]
    return body


def failed_jobset(attempt: int, at: datetime) -> dict[str, Any]:
    jobset = jobset_child("train", attempt, state="Failed")
    jobset["status"]["conditions"][0].update(reason="FailedJobs", lastTransitionTime=stamp(at))
    return jobset


def worker(attempt: int, *, phase: str = "Running", exit_code: int = 0, disrupted: str = "",
           deleting: str = "", grace: int | None = None, started: str = "", index: int = 0) -> dict[str, Any]:
    pod = make_pod(f"train-{attempt}-worker-{index}-0", job="train", workload=f"train-{attempt}",
                   replicated_job="worker", phase=phase, node="gpu-3", deleting=deleting)
    if started:
        pod["status"]["startTime"] = started
    if exit_code:
        pod["status"]["containerStatuses"] = [{"name": "worker", "state": {"terminated": {
            "exitCode": exit_code, "reason": "Error", "finishedAt": "2026-01-01T00:04:00Z"}}}]
    if disrupted:
        pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": disrupted}]
    if grace is not None:
        pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


def test_a_restart_records_the_failure_its_first_failing_pod_its_cause_and_its_drain() -> None:
    spec = job_spec(max_restarts=2)
    created = step(job_request(spec=spec))
    assert created["attempts"] == [{"attempt": 0, "jobSet": "train-0"}], \
        "made when its JobSet is first answered, dated once the JobSet exists"
    t1 = NOW + timedelta(minutes=1)
    observed = jobset_child("train", 0, created="2026-01-01T00:00:02Z")
    running = step(job_request(spec=spec, status=created, jobsets=[observed]),
                   FakeReader([worker(0, started="2026-01-01T00:00:40Z")]), t1)
    assert running["phase"] == "Running"
    assert (running["attempts"][0]["created"], running["attempts"][0]["started"]) == (
        "2026-01-01T00:00:02Z", "2026-01-01T00:00:40Z"), "the JobSet's creationTimestamp, the pod's startTime"
    t5 = NOW + timedelta(minutes=5)
    failing = worker(0, phase="Failed", exit_code=3, deleting="2026-01-01T00:05:30Z", grace=30,
                     started="2026-01-01T00:00:40Z")
    restarting = step(job_request(spec=spec, status=running, jobsets=[failed_jobset(0, t5)]),
                      FakeReader([failing]), t5 + timedelta(seconds=20))
    assert restarting["phase"] == "Restarting"
    assert restarting["attempts"] == [{
        "attempt": 0, "jobSet": "train-0", "created": "2026-01-01T00:00:02Z", "started": "2026-01-01T00:00:40Z",
        "ended": stamp(t5), "outcome": "Failed", "failedReplicatedJob": "worker", "failedPod": "train-0-worker-0-0",
        "node": "gpu-3", "exitCode": 3, "reason": "Error", "cause": "default", "class": "user",
        "classEvidence": "pod train-0-worker-0-0: container worker exited with 3",
        "failedPodDeletionStarted": "2026-01-01T00:05:00Z", "failedPodGracePeriodEnds": "2026-01-01T00:05:30Z"}]
    t6 = t5 + timedelta(minutes=1)
    drained = passed(job_request(spec=spec, status=restarting), FakeReader([]), t6)
    assert (drained["phase"], drained["attempt"]) == ("Pending", 1)
    timed = step(written_at(job_request(spec=spec, status=drained), t6 + timedelta(seconds=1)), FakeReader([]),
                 t6 + timedelta(seconds=30))
    first, second = timed["attempts"]
    assert (first["drainSeconds"], first["drainStuck"]) == (61, False), \
        "from its end until the API server stored the status that said the barrier passed"
    assert second == {"attempt": 1, "jobSet": "train-1"}


def test_started_is_the_earliest_start_of_a_pod_that_ran_never_a_pending_pods() -> None:
    status = {"phase": "Pending", "attempt": 0, "workload": "train-0",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]}
    body = job_request(status=status, jobsets=[jobset_child("train", 0)])
    pulling = worker(0, phase="Pending", started="2025-12-31T23:10:00Z")
    waiting = step(body, FakeReader([pulling]))
    assert waiting["phase"] == "Running" and "started" not in waiting["attempts"][0], \
        "an active pod whose containers have not started says nothing of when the attempt ran"
    other = worker(1, started="2025-12-31T23:00:30Z")  # another attempt's pod: not this attempt's start
    body["parent"]["status"] = waiting
    ran = step(body, FakeReader([pulling, worker(0, started="2025-12-31T23:20:00Z", index=1),
                                 worker(0, started="2025-12-31T23:15:00Z", index=2), other]))
    assert ran["attempts"][0]["started"] == "2025-12-31T23:15:00Z"


def test_an_attempt_that_ran_and_ended_between_two_calls_is_dated_from_its_pods() -> None:
    status = {"phase": "Pending", "attempt": 0, "workload": "train-0",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]}
    done = step(job_request(status=status, jobsets=[jobset_child("train", 0, state="Completed")]),
                FakeReader([worker(0, phase="Succeeded", started="2025-12-31T23:01:00Z")]))
    assert done["phase"] == "Succeeded" and done["attempts"][0]["started"] == "2025-12-31T23:01:00Z"
    failed = step(job_request(spec=job_spec(max_restarts=1), status=status, jobsets=[failed_jobset(0, NOW)]),
                  FakeReader([worker(0, phase="Failed", exit_code=2, started="2025-12-31T23:02:00Z")]))
    assert failed["phase"] == "Restarting" and failed["attempts"][0]["started"] == "2025-12-31T23:02:00Z"


def test_a_preemption_is_named_and_counted_under_its_cause() -> None:
    spec = job_spec(max_restarts=0) | {"failurePolicy": {"rules": [PREEMPTED]}}
    status = {"phase": "Running", "attempt": 0, "workload": "train-0",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]}
    out = step(job_request(spec=spec, status=status, jobsets=[failed_jobset(0, NOW)]),
               FakeReader([worker(0, phase="Failed", exit_code=143, disrupted="PreemptionByScheduler")]))
    entry = out["attempts"][0]
    assert (entry["outcome"], entry["reason"], entry["exitCode"], entry["cause"]) == (
        "Preempted", "PreemptionByScheduler", 143, "preempted")


def test_a_failure_that_ends_the_job_has_no_cause_and_no_drain() -> None:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    jobset = failed_jobset(0, NOW - timedelta(minutes=1))
    jobset["metadata"]["creationTimestamp"] = "2025-12-31T23:30:00Z"
    out = step(job_request(spec=job_spec(max_restarts=0), status=status, jobsets=[jobset]),
               FakeReader([worker(0, phase="Failed", exit_code=1)]))
    assert out["phase"] == "Failed"
    entry = out["attempts"][0]
    assert entry["created"] == "2025-12-31T23:30:00Z", "made from an observed JobSet: its creationTimestamp"
    assert entry["outcome"] == "Failed" and entry["ended"] == "2025-12-31T23:59:00Z"
    assert "cause" not in entry and "drainSeconds" not in entry


def test_a_failed_read_of_the_failing_pods_holds_a_verdict_that_reads_pods_and_writes_no_outcome() -> None:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    spec = job_spec(max_restarts=1) | {"failurePolicy": {"rules": [PREEMPTED]}}
    body = job_request(spec=spec, status=status, jobsets=[failed_jobset(0, NOW)])
    held = run(body, FakeReader(fail=["attempt_failure_pods"]))
    assert held.kind == "held" and "outcome" not in held.response["status"]["attempts"][0]
    body["parent"]["status"] = held.response["status"]
    out = step(body, FakeReader([worker(0, phase="Failed", exit_code=9)]))
    assert out["attempts"][0]["exitCode"] == 9


def test_without_a_rule_that_reads_pods_a_failed_read_holds_nothing_and_names_no_pod() -> None:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    body = job_request(spec=job_spec(max_restarts=1), status=status, jobsets=[failed_jobset(0, NOW)])
    out = step(body, FakeReader(fail=["attempt_failure_pods"]))
    assert out["phase"] == "Restarting"
    assert out["attempts"][0] | {"created": ""} == {"attempt": 0, "jobSet": "train-0", "created": "",
                                                     "ended": "2026-01-01T00:00:00Z", "outcome": "Failed",
                                                     "reason": "FailedJobs", "cause": "default", "class": "unknown",
                                                     "classEvidence": "the failing pods could not be read: "
                                                                      "the pod read failed"}


def test_success_is_dated_by_the_jobsets_completed_condition() -> None:
    jobset = jobset_child("train", 0, state="Completed")
    out = step(job_request(status={"phase": "Running", "attempt": 0, "workload": "train-0"}, jobsets=[jobset]))
    assert out["attempts"][0] | {"created": ""} == {"attempt": 0, "jobSet": "train-0", "created": "",
                                                     "ended": "2025-12-31T23:00:00Z", "outcome": "Succeeded"}


def test_suspend_ends_the_attempt_and_its_drain_counts_until_the_barrier_passes_then_resume_starts_the_next() -> None:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]}
    suspended_spec = job_spec(suspend=True)
    held = step(job_request(spec=suspended_spec, status=status, jobsets=[jobset_child("train", 0)]),
                FakeReader([worker(0)]))
    assert held["phase"] == "Suspending"
    assert held["attempts"][0] | {} == {**status["attempts"][0], "ended": "2026-01-01T00:00:00Z",
                                        "outcome": "Suspended"}
    later = NOW + timedelta(seconds=45)
    drained = passed(job_request(spec=suspended_spec, status=held), FakeReader([]), later)
    assert drained["phase"] == "Suspended"
    done = step(written_at(job_request(spec=suspended_spec, status=drained), later), FakeReader([]),
                later + timedelta(seconds=20))
    assert done["phase"] == "Suspended" and done["attempts"][0]["drainSeconds"] == 45
    resumed = step(job_request(status=done), FakeReader([]), later + timedelta(hours=2))
    assert [e["attempt"] for e in resumed["attempts"]] == [0, 1]
    assert resumed["attempts"][0] == done["attempts"][0], "a recorded entry never changes"


def test_a_stuck_drain_is_remembered_after_it_passes() -> None:
    status = {"phase": "Suspending", "attempt": 0, "workload": "",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T22:00:00Z",
                            "ended": "2025-12-31T23:00:00Z", "outcome": "Suspended"}],
              "conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive", "message": "",
                              "lastTransitionTime": "2025-12-31T23:00:00Z"}]}
    spec = job_spec(suspend=True)
    stuck = worker(0, deleting="2025-12-31T23:00:00Z")
    waiting = step(job_request(spec=spec, status=status), FakeReader([stuck], nodes=[]))
    assert waiting["attempts"][0]["drainStuck"] is True and "drainSeconds" not in waiting["attempts"][0]
    drained = passed(job_request(spec=spec, status=waiting), FakeReader([]), NOW)
    done = step(job_request(spec=spec, status=drained), FakeReader([]))  # no managedFields: the clock, a bound
    assert (done["attempts"][0]["drainSeconds"], done["attempts"][0]["drainStuck"]) == (3600, True)


def test_the_deadline_dates_the_end_by_its_condition() -> None:
    spec = job_spec() | {"activeDeadlineSeconds": 60}
    status = {"phase": "Running", "attempt": 0, "workload": "train-0", "startTime": "2025-12-31T23:00:00Z"}
    out = run(job_request(spec=spec, status=status, jobsets=[jobset_child("train", 0)]),
              FakeReader([worker(0)])).response["status"]
    assert out["phase"] == "Terminating"
    assert (out["attempts"][0]["outcome"], out["attempts"][0]["ended"]) == ("DeadlineExceeded", "2026-01-01T00:00:00Z")


def test_deletion_ends_the_attempt_deleted_at_the_jobs_deletion_timestamp() -> None:
    body = job_request(status={"phase": "Running", "attempt": 0, "workload": "train-0"},
                       jobsets=[jobset_child("train", 0)], finalizing=True, deleting="2025-12-31T23:59:00Z")
    out = step(body, FakeReader([worker(0)]))
    assert (out["attempts"][0]["outcome"], out["attempts"][0]["ended"]) == ("Deleted", "2025-12-31T23:59:00Z")


def test_a_suspend_is_dated_by_the_api_servers_write_of_the_suspended_job_not_the_calls_clock() -> None:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0",
              "attempts": [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]}
    body = job_request(spec=job_spec(suspend=True), status=status, jobsets=[jobset_child("train", 0)])
    body["parent"]["metadata"]["managedFields"] = [
        {"manager": "metacontroller", "operation": "Update", "time": "2025-12-31T23:00:05Z"},
        {"manager": "kubectl-patch", "operation": "Update", "time": "2025-12-31T23:30:00Z"}]
    answers = [run(body, FakeReader([worker(0)]), NOW + timedelta(seconds=s)).response["status"] for s in (0, 7)]
    assert answers[0] == answers[1], "two answers to one parent version, seconds apart, write the same status"
    assert (answers[0]["attempts"][0]["outcome"], answers[0]["attempts"][0]["ended"]) == (
        "Suspended", "2025-12-31T23:30:00Z")


def test_a_kueue_eviction_is_named_with_kueues_reason_and_time() -> None:
    body = job_request(status={"phase": "Running", "attempt": 0, "workload": "train-0"},
                       jobsets=[jobset_child("train", 0)], labels={"kueue.x-k8s.io/queue-name": "team"},
                       workloads=[workload_child("train", state="evicted", reason="Preempted")])
    out = step(body, FakeReader([worker(0)]))
    entry = out["attempts"][0]
    assert (entry["outcome"], entry["reason"], entry["ended"]) == ("Evicted", "Preempted", "2025-12-31T23:00:00Z")


def test_an_entry_written_by_hand_past_the_attempt_is_let_go_uncounted_when_an_eviction_moves_on() -> None:
    """The eviction's teardown runs before the claim check, and moves the Job to the attempt a
    forged entry names: kept, the next call would end that entry too (no fixed point; found by
    test_queueing_properties). It is no attempt that ran: let go, not counted as dropped."""
    forged = [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T22:00:00Z"},
              {"attempt": 1, "jobSet": "train-1", "created": "2025-12-31T22:00:00Z"}]
    body = job_request(status={"phase": "Running", "attempt": 0, "workload": "train-0", "attempts": forged},
                       labels={"kueue.x-k8s.io/queue-name": "team"},
                       workloads=[workload_child("train", state="evicted", reason="Preempted")])
    out = passed(body, FakeReader([]), NOW)
    assert [entry["attempt"] for entry in out["attempts"]] == [0]
    assert out["attempts"][0]["outcome"] == "Evicted" and out.get("attemptsDropped", 0) == 0
    body["parent"]["status"] = out
    timed = step(body, FakeReader([]))  # the pass's write dates the drain, once; then a fixed point
    assert [entry["attempt"] for entry in timed["attempts"]] == [0] and timed["attempts"][0]["drainSeconds"] >= 0


def test_the_entry_of_an_adopted_attempt_keeps_what_it_recorded() -> None:
    """A lost write left JobSet train-1 while the status says attempt 0: train-1 is adopted, and the
    entry the status already holds for it is the adopted attempt's, kept as it is (found by
    test_decide_properties: it was let go and made again, losing its ``created``)."""
    entries = [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T22:00:00Z"},
               {"attempt": 1, "jobSet": "train-1", "created": "2025-12-31T22:00:00Z"}]
    body = job_request(status={"phase": "Restarting", "attempt": 0, "attempts": entries},
                       jobsets=[jobset_child("train", 1)], spec=job_spec(max_restarts=2))
    out = run(body, FakeReader([])).response["status"]
    assert out["attempt"] == 1 and out["attempts"][1] == entries[1]


def test_a_status_that_disagrees_keeps_its_history_as_it_came() -> None:
    kept = [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T23:00:00Z"}]
    status = {"phase": "Running", "attempt": 0, "workload": "train-0", "attempts": kept}
    out = run(job_request(status=status, jobsets=[jobset_child("train", 0), jobset_child("train", 1)]),
              FakeReader([worker(0)])).response["status"]
    assert out["conditions"][-1]["type"] == "StatusMismatch" and out["attempts"] == kept


def test_a_lower_limit_drops_the_oldest_entries_and_counts_them() -> None:
    entries = [{"attempt": n, "jobSet": f"train-{n}", "created": "2025-12-31T23:00:00Z"} for n in range(5)]
    status = {"phase": "Running", "attempt": 4, "restarts": 4, "workload": "train-4", "attempts": entries,
              "attemptsDropped": 7}
    spec = job_spec(max_restarts=9) | {"attemptsHistoryLimit": 2}
    out = step(job_request(spec=spec, status=status, jobsets=[jobset_child("train", 4)]), FakeReader([worker(4)]))
    assert [e["attempt"] for e in out["attempts"]] == [3, 4] and out["attemptsDropped"] == 10


class QuickReader:
    """The Reader's methods ``decide`` calls on this Job, over a few pods, answered without building
    the set of every JobSet name up to the last attempt (10,000 names per read would make the loop
    quadratic). Duck-typed: it does not depend on how ``FakeReader`` is built."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods

    def _of_job(self, job: str) -> list[dict[str, Any]]:
        return [p for p in self.pods if p["metadata"]["labels"].get(JOB_LABEL) == job]

    def job_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return self._of_job(job)

    def counted_job_pods(self, namespace: str, job: str, reported: int | None) -> Counted:
        return counted(self._of_job(job))

    def active_job_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return [p for p in self._of_job(job) if is_active(p)]

    def active_launcher_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return []

    def active_attempt_pods(self, namespace: str, job: str, last_attempt: int) -> list[dict[str, Any]]:
        return [p for p in self.pods if is_active(p) and attempt_in_name(
            job, p["metadata"]["labels"].get(JOBSET_NAME_LABEL, "")) is not None]

    def attempt_jobs(self, namespace: str, job: str, last_attempt: int) -> list[dict[str, Any]]:
        return []

    def workload_pods(self, namespace: str, workload: str, replicated_job: str = "") -> list[dict[str, Any]]:
        return [p for p in self.pods if p["metadata"]["labels"].get(JOBSET_NAME_LABEL) == workload]

    def attempt_failure_pods(self, namespace: str, workload: str) -> list[dict[str, Any]]:
        return [p for p in self.workload_pods(namespace, workload) if tells_a_failure(p)]


@pytest.mark.slow
def test_a_job_that_restarted_ten_thousand_times_keeps_a_bounded_history() -> None:
    """Every attempt a Job can have (0 to MAX_ATTEMPT) fails and restarts, through the hooks' own
    answers fed back, as Metacontroller does: three calls per attempt."""
    spec = job_spec(max_restarts=0) | {"failurePolicy": {"rules": [PREEMPTED]}}
    status: dict[str, Any] | None = None
    now = NOW
    largest = 0
    for attempt in range(MAX_ATTEMPT + 1):
        status = run(job_request(spec=spec, status=status, jobsets=[jobset_child("train", attempt)]),
                     QuickReader([worker(attempt)]), now).response["status"]
        now += timedelta(seconds=10)
        failing = worker(attempt, phase="Failed", exit_code=143, disrupted="PreemptionByScheduler")
        status = run(job_request(spec=spec, status=status, jobsets=[failed_jobset(attempt, now)]),
                     QuickReader([failing]), now).response["status"]
        now += timedelta(seconds=10)
        status = run(job_request(spec=spec, status=status), QuickReader([]), now).response["status"]
        largest = max(largest, len(json.dumps(status)))
    assert status is not None
    assert status["restartsByCause"] == {"preempted": MAX_ATTEMPT} and status["phase"] == "Failed"
    assert [e["attempt"] for e in status["attempts"]] == list(range(MAX_ATTEMPT - 9, MAX_ATTEMPT + 1))
    assert status["attemptsDropped"] == MAX_ATTEMPT + 1 - history.DEFAULT_LIMIT
    assert all(e["outcome"] == "Preempted" for e in status["attempts"])
    assert len(json.dumps(status["attempts"])) < history.MAX_HISTORY_BYTES / 10
    assert largest < 16 * 1024, "the whole status stays small at the default limit"


def test_a_status_holding_a_later_attempt_than_its_own_does_not_count_on_every_call() -> None:
    forged = [{"attempt": 5, "jobSet": "train-5", "created": "2025-12-31T23:00:00Z"}]
    status = {"phase": "Running", "attempt": 2, "restarts": 2, "workload": "train-2", "attempts": forged}
    spec = job_spec(max_restarts=3) | {"attemptsHistoryLimit": 1}
    out = step(job_request(spec=spec, status=status, jobsets=[jobset_child("train", 2)]), FakeReader([worker(2)]))
    assert out["attempts"] == forged and "attemptsDropped" not in out


ODD = [None, 7, 1.5, True, "", "yesterday", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59Z", [], {}]


def test_odd_times_and_reasons_in_a_jobset_or_a_pod_never_break_the_history() -> None:
    """A request's JobSet is any shape the parse lets through; the history reads its times and
    reasons as evidence, so an odd one is read as no evidence (``now``), never an error. A condition's
    ``reason`` is declared a string (``hooks.core.request.ChildCondition``: another type is a 400), so
    only the odd strings reach the history there."""
    for odd in ODD:
        jobset = failed_jobset(0, NOW)
        jobset["metadata"]["creationTimestamp"] = odd
        jobset["status"]["conditions"][0]["lastTransitionTime"] = odd
        if odd is None or isinstance(odd, str):
            jobset["status"]["conditions"][0]["reason"] = odd
        pod = worker(0, phase="Failed", exit_code=1, deleting="2026-01-01T00:00:00Z", grace=30)
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = odd
        status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
        out = step(job_request(spec=job_spec(max_restarts=1), status=status, jobsets=[jobset]), FakeReader([pod]))
        entry = out["attempts"][0]
        assert entry["outcome"] == "Failed" and entry["ended"] <= "2026-01-01T00:00:00Z", odd


def suspended_after(entry: dict[str, Any], when: datetime) -> dict[str, Any]:
    """A request whose status says the suspend's drain passed (``Drained`` True) in a write the API
    server stored at ``when``."""
    status = {"phase": "Suspended", "attempt": 0, "workload": "", "attempts": [entry],
              "conditions": [{"type": "Drained", "status": "True", "reason": "NoActivePods", "message": "",
                              "lastTransitionTime": entry["ended"]}]}
    return written_at(job_request(spec=job_spec(suspend=True), status=status), when)


def test_a_drain_after_a_checkpoint_is_timed_from_the_gate_s_end_not_from_the_suspend() -> None:
    entry = {"attempt": 0, "jobSet": "train-0", "ended": "2026-01-01T00:00:00Z", "outcome": "Suspended",
             "checkpointRequested": "2026-01-01T00:00:00Z", "checkpointStep": 7,
             "checkpointAcknowledged": "2026-01-01T00:01:40Z"}
    out = step(suspended_after(entry, NOW + timedelta(seconds=112)), FakeReader([]), NOW + timedelta(minutes=5))
    assert out["attempts"][0]["drainSeconds"] == 12, "the JobSet ran until the acknowledgement"


def test_a_pass_stored_in_the_future_is_not_believed() -> None:
    entry = {"attempt": 0, "jobSet": "train-0", "ended": "2025-12-31T23:59:00Z", "outcome": "Suspended"}
    out = step(suspended_after(entry, NOW + timedelta(days=3)), FakeReader([]), NOW)
    assert out["attempts"][0]["drainSeconds"] == 60, "no later than the call's own evidence (here its clock)"


def test_a_teardown_that_just_began_is_not_timed_by_an_earlier_drain_s_pass() -> None:
    """``Drained`` True from attempt 0's restart, and attempt 1 suspended in this call: the pass the
    request carries is not this teardown's (its entry had not ended), so nothing is timed yet."""
    entries = [{"attempt": 0, "jobSet": "train-0", "ended": "2025-12-31T22:00:00Z", "outcome": "Failed",
                "cause": "default", "drainSeconds": 4, "drainStuck": False},
               {"attempt": 1, "jobSet": "train-1", "created": "2025-12-31T22:00:10Z"}]
    status = {"phase": "Running", "attempt": 1, "restarts": 1, "workload": "train-1", "attempts": entries,
              "conditions": [{"type": "Drained", "status": "True", "reason": "NoActivePods", "message": "",
                              "lastTransitionTime": "2025-12-31T22:00:04Z"}]}
    body = written_at(job_request(spec=job_spec(suspend=True, max_restarts=1), status=status,
                                  jobsets=[jobset_child("train", 1)]), NOW - timedelta(minutes=1))
    out = run(body, FakeReader([worker(1)])).response["status"]
    assert out["phase"] == "Suspending" and out["attempts"][1]["outcome"] == "Suspended"
    assert "drainSeconds" not in out["attempts"][1] and out["attempts"][0]["drainSeconds"] == 4
