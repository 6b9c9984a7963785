"""The decision table, row by row, with the drain barrier and the adoption rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core import specpin
from hooks.core.barrier import StaleRequest
from hooks.core.decide import Decision, decide
from hooks.core.evidence import current_attempt
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.settling import drain_dated

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)
KEYINGS = ("v1", "v2")


def run(reader: FakeReader | None = None, *, now: datetime = NOW, **request: Any) -> Decision:
    """Parses a built request and decides it."""
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    return decide(observed, reader if reader is not None else FakeReader(), now)


def running(n: int = 2, job: str = "train", **kw: Any) -> list[dict[str, Any]]:
    return [make_pod(f"{job}-0-worker-0-{i}", job=job, **kw) for i in range(n)]


def status(d: Decision) -> dict[str, Any]:
    return d.response["status"]


def condition(d: Decision, type_: str) -> dict[str, Any] | None:
    return next((c for c in status(d)["conditions"] if c["type"] == type_), None)


def names(d: Decision) -> list[str]:
    return [c["metadata"]["name"] for c in d.response["children"]]


# ---- row 10 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_new_job_creates_attempt_zero_pending(keying: str) -> None:
    d = run(keying=keying)
    assert d.kind == "created"
    assert names(d) == ["train-0"]
    assert status(d) == {"phase": "Pending", "attempt": 0, "restarts": 0, "workload": "train-0",
                         "activePods": 0, "conditions": [],
                         "message": "waiting for the pods of JobSet train-0 to start",
                         "startTime": "2026-01-01T00:00:00Z",
                         "replicatedJobsDigest": specpin.digest(read_spec(job_spec())),
                         "attempts": [{"attempt": 0, "jobSet": "train-0"}]}  # dated once the JobSet exists
    assert "resyncAfterSeconds" not in d.response and "finalized" not in d.response


@pytest.mark.parametrize("keying", KEYINGS)
def test_observed_jobset_with_active_pods_is_running(keying: str) -> None:
    d = run(FakeReader(running(3)), keying=keying, jobsets=[jobset_child("train", 0)],
            status={"phase": "Pending", "attempt": 0, "observedGeneration": 1, "extra": "dropped"})
    assert (d.kind, status(d)["phase"], status(d)["activePods"], status(d)["message"]) == ("kept", "Running", 3, "")
    assert names(d) == ["train-0"]
    assert "observedGeneration" not in status(d) and "extra" not in status(d)


def test_cache_read_failure_keeps_phase_and_count_and_resyncs() -> None:
    d = run(FakeReader(fail={"cache"}), jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0, "activePods": 4})
    assert (status(d)["phase"], status(d)["activePods"]) == ("Running", 4)
    assert d.response["resyncAfterSeconds"] == 5.0
    assert names(d) == ["train-0"]
    assert "pod read" in status(d)["message"]


def test_jobset_is_created_only_after_drain() -> None:
    prior = {"phase": "Running", "attempt": 0, "workload": "train-0", "activePods": 2}
    held = run(FakeReader(running(2)), status=prior)
    assert held.kind == "held" and held.response["children"] == []
    assert "(before creating JobSet train-0)" in status(held)["message"]
    assert status(held)["phase"] == "Running"
    drained = run(FakeReader([]), status=prior)
    assert drained.kind == "created" and names(drained) == ["train-0"]


# ---- adoption ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_newer_observed_jobset_is_adopted_after_a_lost_status_write(keying: str) -> None:
    # The pods running are train-3's own (its jobset-name label): none of an earlier attempt.
    reader = FakeReader([make_pod(f"train-3-worker-0-{i}", job="train", workload="train-3") for i in range(2)])
    d = run(reader, keying=keying, jobsets=[jobset_child("train", 3)],
            status={"phase": "Restarting", "attempt": 2, "restarts": 1})
    assert names(d) == ["train-3"]
    assert (status(d)["attempt"], status(d)["restarts"], status(d)["phase"]) == (3, 1, "Running")
    assert d.kind == "kept"


def test_resume_lost_status_write_does_not_skip_an_attempt() -> None:
    d = run(jobsets=[jobset_child("train", 5)], status={"phase": "Suspended", "attempt": 4})
    assert names(d) == ["train-5"] and status(d)["attempt"] == 5 and d.kind == "kept"


def test_older_running_jobsets_are_held_not_dropped_and_odd_names_not_adopted() -> None:
    """Several healthy JobSets at once: none is dropped (the status' attempt is a claim), none is
    adopted, nothing is created; StatusMismatch says so."""
    stray = jobset_child("train", 9)
    stray["metadata"]["name"] = "other-9"
    d = run(jobsets=[jobset_child("train", 1), jobset_child("train", 2), stray],
            status={"phase": "Running", "attempt": 2})
    assert names(d) == ["other-9", "train-1", "train-2"] and d.kind == "held"
    assert condition(d, "StatusMismatch")["reason"] == "SeveralWorkloads"
    assert current_attempt(parse_request(job_request(jobsets=[stray]), "sync")) == 0
    finished = jobset_child("train", 1, state="Failed")
    d = run(jobsets=[finished, jobset_child("train", 2)], status={"phase": "Running", "attempt": 2})
    assert names(d) == ["train-2"] and condition(d, "StatusMismatch") is None  # a failed older one may go


# ---- row 1: finalize --------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_finalize_with_jobset_observed_waits(keying: str) -> None:
    d = run(FakeReader([]), keying=keying, finalizing=True, jobsets=[jobset_child("train", 0)],
            status={"phase": "Running"})
    assert d.response["children"] == [] and d.response["finalized"] is False
    assert status(d)["phase"] == "Terminating" and status(d)["workload"] == ""
    assert condition(d, "Drained")["reason"] == "WorkloadPresent"
    assert status(d)["message"] == "waiting for JobSet train-0 to be deleted"
    assert d.response["resyncAfterSeconds"] == 5.0


def test_finalize_passes_only_when_live_confirms() -> None:
    d = run(FakeReader([]), finalizing=True, status={"phase": "Running", "activePods": 1})
    assert d.response["finalized"] is True and "resyncAfterSeconds" not in d.response
    drained = condition(d, "Drained")
    assert (drained["status"], drained["reason"]) == ("True", "NoActivePods")
    assert status(d)["activePods"] == 0 and status(d)["message"] == ""


def test_finalize_applies_to_terminal_jobs() -> None:
    d = run(FakeReader([]), finalizing=True, jobsets=[jobset_child("train", 0, state="Completed")],
            status={"phase": "Succeeded"})
    assert status(d)["phase"] == "Terminating" and d.response["finalized"] is False


def test_stale_cache_hiding_a_running_pod_holds() -> None:
    finished = running(2, phase="Succeeded")
    live = [*running(2, phase="Succeeded"), make_pod("train-0-worker-0-9", job="train")]
    d = run(FakeReader(finished, live_pods=live), finalizing=True, status={"phase": "Running"})
    assert d.response["finalized"] is False
    assert status(d)["message"] == "waiting for 1 active pod: train-0-worker-0-9"
    assert condition(d, "Drained")["reason"] == "PodsActive"


def test_pod_list_is_sorted_truncated_and_marks_terminating() -> None:
    pods = [make_pod(f"p-{i}", job="train") for i in (6, 2, 0, 5, 1, 4)]
    pods.append(make_pod("p-3", job="train", deleting="2025-12-31T23:59:00Z"))
    d = run(FakeReader(pods), finalizing=True)
    assert status(d)["message"] == ("waiting for 7 active pods: p-0, p-1, p-2, "
                                    "p-3 (terminating, grace period ends 2025-12-31T23:59:00Z), p-4 and 2 more")
    assert status(d)["activePods"] == 7


@pytest.mark.parametrize("failing", ["cache", "live", "active_job_pods", "active_launcher_pods",
                                     "active_attempt_pods"])
def test_any_barrier_read_failure_holds(failing: str) -> None:
    reader = FakeReader([], fail={failing})
    d = run(reader, finalizing=True, spec=job_spec(launcher="launcher"),
            status={"phase": "Running", "activePods": 3})
    assert d.response["finalized"] is False and d.response["resyncAfterSeconds"] == 5.0
    drained = condition(d, "Drained")
    assert (drained["status"], drained["reason"]) == ("Unknown", "ReadFailed")
    assert drained["message"] == "the pod read failed" and "injected" not in status(d)["message"]
    assert status(d)["activePods"] == 3


@pytest.mark.parametrize("failing", ["live", "active_launcher_pods", "active_attempt_pods"])
def test_read_failure_never_lets_a_restart_proceed(failing: str) -> None:
    d = run(FakeReader([], fail={failing}), spec=job_spec(launcher="launcher", max_restarts=2),
            status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    assert d.kind == "held" and d.response["children"] == []
    assert (status(d)["phase"], status(d)["attempt"]) == ("Restarting", 0)


# ---- MPI launcher -----------------------------------------------------------------------------------

def test_active_launcher_holds_the_barrier() -> None:
    launcher = make_pod("train-0-launcher-0-0", launcher="train", workload="train-0", replicated_job="launcher")
    d = run(FakeReader([launcher]), finalizing=True, spec=job_spec(launcher="launcher"))
    assert d.response["finalized"] is False
    assert condition(d, "Drained")["reason"] == "LauncherActive"
    assert status(d)["message"] == "waiting for launcher pod train-0-launcher-0-0 to finish"
    assert status(d)["activePods"] == 0


def test_finished_launcher_passes() -> None:
    launcher = make_pod("train-0-launcher-0-0", launcher="train", workload="train-0", replicated_job="launcher",
                        phase="Succeeded")
    reader = FakeReader([launcher])
    d = run(reader, finalizing=True, spec=job_spec(launcher="launcher"))
    assert d.response["finalized"] is True
    assert ("active_launcher_pods", "live", ("default", "train")) in reader.calls
    assert ("active_attempt_pods", "live", ("default", "train", 1)) in reader.calls


def test_workers_done_and_launcher_running_is_running() -> None:
    """An MPI Job whose workers finished while its launcher still runs is Running, not Pending."""
    workers = [make_pod(f"train-0-worker-0-{i}", job="train", phase="Succeeded") for i in range(2)]
    launcher = make_pod("train-0-launcher-0-0", launcher="train", workload="train-0", replicated_job="launcher")
    reader = FakeReader([*workers, launcher])
    d = run(reader, spec=job_spec(launcher="launcher"), jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0})
    assert (status(d)["phase"], status(d)["activePods"], status(d)["message"]) == ("Running", 0, "")
    assert ("workload_pods", "live", ("default", "train-0", "launcher")) in reader.calls
    done = dict(launcher, status={"phase": "Succeeded"})
    d = run(FakeReader([*workers, done]), spec=job_spec(launcher="launcher"), jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0})
    assert status(d)["phase"] == "Running"  # never back to Pending within the attempt


def test_an_attempt_whose_pods_all_finished_stays_running_until_the_jobset_decides() -> None:
    """Seen with real Metacontroller, every pod Succeeded before the JobSet reports Completed.
    A Running attempt stays Running (the message says what it waits for); a never-started one is Pending;
    the JobSet's own Completed then decides."""
    done = [make_pod(f"train-0-worker-0-{i}", job="train", phase="Succeeded") for i in range(2)]
    d = run(FakeReader(done), jobsets=[jobset_child("train", 0)], status={"phase": "Running", "attempt": 0})
    assert (d.kind, names(d), status(d)["phase"], status(d)["activePods"]) == ("kept", ["train-0"], "Running", 0)
    assert status(d)["message"] == "no pod of JobSet train-0 is active: waiting for the JobSet to report how it ended"
    again = run(FakeReader(done), jobsets=[jobset_child("train", 0)], status=status(d))
    assert status(again) == status(d)  # a fixed point
    d = run(FakeReader(done), jobsets=[jobset_child("train", 0)], status={"phase": "Pending", "attempt": 0})
    assert status(d)["phase"] == "Pending"
    d = run(FakeReader(done), jobsets=[jobset_child("train", 0, state="Completed")], status=status(again))
    assert status(d)["phase"] == "Succeeded"


def test_a_failed_launcher_read_keeps_the_phase_and_resyncs() -> None:
    d = run(FakeReader([], fail={"workload_pods"}), spec=job_spec(launcher="launcher"),
            jobsets=[jobset_child("train", 0)], status={"phase": "Running", "attempt": 0, "activePods": 4})
    assert (d.kind, names(d), status(d)["phase"]) == ("kept", ["train-0"], "Running")
    assert d.response["resyncAfterSeconds"] > 0
    assert status(d)["message"] == "waiting for a pod read to succeed: the pod read failed"


def test_a_launcher_left_in_the_workload_to_create_holds_its_creation() -> None:
    """A JobSet of the same name deleted outside the controller left its launcher running: the
    JobSet is not recreated next to it, whether on a plain create or on a restart's next attempt."""
    stray = make_pod("train-1-launcher-0-0", launcher="train", workload="train-1", replicated_job="launcher")
    create = run(FakeReader([stray]), spec=job_spec(launcher="launcher"), status={"phase": "Running", "attempt": 1})
    assert (create.kind, names(create)) == ("held", [])
    assert "launcher pod train-1-launcher-0-0" in status(create)["message"]
    # Restarting attempt 0 while attempt 1's launcher runs: attempt 1 was started, so this parent is
    # behind the cluster (Metacontroller's cache lags): refused (409), never answered with attempt 0.
    with pytest.raises(StaleRequest, match="attempt 1"):
        run(FakeReader([stray]), spec=job_spec(launcher="launcher", max_restarts=2),
            status={"phase": "Restarting", "attempt": 0, "restarts": 1})


# ---- row 2: terminal --------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_keeps_observed_jobset_and_never_creates(keying: str, phase: str) -> None:
    # The JobSet ended as the phase says (a terminal phase over a running JobSet is a claim and holds).
    ended = jobset_child("train", 1, state="Completed" if phase == "Succeeded" else "Failed")
    kept = run(keying=keying, jobsets=[ended], status={"phase": phase, "attempt": 1})
    assert (kept.kind, names(kept), status(kept)["phase"]) == ("terminal", ["train-1"], phase)
    gone = run(keying=keying, status={"phase": phase, "attempt": 1, "workload": "train-1"})
    assert gone.response["children"] == [] and status(gone)["workload"] == ""
    suspended = run(keying=keying, spec=job_spec(suspend=True), status={"phase": phase, "attempt": 1})
    assert status(suspended)["phase"] == phase


def test_terminal_with_invalid_spec_re_emits_observed_object() -> None:
    child = jobset_child("train", 0)
    child["metadata"]["annotations"] = {"metacontroller.k8s.io/last-applied-configuration": "{}", "a": "b"}
    d = run(spec={"replicatedJobs": []}, jobsets=[child], status={"phase": "Succeeded"})
    out = d.response["children"][0]
    assert out["metadata"] == {"name": "train-0", "namespace": "default", "labels": child["metadata"]["labels"],
                               "annotations": {"a": "b"}}
    assert out["spec"] == child["spec"] and "status" not in out


# ---- row 3: suspend ---------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_suspend_tears_down_then_suspends(keying: str) -> None:
    spec = job_spec(suspend=True)
    d = run(FakeReader(running(2)), keying=keying, spec=spec, jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0})
    assert d.response["children"] == [] and status(d)["phase"] == "Suspending" and d.kind == "held"
    assert status(d)["message"] == ("waiting for JobSet train-0 to be deleted and "
                                    "2 active pods: train-0-worker-0-0, train-0-worker-0-1")
    done = run(FakeReader([]), keying=keying, spec=spec, status=status(d))
    assert (status(done)["phase"], status(done)["workload"], done.kind) == ("Suspended", "", "proceeded")
    again = run(FakeReader([]), keying=keying, spec=spec, status=status(done), now=LATER)
    assert drain_dated(status(done), status(again)), "fed back, only the drain is dated (once)"
    assert status(run(FakeReader([]), keying=keying, spec=spec, status=status(again), now=LATER)) == status(again)


# ---- row 4: resume ----------------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_resume_after_suspended_is_a_new_attempt_not_a_restart(keying: str) -> None:
    d = run(FakeReader([]), keying=keying, status={"phase": "Suspended", "attempt": 2, "restarts": 1})
    assert d.kind == "created" and names(d) == ["train-3"]
    assert (status(d)["phase"], status(d)["attempt"], status(d)["restarts"]) == ("Pending", 3, 1)


def test_unsuspended_while_suspending_keeps_draining_then_resumes() -> None:
    ran = {"phase": "Suspending", "attempt": 0, "startTime": "2025-12-31T00:00:00Z"}
    held = run(FakeReader(running(1)), status=ran)
    assert (held.kind, status(held)["phase"], held.response["children"]) == ("held", "Suspending", [])
    done = run(FakeReader([]), status=ran)
    assert (done.kind, names(done), status(done)["attempt"]) == ("created", ["train-1"], 1)


def test_a_job_created_suspended_starts_at_attempt_0_when_resumed() -> None:
    """Issue 23: attempt 0 is the first workload, whether or not the Job was created suspended."""
    suspended = run(FakeReader([]), spec=job_spec(suspend=True))
    assert (status(suspended)["phase"], status(suspended)["attempt"], names(suspended)) == ("Suspended", 0, [])
    resumed = run(FakeReader([]), status=status(suspended))
    assert (resumed.kind, names(resumed), status(resumed)["attempt"]) == ("created", ["train-0"], 0)
    assert status(resumed)["restarts"] == 0
    held = run(FakeReader(running(1)), status=status(suspended))  # a pod of attempt 0 still active: the barrier
    assert (held.kind, held.response["children"]) == ("held", [])


# ---- rows 5 and 7: restart --------------------------------------------------------------------------

@pytest.mark.parametrize("keying", KEYINGS)
def test_failed_jobset_with_restarts_left_tears_down_once(keying: str) -> None:
    """Restarting and restarts+1 are written while the failed JobSet is still kept; only the call
    fed that status leaves it out, so a lost status write cannot re-run the attempt uncounted."""
    spec = job_spec(max_restarts=2)
    failed = [jobset_child("train", 0, state="Failed")]
    d = run(FakeReader(running(1)), keying=keying, spec=spec, jobsets=failed, status={"phase": "Running"})
    assert (d.kind, names(d)) == ("held", ["train-0"])
    assert (status(d)["phase"], status(d)["restarts"], status(d)["attempt"]) == ("Restarting", 1, 0)
    assert condition(d, "Drained")["status"] == "False" and d.response["resyncAfterSeconds"] == 5.0
    fed = run(FakeReader(running(1)), keying=keying, spec=spec, jobsets=failed, status=status(d), now=LATER)
    assert status(fed) == status(d)
    assert (fed.kind, fed.response["children"]) == ("held", [])  # now it is torn down
    lost = run(FakeReader(running(1)), keying=keying, spec=spec, jobsets=failed, status={"phase": "Running"})
    assert lost.response == d.response  # the status write was lost: the same first step again
    proceeded = run(FakeReader([]), keying=keying, spec=spec, status=status(d), now=LATER)
    assert (proceeded.kind, names(proceeded)) == ("proceeded", ["train-1"])
    assert (status(proceeded)["phase"], status(proceeded)["attempt"], status(proceeded)["restarts"]) == (
        "Pending", 1, 1)


@pytest.mark.parametrize("keying", KEYINGS)
def test_failed_jobset_without_restarts_left_is_terminal(keying: str) -> None:
    d = run(keying=keying, spec=job_spec(max_restarts=1), jobsets=[jobset_child("train", 1, state="Failed")],
            status={"phase": "Running", "attempt": 1, "restarts": 1})
    assert (d.kind, names(d), status(d)["phase"], status(d)["restarts"]) == ("terminal", ["train-1"], "Failed", 1)


@pytest.mark.parametrize("keying", KEYINGS)
def test_completed_jobset_succeeds(keying: str) -> None:
    d = run(keying=keying, jobsets=[jobset_child("train", 0, state="Completed")], status={"phase": "Running"})
    assert (d.kind, names(d), status(d)["phase"]) == ("terminal", ["train-0"], "Succeeded")


def test_terminal_state_field_alone_counts() -> None:
    child = jobset_child("train", 0)
    child["status"]["terminalState"] = "Completed"
    assert status(run(jobsets=[child]))["phase"] == "Succeeded"


# ---- row 6: invalid spec ----------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "code"), [
    ({}, "NoReplicatedJobs"),
    ({"replicatedJobs": [{"name": "w"}]}, "InvalidReplicatedJob"),
    ({**job_spec(), "launcher": "nope"}, "UnknownLauncher"),
    ({**job_spec(), "maxRestarts": -1}, "InvalidMaxRestarts"),
])
@pytest.mark.parametrize("keying", KEYINGS)
def test_invalid_spec_creates_nothing(spec: dict[str, Any], code: str, keying: str) -> None:
    d = run(spec=spec, keying=keying)
    assert (d.kind, d.response["children"], status(d)["phase"]) == ("invalid-spec", [], "Pending")
    invalid = condition(d, "InvalidSpec")
    assert (invalid["status"], invalid["reason"]) == ("True", code)
    assert status(d)["message"].startswith("waiting for a valid spec: ")


def test_invalid_spec_keeps_an_observed_jobset_and_phase() -> None:
    d = run(FakeReader(running(1)), spec={}, jobsets=[jobset_child("train", 0)], status={"phase": "Running"})
    assert (names(d), status(d)["phase"], status(d)["workload"]) == (["train-0"], "Running", "train-0")


def test_invalid_spec_condition_cleared_only_when_it_existed() -> None:
    bad = run(spec={})
    fixed = run(status=status(bad), now=LATER)
    cleared = condition(fixed, "InvalidSpec")
    assert (cleared["status"], cleared["reason"]) == ("False", "Valid")
    assert cleared["lastTransitionTime"] == "2026-01-01T00:05:00Z"
    assert condition(run(), "InvalidSpec") is None


def test_a_name_too_long_for_a_later_attempt_is_refused_before_the_first() -> None:
    """j...-9-worker-1 is 63 characters, j...-10-worker-1 is 64: judged at the last attempt, the Job
    never gets a JobSet, so no restart is spent on one that cannot be created."""
    for attempt in (0, 9, 10):
        d = run(name="j" * 52, status={"attempt": attempt})
        assert (d.kind, d.response["children"]) == ("invalid-spec", [])
        assert condition(d, "InvalidSpec")["reason"] == "NameTooLong"


def test_a_name_that_is_not_a_dns_1035_label_is_invalid_name() -> None:
    d = run(name="my.job")
    assert (d.kind, condition(d, "InvalidSpec")["reason"]) == ("invalid-spec", "InvalidName")


# ---- conditions and determinism ---------------------------------------------------------------------

def test_last_transition_time_moves_only_on_status_change() -> None:
    first = run(FakeReader(running(2)), finalizing=True)
    t0 = condition(first, "Drained")["lastTransitionTime"]
    fewer = run(FakeReader(running(1)), finalizing=True, status=status(first), now=LATER)
    assert condition(fewer, "Drained")["lastTransitionTime"] == t0 == "2026-01-01T00:00:00Z"
    assert condition(fewer, "Drained")["message"] != condition(first, "Drained")["message"]
    done = run(FakeReader([]), finalizing=True, status=status(fewer), now=LATER)
    assert condition(done, "Drained")["lastTransitionTime"] == "2026-01-01T00:05:00Z"


def test_same_request_same_response() -> None:
    kwargs = {"spec": job_spec(max_restarts=1), "jobsets": [jobset_child("train", 0, state="Failed")]}
    assert run(FakeReader(running(2)), **kwargs).response == run(FakeReader(running(2)), **kwargs).response


def test_new_job_waits_for_leftover_pods_and_failed_reads_before_creating() -> None:
    leftover = run(FakeReader([], live_pods=running(1)))
    assert (leftover.kind, leftover.response["children"], status(leftover)["phase"]) == ("held", [], "Pending")
    assert condition(leftover, "Drained")["status"] == "False"
    failed = run(FakeReader([], fail={"live"}))
    assert failed.kind == "held" and condition(failed, "Drained")["reason"] == "ReadFailed"


def test_proceeding_reads_the_barrier_once() -> None:
    reader = FakeReader([])
    run(reader, status={"phase": "Restarting", "attempt": 0, "restarts": 1}, spec=job_spec(max_restarts=1))
    # The barrier's live answers (none active) are the pod count too: no further read.
    assert [c[:2] for c in reader.calls] == [("active_job_pods", "cache"), ("active_job_pods", "live"),
                                            ("active_launcher_pods", "live"), ("attempt_jobs", "live"),
                                            ("active_attempt_pods", "live")]
