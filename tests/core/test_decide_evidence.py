"""The status is a claim, the children are evidence, in the decision: the barrier finds a Job's pods by
every identity they carry, a status that disagrees with the children never opens a gate or drops a
healthy JobSet, attempts end at MAX_ATTEMPT, and messages stay bounded. Each test fails on the decision
as it was before."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.core.decide import Decision
from hooks.core.jobset import MAX_ATTEMPT
from hooks.core.wording import MAX_MESSAGE
from podread import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL
from tests.core.test_decide import LATER, condition, names, run, status
from tests.support import FakeReader, job_spec, jobset_child, make_pod

MPI = job_spec(launcher="launcher", max_restarts=3)


def launcher_pod(attempt: int, phase: str = "Running") -> dict[str, Any]:
    return make_pod(f"train-{attempt}-launcher-0-0", launcher="train", workload=f"train-{attempt}",
                    replicated_job="launcher", phase=phase)


def stripped_worker(attempt: int, name: str = "", **labels: str) -> dict[str, Any]:
    """A worker pod whose nvcre labels were removed (kubectl label pod ... nvcre.nvidia.com/job-)."""
    pod = make_pod(name or f"train-{attempt}-worker-0-0", workload=f"train-{attempt}", replicated_job="worker")
    pod["metadata"]["labels"].update(labels)
    return pod


def fed_back(d: Decision, reader: FakeReader | None = None, **request: Any) -> Decision:
    """The same request with ``d``'s status as the parent's status (what Metacontroller writes)."""
    return run(reader, **{**request, "status": status(d)}, now=LATER)


# ---- the launcher is found by its own label ----------------------------------------------------------

def test_finalize_waits_for_a_launcher_of_an_earlier_attempt_than_the_status_names() -> None:
    """status.attempt is 1 (written by hand, restored, computed from a stale copy) while attempt 0's
    launcher runs: the launcher is read by its label, not by the workload name of status.attempt."""
    d = run(FakeReader([launcher_pod(0)]), finalizing=True, spec=MPI, status={"phase": "Running", "attempt": 1})
    assert d.response["finalized"] is False
    assert condition(d, "Drained")["reason"] == "LauncherActive"
    assert status(d)["message"] == "waiting for launcher pod train-0-launcher-0-0 to finish"


def test_removing_spec_launcher_does_not_turn_the_launcher_check_off() -> None:
    d = run(FakeReader([launcher_pod(0)]), finalizing=True, spec=job_spec(), status={"phase": "Running"})
    assert d.response["finalized"] is False and condition(d, "Drained")["reason"] == "LauncherActive"


def test_the_next_attempt_waits_for_a_launcher_of_any_attempt() -> None:
    d = run(FakeReader([launcher_pod(0)]), spec=MPI, status={"phase": "Restarting", "attempt": 2, "restarts": 1})
    assert (d.kind, d.response["children"], status(d)["attempt"]) == ("held", [], 2)
    resumed = run(FakeReader([launcher_pod(1)]), spec=job_spec(), status={"phase": "Suspended", "attempt": 3})
    assert (resumed.kind, resumed.response["children"]) == ("held", [])


# ---- workers are found by the labels JobSet writes too --------------------------------------------

def test_finalize_waits_for_a_worker_whose_job_label_was_removed() -> None:
    d = run(FakeReader([stripped_worker(0)]), finalizing=True, status={"phase": "Running"})
    assert d.response["finalized"] is False
    assert status(d)["message"] == "waiting for 1 active pod: train-0-worker-0-0"
    assert (condition(d, "Drained")["reason"], status(d)["activePods"]) == ("PodsActive", 1)


def test_a_worker_whose_job_label_names_another_job_still_holds() -> None:
    relabelled = stripped_worker(1, **{JOB_LABEL: "other"})
    d = run(FakeReader([relabelled]), status={"phase": "Restarting", "attempt": 1, "restarts": 1},
            spec=job_spec(max_restarts=2))
    assert (d.kind, d.response["children"]) == ("held", [])
    assert "train-1-worker-0-0" in status(d)["message"]


def test_the_jobset_label_read_reaches_past_every_attempt_the_evidence_names() -> None:
    """One past the highest attempt in the status, the children and the active pods found by the
    nvcre labels (their attempt and jobset-name labels)."""
    reader = FakeReader([])
    run(reader, finalizing=True, status={"phase": "Running", "attempt": 2},
        jobsets=[jobset_child("train", 4, deleting="2025-12-31T23:00:00Z")])
    assert ("active_attempt_pods", "live", ("default", "train", 5)) in reader.calls
    worker = make_pod("train-6-worker-0-0", job="train", workload="train-6")
    worker["metadata"]["labels"][ATTEMPT_LABEL] = "6"
    reader = FakeReader([worker], live_pods=[worker, stripped_worker(7)])
    d = run(reader, finalizing=True, status={"phase": "Running", "attempt": 2})
    assert ("active_attempt_pods", "live", ("default", "train", 7)) in reader.calls
    assert status(d)["message"] == "waiting for 2 active pods: train-6-worker-0-0, train-7-worker-0-0"
    reader = FakeReader([], live_pods=[launcher_pod(6), stripped_worker(7)])
    d = run(reader, finalizing=True, status={"phase": "Running", "attempt": 2})
    assert status(d)["message"] == ("waiting for 1 active pod: train-7-worker-0-0 and "
                                    "launcher pod train-6-launcher-0-0 to finish")


def test_a_launcher_that_lost_its_labels_still_holds_as_the_launcher() -> None:
    """A pod found only by JobSet's label, in the replicated job ``spec.launcher`` names, is a
    launcher: the barrier waits on it and it is not counted in activePods."""
    stripped = stripped_worker(0, name="train-0-launcher-0-0")
    stripped["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] = "launcher"
    d = run(FakeReader([], live_pods=[stripped]), finalizing=True, spec=job_spec(launcher="launcher"))
    assert d.response["finalized"] is False
    assert status(d)["message"] == "waiting for launcher pod train-0-launcher-0-0 to finish"
    assert status(d)["activePods"] == 0


def test_a_pod_found_twice_counts_once() -> None:
    worker = make_pod("train-0-worker-0-0", job="train", workload="train-0", replicated_job="worker")
    d = run(FakeReader([worker]), finalizing=True)
    assert status(d)["message"] == "waiting for 1 active pod: train-0-worker-0-0" and status(d)["activePods"] == 1


# ---- status is a claim, not a fact -----------------------------------------------------------------

STARTED = [{"attempt": 0, "jobSet": "train-0", "created": "2025-12-31T00:00:00Z"}]
"""A history that says attempt 0 ran: a Suspended status with it over a running JobSet disagrees."""


@pytest.mark.parametrize(("prior", "reason"), [
    ({"phase": "Running", "attempt": 1}, "WorkloadNotCurrent"),
    ({"phase": "Pending", "attempt": 3, "restarts": 1}, "WorkloadNotCurrent"),
    ({"phase": "Suspended", "attempt": 0, "attempts": STARTED}, "PhaseDisagrees"),
    ({"phase": "Suspending", "attempt": 0, "startTime": "2025-12-31T00:00:00Z"}, "PhaseDisagrees"),
    ({"phase": "Restarting", "attempt": 0, "restarts": 1}, "PhaseDisagrees"),
    ({"phase": "Restarting", "attempt": 0, "restarts": 0}, "PhaseDisagrees"),
    ({"phase": "Running", "attempt": 0, "restarts": 4}, "RestartsDisagree"),
    ({"phase": "Succeeded", "attempt": 1}, "WorkloadNotCurrent"),
])
def test_a_status_that_disagrees_never_drops_the_running_jobset(prior: dict[str, Any], reason: str) -> None:
    request = {"jobsets": [jobset_child("train", 0)], "status": prior, "spec": job_spec(max_restarts=5)}
    pods = [make_pod("train-0-worker-0-0", job="train")]
    d = run(FakeReader(pods), **request)
    assert names(d) == ["train-0"] and d.kind == "held"
    assert d.response["children"][0]["spec"] == jobset_child("train", 0)["spec"]  # as observed, unchanged
    mismatch = condition(d, "StatusMismatch")
    assert (mismatch["status"], mismatch["reason"]) == ("True", reason)
    assert (status(d)["attempt"], status(d)["restarts"]) == (prior["attempt"], prior.get("restarts", 0))
    assert d.response["resyncAfterSeconds"] > 0
    assert status(fed_back(d, FakeReader(pods), **request)) == status(d)  # a fixed point: it holds, it does not drift


@pytest.mark.parametrize("phase", ["Suspended", "Suspending"])
def test_a_lost_first_resume_write_runs_the_jobset_it_created(phase: str) -> None:
    """A Job created suspended and resumed: its first JobSet is attempt 0 (``current.never_started``).
    Metacontroller creates children before it writes the status, so a lost write leaves that JobSet
    under a status that never started one: the JobSet is the current attempt's, run, not held as
    ``PhaseDisagrees``."""
    request = {"jobsets": [jobset_child("train", 0)], "status": {"phase": phase, "attempt": 0},
               "spec": job_spec(max_restarts=5)}
    pods = [make_pod("train-0-worker-0-0", job="train")]
    d = run(FakeReader(pods), **request)
    assert names(d) == ["train-0"] and status(d)["attempt"] == 0 and status(d)["phase"] in ("Pending", "Running")
    assert condition(d, "StatusMismatch") is None
    assert status(fed_back(d, FakeReader(pods), **request)) == status(d)


def test_an_extra_child_is_not_adopted_while_the_current_one_runs() -> None:
    d = run(FakeReader([make_pod("train-0-worker-0-0", job="train")]),
            jobsets=[jobset_child("train", 0), jobset_child("train", 1)], status={"phase": "Running", "attempt": 0})
    assert names(d) == ["train-0", "train-1"] and status(d)["attempt"] == 0
    assert condition(d, "StatusMismatch")["reason"] == "SeveralWorkloads"


def test_restarts_that_no_sequence_of_steps_gives_never_open_the_gate() -> None:
    """Restarting with no restart recorded: the next attempt is not created on that claim alone."""
    d = run(FakeReader([]), status={"phase": "Restarting", "attempt": 0, "restarts": 0})
    assert (d.kind, d.response["children"]) == ("held", [])
    assert condition(d, "StatusMismatch")["reason"] == "RestartsDisagree"


def test_the_mismatch_clears_once_the_status_is_corrected() -> None:
    request = {"jobsets": [jobset_child("train", 0)]}
    held = run(FakeReader([make_pod("w", job="train")]), status={"phase": "Running", "attempt": 1}, **request)
    corrected = {**status(held), "attempt": 0}
    d = run(FakeReader([make_pod("w", job="train")]), status=corrected, now=LATER, **request)
    assert (d.kind, names(d), status(d)["phase"]) == ("kept", ["train-0"], "Running")
    cleared = condition(d, "StatusMismatch")
    assert (cleared["status"], cleared["reason"]) == ("False", "Agrees")


def test_the_legitimate_paths_are_not_mismatches() -> None:
    """A lost status write (a newer JobSet alone), a failed JobSet in Restarting, and one being
    deleted in Suspending are what the steps themselves produce."""
    adopted = run(FakeReader([]), jobsets=[jobset_child("train", 1)],
                  status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    assert condition(adopted, "StatusMismatch") is None and names(adopted) == ["train-1"]
    failed = run(FakeReader([]), jobsets=[jobset_child("train", 0, state="Failed")], spec=job_spec(max_restarts=1),
                 status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    assert condition(failed, "StatusMismatch") is None and failed.response["children"] == []
    deleting = run(FakeReader([]), jobsets=[jobset_child("train", 0, deleting="2025-12-31T23:00:00Z")],
                   status={"phase": "Suspending", "attempt": 0})
    assert condition(deleting, "StatusMismatch") is None and deleting.response["children"] == []


def test_suspend_and_deletion_still_tear_everything_down() -> None:
    jobsets = [jobset_child("train", 0), jobset_child("train", 1)]
    suspended = run(FakeReader([]), jobsets=jobsets, spec=job_spec(suspend=True), status={"phase": "Running"})
    assert suspended.response["children"] == [] and status(suspended)["phase"] == "Suspending"
    deleted = run(FakeReader([]), jobsets=jobsets, finalizing=True, status={"phase": "Running", "attempt": 1})
    assert deleted.response["children"] == [] and deleted.response["finalized"] is False


# ---- the last attempt ends the Job Failed, never parks it ----------------------------------------

@pytest.mark.parametrize("prior", [
    {"phase": "Restarting", "attempt": MAX_ATTEMPT, "restarts": 3},
    {"phase": "Suspended", "attempt": MAX_ATTEMPT, "restarts": 0},
])
def test_a_step_past_the_last_attempt_ends_the_job_failed(prior: dict[str, Any]) -> None:
    d = run(FakeReader([]), spec=job_spec(max_restarts=5), status=prior)
    assert (d.kind, status(d)["phase"], d.response["children"]) == ("terminal", "Failed", [])
    failed = condition(d, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "AttemptLimitReached")
    assert status(fed_back(d, spec=job_spec(max_restarts=5))) == status(d)


def test_a_failed_jobset_at_the_last_attempt_is_kept_and_the_job_fails() -> None:
    d = run(FakeReader([]), spec=job_spec(max_restarts=5), jobsets=[jobset_child("train", MAX_ATTEMPT, state="Failed")],
            status={"phase": "Running", "attempt": MAX_ATTEMPT, "restarts": 2})
    assert (names(d), status(d)["phase"], status(d)["restarts"]) == ([f"train-{MAX_ATTEMPT}"], "Failed", 2)
    assert condition(d, "Failed")["reason"] == "AttemptLimitReached"


# ---- the message stays bounded ---------------------------------------------------------------------

def test_the_message_stays_bounded_however_many_children_are_observed() -> None:
    many = [jobset_child("train", attempt) for attempt in range(400)]
    for request in ({"finalizing": True}, {}):
        d = run(FakeReader([]), jobsets=many, status={"phase": "Running", "attempt": 399}, **request)
        assert len(status(d)["message"]) <= MAX_MESSAGE
        assert all(len(c["message"]) <= MAX_MESSAGE for c in status(d)["conditions"])
        assert "and 395 more" in status(d)["message"]


def test_jobset_label_constant_is_what_the_fake_reads() -> None:
    assert stripped_worker(0)["metadata"]["labels"][JOBSET_NAME_LABEL] == "train-0"


def test_a_restart_suspended_before_its_attempt_began_resumes() -> None:
    """Restarting (restarts 1 at attempt 0), then suspended and resumed before attempt 1 began:
    Suspended with restarts one past the attempt is what those steps give, not a mismatch; the
    resume starts attempt 1 without counting another restart. (Found by test_e2e_stateful: the
    Job held on RestartsDisagree forever.)"""
    spec = job_spec(max_restarts=1)
    suspended = run(FakeReader([]), spec={**spec, "suspend": True},
                    status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    assert (status(suspended)["phase"], status(suspended)["restarts"]) == ("Suspended", 1)
    resumed = run(FakeReader([]), spec=spec, status=status(suspended), now=LATER)
    assert condition(resumed, "StatusMismatch") is None
    assert names(resumed) == ["train-1"]
    assert (status(resumed)["attempt"], status(resumed)["restarts"]) == (1, 1)
