"""The drain barrier waits for the batch Jobs of every attempt it checks: a JobSet that
Metacontroller deleted in the background leaves its batch/v1 Jobs to the garbage collector, and
until they are gone they can create pods. Decisions over the FakeReader's ``jobs``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.core.barrier import StaleRequest, may_create_pods
from hooks.core.decide import Decision, decide
from hooks.core.observed import parse_request
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_batch_job, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RESTARTING = {"phase": "Restarting", "attempt": 1, "restarts": 1}
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}


def run(reader: FakeReader, **request: Any) -> Decision:
    request.setdefault("spec", job_spec(max_restarts=3))
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    return decide(observed, reader, NOW)


def drained(d: Decision) -> dict[str, Any]:
    return next(c for c in d.response["status"]["conditions"] if c["type"] == "Drained")


def names(d: Decision) -> list[str]:
    return [c["metadata"]["name"] for c in d.response["children"]]


@pytest.mark.parametrize("left", [
    make_batch_job("train-1", namespace="default"),
    make_batch_job("train-0", namespace="default"),
    make_batch_job("train-1", namespace="default", job="train"),
], ids=["of-attempt-1", "of-attempt-0", "labelled"])
def test_a_restart_holds_while_a_batch_job_of_an_attempt_is_left_even_with_no_pod(left: dict[str, Any]) -> None:
    reader = FakeReader([], jobs=[left])
    d = run(reader, status=RESTARTING)
    assert names(d) == [], "no attempt 2 while a batch Job of an earlier attempt may still create a pod"
    assert d.response["status"]["phase"] == "Restarting"
    condition = drained(d)
    assert (condition["status"], condition["reason"]) == ("False", "BatchJobsPresent")
    name = left["metadata"]["name"]
    assert name in condition["message"] and name in d.response["status"]["message"]
    assert d.response.get("resyncAfterSeconds")
    # the same range as active_attempt_pods: <job>-0 up to one past the next attempt (2)
    assert ("attempt_jobs", "live", ("default", "train", 3)) in reader.calls
    assert ("active_attempt_pods", "live", ("default", "train", 3)) in reader.calls


@pytest.mark.parametrize("left", [
    make_batch_job("train-0", namespace="default", deleting="2025-12-31T23:59:00Z"),
    make_batch_job("train-1", namespace="default", finished="Failed"),
    make_batch_job("train-1", namespace="default", finished="Complete", job="train"),
], ids=["being-deleted", "failed", "complete"])
def test_a_batch_job_that_can_create_no_pod_does_not_hold(left: dict[str, Any]) -> None:
    """The Job controller creates no pod for a Job that finished or is being deleted (issue 31,
    item 7): an orphaned JobSet's finished Jobs, which nobody deletes, must not hold a teardown for ever."""
    d = run(FakeReader([], jobs=[left]), status=RESTARTING)
    assert names(d) == ["train-2"]
    assert drained(d)["reason"] == "NoActivePods"


# ---- every attempt's batch Jobs, whatever the status says (issue 31, item 1) -----------------------

@pytest.mark.parametrize("status", [
    {"phase": "Running", "attempt": 0},                 # written back by a jobs/status writer or a restore
    {},                                                 # the Job deleted by hand and created again
], ids=["status-attempt-0", "recreated"])
def test_a_batch_job_of_a_later_attempt_holds_whatever_the_status_says(status: dict[str, Any]) -> None:
    """``train-3-worker-0`` is left (a retry between pods, or the garbage collector's window) and no
    pod is active: the status names attempt 0 (or nothing), yet no JobSet is created. The batch Job
    is found by the Job's own label, which no attempt bound narrows."""
    left = make_batch_job("train-3", namespace="default", job="train")
    reader = FakeReader([], jobs=[left])
    d = run(reader, status=status)
    assert [c for c in names(d) if c.startswith("train-")] == [], "no JobSet while a later attempt's Job is left"
    condition = drained(d)
    assert (condition["status"], condition["reason"]) == ("False", "BatchJobsPresent")
    assert "train-3-worker-0" in condition["message"]
    assert d.response.get("resyncAfterSeconds")
    gone = run(FakeReader([]), status=d.response["status"])
    assert [c for c in names(gone) if c.startswith("train-")], "created once the batch Job is gone"


def test_a_restart_written_back_to_attempt_0_is_refused_while_a_later_attempts_job_is_left() -> None:
    """Restarting from attempt 0 would create ``train-1`` while ``train-3-worker-0`` may still create a
    pod: the live reads show an attempt past the status', so the request is refused (409), nothing
    created, as for a parent behind the cluster."""
    left = make_batch_job("train-3", namespace="default", job="train")
    with pytest.raises(StaleRequest, match="attempt 3"):
        run(FakeReader([], jobs=[left]), status={"phase": "Restarting", "attempt": 0, "restarts": 1})


def test_the_pods_bound_grows_with_the_attempts_the_batch_jobs_name() -> None:
    """A pod of attempt 5 that lost the Job's label is still found by JobSet's label: the attempt
    bound of the pod read comes from the batch Jobs too, not from the status alone."""
    pod = make_pod("train-5-worker-0-0", workload="train-5")            # JOB_LABEL removed by hand
    job = make_batch_job("train-5", namespace="default", job="train", finished="Failed")
    reader = FakeReader([pod], jobs=[job])
    d = run(reader, status={"phase": "Running", "attempt": 0})
    assert [c for c in names(d) if c.startswith("train-")] == []
    assert drained(d)["reason"] == "PodsActive" and "train-5-worker-0-0" in drained(d)["message"]
    assert ("active_attempt_pods", "live", ("default", "train", 6)) in reader.calls


def test_another_jobs_labelled_batch_jobs_do_not_hold() -> None:
    others = [make_batch_job("gpt-3", namespace="default", job="gpt"),
              make_batch_job("train-3", namespace="team-b", job="train")]
    assert names(run(FakeReader([], jobs=others), status=RESTARTING)) == ["train-2"]


def test_the_restart_goes_on_once_the_batch_jobs_are_gone() -> None:
    held = run(FakeReader([], jobs=[make_batch_job("train-1", namespace="default")]), status=RESTARTING)
    gone = run(FakeReader([]), status=held.response["status"])
    assert names(gone) == ["train-2"]
    assert gone.response["status"]["phase"] == "Pending"


def test_batch_jobs_of_another_job_or_namespace_do_not_hold() -> None:
    others = [make_batch_job("gpt-1", namespace="default"), make_batch_job("train-1", namespace="team-b"),
              make_batch_job("train-10", namespace="default")]  # attempt 10: past the attempts checked
    assert names(run(FakeReader([], jobs=others), status=RESTARTING)) == ["train-2"]


def test_a_failed_batch_job_read_holds_as_a_failed_pod_read_does() -> None:
    reader = FakeReader([], jobs=[], fail=["attempt_jobs"])
    d = run(reader, status=RESTARTING)
    assert names(d) == []
    condition = drained(d)
    assert (condition["status"], condition["reason"]) == ("Unknown", "ReadFailed")
    assert d.response["status"]["phase"] == "Restarting"


def test_pods_and_batch_jobs_are_both_named_and_the_pods_reason_comes_first() -> None:
    pod = make_pod("train-1-worker-0-0", job="train", workload="train-1")
    d = run(FakeReader([pod], jobs=[make_batch_job("train-1", namespace="default")]), status=RESTARTING)
    condition = drained(d)
    assert condition["reason"] == "PodsActive"
    assert "train-1-worker-0-0" in condition["message"] and "batch Job train-1-worker-0" in condition["message"]


def test_finalize_keeps_the_finalizer_while_a_batch_job_is_left() -> None:
    left = make_batch_job("train-0", namespace="default")
    d = run(FakeReader([], jobs=[left]), finalizing=True, deleting="2025-12-31T23:58:00Z",
            status={"phase": "Running", "attempt": 0})
    assert d.response.get("finalized") is not True
    assert drained(d)["reason"] == "BatchJobsPresent"
    assert run(FakeReader([]), finalizing=True, deleting="2025-12-31T23:58:00Z",
               status={"phase": "Running", "attempt": 0}).response.get("finalized") is True


def test_an_orphan_delete_finalizes_once_the_orphaned_jobsets_jobs_finished() -> None:
    """``kubectl delete --cascade=orphan``: the garbage collector takes the JobSet's owner reference
    off (so it is no child of the request) and nobody deletes its batch Jobs; once its pods ended,
    its Jobs finished: the Job is finalized (issue 31, item 7). Its still running Job holds."""
    request = {"finalizing": True, "deleting": "2025-12-31T23:58:00Z", "status": {"phase": "Running", "attempt": 0}}
    done = [make_batch_job("train-0", name=f"train-0-worker-{i}", job="train", finished="Complete") for i in (0, 1)]
    assert run(FakeReader([], jobs=done), **request).response.get("finalized") is True
    running = [*done[:1], make_batch_job("train-0", name="train-0-worker-1", job="train")]
    held = run(FakeReader([], jobs=running), **request)
    assert held.response.get("finalized") is not True
    assert drained(held)["reason"] == "BatchJobsPresent" and "train-0-worker-1" in drained(held)["message"]


def test_many_batch_jobs_are_listed_bounded() -> None:
    jobs = [make_batch_job("train-1", name=f"train-1-worker-{i}", namespace="default") for i in range(40)]
    message = drained(run(FakeReader([], jobs=jobs), status=RESTARTING))["message"]
    assert "and 35 more" in message and len(message) <= 1024


# ---- the quota of a terminal queue-managed Job ------------------------------------------------------

def test_a_finished_jobs_quota_waits_only_for_batch_jobs_that_may_still_create_pods() -> None:
    wl = [workload_child("train", state="admitted")]
    completed = [jobset_child("train", 0, state="Completed")]
    request = {"labels": QUEUE, "workloads": wl, "jobsets": completed, "status": {"phase": "Succeeded"}}
    finished = make_batch_job("train-0", name="train-0-worker-0", namespace="default", finished="Complete")
    deleting = make_batch_job("train-0", name="train-0-worker-1", namespace="default", deleting="2026-01-01T00:00:00Z")
    released = run(FakeReader([], jobs=[finished, deleting]), **request)
    assert [c["kind"] for c in released.response["children"]] == ["JobSet"], "the kept JobSet's finished Jobs " \
        "and one being deleted create no pod: the quota is released"
    active = make_batch_job("train-0", name="train-0-worker-2", namespace="default")
    kept = run(FakeReader([], jobs=[finished, active]), **request)
    assert [c["kind"] for c in kept.response["children"]] == ["JobSet", "Workload"]
    assert "train-0-worker-2" in kept.response["status"]["message"]
    failed = run(FakeReader([], fail=["attempt_jobs"]), **request)
    assert [c["kind"] for c in failed.response["children"]] == ["JobSet", "Workload"]


def test_may_create_pods() -> None:
    assert may_create_pods(make_batch_job("a-0"))
    assert not may_create_pods(make_batch_job("a-0", finished="Complete"))
    assert not may_create_pods(make_batch_job("a-0", finished="FailureTarget"))
    assert not may_create_pods(make_batch_job("a-0", deleting="2026-01-01T00:00:00Z"))
    job = make_batch_job("a-0")
    job["status"] = {"conditions": [{"type": "Failed", "status": "False"}, "junk"]}
    assert may_create_pods(job)


@pytest.mark.parametrize(("spec", "status", "holds_as", "ends_as"), [
    ({**job_spec(suspend=True)}, {"phase": "Suspending", "attempt": 0}, "Suspending", "Suspended"),
    ({**job_spec(), "activeDeadlineSeconds": 60},
     {"phase": "Terminating", "attempt": 0, "startTime": "2025-12-31T00:00:00Z"}, "Terminating", "Failed"),
], ids=["suspend", "deadline"])
def test_suspend_and_a_deadline_teardown_wait_for_the_batch_jobs_too(spec: dict[str, Any], status: dict[str, Any],
                                                                      holds_as: str, ends_as: str) -> None:
    """No JobSet and no pod left, only a batch Job of attempt 0: the teardown holds until it is gone."""
    held = run(FakeReader([], jobs=[make_batch_job("train-0")]), spec=spec, status=status)
    assert (held.response["status"]["phase"], drained(held)["reason"]) == (holds_as, "BatchJobsPresent")
    assert run(FakeReader([]), spec=spec, status=status).response["status"]["phase"] == ends_as
