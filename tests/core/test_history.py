"""``hooks.core.history``'s pure parts: the limit, the facts of a failed attempt, the size bound."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks.core import history, historyentry
from hooks.core.observed import InvalidRequest, parse_request
from hooks.core.request import read_spec
from tests.support import job_request, jobset_child, make_pod


def failed_pod(name: str, *, exit_code: int = 1, finished: str = "", reason: str = "Error", node: str = "gpu-1",
               disrupted: str = "", disrupted_at: str = "", replicated_job: str = "worker") -> dict[str, Any]:
    pod = make_pod(name, job="train", workload="train-0", replicated_job=replicated_job, phase="Failed", node=node)
    terminated: dict[str, Any] = {"exitCode": exit_code, "reason": reason}
    if finished:
        terminated["finishedAt"] = finished
    pod["status"]["containerStatuses"] = [{"name": "sidecar", "state": {"terminated": {"exitCode": 0}}},
                                          {"name": "worker", "state": {"terminated": terminated}}]
    if disrupted:
        pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": disrupted,
                                        "lastTransitionTime": disrupted_at or "2026-01-01T00:00:00Z"}]
    return pod


@pytest.mark.parametrize(("value", "kept"), [(None, 10), (1, 1), (37, 37), (100, 100), (0, 1), (-5, 1),
                                             (2**63 - 1, 100)])
def test_the_limit_is_ten_by_default_and_within_one_to_a_hundred(value: Any, kept: int) -> None:
    spec = {} if value is None else {"attemptsHistoryLimit": value}
    assert history.limit(read_spec(spec)) == kept
    assert history.limit(read_spec({"attemptsHistoryLimit": None})) == 10, "null is unset"


@pytest.mark.parametrize("value", [True, "7", 1.5])
def test_a_limit_of_the_wrong_json_type_is_refused_when_read(value: Any) -> None:
    with pytest.raises(InvalidRequest, match=r"spec\.attemptsHistoryLimit: expected an integer"):
        read_spec({"attemptsHistoryLimit": value})


def test_the_first_failing_pod_is_the_one_that_failed_earliest_not_the_first_by_name() -> None:
    late = failed_pod("a-late", finished="2026-01-01T00:05:00Z")
    early = failed_pod("b-early", finished="2026-01-01T00:01:00Z", exit_code=137, reason="OOMKilled", node="gpu-7",
                       replicated_job="launcher")
    untimed = failed_pod("0-untimed")
    assert history.first_failing([late, untimed, early]) is early
    assert history.first_failing([untimed, failed_pod("1-untimed")]) is untimed, "without times: by name"
    assert history.first_failing([]) is None
    facts = history.failure_facts(jobset_child("train", 0, state="Failed"), [late, early, untimed])
    assert facts == {"failedPod": "b-early", "node": "gpu-7", "failedReplicatedJob": "launcher", "exitCode": 137,
                     "reason": "OOMKilled", "outcome": "Failed", "class": "user",
                     "classEvidence": "pod b-early: container worker OOMKilled"}


def test_a_disruption_says_why_and_a_preemption_is_named() -> None:
    pod = failed_pod("w-0", exit_code=143, disrupted="PreemptionByScheduler")
    facts = history.failure_facts(jobset_child("train", 0, state="Failed"), [pod])
    assert (facts["reason"], facts["exitCode"], facts["outcome"]) == ("PreemptionByScheduler", 143, "Preempted")
    taint = history.failure_facts(jobset_child("train", 0, state="Failed"),
                                  [failed_pod("w-0", disrupted="DeletionByTaintManager")])
    assert (taint["reason"], taint["outcome"]) == ("DeletionByTaintManager", "Failed")


def test_without_pods_the_jobset_tells_the_replicated_job_and_the_reason() -> None:
    jobset = jobset_child("train", 0, state="Failed")
    jobset["status"]["replicatedJobsStatus"] = [{"name": "launcher", "failed": 0}, {"name": "worker", "failed": 2}]
    assert history.failure_facts(jobset, []) == {"failedReplicatedJob": "worker", "reason": "Test", "outcome": "Failed",
                                                 "class": "unknown", "classEvidence": "no failing pod was found"}
    for shape in (7, "worker", {"name": "worker"}, [None, 3, {"name": 7, "failed": True}]):
        jobset["status"]["replicatedJobsStatus"] = shape
        assert history.failure_facts(jobset, []) == {"reason": "Test", "outcome": "Failed", "class": "unknown",
                                                     "classEvidence": "no failing pod was found"}, "any shape"


def test_a_pod_being_deleted_is_named_with_when_its_deletion_started_and_when_its_grace_period_ends() -> None:
    pod = failed_pod("w-0")
    pod["metadata"].update(deletionTimestamp="2026-01-01T00:10:30Z", deletionGracePeriodSeconds=30)
    facts = history.failure_facts(jobset_child("train", 0, state="Failed"), [pod])
    assert facts["failedPodDeletionStarted"] == "2026-01-01T00:10:00Z"
    assert facts["failedPodGracePeriodEnds"] == "2026-01-01T00:10:30Z"
    pod["metadata"].pop("deletionGracePeriodSeconds")
    assert history.deletion_times(pod) == {"failedPodGracePeriodEnds": "2026-01-01T00:10:30Z"}, \
        "without the grace period the start is not guessed"
    pod["metadata"].update(deletionTimestamp="0001-01-01T00:00:00Z", deletionGracePeriodSeconds=30)
    assert history.deletion_times(pod) == {"failedPodGracePeriodEnds": "0001-01-01T00:00:00Z"}
    pod["metadata"]["deletionTimestamp"] = "not a time"
    assert history.deletion_times(pod) == {}


def longest_entry(attempt: int) -> dict[str, Any]:
    """An entry with every key, each string as long as the CRD allows and longer."""
    entry: dict[str, Any] = {key: "x" * 400 for key in historyentry.STRING_LIMITS}
    entry.update({key: "2026-01-01T00:00:00Z" for key in historyentry.TIME_KEYS})
    entry.update(attempt=attempt, exitCode=-(2**31), drainSeconds=history.deadlines.MAX_SECONDS, drainStuck=True,
                 checkpointStep=2**63 - 1,
                 failedNodes=[f"{index}" + "n" * 400 for index in range(historyentry.MAX_FAILED_NODES + 1)])
    return entry


def test_the_history_has_a_size_bound_whatever_its_values() -> None:
    entries = [historyentry.ordered(longest_entry(attempt)) for attempt in range(9999 - history.MAX_LIMIT, 9999)]
    assert all(len(entry[key]) == bound for entry in entries for key, bound in historyentry.STRING_LIMITS.items())
    assert all(len(entry["failedNodes"]) == historyentry.MAX_FAILED_NODES for entry in entries)
    assert all(len(name) == historyentry.NODE_NAME_LIMIT for entry in entries for name in entry["failedNodes"])
    size = len(json.dumps({"attempts": entries, "attemptsDropped": 9999}, separators=(",", ":")))
    assert size <= history.MAX_HISTORY_BYTES, size
    assert list(entries[0]) == list(historyentry.ENTRY_KEYS), "every key, in one order"


def parsed(entries: Any) -> Any:
    return parse_request(job_request(status={"phase": "Running", "attempts": entries}), "sync").status


def test_a_prior_history_is_read_sorted_one_entry_per_attempt_known_fields_only() -> None:
    status = parsed([{"attempt": 2, "jobSet": "train-2", "drainStuck": False, "unknown": 1},
                     {"attempt": 0, "jobSet": "train-0", "exitCode": -9}, {"attempt": 2, "jobSet": "other"}])
    assert status.attempts == [{"attempt": 0, "jobSet": "train-0", "exitCode": -9},
                               {"attempt": 2, "jobSet": "train-2", "drainStuck": False}]


@pytest.mark.parametrize(("entries", "field"), [
    ("x", "parent.status.attempts"), ([None], "parent.status.attempts[0]"),
    ([{"attempt": "1"}], "parent.status.attempts[0].attempt"), ([{"attempt": -1}], "parent.status.attempts[0].attempt"),
    ([{"attempt": 0, "node": 7}], "parent.status.attempts[0].node"),
    ([{"attempt": 0, "ended": "yesterday"}], "parent.status.attempts[0].ended"),
    ([{"attempt": 0, "drainStuck": "no"}], "parent.status.attempts[0].drainStuck"),
    ([{"attempt": n} for n in range(101)], "parent.status.attempts"),
])
def test_a_history_the_crd_refuses_is_a_400_naming_the_field(entries: Any, field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parsed(entries)
    assert refused.value.status == 400 and refused.value.message.startswith(field)


def test_an_attempt_started_when_its_first_pod_that_ran_started_each_time_read_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``started_at``: the earliest ``startTime`` of the attempt's pods that ran, whatever else the list
    holds (another attempt's pods, a pending pod, a time that is no time); a sync reads all of a Job's
    pods, so each distinct text is read once, not once per pod (issue 32 item 4)."""
    def started(name: str, at: object, *, workload: str = "train-0", phase: str = "Running") -> dict[str, Any]:
        pod = make_pod(name, job="train", workload=workload, phase=phase)
        pod["status"]["startTime"] = at
        return pod

    gang = [started(f"w-{i}", f"2026-01-01T00:00:0{i % 2 + 1}Z") for i in range(64)]
    others = [started("old", "2025-01-01T00:00:00Z", workload="train-1"),
              started("pending", "2025-01-01T00:00:00Z", phase="Pending"),
              started("odd", {"not": "a time"}), started("bad", "yesterday")]
    read: list[object] = []
    parse = history.deadlines.time_or_none
    monkeypatch.setattr(history.deadlines, "time_or_none", lambda text: read.append(text) or parse(text))
    assert str(history.started_at([*others, *gang], "train-0")) == "2026-01-01 00:00:01+00:00"
    assert sorted(map(str, read)) == ["2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "yesterday"]
    assert history.started_at(others[1:], "train-0") is None


def test_a_start_is_taken_from_a_pod_that_ran_whatever_pods_of_the_same_text_came_before() -> None:
    """``started_at`` looks no further at a pod whose text it took already: a text seen first on a pod
    of another attempt or one that did not run is still taken from a pod of the attempt that ran."""
    def started(name: str, *, workload: str = "train-0", phase: str = "Running") -> dict[str, Any]:
        pod = make_pod(name, job="train", workload=workload, phase=phase)
        pod["status"]["startTime"] = "2026-01-01T00:00:01Z"
        return pod

    early = started("early", workload="train-0")
    early["status"]["startTime"] = "2026-01-01T00:00:00Z"
    before = [started("other", workload="train-1"), started("pending", phase="Pending")]
    assert history.started_at([*before, early], "train-1") == history.started_at(before[:1], "train-1")
    assert str(history.started_at([*before, started("ran")], "train-0")) == "2026-01-01 00:00:01+00:00"
    assert history.started_at(before, "train-0") is None
    assert str(history.started_at([*before, started("ran"), early], "train-0")) == "2026-01-01 00:00:00+00:00"


def test_a_canonical_stamp_is_kept_as_at_would_write_it() -> None:
    """``history._at(ctx, stamp(moment), canonical=True)`` writes what ``_at`` writes of it (the stamp
    written once, issue 32 item 4): around ``now``'s second, with an aware or a naive ``now``."""
    import random
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from hooks.core import deadlines
    from hooks.core import history as hist

    rng = random.Random(20261206)
    for _ in range(5000):
        base = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 10**6),
                                                             microseconds=rng.randint(0, 999999))
        now = base + timedelta(seconds=rng.choice([-2, -1, 0, 0, 1]), microseconds=rng.randint(-999999, 999999))
        ctx = SimpleNamespace(now=now.replace(tzinfo=None) if rng.random() < 0.3 else now,
                              stamp=base - timedelta(seconds=5))
        moment = base + timedelta(microseconds=rng.randint(-1500000, 1500000))
        text = deadlines.stamp(moment)
        assert hist._at(ctx, text, canonical=True) == hist._at(ctx, text), (moment, now)
