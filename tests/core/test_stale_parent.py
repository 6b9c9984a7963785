"""Requests from Metacontroller's informer cache, behind the cluster (issue 21, fact 1): the parent's
status does not yet hold Metacontroller's own last write. Built as Metacontroller sends them
(tests.support.requests.job_request) with the pods and batch Jobs the cluster tier's stale mode showed.

Found by the cluster tier with the Metacontroller stand-in's stale caches on: after a resume, a
request with the parent as it was before (``Suspended``, attempt 0, no JobSet yet in the children
cache) came while attempt 1's pods ran; the hooks answered ``Suspended``, attempt 0, and
Metacontroller wrote that over the live status (attempt 1): the attempt went back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from hooks.core.barrier import StaleRequest
from hooks.core.decide import decide
from hooks.core.observed import parse_request
from hooks.server.config import Settings
from hooks.server.freshness import FixedParentVersions
from hooks.server.handler import handle
from podread.constants import ATTEMPT_LABEL
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_batch_job, make_pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pods_of(job: str, attempt: int, count: int = 2) -> list[dict]:
    pods = [make_pod(f"{job}-{attempt}-worker-0-{i}", job=job, workload=f"{job}-{attempt}") for i in range(count)]
    for pod in pods:
        pod["metadata"]["labels"][ATTEMPT_LABEL] = str(attempt)
    return pods


def stale_resume() -> dict:
    """The parent as the cache held it just before the resume's status write landed."""
    return job_request(name="pause", keying="v2", spec=job_spec(suspend=False),
                       status={"phase": "Suspended", "attempt": 0, "restarts": 0})


def test_a_stale_resume_while_the_next_attempt_runs_is_refused_not_answered() -> None:
    reader = FakeReader(pods_of("pause", 1), jobs=[make_batch_job("pause-1")])
    with pytest.raises(StaleRequest, match="attempt 1"):
        decide(parse_request(stale_resume(), "sync"), reader, NOW)
    result = handle(orjson.dumps(stale_resume()), "sync", reader=reader, clock=lambda: NOW, settings=Settings())
    assert result.status_code == 409 and "behind the cluster" in result.body["error"]


def test_a_stale_restart_whose_next_attempt_has_only_batch_jobs_yet_is_refused() -> None:
    request = job_request(keying="v2", spec=job_spec(max_restarts=2),
                          status={"phase": "Restarting", "attempt": 0, "restarts": 1})
    reader = FakeReader([], jobs=[make_batch_job("train-1")])
    with pytest.raises(StaleRequest):
        decide(parse_request(request, "sync"), reader, NOW)


def test_the_old_attempts_pods_still_hold_with_a_200() -> None:
    """Not stale: the pods waited on are the drained attempt's own; the answer holds as before."""
    d = decide(parse_request(stale_resume(), "sync"), FakeReader(pods_of("pause", 0)), NOW)
    assert d.kind == "held" and d.response["status"]["attempt"] == 0 and d.response["children"] == []


def test_a_wait_begun_from_one_parent_version_is_stamped_the_same_whenever_answered() -> None:
    """The restart row answered from one cached parent version at 00:00:09, :10 and :11 stamped
    three Drained times, and the cache replayed the writes alternately: 13 status writes in 5 s.
    Stamped from the request's own evidence (when the API server wrote that version, the failed
    JobSet's condition), every answer of that version writes the same status."""
    failed = jobset_child("train", 0, state="Failed")
    failed["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:05Z"
    request = job_request(keying="v2", spec=job_spec(max_restarts=1), jobsets=[failed],
                          status={"phase": "Running", "attempt": 0, "workload": "train-0",
                                  "startTime": "2026-01-01T00:00:01Z"})
    request["parent"]["metadata"]["managedFields"] = [
        {"manager": "metacontroller", "operation": "Update", "subresource": "status", "time": "2026-01-01T00:00:02Z"},
        {"manager": "kubectl", "operation": "Update", "time": "not a time"}]
    answers = []
    for second in (9, 10, 11):
        now = datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC)
        answers.append(decide(parse_request(request, "sync"), FakeReader(pods_of("train", 0)), now).response)
    assert answers[0] == answers[1] == answers[2]
    drained = next(c for c in answers[0]["status"]["conditions"] if c["type"] == "Drained")
    assert (drained["status"], drained["lastTransitionTime"]) == ("False", "2026-01-01T00:00:05Z")


def test_a_request_without_server_times_stamps_now_as_before() -> None:
    failed = jobset_child("train", 0, state="Failed")
    request = job_request(keying="v2", spec=job_spec(max_restarts=1), jobsets=[failed],
                          status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    answer = decide(parse_request(request, "sync"), FakeReader(pods_of("train", 0)), NOW).response
    drained = next(c for c in answer["status"]["conditions"] if c["type"] == "Drained")
    assert drained["lastTransitionTime"] == "2026-01-01T00:00:00Z"


WRITTEN, LATER = "2026-01-01T00:00:04Z", "2026-01-01T00:00:05Z"


def created(objs: list[dict], at: str = LATER) -> list[dict]:
    for obj in objs:
        obj["metadata"]["creationTimestamp"] = at
    return objs


def stale_suspend(written: str = WRITTEN, **extra: object) -> dict:
    """The parent as the cache held it before the resume (the API server wrote it at ``written``):
    suspended, attempt 0; the resume has since started attempt 1 (the live status says 1)."""
    request = job_request(name="nap", keying="v2", spec=job_spec(suspend=True),
                          status={"phase": "Suspended", "attempt": 0, "restarts": 0}, **extra)
    request["parent"]["metadata"]["managedFields"] = [
        {"manager": "metacontroller", "operation": "Update", "subresource": "status", "time": written}]
    return request


def test_a_stale_suspend_after_the_resume_started_the_next_attempt_is_refused() -> None:
    """The cluster tier's ``nap`` (parent cache 2 s behind): the suspend row answered Suspended,
    attempt 0, no children, over the live attempt 1 (``status.attempt went from 1 to 0``)."""
    with pytest.raises(StaleRequest, match="attempt 1"):  # the children cache already has the JobSet
        decide(parse_request(stale_suspend(jobsets=created([jobset_child("nap", 1)])), "sync"), FakeReader([]), NOW)
    with pytest.raises(StaleRequest, match="attempt 1"):  # only its pods say so (same second: stale too)
        decide(parse_request(stale_suspend(), "sync"), FakeReader(created(pods_of("nap", 1), WRITTEN)), NOW)
    with pytest.raises(StaleRequest, match="attempt 1"):  # only its batch Jobs say so
        decide(parse_request(stale_suspend(), "sync"), FakeReader([], jobs=created([make_batch_job("nap-1")])), NOW)


def test_a_suspend_written_after_the_next_attempt_began_tears_it_down() -> None:
    """The status write of the resume was lost, then the Job was suspended again: the parent is
    newer than attempt 1's JobSet, so it is answered (refusing it would never end): no children."""
    request = stale_suspend(written="2026-01-01T00:00:09Z", jobsets=created([jobset_child("nap", 1)]))
    d = decide(parse_request(request, "sync"), FakeReader(created(pods_of("nap", 1))), NOW)
    assert d.response["status"]["phase"] == "Suspending" and d.response["children"] == []


def test_a_stale_status_from_before_the_resume_is_refused_in_every_row() -> None:
    """The tier's ``nap`` again: a cached parent with the live spec but the status before the
    resume (Pending, attempt 0) wrote attempt 0 over 1 from row 11 (attempt 1's pods live, its
    JobSet not yet in the children cache) and from row 3 (the JobSet in the children)."""
    request = stale_suspend()
    request["parent"]["spec"]["suspend"] = False
    request["parent"]["status"] = {"phase": "Pending", "attempt": 0, "restarts": 0}
    with pytest.raises(StaleRequest, match="attempt 1"):
        decide(parse_request(request, "sync"), FakeReader(created(pods_of("nap", 1))), NOW)
    request["children"] = stale_suspend(jobsets=created([jobset_child("nap", 1)]))["children"]
    with pytest.raises(StaleRequest, match="attempt 1"):
        decide(parse_request(request, "sync"), FakeReader(created(pods_of("nap", 1))), NOW)


def test_a_lost_status_write_is_answered_once_no_cache_could_lag_that_long() -> None:
    """The same parent 30 s after attempt 1 began is no cached one: its status write was lost; the
    hooks answer it as before (here row 3's hold), or it would be refused for ever."""
    request = stale_suspend(jobsets=created([jobset_child("nap", 1)], "2025-12-31T23:59:00Z"))
    request["parent"]["spec"]["suspend"] = False
    request["parent"]["status"] = {"phase": "Pending", "attempt": 0, "restarts": 0}
    request["parent"]["metadata"]["managedFields"][0]["time"] = "2025-12-31T23:58:00Z"
    d = decide(parse_request(request, "sync"), FakeReader(pods_of("nap", 1)), NOW)
    assert "nap-1" in [c["metadata"]["name"] for c in d.response["children"]], "the newer JobSet kept"


def test_a_suspend_of_the_current_attempt_still_drains_it() -> None:
    request = job_request(name="nap", keying="v2", spec=job_spec(suspend=True), jobsets=[jobset_child("nap", 0)],
                          status={"phase": "Running", "attempt": 0, "restarts": 0})
    d = decide(parse_request(request, "sync"), FakeReader(pods_of("nap", 0)), NOW)
    assert d.response["status"]["phase"] == "Suspending" and d.response["children"] == []


def test_a_drain_that_passes_is_timed_the_same_whenever_answered() -> None:
    """``drainSeconds`` ran to ``now``: one cached parent version answered a second apart wrote 0,
    2 and 3 (the tier's ``nap``: a hot loop). The pass writes none; the version that carries the
    pass is timed by the API server's write of it (issue 35): every answer to either agrees."""
    request = job_request(name="nap", keying="v2", spec=job_spec(suspend=True), status={
        "phase": "Suspending", "attempt": 0, "restarts": 0,
        "attempts": [{"attempt": 0, "jobSet": "nap-0", "created": "2026-01-01T00:00:01Z",
                      "ended": "2026-01-01T00:00:02Z", "outcome": "Suspended"}],
        "conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:02Z"}]})
    request["parent"]["metadata"]["managedFields"] = [
        {"manager": "metacontroller", "operation": "Update", "subresource": "status", "time": WRITTEN}]
    answers = [decide(parse_request(request, "sync"), FakeReader([]), datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC))
               .response["status"] for s in (6, 8, 9)]
    assert answers[0] == answers[1] == answers[2]
    assert "drainSeconds" not in answers[0]["attempts"][0] and answers[0]["phase"] == "Suspended"
    request["parent"]["status"] = answers[0]
    request["parent"]["metadata"]["managedFields"][0]["time"] = "2026-01-01T00:00:07Z"  # the pass, as stored
    timed = [decide(parse_request(request, "sync"), FakeReader([]), datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC))
             .response["status"] for s in (8, 30, 59)]
    assert timed[0] == timed[1] == timed[2]
    assert timed[0]["attempts"][0]["drainSeconds"] == 5, "from 00:00:02 (ended) to 00:00:07 (the pass stored)"
    request["parent"]["status"] = timed[0]
    request["parent"]["metadata"]["managedFields"][0]["time"] = "2026-01-01T00:00:09Z"
    assert decide(parse_request(request, "sync"), FakeReader([]), NOW + timedelta(hours=1)).response["status"] \
        == timed[0], "written once: a fixed point"


def created_at(objs: list[dict], when: str) -> list[dict]:
    for obj in objs:
        obj["metadata"]["creationTimestamp"] = when
    return objs


def running_without_its_jobset(status: dict) -> dict:
    """The children cache has not seen JobSet train-0 yet; the parent has (its status names it)."""
    request = job_request(keying="v2", spec=job_spec(workers=2), status=status)
    request["parent"]["metadata"]["managedFields"] = [{"manager": "metacontroller", "operation": "Update",
                                                       "subresource": "status", "time": "2026-01-01T00:00:00Z"}]
    return request


@pytest.mark.parametrize("status", [{}, {"phase": "Running", "attempt": 0, "restarts": 0, "workload": "train-0"}],
                         ids=["no-status-yet", "running"])
def test_children_behind_the_jobset_they_run_are_refused_not_answered(status: dict) -> None:
    """Found on the tier (the rotation test): pods of train-0 ran while the children cache lagged;
    the hooks held "before creating JobSet train-0" with a Drained condition the next call took
    back, status write after status write. Now a 409: Metacontroller asks again."""
    pods = created_at(pods_of("train", 0), "2025-12-31T23:59:58Z")
    with pytest.raises(StaleRequest, match="JobSet train-0 is not among its children"):
        decide(parse_request(running_without_its_jobset(status), "sync"), FakeReader(pods), NOW)


def test_a_jobset_gone_for_real_is_held_on_not_refused() -> None:
    """Its pods are being deleted (the garbage collector after a delete of the JobSet): the hooks
    hold before creating it again, with a 200, as before."""
    pods = created_at(pods_of("train", 0), "2025-12-31T23:59:58Z")
    for pod in pods:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    d = decide(parse_request(running_without_its_jobset({"phase": "Running", "attempt": 0, "restarts": 0,
                                                         "workload": "train-0"}), "sync"), FakeReader(pods), NOW)
    assert d.kind == "held" and d.response["children"] == []
    assert "before creating JobSet train-0" in d.response["status"]["message"]


def test_orphaned_pods_past_the_grace_are_held_on_not_refused_forever() -> None:
    """Pods of train-0 left running without their JobSet (deleted with --cascade=orphan) long ago:
    no cache lags that far; the hooks hold (never create train-0 again while they run)."""
    pods = created_at(pods_of("train", 0), "2025-12-31T23:00:00Z")
    d = decide(parse_request(running_without_its_jobset({}), "sync"), FakeReader(pods), NOW)
    assert d.kind == "held" and d.response["children"] == []


def live_after_resume(children: list[dict]) -> dict:
    """The Job as the API server holds it once the resume's status write landed: attempt 1 runs."""
    request = job_request(name="pause", keying="v2", spec=job_spec(suspend=False), jobsets=children,
                          status={"phase": "Running", "attempt": 1, "restarts": 0, "workload": "pause-1"})
    request["parent"]["metadata"]["resourceVersion"] = "43"
    return request


def test_a_stale_resume_is_decided_on_the_live_job_when_the_children_have_caught_up() -> None:
    """Issue 36 item 1: the core refuses the stale parent (attempt 1 runs, the request says
    Suspended at 0); the handler reads the live Job and decides on it with the request's children.
    With attempt 1's JobSet among them, that is an answer, not a 409."""
    children = [jobset_child("pause", 1)]
    stale = job_request(name="pause", keying="v2", spec=job_spec(suspend=False), jobsets=children,
                        status={"phase": "Suspended", "attempt": 0, "restarts": 0})
    live = live_after_resume(children)
    reader = FakeReader(pods_of("pause", 1), jobs=[make_batch_job("pause-1")])
    parents = FixedParentVersions(jobs={("default", "pause"): live["parent"]})
    result = handle(orjson.dumps(stale), "sync", reader=reader, clock=lambda: NOW, settings=Settings(),
                    parents=parents)
    assert result.status_code == 200, result.body
    assert result.body == decide(parse_request(live, "sync"), reader, NOW).response
    assert result.body["status"]["attempt"] == 1


def test_a_stale_resume_whose_children_lag_too_is_still_refused() -> None:
    """The live parent does not cure children that lag: the decision on it refuses them
    (``children-behind``), and the 409 says why."""
    pods = pods_of("pause", 1)
    for pod in pods:  # created a moment ago: Metacontroller's children cache may not have its JobSet yet
        pod["metadata"]["creationTimestamp"] = "2025-12-31T23:59:55Z"
    reader = FakeReader(pods, jobs=[])
    parents = FixedParentVersions(jobs={("default", "pause"): live_after_resume([])["parent"]})
    result = handle(orjson.dumps(stale_resume()), "sync", reader=reader, clock=lambda: NOW, settings=Settings(),
                    parents=parents)
    assert (result.status_code, result.refusal) == (409, "children-behind"), result.body


def test_a_core_refusal_of_a_current_parent_stands() -> None:
    """The request's Job is the live version: the core's refusal is the answer (``attempt-ahead``),
    and the whole Job is not read."""
    reader = FakeReader(pods_of("pause", 1), jobs=[make_batch_job("pause-1")])
    parents = FixedParentVersions({("default", "pause"): "42"})
    result = handle(orjson.dumps(stale_resume()), "sync", reader=reader, clock=lambda: NOW, settings=Settings(),
                    parents=parents)
    assert (result.status_code, result.refusal, parents.reads) == (409, "attempt-ahead", 1)
