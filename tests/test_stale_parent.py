"""Requests from Metacontroller's informer cache, behind the cluster (issue 21, fact 1): the parent's
status does not yet hold Metacontroller's own last write. Built as Metacontroller sends them
(tests/fake_reader.job_request) with the pods and batch Jobs the cluster tier's stale mode showed.

Found by the cluster tier with the Metacontroller stand-in's stale caches on: after a resume, a
request with the parent as it was before (``Suspended``, attempt 0, no JobSet yet in the children
cache) came while attempt 1's pods ran; the hooks answered ``Suspended``, attempt 0, and
Metacontroller wrote that over the live status (attempt 1): the attempt went back."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from hooks.core.barrier import StaleRequest
from hooks.core.decide import decide
from hooks.core.events import transition_events
from hooks.core.observed import parse_request
from hooks.server.config import Settings
from hooks.server.handler import handle
from podread.constants import ATTEMPT_LABEL
from tests.fake_reader import FakeReader, job_request, job_spec, make_batch_job, make_pod

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


def test_a_drain_answered_again_from_a_stale_parent_makes_one_event() -> None:
    """Found with the stand-in's parent cache 2 s behind: the restart row answered three times from
    the same cached parent (Running, no Drained), each stamping Drained=False with its own time;
    each answer is a DrainWaiting transition, and keyed by that time they made three Events."""
    request = job_request(keying="v2", spec=job_spec(max_restarts=1), status={"phase": "Running", "attempt": 0})
    observed = parse_request(request, "sync")
    keys = set()
    for second in (9, 10, 11):
        status = {"phase": "Restarting", "attempt": 0, "restarts": 1, "workload": "train-0",
                  "conditions": [{"type": "Drained", "status": "False", "reason": "WorkloadPresent",
                                  "message": "waiting for JobSet train-0 to be deleted",
                                  "lastTransitionTime": f"2026-01-01T00:00:{second:02d}Z"}]}
        keys |= {e.key for e in transition_events(observed.status, status) if e.reason == "DrainWaiting"}
    assert keys == {"DrainWaiting/Restarting/0"}
