"""Bad nodes kept out (issue 34 item 3, ``hooks.core.exclusion``): the affinity merged into the user's
templates, the bounds, the expiry and its wake-up, determinism, the claim, the gang's words and the
spec's range."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core import exclusion
from hooks.core.decide import decide
from hooks.core.jobset import InvalidSpec
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from hooks.core.spec import check_spec
from hooks.core.status import Status
from tests.support import FakeReader, job_request, job_spec, jobset_child

NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
ENDED = "2026-01-01T00:50:00Z"
"""Attempt 0 ended ten minutes before ``NOW``: with the default hour, its nodes are out until 01:50."""
NOT_IN = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-a", "node-b"]}


def entry(attempt: int, *, cls: str = "node", nodes: tuple[str, ...] = ("node-a", "node-b"), ended: str = ENDED,
          created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    """A ``status.attempts`` entry as the classifier (issue 34, helper A) leaves an ended attempt."""
    found = {"attempt": attempt, "jobSet": f"train-{attempt}", "created": created, "ended": ended,
             "outcome": "Failed", "class": cls, "cause": "node-lost"}
    if nodes:
        found["failedNodes"] = sorted(nodes)
    return found


def restarting(attempts: list[dict[str, Any]], *, spec: dict[str, Any] | None = None,
               excluded: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Job Restarting after its last attempt in ``attempts``, nothing left of it: the barrier passes."""
    last = attempts[-1]["attempt"]
    status: dict[str, Any] = {"phase": "Restarting", "attempt": last, "restarts": last + 1, "attempts": attempts}
    if excluded is not None:
        status["excludedNodes"] = excluded
    return job_request(spec=spec or job_spec(max_restarts=9), status=status)


def state(attempts: list[dict[str, Any]], excluded: list[dict[str, Any]] | None = None, dropped: int = 0) -> Status:
    """A status with ``attempts``, ``excludedNodes`` and ``attemptsDropped``, checked as a request's is."""
    return Status(attempts=attempts, excluded_nodes=excluded or [], attempts_dropped=dropped)


def answer(body: dict[str, Any], now: datetime = NOW) -> dict[str, Any]:
    return decide(parse_request(body, "sync"), FakeReader([]), now).response


def pod_specs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    return [replicated["template"]["spec"]["template"]["spec"] for replicated in jobset["spec"]["replicatedJobs"]]


def test_a_node_class_end_keeps_its_nodes_out_of_the_next_attempt_and_says_so_in_the_status() -> None:
    out = answer(restarting([entry(0)]))
    (created,) = [child for child in out["children"] if child["kind"] == "JobSet"]
    assert created["metadata"]["name"] == "train-1"
    for pod_spec in pod_specs(created):
        assert pod_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
            "nodeSelectorTerms": [{"matchExpressions": [NOT_IN]}]}
    assert created["metadata"]["annotations"][exclusion.ANNOTATION] == "node-a,node-b"
    assert out["status"]["excludedNodes"] == [
        {"node": "node-a", "class": "node", "attempt": 0, "until": "2026-01-01T01:50:00Z"},
        {"node": "node-b", "class": "node", "attempt": 0, "until": "2026-01-01T01:50:00Z"}]
    assert out["resyncAfterSeconds"] <= 50 * 60  # woken when the exclusion ends, like the deadline


@pytest.mark.parametrize("cls", ["user", "preempted", "deadline", "unknown"])
def test_other_classes_exclude_no_node(cls: str) -> None:
    out = answer(restarting([entry(0, cls=cls)]))
    (created,) = [child for child in out["children"] if child["kind"] == "JobSet"]
    assert all("affinity" not in pod_spec for pod_spec in pod_specs(created))
    assert "excludedNodes" not in out["status"] and "annotations" not in created["metadata"]


def test_an_infrastructure_class_end_excludes_too_and_zero_seconds_turns_exclusions_off() -> None:
    assert [e["class"] for e in answer(restarting([entry(0, cls="infrastructure")]))["status"]["excludedNodes"]] == [
        "infrastructure", "infrastructure"]
    spec = job_spec(max_restarts=9) | {"failurePolicy": {"excludeNodesSeconds": 0}}
    out = answer(restarting([entry(0)], spec=spec))
    assert "excludedNodes" not in out["status"]
    assert all("affinity" not in s for c in out["children"] if c["kind"] == "JobSet" for s in pod_specs(c))


def test_the_expression_joins_every_term_of_the_users_affinity_and_nothing_else() -> None:
    """Terms are ORed: the expression must be in each, or a pod may land on an excluded node through another."""
    spec = job_spec(max_restarts=9)
    pod_spec = spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    pod_spec["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [zone]}, {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                            "values": ["node-c"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
                zone]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    users = copy.deepcopy(pod_spec["affinity"])
    out = answer(restarting([entry(0)], spec=spec))
    (created,) = [child for child in out["children"] if child["kind"] == "JobSet"]
    (built,) = pod_specs(created)
    terms = built["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [zone, NOT_IN]},
                     {"matchFields": users["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                         "nodeSelectorTerms"][1]["matchFields"], "matchExpressions": [NOT_IN]}]
    assert built["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == users[
        "nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert built["affinity"]["podAntiAffinity"] == users["podAntiAffinity"]
    assert pod_spec["affinity"] == users, "the user's spec is not modified"


def test_an_affinity_of_the_wrong_shape_is_invalid_spec_only_when_a_node_is_excluded() -> None:
    built = {"metadata": {"name": "train-1"}, "spec": {"replicatedJobs": [
        {"name": "worker", "template": {"spec": {"template": {"spec": {"affinity": {"nodeAffinity": []}}}}}}]}}
    assert exclusion.exclude(copy.deepcopy(built), ()) == built
    with pytest.raises(InvalidSpec) as refused:
        exclusion.exclude(built, ("node-a",))
    assert refused.value.code == "InvalidExclusion"


def test_an_observed_jobset_keeps_the_exclusions_it_was_created_with_whatever_the_status_says_now() -> None:
    """A JobSet's pod templates cannot change: the answer rebuilds it as it was made, even after the
    exclusions expired, or the status gained new ones."""
    made = answer(restarting([entry(0)]))
    (created,) = [child for child in made["children"] if child["kind"] == "JobSet"]
    observed = jobset_child("train", 1) | {"spec": copy.deepcopy(created["spec"]),
                                           "metadata": jobset_child("train", 1)["metadata"] | {
                                               "annotations": created["metadata"]["annotations"]}}
    status = {"phase": "Running", "attempt": 1, "restarts": 1, "workload": "train-1",
              "attempts": [entry(0), {"attempt": 1, "jobSet": "train-1", "created": "2026-01-01T01:00:00Z"}]}
    later = NOW + timedelta(hours=3)  # the exclusions expired
    out = decide(parse_request(job_request(spec=job_spec(max_restarts=9), status=status, jobsets=[observed]),
                               "sync"), FakeReader([]), later).response
    (kept,) = [child for child in out["children"] if child["kind"] == "JobSet"]
    assert kept["spec"] == created["spec"] and "excludedNodes" not in out["status"]
    assert exclusion.excluded_by(kept) == ("node-a", "node-b")


def test_expired_exclusions_are_dropped_and_the_wake_up_is_the_earliest_until_ahead() -> None:
    attempts = [entry(0, nodes=("node-a",), ended="2026-01-01T00:10:00Z"),
                entry(1, nodes=("node-b",), ended="2026-01-01T00:30:00Z")]
    spec = read_spec(job_spec())
    found = exclusion.current(spec, state(attempts), NOW + timedelta(minutes=15))  # 01:15: node-a's until passed
    assert [(e.node, exclusion.deadlines.stamp(e.until)) for e in found] == [("node-b", "2026-01-01T01:30:00Z")]
    assert exclusion.wake_in(found, NOW + timedelta(minutes=15)) == 15 * 60
    assert exclusion.current(spec, state(attempts), NOW + timedelta(minutes=30)) == ()


def test_the_until_comes_from_the_evidence_so_every_answer_to_one_state_says_the_same() -> None:
    body = restarting([entry(0)])
    first, second = answer(body, NOW), answer(body, NOW + timedelta(seconds=37))
    assert first["status"]["excludedNodes"] == second["status"]["excludedNodes"]
    assert first["children"] == second["children"]


def test_a_node_blamed_twice_keeps_its_latest_attempt_and_the_list_keeps_the_newest_32() -> None:
    attempts = [entry(n, nodes=tuple(f"node-{n}-{i}" for i in range(8)), ended=f"2026-01-01T00:{10 + n:02d}:00Z")
                for n in range(6)]
    found = exclusion.derived(read_spec(job_spec()), state(attempts))
    assert len(found) == 32 and [e.attempt for e in found] == sorted(e.attempt for e in found)
    assert {e.attempt for e in found} == {2, 3, 4, 5}, "the oldest dropped first"
    blamed = [entry(0, nodes=("node-x",)), entry(1, nodes=("node-y",)), entry(2, nodes=("node-x",))]
    twice = [e for e in exclusion.derived(read_spec(job_spec()), state(blamed)) if e.node == "node-x"]
    assert [e.attempt for e in twice] == [2]


def test_exclusions_of_an_attempt_the_history_let_go_are_carried_but_expire_by_themselves() -> None:
    """With ``attemptsHistoryLimit: 1`` attempt 0's entry is gone once attempt 1 runs: its exclusions
    live on in the status, no later than attempt 1's creation plus the span."""
    kept = [{"attempt": 1, "jobSet": "train-1", "created": "2026-01-01T00:55:00Z"}]
    prior = [{"node": "node-a", "class": "node", "attempt": 0, "until": "2026-01-01T01:50:00Z"},
             {"node": "node-z", "class": "node", "attempt": 0, "until": "2027-01-01T00:00:00Z"}]
    found = exclusion.derived(read_spec(job_spec()), state(kept, prior, dropped=1))
    assert [(e.node, exclusion.deadlines.stamp(e.until)) for e in found] == [
        ("node-a", "2026-01-01T01:50:00Z"), ("node-z", "2026-01-01T01:55:00Z")]
    assert exclusion.unsupported(state(kept, prior, dropped=1)) == ""
    assert exclusion.derived(read_spec(job_spec()), state(kept, prior)) == (), \
        "nothing was let go (attemptsDropped 0): nothing is carried"
    assert "does not name it" in exclusion.unsupported(state(kept, prior)), "and such an entry is a forged claim"


def test_a_status_that_invents_an_exclusion_disagrees_and_one_that_drops_one_gets_it_back() -> None:
    invented = [{"node": "healthy-node", "class": "node", "attempt": 0, "until": "2026-01-01T01:50:00Z"}]
    out = answer(restarting([entry(0)], excluded=invented))
    mismatch = [c for c in out["status"]["conditions"] if c["type"] == "StatusMismatch"]
    assert mismatch and mismatch[0]["reason"] == "ExcludedNodesDisagree" and "healthy-node" in mismatch[0]["message"]
    assert not any(child["kind"] == "JobSet" for child in out["children"]), "nothing is created on a forged claim"
    too_long = [{"node": "node-a", "class": "node", "attempt": 0, "until": "2027-01-01T00:00:00Z"}]
    assert "past the longest" in exclusion.unsupported(state([entry(0)], too_long))
    wrong_class = [{"node": "node-a", "class": "user", "attempt": 0, "until": "2026-01-01T01:50:00Z"}]
    assert exclusion.unsupported(state([entry(0, cls="user")], wrong_class))
    dropped = answer(restarting([entry(0)], excluded=[]))
    assert [e["node"] for e in dropped["status"]["excludedNodes"]] == ["node-a", "node-b"]


def test_exclude_nodes_seconds_out_of_range_is_invalid_spec_and_a_running_job_keeps_running() -> None:
    for value in (-1, 604801):
        spec = job_spec() | {"failurePolicy": {"excludeNodesSeconds": value}}
        with pytest.raises(InvalidSpec) as refused:
            check_spec({"metadata": {"name": "train", "namespace": "default"}, "spec": spec}, 0)
        assert refused.value.code == "InvalidExclusion" and "excludeNodesSeconds" in str(refused.value)
    spec = job_spec(max_restarts=9) | {"failurePolicy": {"excludeNodesSeconds": -1}}
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    out = answer(job_request(spec=spec, status=status, jobsets=[jobset_child("train", 0)]))
    assert [c["metadata"]["name"] for c in out["children"] if c["kind"] == "JobSet"] == ["train-0"]
    assert [c["reason"] for c in out["status"]["conditions"] if c["type"] == "InvalidSpec"] == ["InvalidExclusion"]
    assert exclusion.seconds(read_spec(spec)) == 3600, "a reader that goes on takes the default"


def test_a_gang_that_cannot_fit_names_the_exclusions_and_says_when_they_may_cover_every_node() -> None:
    assert exclusion.gang_words((), "0/2 nodes are available") == ""
    some = exclusion.gang_words(("node-a",), "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity")
    assert "excludes 1 node(s) that failed earlier attempts (node-a" in some and "every node" not in some
    every = exclusion.gang_words(("node-a", "node-b"), "0/2 nodes are available: 2 node(s) didn't match")
    assert "may cover every node" in every and "excludeNodesSeconds to 0" in every


def test_with_a_history_of_one_the_exclusions_outlive_the_entry_that_named_them() -> None:
    """``attemptsHistoryLimit: 1``: the next attempt's entry replaces attempt 0's in the call that
    creates it (its JobSet not observed yet, no ``created``), and on: the exclusions stay, fed back."""
    spec = job_spec(max_restarts=9) | {"attemptsHistoryLimit": 1}
    first = answer(restarting([entry(0)], spec=spec))
    status = first["status"]
    assert [e["attempt"] for e in status["attempts"]] == [1] and status["attemptsDropped"] == 1
    excluded = status["excludedNodes"]
    assert [(e["node"], e["until"]) for e in excluded] == [("node-a", "2026-01-01T01:50:00Z"),
                                                           ("node-b", "2026-01-01T01:50:00Z")]
    (created,) = [child for child in first["children"] if child["kind"] == "JobSet"]
    assert exclusion.excluded_by(created) == ("node-a", "node-b")
    observed = jobset_child("train", 1, created="2026-01-01T01:00:05Z") | {"spec": created["spec"]}
    observed["metadata"]["annotations"] = created["metadata"]["annotations"]
    later = decide(parse_request(job_request(spec=spec, status=status, jobsets=[observed]), "sync"), FakeReader([]),
                   NOW + timedelta(minutes=5)).response
    assert later["status"]["excludedNodes"] == excluded, "kept, their until within created + the span"
    assert [c["type"] for c in later["status"]["conditions"] if c["type"] == "StatusMismatch"] == []


def test_a_finished_job_shows_its_exclusions_and_is_not_woken_for_them() -> None:
    """No next attempt to keep the nodes from: the status still names them (the bad node, for the
    operator), and no wake-up is asked for their end."""
    status = {"phase": "Failed", "attempt": 0, "restarts": 0, "workload": "train-0", "attempts": [entry(0)],
              "completionTime": "2026-01-01T00:50:00Z"}
    out = answer(job_request(spec=job_spec(), status=status, jobsets=[jobset_child("train", 0, state="Failed")]))
    assert [e["node"] for e in out["status"]["excludedNodes"]] == ["node-a", "node-b"]
    assert "resyncAfterSeconds" not in out


def test_turning_exclusions_off_clears_those_carried_from_attempts_the_history_let_go() -> None:
    """``excludeNodesSeconds: 0`` turns exclusions off, also those carried in ``status.excludedNodes``
    from an attempt the history let go while no kept entry blames a node: the early return of
    ``exclusion.record`` (nothing blamed, nothing carried) must not keep them."""
    spec = job_spec(max_restarts=9) | {"attemptsHistoryLimit": 1}
    first = answer(restarting([entry(0)], spec=spec))
    status = first["status"]
    assert status["excludedNodes"] and not any(e.get("failedNodes") for e in status["attempts"])
    (created,) = [child for child in first["children"] if child["kind"] == "JobSet"]
    observed = jobset_child("train", 1, created="2026-01-01T01:00:05Z") | {"spec": created["spec"]}
    observed["metadata"]["annotations"] = created["metadata"]["annotations"]
    off = spec | {"failurePolicy": {"excludeNodesSeconds": 0}}
    later = decide(parse_request(job_request(spec=off, status=status, jobsets=[observed]), "sync"), FakeReader([]),
                   NOW + timedelta(minutes=5)).response
    assert not later["status"].get("excludedNodes")
    assert not [c for c in later["status"].get("conditions", []) if c["type"] == "StatusMismatch"]
