"""Every time of the status, however the API server let it be spelled (issue 31): never a 400 that
stops every sync, suspend and finalize. A readable one counts as its instant; one the API server
admits but that names no instant (``hooks.core.apitime.Unreadable``) is, where a policy counts from
it, a claim without evidence (held, ``StatusMismatch`` naming the field), and elsewhere kept as it
came; a finalizing Job that drained is finalized whatever its status' times say. Only a spelling
the API server refuses (no real Job carries one) is still a 400.

Before: ``2025-06-01t00:00:00z`` (RFC 3339 allows lower case) in ``startTime``, ``completionTime``
or ``attempts[].created`` was a 400 on every call, so a deleted Job hung on its finalizer.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hooks.core.observed import InvalidRequest, parse_request
from tests.core.test_claims import assert_held, body, child, running, workers
from tests.core.test_decide import condition, status
from tests.core.test_decide_policies import run
from tests.support import FakeReader, job_spec
from tests.support.timespellings import ADMITTED, READABLE, REFUSED, UNREADABLE

HISTORY_TIMES = ("created", "started", "ended", "failedPodDeletionStarted", "failedPodGracePeriodEnds")
DELETED = "2026-01-01T00:00:00Z"


def deadline_job(start: str) -> dict[str, Any]:
    return body(spec={**job_spec(), "activeDeadlineSeconds": 3600}, status=running(startTime=start),
                jobsets=[child(0)])


def finished_job(completion: str) -> dict[str, Any]:
    done = child(0, state="Completed")
    done["status"]["conditions"][0]["lastTransitionTime"] = "2025-12-31T23:31:00Z"
    return body(spec={**job_spec(), "ttlSecondsAfterFinished": 3600},
                status={**running(phase="Succeeded", active=0), "completionTime": completion}, jobsets=[done])


def restarted_job(entry_times: dict[str, str]) -> dict[str, Any]:
    """Attempt 1 runs; attempt 0's entry (a failure, drained) carries ``entry_times``."""
    ended = {"attempt": 0, "jobSet": "train-0", "outcome": "Failed", "cause": "failed", "drainSeconds": 3,
             "drainStuck": False, **entry_times}
    current = {"attempt": 1, "jobSet": "train-1", "created": "2025-12-31T23:40:00Z"}
    return body(spec=job_spec(max_restarts=1),
                status=running(attempt=1, restarts=1, attempts=[ended, current],
                               restartsByCause={"failed": 1}),
                jobsets=[child(1, created="2025-12-31T23:40:00Z")])


# ---- startTime: a claim activeDeadlineSeconds counts from -------------------------------------------

@pytest.mark.parametrize("start", READABLE.values(), ids=list(READABLE))
def test_a_readable_start_time_counts_as_its_instant(start: str) -> None:
    d = run(deadline_job(start), FakeReader(workers(0)))
    assert condition(d, "StatusMismatch") is None and d.kind == "kept", status(d)["message"]
    assert status(d)["startTime"] == start, "recorded once, kept as it came"
    assert 3600 - 30 * 60 - 2 <= d.response["resyncAfterSeconds"] <= 3600 - 29 * 60 + 60, \
        "the deadline is counted from it (31 minutes in, about 29 left)"


@pytest.mark.parametrize("start", UNREADABLE.values(), ids=list(UNREADABLE))
def test_an_unreadable_start_time_is_held_naming_it(start: str) -> None:
    d = run(deadline_job(start), FakeReader(workers(0)))
    assert_held(d, "StartTimeDisagrees", "train-0", says=f"status.startTime {start[:40]!r} is not a time")
    assert status(d)["startTime"] == start


# ---- completionTime: a claim ttlSecondsAfterFinished counts from ------------------------------------

@pytest.mark.parametrize("completion", READABLE.values(), ids=list(READABLE))
def test_a_readable_completion_time_counts_as_its_instant(completion: str) -> None:
    d = run(finished_job(completion), FakeReader())
    assert condition(d, "StatusMismatch") is None and status(d)["phase"] == "Succeeded"
    assert status(d)["completionTime"] == completion and d.actions == ()
    assert 3600 - 30 * 60 - 2 <= d.response["resyncAfterSeconds"] <= 3600 - 29 * 60 + 60, "woken at the TTL"


@pytest.mark.parametrize("completion", UNREADABLE.values(), ids=list(UNREADABLE))
def test_an_unreadable_completion_time_is_held_and_deletes_nothing(completion: str) -> None:
    d = run(finished_job(completion), FakeReader())
    assert_held(d, "CompletionTimeDisagrees", "train-0", says=f"status.completionTime {completion[:40]!r} is not")


# ---- informative times: kept as they came -----------------------------------------------------------

@pytest.mark.parametrize("key", HISTORY_TIMES)
@pytest.mark.parametrize("text", ADMITTED.values(), ids=list(ADMITTED))
def test_an_attempt_time_of_any_admitted_spelling_is_kept_as_it_came(key: str, text: str) -> None:
    request = restarted_job({key: text})
    d = run(request, FakeReader(workers(1)))
    assert condition(d, "StatusMismatch") is None and d.kind == "kept", status(d)["message"]
    (entry, _) = status(d)["attempts"]
    assert entry[key] == text


@pytest.mark.parametrize("text", ADMITTED.values(), ids=list(ADMITTED))
def test_a_condition_time_of_any_admitted_spelling_is_kept_as_it_came(text: str) -> None:
    request = deadline_job("2025-12-31T23:31:00Z")
    request["parent"]["status"]["conditions"] = [{"type": "Drained", "status": "True", "reason": "NoActivePods",
                                                  "message": "", "lastTransitionTime": text}]
    d = run(request, FakeReader(workers(0)))
    assert condition(d, "StatusMismatch") is None and d.kind == "kept"
    assert condition(d, "Drained") is None or condition(d, "Drained")["lastTransitionTime"] in (text, DELETED)


# ---- finalize: a drained Job is finalized, whatever its status' times say --------------------------

def finalizing(**times: Any) -> dict[str, Any]:
    """A deleted Job whose JobSets and pods are gone, its status carrying ``times``."""
    return body(finalizing=True, deleting=DELETED, spec={**job_spec(), "activeDeadlineSeconds": 60,
                                                         "ttlSecondsAfterFinished": 0},
                status={**running(phase="Failed", active=0), **times})


@pytest.mark.parametrize("text", ADMITTED.values(), ids=list(ADMITTED))
@pytest.mark.parametrize("where", ["startTime", "completionTime", "attempts", "conditions"])
def test_a_drained_job_is_finalized_whatever_its_status_times_say(where: str, text: str) -> None:
    times: dict[str, Any] = {
        "startTime": {"startTime": text},
        "completionTime": {"completionTime": text},
        "attempts": {"attempts": [{"attempt": 0, "jobSet": "train-0", **dict.fromkeys(HISTORY_TIMES, text)}]},
        "conditions": {"conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive",
                                       "lastTransitionTime": text}]},
    }[where]
    request = finalizing(**times)
    d = run(request, FakeReader([]))
    assert d.response["finalized"] is True and d.response["children"] == []
    assert d.actions == ()


# ---- what the API server refuses ----------------------------------------------------------------------

@pytest.mark.parametrize("text", REFUSED.values(), ids=list(REFUSED))
@pytest.mark.parametrize("path", [("startTime",), ("completionTime",), ("attempts", 0, "created")])
def test_a_spelling_the_api_server_refuses_is_a_400_naming_the_field(path: tuple[Any, ...], text: str) -> None:
    request = copy.deepcopy(finalizing(attempts=[{"attempt": 0}]))
    node = request["parent"]["status"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = text
    with pytest.raises(InvalidRequest) as refused:
        parse_request(request, "finalize")
    named = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path)
    assert refused.value.status == 400 and f"parent.status{named}: " in refused.value.message
    assert "is not a date-time the API server admits" in refused.value.message
