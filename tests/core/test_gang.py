"""Gang scheduling with the PodGroup API (issue 22): the PodGroup child, its drain barrier, the
``GangScheduled`` condition, the cluster default and an API that is not there (``hooks.core.gang``)."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from hooks.core import decide as decide_module
from hooks.core import exclusion, gang
from hooks.core.decide import Decision, decide
from hooks.core.jobset import build_jobset
from hooks.core.observed import GangCluster, parse_request
from hooks.core.vocab import ConditionType, GangPolicy, Outcome, Phase, Reason, WhenUnavailable
from hooks.core.work import Context, Work
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, podgroup_child
from tests.support.uids import uid

NOW = datetime(2026, 1, 1, tzinfo=UTC)
GANG = {"policy": "Gang"}


def spec(gang_spec: dict[str, Any] | None = GANG, **kw: Any) -> dict[str, Any]:
    built = job_spec(**kw)
    if gang_spec is not None:
        built["gang"] = dict(gang_spec)
    return built


def run(reader: FakeReader | None = None, *, cluster: GangCluster | None = None, **request: Any) -> Decision:
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    if cluster is not None:
        observed = msgspec.structs.replace(observed, gang=cluster)
    return decide(observed, reader if reader is not None else FakeReader(), NOW)


def grouped_jobset(job_spec_: dict[str, Any], attempt: int = 0, *, state: str = "", name: str = "train") -> dict:
    """An observed JobSet built with its gang (as the hooks created it), with ``jobset_child``'s metadata."""
    observed = jobset_child(name, attempt, state=state)
    observed["spec"] = gang.with_group(build_jobset({"metadata": {"name": name, "namespace": "default"},
                                                     "spec": job_spec_}, attempt))["spec"]
    return observed


def children(d: Decision, kind: str) -> list[dict[str, Any]]:
    return [c for c in d.response["children"] if c["kind"] == kind]


def condition(d: Decision) -> dict[str, Any] | None:
    return next((c for c in d.response["status"]["conditions"] if c["type"] == "GangScheduled"), None)


def pod_specs(jobset: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["template"]["spec"]["template"]["spec"] for r in jobset["spec"]["replicatedJobs"]]


def test_without_a_gang_the_answer_is_the_same_with_or_without_the_podgroup_group() -> None:
    plain = run()
    listed = run(podgroups=[])
    assert listed.response == plain.response
    assert children(plain, "PodGroup") == []
    assert all("schedulingGroup" not in s for s in pod_specs(children(plain, "JobSet")[0]))


def owned(podgroup: dict[str, Any], job: str = "train", **spec_changes: Any) -> dict[str, Any]:
    """``podgroup`` as Metacontroller lists it once it created it for Job ``job`` (its controller
    ownerReference), ``spec_changes`` merged into its spec."""
    found = copy.deepcopy(podgroup)
    found["metadata"] = {**found["metadata"], "uid": uid(f"podgroup/{found['metadata']['name']}"),
                         "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job,
                                              "uid": uid(f"job/{job}"), "controller": True,
                                              "blockOwnerDeletion": True}]}
    found["spec"] = {**found["spec"], **spec_changes}
    return found


@pytest.mark.parametrize("launcher", ["", "launcher"])
def test_a_new_gang_job_creates_its_podgroup_first_then_its_jobset(launcher: str) -> None:
    count = 3 if launcher else 2
    first = run(spec=spec(launcher=launcher), podgroups=[])
    assert children(first, "JobSet") == [], "no JobSet before its PodGroup is the Job's"
    (group,) = children(first, "PodGroup")
    assert group == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": "train-0", "namespace": "default",
                                  "labels": {"nvcre.nvidia.com/job": "train", "nvcre.nvidia.com/attempt": "0"}},
                     "spec": {"schedulingPolicy": {"gang": {"minCount": count}}}}
    assert first.kind == "held" and first.response["status"]["phase"] == "Pending"
    assert first.response["status"]["workload"] == "" and first.response["resyncAfterSeconds"] == 5.0
    found = condition(first)
    assert found is not None and (found["status"], found["reason"]) == ("False", "WaitingForPodGroup")
    assert found["message"].startswith(f"creating PodGroup train-0 (gang of {count} pods) before JobSet train-0")
    assert "AlreadyExists" in found["message"]

    d = run(spec=spec(launcher=launcher), podgroups=[owned(group)], status=first.response["status"])
    (jobset,) = children(d, "JobSet")
    assert children(d, "PodGroup") == [group]
    assert [s["schedulingGroup"] for s in pod_specs(jobset)] == [{"podGroupName": "train-0"}] * (2 if launcher else 1)
    assert d.kind == "created" and d.response["status"]["workload"] == "train-0"
    assert condition(d) == {"type": "GangScheduled", "status": "False", "reason": "WaitingForScheduler",
                            "message": f"PodGroup train-0 (gang of {count} pods) waits for the scheduler",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_the_cluster_default_turns_the_gang_on_and_the_spec_turns_it_off() -> None:
    on = GangCluster(default_policy="Gang")
    assert [c["metadata"]["name"] for c in children(run(spec=spec(None), podgroups=[], cluster=on), "PodGroup")] == \
        ["train-0"]
    assert children(run(spec=spec({"policy": "None"}), podgroups=[], cluster=on), "PodGroup") == []


def test_an_unschedulable_gang_keeps_the_job_pending_with_the_schedulers_words() -> None:
    s = spec()
    group = podgroup_child("train", 0, state="unschedulable")
    d = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[group],
            status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    assert d.response["status"]["phase"] == "Pending"
    assert [c["metadata"]["name"] for c in d.response["children"]] == ["train-0", "train-0"]
    assert children(d, "PodGroup")[0]["spec"] == group["spec"]
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "Unschedulable")
    assert "none of its 2 pods bound: Unschedulable: pod group is unschedulable, minCount (2)" in found["message"]
    assert d.response["status"]["message"].startswith("waiting for the scheduler to place the gang: PodGroup train-0")


def test_a_placed_gang_turns_the_condition_true() -> None:
    s = spec()
    reader = FakeReader([make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)])
    d = run(reader, spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="scheduled")],
            status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    assert d.response["status"]["phase"] == "Running"
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("True", "Scheduled")


def test_an_attempts_gang_is_fixed_when_its_jobset_is_created() -> None:
    """A JobSet created without a group keeps running without one, whatever the spec now says."""
    d = run(spec=spec(), jobsets=[jobset_child("train", 0)], podgroups=[],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    assert children(d, "PodGroup") == []
    assert condition(d) is None


@pytest.mark.parametrize("note", ["", "discovery: the API server does not serve scheduling.k8s.io/v1beta1"])
def test_without_the_api_a_gang_job_waits_and_says_why(note: str) -> None:
    d = run(spec=spec(), cluster=GangCluster(api_note=note))
    assert d.response["children"] == []
    assert d.kind == "held"
    assert d.response["status"]["phase"] == "Pending"
    assert d.response["status"]["workload"] == ""
    assert d.response["resyncAfterSeconds"] == 5.0
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "GangUnavailable")
    assert "lists no PodGroup children" in found["message"]
    assert note in found["message"]
    assert "startTime" not in d.response["status"]


def test_without_the_api_start_without_gang_starts_and_says_so() -> None:
    d = run(spec=spec({"policy": "Gang", "whenUnavailable": "StartWithoutGang"}))
    (jobset,) = children(d, "JobSet")
    assert all("schedulingGroup" not in s for s in pod_specs(jobset))
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "StartedWithoutGang")


def test_the_podgroup_goes_with_its_attempt_and_the_next_comes_with_the_next_jobset() -> None:
    s = spec(max_restarts=3)
    failed = grouped_jobset(s, state="Failed")
    group = podgroup_child("train", 0, state="scheduled")
    # row 8: the failed JobSet and its group are still answered, Restarting recorded
    first = run(spec=s, jobsets=[failed], podgroups=[group], status={"phase": "Running", "attempt": 0,
                                                                      "workload": "train-0"})
    assert first.response["status"]["phase"] == "Restarting"
    assert sorted((c["kind"], c["metadata"]["name"]) for c in first.response["children"]) == \
        [("JobSet", "train-0"), ("PodGroup", "train-0")]
    # row 6 holding on an active pod of attempt 0: neither the JobSet nor any group
    busy = FakeReader([make_pod("train-0-worker-0-0", job="train")])
    held = run(busy, spec=s, jobsets=[failed], podgroups=[group], status=first.response["status"])
    assert held.kind == "held" and held.response["children"] == []
    # the barrier passed: attempt 1's own group first, nothing of attempt 0
    passed = run(spec=s, podgroups=[], status=held.response["status"])
    assert passed.response["status"]["attempt"] == 1 and passed.response["status"]["phase"] == "Pending"
    assert [(c["kind"], c["metadata"]["name"]) for c in passed.response["children"]] == [("PodGroup", "train-1")]
    found = condition(passed)
    assert found is not None and found["reason"] == "WaitingForPodGroup" and "train-1" in found["message"]
    # then its JobSet, once the group is the Job's
    created = run(spec=s, podgroups=[owned(children(passed, "PodGroup")[0])], status=passed.response["status"])
    assert sorted((c["kind"], c["metadata"]["name"]) for c in created.response["children"]) == \
        [("JobSet", "train-1"), ("PodGroup", "train-1")]
    found = condition(created)
    assert found is not None and found["reason"] == "WaitingForScheduler" and "train-1" in found["message"]


def test_a_teardown_leaves_the_podgroup_out() -> None:
    s = spec()
    d = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="scheduled")],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"}, finalizing=True,
            deleting="2026-01-01T00:00:00Z")
    assert d.response["children"] == []


@pytest.mark.parametrize(("gang_spec", "field"), [({"policy": "Always"}, "policy"),
                                                  ({"whenUnavailable": "Later"}, "whenUnavailable")])
def test_a_gang_value_the_crd_refuses_is_an_invalid_spec(gang_spec: dict[str, Any], field: str) -> None:
    d = run(spec=spec(gang_spec), podgroups=[])
    assert d.kind == "invalid-spec"
    found = next(c for c in d.response["status"]["conditions"] if c["type"] == "InvalidSpec")
    assert found["reason"] == "InvalidGang" and f"spec.gang.{field}" in found["message"]


def test_the_answer_is_a_fixed_point() -> None:
    s = spec()
    first = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="unschedulable")],
                status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    again = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="unschedulable")],
                status=first.response["status"])
    assert again.response == first.response


def test_events_say_when_the_gang_cannot_be_placed_and_when_it_is() -> None:
    from hooks.core.events import transition_events
    from hooks.core.observed import PriorStatus
    from hooks.core.status import Condition

    s = spec()
    stuck = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="unschedulable")],
                status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    events = transition_events(PriorStatus(phase="Pending", attempt=0, workload="train-0"), stuck.response["status"])
    assert [(e.reason, e.type) for e in events] == [("GangUnschedulable", "Warning")]
    assert "minCount (2) cannot be satisfied" in events[0].note
    prior = PriorStatus(phase="Pending", attempt=0, workload="train-0", conditions=tuple(
        Condition(**{k if k != "lastTransitionTime" else "last_transition_time": v for k, v in c.items()})
        for c in stuck.response["status"]["conditions"]))
    assert transition_events(prior, stuck.response["status"]) == []
    placed = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0, state="scheduled")],
                 status=stuck.response["status"])
    assert [e.reason for e in transition_events(prior, placed.response["status"])] == ["GangScheduled"]


def test_pods_running_while_the_group_says_nothing_mean_the_gang_was_not_used() -> None:
    s = spec()
    reader = FakeReader([make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)])
    d = run(reader, spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0)],
            status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "PlacementNotReported")
    assert d.response["status"]["phase"] == "Running"


def test_pods_that_wait_for_their_gang_keep_the_job_pending() -> None:
    """Pods exist (active, Pending) but none is bound: the Job is not Running."""
    s = spec()
    waiting = [make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0", phase="Pending", node="")
               for i in range(2)]
    for state in ("", "unschedulable"):
        d = run(FakeReader(waiting), spec=s, jobsets=[grouped_jobset(s)], podgroups=[podgroup_child("train", 0,
                                                                                                    state=state)],
                status={"phase": "Running", "attempt": 0, "workload": "train-0"})
        assert d.response["status"]["phase"] == "Pending"
        assert d.response["status"]["activePods"] == 2
        assert d.response["status"]["message"].startswith("waiting for the scheduler to place the gang")


def test_behind_kueue_the_gang_comes_after_admission() -> None:
    from tests.support import workload_child

    queue = {"kueue.x-k8s.io/queue-name": "team"}
    queued = run(spec=spec(), labels=queue, workloads=[workload_child("train", state="pending")], podgroups=[])
    assert [c["kind"] for c in queued.response["children"]] == ["Workload"]
    assert queued.response["status"]["phase"] == "Queued" and condition(queued) is None
    admitted = run(spec=spec(), labels=queue, workloads=[workload_child("train", state="admitted")], podgroups=[],
                   status=queued.response["status"])
    assert sorted(c["kind"] for c in admitted.response["children"]) == ["PodGroup", "Workload"]
    admitted = run(spec=spec(), labels=queue, workloads=[workload_child("train", state="admitted")],
                   podgroups=[owned(children(admitted, "PodGroup")[0])], status=admitted.response["status"])
    assert sorted(c["kind"] for c in admitted.response["children"]) == ["JobSet", "PodGroup", "Workload"]
    (jobset,) = children(admitted, "JobSet")
    assert [s["schedulingGroup"] for s in pod_specs(jobset)] == [{"podGroupName": "train-0"}]


# ---- a PodGroup that is not the gang the hooks build (issue 31) ---------------------------------------

def test_a_running_attempts_podgroup_with_a_smaller_min_count_is_never_claimed() -> None:
    """An edited (or adopted) PodGroup train-0 of minCount 1 for 2 pods: the scheduler may place the
    pods one by one, so even its own "scheduled" never becomes GangScheduled=True; the running
    attempt is kept, its JobSet and the group as they are."""
    s = spec()
    group = owned(podgroup_child("train", 0, state="scheduled", min_count=1))
    reader = FakeReader([make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)])
    d = run(reader, spec=s, jobsets=[grouped_jobset(s)], podgroups=[group],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "GangMismatch")
    assert "spec.schedulingPolicy.gang.minCount is 1, want 2" in found["message"]
    assert "JobSet train-0 runs on" in found["message"]
    assert d.response["status"]["phase"] == "Running"
    assert [c["kind"] for c in d.response["children"]] == ["JobSet", "PodGroup"]
    assert children(d, "PodGroup")[0]["spec"] == group["spec"], "kept as observed: never changed"


def test_a_mismatch_makes_a_warning_event() -> None:
    from hooks.core.events import transition_events
    from hooks.core.observed import PriorStatus

    s = spec()
    d = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[owned(podgroup_child("train", 0, min_count=1))],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    events = transition_events(PriorStatus(phase="Running", attempt=0, workload="train-0"), d.response["status"])
    assert [(e.reason, e.type) for e in events] == [("GangMismatch", "Warning")]
    assert "minCount is 1, want 2" in events[0].note


@pytest.mark.parametrize(("changes", "words"), [
    ({"schedulingPolicy": {"basic": {}}}, "spec.schedulingPolicy.gang is basic, want a gang of minCount 2"),
    ({"schedulingPolicy": {"gang": {"minCount": 3}}}, "spec.schedulingPolicy.gang.minCount is 3, want 2"),
    ({"workloadRef": {"workloadName": "other", "templateName": "workers"}}, "spec.workloadRef is set"),
    ({"schedulingConstraints": {"topology": [{"key": "rack"}]}}, "spec.schedulingConstraints is set"),
    ({"disruptionMode": {"all": {}}}, "spec.disruptionMode is all, want single"),
])
def test_a_podgroup_that_differs_before_its_jobset_holds_the_jobset(changes: dict[str, Any], words: str) -> None:
    """An attempt not created yet whose PodGroup among the children differs from what the hooks
    build (policy, minCount, a Workload's template, topology, disruption): no JobSet (its pods
    would name that group), the group neither deleted nor changed, and the field named."""
    group = owned(podgroup_child("train", 0), **changes)
    d = run(spec=spec(), podgroups=[group])
    assert children(d, "JobSet") == []
    assert children(d, "PodGroup") == [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                        "metadata": {"name": "train-0", "namespace": "default",
                                                     "labels": group["metadata"]["labels"]},
                                        "spec": group["spec"]}]
    assert d.kind == "held" and d.response["status"]["phase"] == "Pending" and d.response["status"]["workload"] == ""
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("False", "GangMismatch")
    assert found["message"].startswith("not creating JobSet train-0: PodGroup train-0 is not the gang of 2 pods")
    assert words in found["message"] and "fix it or delete it" in found["message"]
    assert d.response["status"]["message"] == f"waiting: {found['message']}"
    again = run(spec=spec(), podgroups=[group], status=d.response["status"])
    assert again.response == d.response, "a fixed point"


def test_a_squatter_of_the_next_attempt_holds_its_jobset() -> None:
    """After a restart, PodGroup train-1 made by someone else: not among the Job's children (no
    controller-uid label: Metacontroller neither lists nor adopts it, and ignores the AlreadyExists
    of its own create). The JobSet never comes while the group is not the Job's; the Job says why."""
    s = spec(max_restarts=3)
    restarting = {"phase": "Restarting", "attempt": 0, "restarts": 1, "workload": "train-0"}
    d = run(spec=s, podgroups=[], status=restarting)
    assert d.response["status"]["attempt"] == 1
    assert [(c["kind"], c["metadata"]["name"]) for c in d.response["children"]] == [("PodGroup", "train-1")]
    found = condition(d)
    assert found is not None and found["reason"] == "WaitingForPodGroup"
    assert "a PodGroup train-1 this Job does not own is in the way (Metacontroller ignores AlreadyExists)" \
        in found["message"]
    again = run(spec=s, podgroups=[], status=d.response["status"])
    assert [(c["kind"], c["metadata"]["name"]) for c in again.response["children"]] == [("PodGroup", "train-1")]
    assert again.response["status"] == d.response["status"], "held until the squatter is gone"


def test_a_podgroup_another_controller_owns_is_never_the_jobs_gang() -> None:
    """A PodGroup of the attempt's name whose controller is not this Job (listed, as a stand-in or a
    later Metacontroller might): before the JobSet, held; with the JobSet running, not claimed."""
    s = spec()
    foreign = owned(podgroup_child("train", 0, state="scheduled"))
    foreign["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "other",
                                               "uid": uid("job/other"), "controller": True}]
    held = run(spec=s, podgroups=[foreign])
    assert children(held, "JobSet") == []
    found = condition(held)
    assert found is not None and found["reason"] == "GangMismatch"
    assert "not owned by this Job (its controller is Job other)" in found["message"]
    running = run(spec=s, jobsets=[grouped_jobset(s)], podgroups=[foreign],
                  status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    found = condition(running)
    assert found is not None and (found["status"], found["reason"]) == ("False", "GangMismatch")
    assert children(running, "JobSet") != []


def test_a_podgroup_being_deleted_holds_the_jobset_until_it_is_gone() -> None:
    group = owned(podgroup_child("train", 0))
    group["metadata"]["deletionTimestamp"] = "2025-12-31T23:59:00Z"
    d = run(spec=spec(), podgroups=[group])
    assert children(d, "JobSet") == []
    found = condition(d)
    assert found is not None and found["reason"] == "WaitingForPodGroup"
    assert "PodGroup train-0 is being deleted" in found["message"]


def test_the_matching_gang_is_still_claimed_with_what_the_api_server_fills_in() -> None:
    """The hooks' own PodGroup as the API server keeps it (priority admission's priority, the default
    disruptionMode, the podgroup-protection finalizer): the same gang, claimed once placed."""
    s = spec()
    group = owned(podgroup_child("train", 0, state="scheduled"), priority=0, disruptionMode={"single": {}})
    reader = FakeReader([make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)])
    d = run(reader, spec=s, jobsets=[grouped_jobset(s)], podgroups=[group],
            status={"phase": "Pending", "attempt": 0, "workload": "train-0"})
    found = condition(d)
    assert found is not None and (found["status"], found["reason"]) == ("True", "Scheduled")
    assert found["message"] == "PodGroup train-0 placed: the scheduler bound its gang of 2 pods together"
    first = run(spec=s, podgroups=[group])
    assert [c["kind"] for c in first.response["children"]] == ["JobSet", "PodGroup"], "created over its own group"


def test_mismatch_names_every_field_that_differs() -> None:
    group = {"metadata": {"ownerReferences": [{"kind": "Job", "name": "x", "uid": "u2", "controller": True}]},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": [{"name": "gpu"}]}}
    assert gang.mismatch(group, 2, "u1") == ("not owned by this Job (its controller is Job x)",
                                             "spec.schedulingPolicy.gang.minCount is 1, want 2",
                                             "spec.resourceClaims is set, the hooks set none")
    assert gang.mismatch({"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}, 2, "u1") == ()
    assert gang.mismatch({"spec": None}, 2, "u1") == ("spec.schedulingPolicy.gang is unset, want a gang of minCount 2",)


def test_the_gang_says_its_hold_as_a_value_that_decide_turns_into_a_step() -> None:
    """``gang.placement`` writes nothing into the work (issue 32): a new gang Job's JobSet waits for its
    PodGroup as a ``Hold`` that stops (``decide.gang_step``: held, Pending, no workload, a resync), and
    an unplaced gang as one that does not (the row's outcome stays, the Job Pending)."""
    observed = parse_request(job_request(spec=spec(), podgroups=[]), "sync")
    ctx = Context(observed, FakeReader(), NOW)
    work = Work.of(observed.status, phase="Pending", kind=Outcome.CREATED,
                   children=[build_jobset({"metadata": {"name": "train", "namespace": "default"}, "spec": spec()}, 0)])
    before = copy.deepcopy(work)
    placed = gang.placement(ctx, work)
    assert work == before, "the gang writes nothing: decide applies its step"
    assert placed is not None and placed.hold is not None and placed.hold.stops
    assert [c["kind"] for c in placed.children] == ["PodGroup"]
    assert placed.condition is not None and placed.condition.reason == Reason.WAITING_FOR_POD_GROUP
    step = decide_module.gang_step(placed, work.kind)
    assert (step.outcome, step.phase, step.workload, step.resync, step.message) == (
        Outcome.HELD, Phase.PENDING, "", True, placed.hold.message)
    unplaced = dataclasses.replace(placed, hold=gang.Hold("waiting for the scheduler", stops=False))
    step = decide_module.gang_step(unplaced, Outcome.KEPT)
    assert (step.outcome, step.phase, step.workload, step.resync) == (Outcome.KEPT, Phase.PENDING, None, False)


def test_the_gang_s_words_are_the_vocabulary_s() -> None:
    assert gang.CONDITION is ConditionType.GANG_SCHEDULED
    assert {gang.SCHEDULED, gang.WAITING, gang.UNAVAILABLE, gang.STARTED_WITHOUT_GANG, gang.NOT_REPORTED,
            gang.NOT_REQUESTED, gang.WAITING_FOR_PODGROUP, gang.MISMATCH} <= set(Reason)
    assert gang.POLICIES == tuple(GangPolicy) == ("Gang", "None")
    assert gang.WHEN_UNAVAILABLE == tuple(WhenUnavailable) == ("Wait", "StartWithoutGang")


def test_a_gang_kept_from_fitting_by_its_exclusions_says_so() -> None:
    """Issue 34 item 3: an attempt created with excluded nodes whose gang the scheduler cannot place
    names them, and, when the scheduler knows no more nodes than are excluded, says the exclusions may
    cover every node and what to do, instead of waiting silently."""
    s = spec()
    observed = grouped_jobset(s, 1)
    observed["spec"] = exclusion.exclude(copy.deepcopy(observed), ("node-a",))["spec"]
    observed["metadata"]["annotations"] = {exclusion.ANNOTATION: "node-a"}
    status = {"phase": "Pending", "attempt": 1, "restarts": 1, "workload": "train-1"}
    for known, every in (("0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector", False),
                         ("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector", True)):
        group = podgroup_child("train", 1, state="unschedulable", message=f"minCount (2) cannot be satisfied: {known}")
        d = run(spec=s, jobsets=[observed], podgroups=[group], status=status)
        found = condition(d)
        assert found is not None and "failed earlier attempts (node-a" in found["message"]
        assert ("may cover every node" in found["message"]) is every
        assert "excludes" in d.response["status"]["message"]
        assert children(d, "JobSet")[0]["spec"] == observed["spec"], "the observed JobSet keeps its exclusions"
