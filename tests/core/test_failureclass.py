"""The failure classifier (issue 34, ``hooks.core.failureclass``): one class per signal, the table in
the docs is the table in the code, the nodes are read only when no pod says why (a failed read is
``unknown``, never "the node was fine"), a departed pod (kept by the pod watch) is read as a live one,
and a failure-policy rule may assign a class by exit code, termination message, condition or reason."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hooks.core import failureclass, failurepolicy
from hooks.core.failureclass import TABLE, Classified, classify, nodes_to_read
from hooks.core.jobset import InvalidSpec
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from hooks.core.rows import current
from hooks.core.vocab import EndCause, FailureClass, Phase
from hooks.core.work import Context, Work
from podread.nodes import NodeState
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pod(name: str = "train-0-worker-0-0", *, node: str = "gpu-1", exit_code: int | None = None,
        container_reason: str = "", message: str = "", disruption: str = "", reason: str = "",
        finished: str = "2025-12-31T23:30:00Z", departed: str = "") -> dict[str, Any]:
    """A failed pod of attempt 0 carrying the signals asked for."""
    made = make_pod(name, job="train", workload="train-0", replicated_job="worker", phase="Failed", node=node)
    if exit_code is not None:
        ended = {"exitCode": exit_code, "reason": container_reason or "Error", "finishedAt": finished}
        if message:
            ended["message"] = message
        made["status"]["containerStatuses"] = [{"name": "trainer", "state": {"terminated": ended}}]
    if disruption:
        made["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": disruption,
                                         "lastTransitionTime": "2025-12-31T23:00:00Z"}]
    if reason:
        made["status"]["reason"] = reason
    if departed:
        made["metadata"]["annotations"] = {failureclass.DEPARTED: departed}
    return made


SIGNALS = [
    (pod(disruption="PreemptionByScheduler"), FailureClass.PREEMPTED, "DisruptionTarget/PreemptionByScheduler"),
    (pod(disruption="PreemptionByKubeScheduler"), FailureClass.PREEMPTED, "DisruptionTarget/PreemptionBy"),
    (pod(disruption="DeletionByTaintManager"), FailureClass.NODE, "DisruptionTarget/DeletionByTaintManager"),
    (pod(disruption="TerminationByKubelet"), FailureClass.NODE, "DisruptionTarget/TerminationByKubelet"),
    (pod(disruption="DeletionByPodGC"), FailureClass.NODE, "DisruptionTarget/DeletionByPodGC"),
    (pod(reason="NodeLost"), FailureClass.NODE, "pod reason NodeLost"),
    (pod(reason="Terminated"), FailureClass.NODE, "pod reason Terminated"),
    (pod(reason="Evicted"), FailureClass.NODE, "pod reason Evicted"),
    (pod(disruption="EvictionByEvictionAPI"), FailureClass.PREEMPTED, "DisruptionTarget/EvictionByEvictionAPI"),
    (pod(reason="UnexpectedAdmissionError"), FailureClass.INFRASTRUCTURE, "pod reason UnexpectedAdmissionError"),
    (pod(reason="OutOfnvidia.com/gpu"), FailureClass.INFRASTRUCTURE, "pod reason OutOfnvidia.com/gpu"),
    (pod(exit_code=137, container_reason="OOMKilled"), FailureClass.USER, "container trainer OOMKilled"),
    (pod(exit_code=3), FailureClass.USER, "container trainer exited with 3"),
]


@pytest.mark.parametrize(("failed", "klass", "words"), SIGNALS, ids=[s[2] for s in SIGNALS])
def test_each_signal_names_its_class_and_the_evidence_it_used(failed: dict[str, Any], klass: FailureClass,
                                                              words: str) -> None:
    named = classify([failed])
    assert named.klass == klass
    assert named.evidence.startswith("pod train-0-worker-0-0: ") and words in named.evidence
    assert named.nodes == (("gpu-1",) if klass in failureclass.BLAMES_NODES else ())
    assert nodes_to_read([failed]) == [], "a pod that says why needs no node read"


def test_a_disruption_explains_its_peers_crashes_whatever_their_order() -> None:
    """The preempted pod's peers exit non-zero once it is gone (earlier by name, later in time or not):
    the disruption row comes first, over every failing pod."""
    peer = pod("a-peer", exit_code=1, finished="2025-12-31T22:00:00Z", node="gpu-2")
    preempted = pod("z-victim", disruption="PreemptionByScheduler")
    named = classify([peer, preempted])
    assert (named.klass, named.evidence) == (FailureClass.PREEMPTED,
                                             "pod z-victim: DisruptionTarget/PreemptionByScheduler")
    tainted = classify([peer, pod("b", disruption="DeletionByTaintManager", node="gpu-9"),
                        pod("c", disruption="DeletionByTaintManager", node="gpu-8")])
    assert tainted.klass == FailureClass.NODE and tainted.nodes == ("gpu-8", "gpu-9")
    assert tainted.evidence.endswith("(and 1 more pods)")


def test_a_departed_pod_is_read_as_a_live_one_and_the_evidence_says_it_is_gone() -> None:
    """Item 5: with the real JobSet the preempted pod is deleted before the batch Job fails; the pod
    watch keeps it (annotation ``podread.nvcre.nvidia.com/departed``) and it is classified the same."""
    gone = pod(disruption="PreemptionByScheduler", departed="2026-01-01T00:00:01Z")
    named = classify([gone, pod("train-0-worker-1-0", exit_code=137)])
    assert named.klass == FailureClass.PREEMPTED
    assert named.evidence == ("pod train-0-worker-0-0 (deleted, seen 2026-01-01T00:00:01Z): "
                              "DisruptionTarget/PreemptionByScheduler")
    assert failureclass.outcome(named.klass) == EndCause.PREEMPTED


def state(name: str, *, exists: bool = True, ready: str = "True", unreachable: bool = False) -> NodeState:
    return NodeState(name=name, exists=exists, ready=ready, unreachable=unreachable)


def test_without_a_pod_signal_the_nodes_read_live_decide_and_a_failed_read_is_unknown() -> None:
    bare = [pod("a", node="gpu-1"), pod("b", node="gpu-2")]
    assert nodes_to_read(bare) == ["gpu-1", "gpu-2"]
    lost = classify(bare, {"gpu-1": state("gpu-1"), "gpu-2": state("gpu-2", exists=False)})
    assert (lost.klass, lost.nodes, lost.signal) == (FailureClass.NODE, ("gpu-2",), failureclass.NODE_ROW)
    assert lost.evidence == "pod b: node gpu-2 is deleted"
    assert classify(bare, {"gpu-1": state("gpu-1", ready="False")}).klass == FailureClass.NODE
    assert classify(bare, {"gpu-1": state("gpu-1", unreachable=True)}).klass == FailureClass.NODE
    fine = classify(bare, {"gpu-1": state("gpu-1"), "gpu-2": state("gpu-2")})
    assert (fine.klass, fine.signal) == (FailureClass.UNKNOWN, failureclass.NO_SIGNAL)
    unread = classify(bare, None)
    assert unread.klass == FailureClass.UNKNOWN and "could not be read" in unread.evidence
    assert classify([]).klass == FailureClass.UNKNOWN


def test_the_evidence_and_the_nodes_are_bounded() -> None:
    many = [pod(f"p-{index}", disruption="DeletionByTaintManager", node=f"node-{index:02d}") for index in range(20)]
    named = classify(many)
    assert len(named.nodes) == failureclass.MAX_FAILED_NODES and list(named.nodes) == sorted(named.nodes)
    long = Classified(FailureClass.USER, "x" * 1000)
    assert len(long.evidence) == failureclass.MAX_EVIDENCE
    assert Classified(FailureClass.USER, "e", ("gpu-1",)).nodes == (), "only node and infrastructure blame nodes"


def test_teardown_ends_have_their_class() -> None:
    assert failureclass.evicted("Preempted").klass == FailureClass.PREEMPTED
    assert failureclass.evicted("InactiveWorkload").klass == FailureClass.PREEMPTED
    assert failureclass.evicted("PodsReadyTimeout").klass == FailureClass.INFRASTRUCTURE
    assert failureclass.evicted("NodeFailures").klass == FailureClass.NODE
    assert failureclass.DEADLINE.klass == FailureClass.DEADLINE


# ---- the docs' table is the code's -----------------------------------------------------------------------

def documented_rows() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "failure-classes.md").read_text()
    section = text.split("## The default rules", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    found = []
    for line in rows:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        found.append((cells[1].replace("\\|", "|"), re.sub(r"[`*]", "", cells[2])))
    return found


def test_the_table_in_the_docs_is_the_table_in_the_code() -> None:
    assert documented_rows() == [(signal, klass.value) for signal, klass in failureclass.DOCUMENTED]


def test_every_table_row_is_tested_by_a_signal_here() -> None:
    tested = {classify([failed]).signal for failed, _, _ in SIGNALS}
    assert tested == {row.signal for row in TABLE}


def test_operations_links_the_table() -> None:
    assert "failure-classes.md" in (ROOT / "docs" / "operations.md").read_text()


# ---- a rule assigns a class --------------------------------------------------------------------------------

def judge(rules: list[dict[str, Any]], pods: list[dict[str, Any]]) -> failurepolicy.Verdict:
    spec = read_spec({"failurePolicy": {"rules": rules}})
    return failurepolicy.judge(failurepolicy.rules_of(spec), jobset_child("train", 0, state="Failed"), pods)


def test_a_rule_assigns_its_class_by_exit_code_message_condition_or_reason_first_match_wins() -> None:
    crash = pod(exit_code=74, message="NCCL error: unhandled system error (ib link down)")
    by_message = judge([{"name": "ib", "action": "RestartJob", "class": "infrastructure",
                         "onTerminationMessage": {"contains": "ib link down"}}], [crash])
    assert (by_message.klass, by_message.cause) == (FailureClass.INFRASTRUCTURE, "ib")
    assert by_message.classified.evidence.startswith("rule ib: pod train-0-worker-0-0 container trainer "
                                                     "termination message contains 'ib link down'")
    assert by_message.classified.nodes == ("gpu-1",)
    by_code = judge([{"name": "xid", "action": "RestartJob", "class": "node",
                      "onExitCodes": {"operator": "In", "values": [74]}}], [crash])
    assert by_code.klass == FailureClass.NODE
    other_text = judge([{"name": "ib", "action": "RestartJob", "class": "infrastructure",
                         "onTerminationMessage": {"contains": "ECC"}}], [crash])
    assert (other_text.klass, other_text.cause) == (FailureClass.USER, failurepolicy.DEFAULT_CAUSE), "no match"
    tainted = pod(disruption="DeletionByTaintManager")
    by_reason = [{"name": "kept", "action": "RestartJob", "class": "preempted",
                  "onPodConditions": [{"type": "DisruptionTarget", "reason": "PreemptionByScheduler"}]},
                 {"name": "taint", "action": "RestartJob", "class": "user",
                  "onPodConditions": [{"type": "DisruptionTarget", "reason": "DeletionByTaintManager"}]}]
    assert (judge(by_reason, [tainted]).cause, judge(by_reason, [tainted]).klass) == ("taint", FailureClass.USER)
    unclassed = judge([{"name": "any", "action": "RestartJob"}], [tainted])
    assert unclassed.klass == FailureClass.NODE, "a rule without a class keeps the table's"


@pytest.mark.parametrize(("policy", "words"), [
    ({"rules": [{"name": "r", "action": "RestartJob", "class": "cosmic-rays"}]}, "rules[0].class must be one of"),
    ({"rules": [{"name": "r", "action": "RestartJob", "onTerminationMessage": {"contains": ""}}]},
     "onTerminationMessage.contains"),
    ({"rules": [{"name": "r", "action": "RestartJob", "onTerminationMessage": {"contains": "x" * 257}}]},
     "onTerminationMessage.contains"),
    ({"rules": [{"name": "r", "action": "RestartJob", "onPodConditions": [{"type": "DisruptionTarget", "reason": 3}]}]},
     "onPodConditions"),
    ({"budgets": {"user": -1}}, "spec.failurePolicy.budgets.user must be an integer from 0 to 9999, got -1"),
    ({"budgets": {"node": 10000}}, "spec.failurePolicy.budgets.node must be an integer from 0 to 9999"),
])
def test_a_rule_with_an_unknown_class_or_a_budget_out_of_range_is_invalid_spec(policy: dict[str, Any],
                                                                                 words: str) -> None:
    with pytest.raises(InvalidSpec) as refused:
        failurepolicy.rules_of(read_spec({"failurePolicy": policy}))
    assert refused.value.code == "InvalidFailurePolicy" and words in refused.value.reason


def test_a_running_job_whose_policy_turns_invalid_keeps_running() -> None:
    """Row 7 on a bad class or a negative budget: the JobSet is kept, the phase stays Running."""
    for policy in ({"budgets": {"preempted": -3}}, {"rules": [{"name": "r", "action": "RestartJob", "class": "x"}]}):
        request = job_request(spec=job_spec(max_restarts=1) | {"failurePolicy": policy},
                              status={"phase": "Running", "attempt": 0, "workload": "train-0"},
                              jobsets=[jobset_child("train", 0)])
        ctx = Context(parse_request(request, "sync"), FakeReader([pod(exit_code=0)]), NOW)
        step = current.steady(ctx, Work.of(ctx.observed.status))
        assert step.phase == Phase.RUNNING and step.jobset is not None and step.children
        assert step.conditions[0].reason == "InvalidFailurePolicy"


def failed_row(reader: FakeReader) -> Any:
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    failed = jobset_child("train", 0, state="Failed")
    request = job_request(spec=job_spec(max_restarts=1), status=status, jobsets=[failed])
    ctx = Context(parse_request(request, "sync"), reader, NOW)
    return current.steady(ctx, Work.of(ctx.observed.status))


def test_the_failure_row_reads_the_nodes_only_when_no_pod_says_why_and_a_failed_read_is_unknown() -> None:
    said = FakeReader([pod(exit_code=1)], nodes=[])
    assert failed_row(said).last_failure["class"] == FailureClass.USER and said.node_gets == []
    not_ready = {"metadata": {"name": "gpu-1"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    silent = FakeReader([pod()], nodes=[not_ready])
    step = failed_row(silent)
    assert silent.node_gets == ["gpu-1"]
    assert (step.phase, step.last_failure["class"], step.charge.klass) == (Phase.RESTARTING, "node", FailureClass.NODE)
    assert step.last_failure["classEvidence"] == "pod train-0-worker-0-0: node gpu-1 is not ready"
    unread = FakeReader([pod()], fail=["node_states"])
    step = failed_row(unread)
    assert (step.phase, step.last_failure["class"]) == (Phase.RESTARTING, "unknown"), "never a hold, never user"


# ---- the Events say it -------------------------------------------------------------------------------------

def test_the_restarting_and_failed_events_name_the_class_its_evidence_and_the_budget() -> None:
    from hooks.core import lifecycle
    from hooks.core.events import transition_events

    prior = parse_request(job_request(status={"phase": "Running", "attempt": 0}), "sync").status
    failure = {"action": "RestartJob", "cause": "default", "message": "JobSet failed (FailedJobs)", "class": "node",
               "classEvidence": "pod w-0-0: DisruptionTarget/DeletionByTaintManager"}
    restarting = lifecycle.path(("Running", 0), ("Running", 0), lifecycle.Move.FAIL, ("Restarting", 0), False)
    (event,) = transition_events(prior, {"phase": "Restarting", "attempt": 0, "lastFailure": failure},
                                 transitions=restarting)
    assert event.note == ("restarting attempt 0 because JobSet failed (FailedJobs) (cause default; class node "
                          "(pod w-0-0: DisruptionTarget/DeletionByTaintManager); counts against the node budget)")
    for klass, budget in (("user", "maxRestarts (the user budget)"), ("unknown", "the unknown budget (maxRestarts")):
        (event,) = transition_events(prior, {"phase": "Restarting", "attempt": 0,
                                             "lastFailure": failure | {"class": klass}}, transitions=restarting)
        assert f"counts against {budget}" in event.note
    failing = lifecycle.path(("Running", 0), ("Running", 0), lifecycle.Move.FAIL, ("Failed", 0), False)
    fail_job = {"type": "Failed", "status": "True", "reason": "FailurePolicy", "message": "rule bad-config matched"}
    (event,) = transition_events(prior, {"phase": "Failed", "attempt": 0, "conditions": [fail_job],
                                         "lastFailure": failure | {"class": "user", "classEvidence": "pod p: x"}},
                                 transitions=failing)
    assert event.note == "failed: rule bad-config matched; class user (pod p: x)"
    (event,) = transition_events(prior, {"phase": "Failed", "attempt": 0, "conditions": [
        fail_job | {"reason": "BudgetExhausted", "message": "m; class node (e): the node budget (10) is used up"}],
        "lastFailure": failure}, transitions=failing)
    assert event.note == "failed: m; class node (e): the node budget (10) is used up", "said once"


def test_a_budget_of_the_wrong_json_type_is_a_400_naming_it_and_unset_keys_read_as_their_defaults() -> None:
    from hooks.core.declared import InvalidRequest
    from hooks.core.request import FailureBudgets, default_of

    with pytest.raises(InvalidRequest) as refused:
        read_spec({"failurePolicy": {"budgets": {"node": "ten"}}})
    assert refused.value.status == 400 and refused.value.message.startswith("spec.failurePolicy.budgets.node")
    assert read_spec({}).budgets == FailureBudgets() == read_spec({"failurePolicy": {"budgets": None}}).budgets
    assert [default_of(FailureBudgets, k) for k in ("user", "preempted", "node", "infrastructure", "unknown")] == [
        None, None, 10, 10, None]


def test_the_history_records_the_class_a_rule_assigns_the_class_the_budget_was_charged_by() -> None:
    """Found by the tier's fault suite: the budget spent the rule's class (``infrastructure``) while
    ``status.attempts`` recorded the table's (``user``, from the exit code): one call, one class."""
    from hooks.core.decide import decide  # the whole call: the row's verdict and the history's entry

    crash = pod(exit_code=1, message="NCCL WARN NET/IB - Got completion from peer with error 12")
    rule = {"name": "nccl-network", "action": "RestartJob", "class": "infrastructure",
            "onTerminationMessage": {"contains": "NCCL WARN NET/IB"}}
    request = job_request(spec={**job_spec(max_restarts=0), "failurePolicy": {"rules": [rule]}},
                          jobsets=[jobset_child("train", 0, state="Failed")],
                          status={"phase": "Running", "attempt": 0, "workload": "train-0",
                                  "startTime": "2025-12-31T23:00:00Z"})
    status = decide(parse_request(request, "sync"), FakeReader([crash]), NOW).response["status"]
    assert status["lastFailure"]["class"] == "infrastructure"
    assert status["restartsByClass"] == {"infrastructure": 1}
    [entry] = status["attempts"]
    assert (entry["class"], entry["cause"]) == ("infrastructure", "nccl-network"), entry
    assert entry["classEvidence"].startswith("rule nccl-network:") and entry["failedNodes"] == ["gpu-1"]
