"""A status claim never drops a healthy JobSet, never ends a run and never
deletes the Job; a newer JobSet the hooks did not create never skips the barrier.

Each attack forges the status (or creates a stray JobSet) the way someone with write access to
the status subresource (or to JobSets in the namespace) could, and checks that the decision holds
with ``StatusMismatch`` naming the field, keeps every JobSet that runs and asks for no write.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks.core import claims
from hooks.core.actions import DeleteJob
from hooks.core.decide import Decision
from hooks.core.jobset import MAX_ATTEMPT
from tests.core.test_decide import condition, names, status
from tests.core.test_decide_policies import NOW, fed_back, run
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_batch_job, make_pod

CREATED = "2025-12-31T23:30:00Z"
"""The Job's creationTimestamp in these tests: half an hour before ``NOW``."""


def body(*, created: str = CREATED, **kw: Any) -> dict[str, Any]:
    request = job_request(**kw)
    request["parent"]["metadata"]["creationTimestamp"] = created
    return request


def workers(attempt: int, n: int = 2, phase: str = "Running") -> list[dict[str, Any]]:
    """Worker pods of ``<train>-<attempt>`` with every label the real ones carry."""
    pods = [make_pod(f"train-{attempt}-worker-0-{i}", job="train", workload=f"train-{attempt}",
                     replicated_job="worker", phase=phase) for i in range(n)]
    for pod in pods:
        pod["metadata"]["labels"]["nvcre.nvidia.com/attempt"] = str(attempt)
    return pods


def child(attempt: int, *, state: str = "", created: str = "2025-12-31T23:31:00Z",
          deleting: str = "") -> dict[str, Any]:
    return jobset_child("train", attempt, state=state, created=created, deleting=deleting)


def running(attempt: int = 0, restarts: int = 0, phase: str = "Running", **extra: Any) -> dict[str, Any]:
    return {"phase": phase, "attempt": attempt, "restarts": restarts, "workload": f"train-{attempt}",
            "activePods": 2, "conditions": [], "message": "", "startTime": "2025-12-31T23:31:00Z", **extra}


def marked(type_: str, reason: str = "X", message: str | None = "m") -> dict[str, Any]:
    out = {"type": type_, "status": "True", "reason": reason, "lastTransitionTime": "2025-12-31T23:40:00Z"}
    if message is not None:
        out["message"] = message
    return out


def assert_held(d: Decision, reason: str, *kept: str, says: str = "") -> dict[str, Any]:
    """The decision holds on ``reason``: JobSets ``kept`` kept as observed, nothing created, no
    write asked for, the message naming ``says``. Returns the StatusMismatch condition."""
    mismatch = condition(d, "StatusMismatch")
    assert mismatch is not None and (mismatch["status"], mismatch["reason"]) == ("True", reason), mismatch
    assert says in mismatch["message"] and says in status(d)["message"]
    assert d.kind == "held" and names(d) == list(kept)
    assert d.actions == (), "nothing deleted while a claim disagrees"
    assert d.response["resyncAfterSeconds"] > 0
    return mismatch


# ---- DeadlineExceeded -------------------------------------------------------------------------------

@pytest.mark.parametrize("message", ["forged", None], ids=["with-message", "without-message"])
def test_a_forged_deadline_exceeded_without_a_deadline_keeps_the_running_jobset(message: str | None) -> None:
    """Today: row 3a leaves train-0 out (Metacontroller deletes it) and the Job ends Failed."""
    request = body(status=running(conditions=[marked("DeadlineExceeded", "ActiveDeadlineSeconds", message)]),
                   jobsets=[child(0)])
    d = run(request, FakeReader(workers(0)))
    mismatch = assert_held(d, "DeadlineExceededDisagrees", "train-0", says="status.conditions[DeadlineExceeded]")
    assert "spec.activeDeadlineSeconds is not set" in mismatch["message"]
    assert status(d)["phase"] == "Running" and condition(d, "Failed") is None
    assert status(run(fed_back(request, d), FakeReader(workers(0)))) == status(d), "a fixed point"


def test_a_deadline_exceeded_before_the_deadline_passed_holds() -> None:
    request = body(spec={**job_spec(), "activeDeadlineSeconds": 7200},
                   status=running(conditions=[marked("DeadlineExceeded")]), jobsets=[child(0)])
    d = run(request, FakeReader(workers(0)))
    mismatch = assert_held(d, "DeadlineExceededDisagrees", "train-0")
    assert "spec.activeDeadlineSeconds (7200) counted from status.startTime 2025-12-31T23:31:00Z has not passed" \
        in mismatch["message"]


def test_a_deadline_passed_by_the_evidence_still_tears_down_and_a_condition_without_message_fails_cleanly() -> None:
    spec = {**job_spec(), "activeDeadlineSeconds": 600}
    request = body(spec=spec, status=running(conditions=[marked("DeadlineExceeded", message=None)]),
                   jobsets=[child(0)])
    d = run(request, FakeReader(workers(0)))
    assert names(d) == [] and status(d)["phase"] == "Terminating" and condition(d, "StatusMismatch") is None
    drained = fed_back(request, d)
    drained["children"] = {"JobSet.jobset.x-k8s.io/v1alpha2": {}}
    done = run(drained, FakeReader())
    assert status(done)["phase"] == "Failed" and condition(done, "Failed")["reason"] == "DeadlineExceeded"


def test_a_teardown_under_way_is_honoured_whatever_the_limit_says_now() -> None:
    """Terminating, no JobSet left: raising the limit afterwards does not bring the workload back."""
    request = body(spec={**job_spec(), "activeDeadlineSeconds": 999999},
                   status={**running(phase="Terminating"), "workload": "",
                           "conditions": [marked("DeadlineExceeded")]})
    d = run(request, FakeReader())
    assert status(d)["phase"] == "Failed" and condition(d, "StatusMismatch") is None


def test_the_failed_end_of_such_a_teardown_is_a_fixed_point_and_deletes_with_its_ttl() -> None:
    """The Failed answer of a teardown whose limit was raised while it drained, fed back with a TTL:
    it stands (no StatusMismatch) and the TTL delete is asked every call until it is seen done."""
    request = body(spec={**job_spec(), "activeDeadlineSeconds": 999999, "ttlSecondsAfterFinished": 0},
                   status={**running(phase="Terminating"), "workload": "",
                           "conditions": [marked("DeadlineExceeded")]})
    failed = run(request, FakeReader())
    assert status(failed)["phase"] == "Failed" and failed.actions
    again = run(fed_back(request, failed), FakeReader())
    assert condition(again, "StatusMismatch") is None and again.actions == failed.actions
    assert status(again) == status(failed)


# ---- startTime --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("start", "says"), [
    ("1999-01-01T00:00:00Z", "status.startTime 1999-01-01T00:00:00Z is before the Job was created "
                             f"(metadata.creationTimestamp {CREATED})"),
    ("2025-12-31T22:00:00Z", "is before the Job was created"),
    ("2026-01-01T02:00:00Z", "status.startTime 2026-01-01T02:00:00Z is in the future"),
    ("9999-12-31T23:59:59Z", "is in the future"),
    ("0001-01-01T00:00:00+23:59", "status.startTime '0001-01-01T00:00:00+23:59' is not a time that can be counted"),
])
def test_a_start_time_moved_keeps_the_running_jobset(start: str, says: str) -> None:
    """Today: a startTime moved into the past makes row 3a drop train-0; 9999 or +23:59 is a 500."""
    request = body(spec={**job_spec(), "activeDeadlineSeconds": 3600}, status=running(startTime=start),
                   jobsets=[child(0)])
    d = run(request, FakeReader(workers(0)))
    assert_held(d, "StartTimeDisagrees", "train-0", says=says)
    assert status(d)["startTime"] == start and condition(d, "DeadlineExceeded") is None
    assert status(run(fed_back(request, d), FakeReader(workers(0)))) == status(d)
    later = run(fed_back(request, d), FakeReader(workers(0)), now=NOW + timedelta(minutes=1))
    assert status(later) == status(d), "held, the status stays the same call after call"


def test_a_clock_a_little_apart_is_not_a_disagreement() -> None:
    skew = int(claims.CLOCK_SKEW.total_seconds())
    early = (datetime(2025, 12, 31, 23, 30, tzinfo=UTC) - timedelta(seconds=skew - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    late = (NOW + timedelta(seconds=skew - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for start in (early, late):
        d = run(body(spec={**job_spec(), "activeDeadlineSeconds": 7200}, status=running(startTime=start),
                     jobsets=[child(0)]), FakeReader(workers(0)))
        assert d.kind == "kept" and condition(d, "StatusMismatch") is None, start


def test_a_start_time_removed_at_attempt_two_does_not_restart_the_deadline() -> None:
    """Today: startTime is stamped again from train-2's creation, and the deadline counts anew."""
    status_ = {**running(attempt=2, restarts=2), "restartsByCause": {"default": 2}}
    del status_["startTime"]
    request = body(spec={**job_spec(max_restarts=3), "activeDeadlineSeconds": 3600}, status=status_,
                   jobsets=[child(2, created="2025-12-31T23:55:00Z")])
    d = run(request, FakeReader(workers(2)))
    mismatch = assert_held(d, "StartTimeDisagrees", "train-2", says="status.startTime is missing")
    assert "status.phase is Running" in mismatch["message"]
    assert "startTime" not in status(d) and d.response.get("resyncAfterSeconds") == 5.0


@pytest.mark.parametrize("prior", [
    {"phase": "Pending", "restarts": 1},
    {"phase": "Pending", "lastFailure": {"attempt": 0, "cause": "default", "action": "RestartJob"}},
    {"phase": "Restarting", "restarts": 1},
])
def test_a_start_time_removed_while_the_status_shows_the_job_ran_holds(prior: dict[str, Any]) -> None:
    request = body(spec={**job_spec(max_restarts=3), "activeDeadlineSeconds": 3600},
                   status={"attempt": 1, "workload": "train-1", **prior}, jobsets=[child(1, state="Failed")])
    assert_held(run(request, FakeReader(workers(1))), "StartTimeDisagrees", "train-1", says="status.startTime")


def test_the_first_jobsets_lost_status_write_still_records_its_start() -> None:
    """The answer that created train-0 was lost: the status still says nothing ran. startTime comes
    from train-0's own creationTimestamp, not from now."""
    request = body(spec={**job_spec(), "activeDeadlineSeconds": 3600}, status={"phase": "Pending", "attempt": 0},
                   jobsets=[child(0, created="2025-12-31T23:40:00Z")])
    d = run(request, FakeReader(workers(0)))
    assert d.kind == "kept" and status(d)["startTime"] == "2025-12-31T23:40:00Z"
    assert d.response["resyncAfterSeconds"] == 2400.0


def test_a_jobset_creation_time_that_is_no_evidence_is_not_recorded() -> None:
    for created in ("1999-01-01T00:00:00Z", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59Z"):
        d = run(body(spec={**job_spec(), "activeDeadlineSeconds": 3600}, status={"phase": "Pending"},
                     jobsets=[child(0, created=created)]), FakeReader(workers(0)))
        assert status(d)["startTime"] == "2026-01-01T00:00:00Z", created


def test_suspend_still_works_over_a_start_time_out_of_range() -> None:
    """Row 2 comes before the hold: a suspend is never stopped by a bad claim (nor by a 500)."""
    for start in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00+23:59"):
        request = body(spec={**job_spec(suspend=True), "activeDeadlineSeconds": 3600},
                       status=running(startTime=start), jobsets=[child(0)])
        d = run(request, FakeReader(workers(0)))
        assert names(d) == [] and status(d)["phase"] == "Suspending" and d.actions == ()


# ---- terminal phase and TTL -------------------------------------------------------------------------

@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_terminal_phase_written_over_a_healthy_jobset_deletes_nothing(phase: str) -> None:
    """Today: the Job becomes final, completionTime is stamped, and ttlSecondsAfterFinished 0 deletes it."""
    request = body(spec={**job_spec(), "ttlSecondsAfterFinished": 0}, status=running(phase=phase),
                   jobsets=[child(0)])
    d = run(request, FakeReader(workers(0)))
    mismatch = assert_held(d, "PhaseDisagrees", "train-0", says=f"status.phase is {phase}, but JobSet train-0 runs")
    assert "completionTime" not in status(d) and status(d)["phase"] == phase
    assert not [a for a in d.actions if isinstance(a, DeleteJob)]
    assert mismatch["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert status(run(fed_back(request, d), FakeReader(workers(0)), now=NOW + timedelta(hours=2))) == status(d)


@pytest.mark.parametrize(("prior", "jobsets", "says"), [
    ({"phase": "Succeeded"}, [], "status.phase is Succeeded, but JobSet train-0 is not observed, not completed"),
    ({"phase": "Succeeded"}, [("Failed", "")], "JobSet train-0 is failed, not completed"),
    ({"phase": "Failed"}, [], "status.phase is Failed, but JobSet train-0 is not observed, not failed"),
    ({"phase": "Failed"}, [("Completed", "")], "JobSet train-0 is completed, not failed"),
    ({"phase": "Failed", "conditions": [marked("Failed", "DeadlineExceeded")]}, [], "status.conditions[Failed]"),
    ({"phase": "Failed", "conditions": [marked("Failed", "AttemptLimitReached")]}, [], "AttemptLimitReached"),
])
def test_the_ttl_delete_needs_evidence_of_the_end(prior: dict[str, Any], jobsets: list[tuple[str, str]],
                                                   says: str) -> None:
    request = body(spec={**job_spec(), "ttlSecondsAfterFinished": 0},
                   status={**running(active=0), "completionTime": "2025-12-31T23:50:00Z", **prior},
                   jobsets=[child(0, state=state) for state, _ in jobsets])
    d = run(request, FakeReader())
    assert_held(d, "PhaseDisagrees", *(["train-0"] if jobsets else []), says=says)


@pytest.mark.parametrize(("prior", "spec", "jobsets"), [
    ({"phase": "Succeeded"}, {}, [child(0, state="Completed")]),
    ({"phase": "Failed"}, {}, [child(0, state="Failed")]),
    ({"phase": "Failed", "conditions": [marked("Failed", "DeadlineExceeded")]}, {"activeDeadlineSeconds": 60}, []),
    ({"phase": "Failed", "attempt": MAX_ATTEMPT, "workload": "",
      "conditions": [marked("Failed", "AttemptLimitReached")]}, {}, []),
])
def test_the_ttl_delete_on_evidence(prior: dict[str, Any], spec: dict[str, Any], jobsets: list[dict[str, Any]]) -> None:
    request = body(spec={**job_spec(), "ttlSecondsAfterFinished": 0, **spec},
                   status={**running(active=0), "completionTime": "2025-12-31T23:50:00Z", **prior}, jobsets=jobsets)
    d = run(request, FakeReader())
    assert condition(d, "StatusMismatch") is None
    assert [type(a) for a in d.actions] == [DeleteJob]


def test_a_terminal_phase_without_a_ttl_and_without_its_jobset_stays_final() -> None:
    """Nothing is deleted without a TTL: a Failed Job whose JobSet someone deleted stays Failed."""
    d = run(body(status={**running(attempt=1, restarts=1, phase="Failed"), "workload": ""}))
    assert (d.kind, status(d)["phase"], condition(d, "StatusMismatch")) == ("terminal", "Failed", None)


# ---- completionTime ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("completion", "says"), [
    ("1999-01-01T00:00:00Z", "is before the Job was created"),
    ("2025-12-31T23:00:00Z", "is before the Job was created"),
    ("2025-12-31T23:31:00Z", "status.completionTime 2025-12-31T23:31:00Z is before JobSet train-0 became Completed "
                             "(2025-12-31T23:45:00Z)"),
    ("2026-01-01T03:00:00Z", "is in the future"),
    ("9999-12-31T23:59:59Z", "is in the future"),
    ("0001-01-01T00:00:00+23:59", "is not a time that can be counted from"),
])
def test_a_completion_time_moved_deletes_nothing(completion: str, says: str) -> None:
    """Today: a completionTime moved into the past brings the TTL delete forward; 9999 is a 500."""
    done = child(0, state="Completed")
    done["status"]["conditions"][0]["lastTransitionTime"] = "2025-12-31T23:45:00Z"
    request = body(spec={**job_spec(), "ttlSecondsAfterFinished": 600},
                   status={**running(phase="Succeeded", active=0), "completionTime": completion}, jobsets=[done])
    d = run(request, FakeReader())
    mismatch = assert_held(d, "CompletionTimeDisagrees", "train-0", says=says)
    assert mismatch["message"].startswith("status.completionTime ")
    assert status(d)["completionTime"] == completion


def test_a_completion_time_outside_a_terminal_phase_holds() -> None:
    """Row 10 would end the Job now: it must not count the TTL from a completionTime claimed before."""
    request = body(spec={**job_spec(), "ttlSecondsAfterFinished": 0},
                   status={**running(), "completionTime": "2025-12-31T23:35:00Z"},
                   jobsets=[child(0, state="Completed")])
    assert_held(run(request), "CompletionTimeDisagrees", "train-0", says="but status.phase is Running")


# ---- restartsByCause --------------------------------------------------------------------------------

def test_restarts_by_cause_counting_more_than_the_attempts_had_holds() -> None:
    request = body(spec=job_spec(max_restarts=9), status=running(attempt=1, restarts=1,
                                                                   restartsByCause={"default": 1, "preempted": 3}),
                   jobsets=[child(1)])
    mismatch = assert_held(run(request, FakeReader(workers(1))), "RestartsByCauseDisagree", "train-1",
                           says="status.restartsByCause counts 4 restarts, more than attempt 1 can have had")
    assert mismatch["message"].endswith("(1)")
    fine = body(spec=job_spec(max_restarts=9), status=running(attempt=1, restarts=0,
                                                              restartsByCause={"preempted": 1}), jobsets=[child(1)])
    assert condition(run(fine, FakeReader(workers(1))), "StatusMismatch") is None


# ---- attempts -----------------------------------------------------------------------------------------

def test_a_history_entry_past_the_status_attempt_holds() -> None:
    """Found by the queue-managed fixed-point property: an entry for attempt 1 written next to
    attempt 0 was ended as evicted one call later, by the eviction of attempt 0."""
    entries = [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T22:00:00Z"},
               {"attempt": 1, "jobSet": "train-1", "created": "2025-12-31T22:00:00Z"}]
    request = body(status={**running(), "attempts": entries}, jobsets=[child(0)])
    assert_held(run(request, FakeReader(workers(0))), "AttemptsDisagree", "train-0",
                says="status.attempts has an entry for attempt 1, past the status' attempt 0")
    fine = body(status={**running(), "attempts": entries[:1]}, jobsets=[child(0)])
    assert condition(run(fine, FakeReader(workers(0))), "StatusMismatch") is None


# ---- a newer JobSet never skips the barrier -----------------------------------------------------------

RESTARTING = {"phase": "Restarting", "attempt": 1, "restarts": 1, "workload": "", "startTime": "2025-12-31T23:31:00Z"}


def test_a_stray_next_jobset_while_the_last_attempt_still_runs_is_not_adopted() -> None:
    """Today: Restarting becomes Pending, train-2 is kept and train-1 is deleted while its pod runs."""
    request = body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(1, state="Failed"), child(2)])
    reader = FakeReader([*workers(1, n=1), *workers(2)])
    d = run(request, reader)
    mismatch = assert_held(d, "UnknownAttempt", "train-1", "train-2",
                           says="JobSet train-2 names attempt 2, but status.attempt is 1")
    assert "JobSet train-1 is still observed" in mismatch["message"]
    assert (status(d)["phase"], status(d)["attempt"]) == ("Restarting", 1)
    assert status(run(fed_back(request, d), reader)) == status(d)


def test_a_stray_next_jobset_while_a_pod_of_the_last_attempt_still_runs_is_not_adopted() -> None:
    """train-1 itself is gone, but its worker still runs (read live): nothing moves."""
    request = body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)])
    stale_cache = workers(2)
    reader = FakeReader(stale_cache, live_pods=[*workers(1, n=1), *workers(2)])
    d = run(request, reader)
    mismatch = assert_held(d, "UnknownAttempt", "train-2", says="JobSet train-2 names attempt 2")
    assert "pods not of train-2 are active" in mismatch["message"] and "train-1-worker-0-0" in mismatch["message"]
    assert ("active_attempt_pods", "live", ("default", "train", 3)) in reader.calls


def test_a_pod_of_no_known_attempt_blocks_the_adoption() -> None:
    unknown = make_pod("someone", job="train")
    d = run(body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)]),
            FakeReader([unknown, *workers(2)]))
    assert_held(d, "UnknownAttempt", "train-2", says="someone")


def test_a_batch_job_of_the_last_attempt_blocks_the_adoption() -> None:
    """No pod of train-1 is active, but its batch Job is left: it may still create one, so the barrier
    before attempt 2 cannot have passed. train-2's own batch Job does not count."""
    reader = FakeReader(workers(2), jobs=[make_batch_job("train-1"), make_batch_job("train-2")])
    d = run(body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)]), reader)
    mismatch = assert_held(d, "UnknownAttempt", "train-2", says="batch Jobs of an earlier attempt are left")
    assert "train-1-worker-0" in mismatch["message"] and "train-2-worker-0" not in mismatch["message"]
    adopted = run(body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)]),
                  FakeReader(workers(2), jobs=[make_batch_job("train-2")]))
    assert (status(adopted)["attempt"], condition(adopted, "StatusMismatch")) == (2, None)


@pytest.mark.parametrize(("workload", "number"), [("train-2", "1"), ("train-1", "2")])
def test_a_pod_whose_two_identities_disagree_blocks_the_adoption(workload: str, number: str) -> None:
    """A pod naming train-2 by one label and attempt 1 by the other is not train-2's own."""
    mixed = make_pod("mixed-0", job="train", workload=workload)
    mixed["metadata"]["labels"]["nvcre.nvidia.com/attempt"] = number
    d = run(body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)]),
            FakeReader([mixed, *workers(2)]))
    assert_held(d, "UnknownAttempt", "train-2", says="mixed-0")


@pytest.mark.parametrize("failing", ["active_job_pods", "active_launcher_pods", "active_attempt_pods", "attempt_jobs",
                                     "live"])
def test_a_failed_read_never_adopts(failing: str) -> None:
    d = run(body(spec=job_spec(max_restarts=3), status=RESTARTING, jobsets=[child(2)]),
            FakeReader(workers(2), fail=[failing]))
    assert_held(d, "UnknownAttempt", "train-2", says="a pod read failed")


@pytest.mark.parametrize(("prior", "jobset", "says"), [
    (RESTARTING, 3, "the step after a drained attempt creates attempt 2 only"),
    ({**RESTARTING, "phase": "Running"}, 2, "status.phase is not Restarting, Suspending or Suspended"),
    ({**RESTARTING, "phase": "Pending"}, 2, "status.phase is not Restarting, Suspending or Suspended"),
])
def test_a_newer_jobset_that_is_not_the_next_step_is_not_adopted(prior: dict[str, Any], jobset: int,
                                                                   says: str) -> None:
    d = run(body(spec=job_spec(max_restarts=3), status=prior, jobsets=[child(jobset)]), FakeReader(workers(jobset)))
    assert_held(d, "UnknownAttempt", f"train-{jobset}", says=says)
    assert status(d)["attempt"] == 1


@pytest.mark.parametrize("phase", ["Restarting", "Suspending", "Suspended"])
def test_the_next_jobset_after_a_drained_attempt_is_adopted(phase: str) -> None:
    """The lost status write: train-2 and its own pods (launcher too) only, nothing of attempt 1 left."""
    launcher = make_pod("train-2-launcher-0-0", launcher="train", workload="train-2", replicated_job="launcher")
    reader = FakeReader(workers(2), live_pods=[*workers(2), launcher, *workers(1, phase="Failed")])
    d = run(body(spec=job_spec(max_restarts=3), status={**RESTARTING, "phase": phase}, jobsets=[child(2)]), reader)
    assert (d.kind, names(d), status(d)["attempt"], status(d)["phase"]) == ("kept", ["train-2"], 2, "Running")
    assert condition(d, "StatusMismatch") is None


def test_a_next_jobset_being_deleted_is_not_a_candidate() -> None:
    """Restarting with train-2 on its way out: the barrier waits for it, nothing is adopted or held."""
    d = run(body(spec=job_spec(max_restarts=3), status=RESTARTING,
                 jobsets=[child(2, deleting="2025-12-31T23:59:00Z")]), FakeReader())
    assert (d.kind, names(d), status(d)["attempt"], condition(d, "StatusMismatch")) == ("held", [], 1, None)
    assert "JobSet train-2 to be deleted" in status(d)["message"]


# ---- the claims, whatever they say ------------------------------------------------------------------

TIMES = ["", "1999-01-01T00:00:00Z", "2025-12-31T23:31:00Z", "2025-12-31T23:59:00Z", "2026-01-01T05:00:00Z",
         "9999-12-31T23:59:59Z", "0001-01-01T00:00:00+23:59"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(phase=st.sampled_from(["", "Pending", "Running", "Restarting", "Succeeded", "Failed", "Terminating"]),
       start=st.sampled_from(TIMES), completion=st.sampled_from(TIMES),
       conditions=st.lists(st.sampled_from([marked("DeadlineExceeded", message=None),
                                            marked("Failed", "DeadlineExceeded"),
                                            marked("Failed", "AttemptLimitReached")]),
                           max_size=2, unique_by=lambda c: c["type"]),
       by_cause=st.sampled_from([{}, {"default": 1}, {"default": 5}]),
       deadline=st.sampled_from([None, 60, 7200]), ttl=st.sampled_from([None, 0]),
       suspend=st.booleans())
def test_no_claim_ends_a_healthy_run_or_deletes_the_job(phase: str, start: str, completion: str,
                                                        conditions: list[dict[str, Any]], by_cause: dict[str, int],
                                                        deadline: int | None, ttl: int | None, suspend: bool) -> None:
    """Whatever the status claims, over a healthy train-0 with running pods: the answer is a 200
    body (no exception), train-0 is kept unless suspended or its deadline passed by the evidence
    (startTime not before the Job's creation, not after now), and the Job is never deleted."""
    spec: dict[str, Any] = job_spec(max_restarts=3, suspend=suspend)
    for key, value in (("activeDeadlineSeconds", deadline), ("ttlSecondsAfterFinished", ttl)):
        if value is not None:
            spec[key] = value
    prior: dict[str, Any] = {"phase": phase, "attempt": 0, "restarts": 0, "workload": "train-0",
                             "conditions": conditions, "restartsByCause": by_cause}
    for key, value in (("startTime", start), ("completionTime", completion)):
        if value:
            prior[key] = value
    d = run(body(spec=spec, status=prior, jobsets=[child(0)]), FakeReader(workers(0)))
    assert not [a for a in d.actions if isinstance(a, DeleteJob)]
    evidence = deadline is not None and start in ("2025-12-31T23:31:00Z", "2025-12-31T23:59:00Z") and \
        datetime.fromisoformat(start.replace("Z", "+00:00")) + timedelta(seconds=deadline) <= NOW
    if "train-0" not in names(d):
        assert suspend or evidence, (phase, start, conditions, status(d))


@pytest.mark.parametrize("phase", ["", "Running", "Suspending"])
def test_a_suspend_adopts_nothing_so_its_status_is_a_fixed_point(phase: str) -> None:
    """Found by the fixed-point property: suspended with a stray train-2 and the status at attempt 1.
    Row 2 tears down whatever runs; had it adopted on the Suspending it writes, the next call would
    answer attempt 2 and the status would never settle."""
    spec = {**job_spec(max_restarts=3), "suspend": True}
    request = body(spec=spec, status={**RESTARTING, "phase": phase}, jobsets=[child(2)])
    d = run(request, FakeReader(workers(2)))
    assert (status(d)["phase"], status(d)["attempt"], names(d)) == ("Suspending", 1, [])
    assert status(run(fed_back(request, d), FakeReader(workers(2)))) == status(d)
