"""The checkpoint gate (issue 33, ``hooks.core.checkpoint``): on suspend, Kueue eviction and (opt-in)
delete, a running attempt that mounts the control file is asked to save, the JobSet runs until the
workload acknowledges or the grace expires, then the drain is today's. Decisions on recorded-style
requests (``tests.support``), fed back as Metacontroller would."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hooks.core import checkpoint
from hooks.core.decide import Decision, decide
from hooks.core.jobset import InvalidSpec
from hooks.core.observed import parse_request
from hooks.core.request import read_spec
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child
from tests.support.requests import checkpoint_request, mounting

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STAMP = "2026-01-01T00:00:00Z"
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}
CHECKPOINTED = job_spec() | {"checkpoint": {"graceSeconds": 120}}


def pods(attempt: int = 0, n: int = 2) -> list[dict[str, Any]]:
    return [make_pod(f"train-{attempt}-worker-0-{i}", job="train", workload=f"train-{attempt}") for i in range(n)]


def run(reader: FakeReader | None = None, *, now: datetime = NOW, **request: Any) -> Decision:
    observed = parse_request(job_request(**request), "finalize" if request.get("finalizing") else "sync")
    return decide(observed, reader if reader is not None else FakeReader(), now)


def status(d: Decision) -> dict[str, Any]:
    return d.response["status"]


def condition(d: Decision, type_: str) -> dict[str, Any] | None:
    return next((c for c in status(d)["conditions"] if c["type"] == type_), None)


def kinds(d: Decision) -> list[tuple[str, str]]:
    return [(c["kind"], c["metadata"]["name"]) for c in d.response["children"]]


def control(d: Decision) -> dict[str, Any]:
    child = next(c for c in d.response["children"] if c["kind"] == "ConfigMap")
    return json.loads(child["data"][checkpoint.CONTROL_FILE])


def ack(record: dict[str, Any], step: int = 1200) -> dict[str, str]:
    return {checkpoint.ACK_ANNOTATION: json.dumps({"id": record["id"], "step": step})}


def suspending(spec: dict[str, Any] | None = None, prior: dict[str, Any] | None = None, **more: Any) -> Decision:
    """A running attempt 0 that mounts the control file, suspended."""
    return run(FakeReader(pods()), spec=(spec or CHECKPOINTED) | {"suspend": True},
               status=prior or {"phase": "Running", "attempt": 0, "workload": "train-0"},
               jobsets=[mounting(jobset_child("train", 0))], **more)


# ---- spec.checkpoint -----------------------------------------------------------------------------------

def test_the_policy_defaults_and_bounds() -> None:
    assert checkpoint.policy(read_spec({})) is None
    assert checkpoint.policy(read_spec({"checkpoint": None})) is None
    assert checkpoint.policy(read_spec({"checkpoint": {}})) == checkpoint.Policy(True, True, False, 180)
    assert checkpoint.policy(read_spec({"checkpoint": {"onDelete": True, "onSuspend": False, "graceSeconds": 30}})) == \
        checkpoint.Policy(False, True, True, 30)
    for bad in ({"graceSeconds": 29}, {"graceSeconds": 3601}, {"graceSeconds": True}, {"graceSeconds": 1.5},
                {"onSuspend": "yes"}, "on"):
        with pytest.raises(InvalidSpec) as refused:
            checkpoint.policy(read_spec({"checkpoint": bad}))
        assert refused.value.code == "InvalidCheckpoint"


def test_a_bad_checkpoint_spec_keeps_a_running_job_running() -> None:
    d = run(FakeReader(pods()), spec=job_spec() | {"checkpoint": {"graceSeconds": 5}},
            status={"phase": "Running", "attempt": 0, "workload": "train-0"}, jobsets=[jobset_child("train", 0)])
    assert d.kind == "invalid-spec" and kinds(d) == [("JobSet", "train-0")]
    assert condition(d, "InvalidSpec")["reason"] == "InvalidCheckpoint"
    assert "graceSeconds" in condition(d, "InvalidSpec")["message"]


def test_a_volume_named_as_the_control_file_s_is_refused() -> None:
    spec = CHECKPOINTED | {}
    spec["replicatedJobs"] = json.loads(json.dumps(spec["replicatedJobs"]))
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"] = [{"name": "nvcre-control"}]
    with pytest.raises(InvalidSpec, match="nvcre-control"):
        checkpoint.check(read_spec(spec))


# ---- the attempt mounts the control file ---------------------------------------------------------------

def test_a_new_attempt_mounts_the_control_configmap_in_every_container_and_answers_it() -> None:
    d = run(spec=CHECKPOINTED, configmaps=True)
    assert kinds(d) == [("JobSet", "train-0"), ("ConfigMap", "train-0-control")]
    pod_spec = d.response["children"][0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod_spec["volumes"] == [{"name": "nvcre-control", "configMap": {"name": "train-0-control"}}]
    assert pod_spec["containers"][0]["volumeMounts"] == [
        {"name": "nvcre-control", "mountPath": "/etc/nvcre/control", "readOnly": True}]
    assert control(d) == {"version": "v1", "job": "train", "namespace": "default", "attempt": 0, "request": None}


def test_without_the_configmap_child_type_no_attempt_mounts_the_control_file() -> None:
    d = run(spec=CHECKPOINTED)
    assert kinds(d) == [("JobSet", "train-0")]
    assert "volumes" not in d.response["children"][0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]


def test_without_spec_checkpoint_nothing_changes() -> None:
    d = run(spec=job_spec(), configmaps=True)
    assert kinds(d) == [("JobSet", "train-0")]
    assert "volumes" not in d.response["children"][0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"]
    suspended = run(FakeReader(pods()), spec=job_spec(suspend=True),
                    status={"phase": "Running", "attempt": 0, "workload": "train-0"},
                    jobsets=[mounting(jobset_child("train", 0))])
    assert kinds(suspended) == [] and "checkpoint" not in status(suspended)
    assert condition(suspended, "Checkpointed") is None


def test_an_attempt_keeps_the_shape_it_was_created_with() -> None:
    """spec.checkpoint set while an attempt runs without the mount: the JobSet is kept unmounted
    (JobSet templates are immutable), and a suspend asks nothing (NotRequested)."""
    kept = run(FakeReader(pods()), spec=CHECKPOINTED, status={"phase": "Running", "attempt": 0, "workload": "train-0"},
               jobsets=[jobset_child("train", 0)])
    assert kinds(kept) == [("JobSet", "train-0")]
    assert "volumes" not in kept.response["children"][0]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]
    d = run(FakeReader(pods()), spec=CHECKPOINTED | {"suspend": True},
            status={"phase": "Running", "attempt": 0, "workload": "train-0"}, jobsets=[jobset_child("train", 0)])
    assert kinds(d) == [] and status(d)["phase"] == "Suspending"
    assert condition(d, "Checkpointed")["reason"] == "NotRequested"


# ---- suspend: request, acknowledgement, expiry --------------------------------------------------------

def test_a_suspend_asks_the_workload_to_save_and_keeps_the_jobset_running() -> None:
    d = suspending()
    record = checkpoint_request(0, "suspend", STAMP, grace=120)
    assert (d.kind, status(d)["phase"]) == ("held", "Suspending")
    assert kinds(d) == [("JobSet", "train-0"), ("ConfigMap", "train-0-control")]
    assert status(d)["checkpoint"] == record
    assert condition(d, "Checkpointed")["reason"] == "Requested"
    assert record["id"] in status(d)["message"] and "2026-01-01T00:02:00Z" in status(d)["message"]
    assert control(d)["request"] == {key: record[key] for key in
                                     ("id", "attempt", "reason", "requestedAt", "deadline", "outcome")}
    assert d.response["resyncAfterSeconds"] > 0
    assert "ended" not in status(d)["attempts"][0] and status(d)["attempts"][0]["checkpointRequested"] == STAMP
    again = suspending(prior=status(d), now=NOW + timedelta(seconds=30))
    assert again.response == d.response  # a fixed point: the request time is not the call's clock


def test_an_acknowledgement_ends_the_wait_and_the_drain_is_today_s() -> None:
    first = suspending()
    record = status(first)["checkpoint"]
    d = suspending(prior=status(first), annotations=ack(record), now=NOW + timedelta(seconds=40))
    # acknowledged at the call's evidence time (here, with no managedFields, its clock), kept once written
    assert status(d)["checkpoint"] == record | {"outcome": "Acknowledged", "acknowledgedStep": 1200,
                                                "acknowledgedAt": "2026-01-01T00:00:40Z"}
    assert condition(d, "Checkpointed")["status"] == "True"
    assert condition(d, "Checkpointed")["reason"] == "Acknowledged"
    assert kinds(d) == [] and status(d)["phase"] == "Suspending"  # JobSet dropped; the barrier waits for the pods
    assert condition(d, "Drained")["reason"] == "WorkloadPresent"  # the barrier: the JobSet is still observed
    entry = status(d)["attempts"][0]
    assert (entry["outcome"], entry["checkpointStep"], entry["checkpointAcknowledged"]) == \
        ("Suspended", 1200, "2026-01-01T00:00:40Z")
    again = suspending(prior=status(d), annotations=ack(record), now=NOW + timedelta(seconds=90))
    assert status(again)["checkpoint"] == status(d)["checkpoint"]  # the JobSet still observed (a cache): the same


def test_an_acknowledgement_of_another_request_is_ignored_and_said() -> None:
    first = suspending()
    d = suspending(prior=status(first), annotations={checkpoint.ACK_ANNOTATION: json.dumps({"id": "0-suspend-1",
                                                                                            "step": 5})})
    assert d.kind == "held" and kinds(d)[0] == ("JobSet", "train-0")
    assert "an acknowledgement of request 0-suspend-1 is ignored" in status(d)["message"]
    assert status(d)["checkpoint"]["ignored"] == "0-suspend-1"
    unreadable = suspending(prior=status(first), annotations={checkpoint.ACK_ANNOTATION: "step 5"})
    assert unreadable.kind == "held" and "is ignored" in status(unreadable)["message"]


def test_the_grace_expires_and_the_drain_proceeds() -> None:
    first = suspending()
    d = suspending(prior=status(first), now=NOW + timedelta(seconds=120))
    assert status(d)["checkpoint"]["outcome"] == "GraceExpired"
    assert status(d)["checkpoint"]["expiredAt"] == "2026-01-01T00:02:00Z"
    assert condition(d, "Checkpointed")["reason"] == "GraceExpired"
    assert kinds(d) == []
    assert status(d)["attempts"][0]["checkpointExpired"] == "2026-01-01T00:02:00Z"


def test_once_drained_the_job_is_suspended_and_the_record_stays() -> None:
    first = suspending()
    acked = suspending(prior=status(first), annotations=ack(status(first)["checkpoint"]))
    d = run(spec=CHECKPOINTED | {"suspend": True}, status=status(acked), annotations=ack(status(first)["checkpoint"]))
    assert status(d)["phase"] == "Suspended"
    assert status(d)["checkpoint"]["outcome"] == "Acknowledged"


# ---- claims -------------------------------------------------------------------------------------------

def test_a_request_time_written_before_the_suspend_does_not_shorten_the_grace() -> None:
    forged = checkpoint_request(0, "suspend", "2025-12-31T00:00:00Z", grace=120)
    request = job_request(spec=CHECKPOINTED | {"suspend": True}, jobsets=[mounting(jobset_child("train", 0))],
                          status={"phase": "Suspending", "attempt": 0, "checkpoint": forged})
    request["parent"]["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "time": "2025-12-31T23:59:00Z",
         "fieldsV1": {"f:spec": {"f:suspend": {}}}}]
    d = decide(parse_request(request, "sync"), FakeReader(pods()), NOW)
    assert d.kind == "held"
    assert status(d)["checkpoint"]["requestedAt"] == "2025-12-31T23:59:00Z"
    assert status(d)["checkpoint"]["deadline"] == "2026-01-01T00:01:00Z"


def test_a_request_time_in_the_future_is_made_again() -> None:
    forged = checkpoint_request(0, "suspend", "2030-01-01T00:00:00Z", grace=120)
    d = suspending(prior={"phase": "Suspending", "attempt": 0, "checkpoint": forged})
    assert status(d)["checkpoint"]["requestedAt"] == STAMP


def test_an_acknowledged_status_without_the_annotation_still_waits() -> None:
    forged = checkpoint_request(0, "suspend", STAMP, grace=120, outcome="Acknowledged", acknowledgedStep=1,
                                acknowledgedAt=STAMP)
    d = suspending(prior={"phase": "Suspending", "attempt": 0, "checkpoint": forged})
    assert d.kind == "held" and status(d)["checkpoint"]["outcome"] == "Requested"
    assert kinds(d)[0] == ("JobSet", "train-0")


def test_a_waiting_gate_makes_a_running_jobset_legal_next_to_suspending() -> None:
    first = suspending()
    d = suspending(prior=status(first))
    assert condition(d, "StatusMismatch") is None


# ---- a resume while it waits ----------------------------------------------------------------------------

def test_a_resume_while_the_gate_waits_keeps_the_same_attempt_running() -> None:
    first = suspending()
    d = run(FakeReader(pods()), spec=CHECKPOINTED, status=status(first), jobsets=[mounting(jobset_child("train", 0))])
    assert (status(d)["phase"], status(d)["attempt"]) == ("Running", 0)
    assert kinds(d) == [("JobSet", "train-0"), ("ConfigMap", "train-0-control")]
    assert status(d)["checkpoint"]["outcome"] == "Cancelled"
    assert condition(d, "Checkpointed")["reason"] == "Cancelled"
    assert control(d)["request"] is None
    assert "ended" not in status(d)["attempts"][0]
    assert d.transition == "run"


# ---- Kueue's eviction and the delete ------------------------------------------------------------------

def test_an_eviction_keeps_the_quota_and_the_jobset_while_the_gate_waits() -> None:
    d = run(FakeReader(pods()), spec=CHECKPOINTED, labels=QUEUE, workloads=[workload_child("train", state="evicted")],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"},
            jobsets=[mounting(jobset_child("train", 0))])
    assert (d.kind, status(d)["phase"]) == ("held", "Suspending")
    assert ("JobSet", "train-0") in kinds(d) and ("Workload", "train") in kinds(d)
    record = status(d)["checkpoint"]
    assert record["reason"] == "preemption"
    assert record["requestedAt"] == STAMP  # not before Kueue's eviction (2025-12-31T23:00:00Z)
    acked = run(FakeReader(pods()), spec=CHECKPOINTED, labels=QUEUE, annotations=ack(record),
                workloads=[workload_child("train", state="evicted")], status=status(d),
                jobsets=[mounting(jobset_child("train", 0))])
    assert ("JobSet", "train-0") not in kinds(acked) and ("Workload", "train") in kinds(acked)  # quota until drained


def test_a_delete_asks_only_with_on_delete() -> None:
    prior = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    plain = run(FakeReader(pods()), spec=CHECKPOINTED, status=prior, jobsets=[mounting(jobset_child("train", 0))],
                finalizing=True, deleting="2025-12-31T23:30:00Z")
    assert kinds(plain) == [] and condition(plain, "Checkpointed")["reason"] == "NotRequested"
    spec = job_spec() | {"checkpoint": {"onDelete": True}}
    d = run(FakeReader(pods()), spec=spec, status=prior, jobsets=[mounting(jobset_child("train", 0))],
            finalizing=True, deleting="2025-12-31T23:30:00Z")
    assert (d.kind, status(d)["phase"]) == ("held", "Terminating") and d.response["finalized"] is False
    assert kinds(d) == [("JobSet", "train-0"), ("ConfigMap", "train-0-control")]
    assert status(d)["checkpoint"]["reason"] == "delete"


def test_a_request_whose_jobset_stopped_running_ends_workload_ended() -> None:
    first = suspending()
    d = run(FakeReader(pods()), spec=CHECKPOINTED | {"suspend": True}, status=status(first),
            jobsets=[mounting(jobset_child("train", 0, state="Failed"))])
    assert status(d)["checkpoint"]["outcome"] == "WorkloadEnded"
    assert kinds(d) == []


def test_a_status_checkpoint_of_the_wrong_type_is_a_400_naming_the_key() -> None:
    from hooks.core.declared import InvalidRequest
    with pytest.raises(InvalidRequest) as refused:
        parse_request(job_request(status={"phase": "Suspending", "checkpoint": {"attempt": "0"}}), "sync")
    assert refused.value.status == 400 and "checkpoint.attempt" in refused.value.message
    kept = parse_request(job_request(status={"checkpoint": {"outcome": "Requested", "extra": 1}}), "sync")
    assert kept.status.checkpoint == {"outcome": "Requested"}  # unknown keys: pruned, as the API server does


def test_a_pod_spec_whose_volumes_are_not_an_array_cannot_mount_the_control_file() -> None:
    spec = json.loads(json.dumps(CHECKPOINTED))
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["volumes"] = {"a": 1}
    d = run(spec=spec, configmaps=True)
    assert d.kind == "invalid-spec" and condition(d, "InvalidSpec")["reason"] == "InvalidCheckpoint"


@pytest.mark.parametrize("prior", [
    {"phase": "Running", "attempt": 0, "workload": "train-0"},                      # a steady sync
    {"phase": "Suspending", "attempt": 0, "checkpoint": checkpoint_request(0, "suspend", STAMP, grace=120)},
])
def test_the_checkpoint_costs_no_read_of_its_own(prior: dict[str, Any]) -> None:
    """A steady sync reads what it reads without the feature; a waiting gate reads no pod at all
    (the barrier is not asked while it holds): the acknowledgement comes with the parent."""
    suspended = prior["phase"] == "Suspending"
    with_it, without = FakeReader(pods()), FakeReader(pods())
    run(with_it, spec=CHECKPOINTED | {"suspend": suspended}, status=prior,
        jobsets=[mounting(jobset_child("train", 0))], configmaps=True)
    plain = {key: value for key, value in prior.items() if key != "checkpoint"}
    run(without, spec=job_spec() | {"suspend": suspended}, status=plain, jobsets=[jobset_child("train", 0)])
    if suspended:
        assert with_it.calls == [] and without.calls != []
    else:
        assert with_it.calls == without.calls != []


def test_a_preemption_s_request_is_not_made_again_when_kueue_s_other_conditions_move() -> None:
    """The request's floor is the Workload's Evicted time, not its newest condition: a later
    condition (Kueue requeueing, say) must not re-issue the request under a new id."""
    evicted = [workload_child("train", state="evicted")]
    first = run(FakeReader(pods()), spec=CHECKPOINTED, labels=QUEUE, workloads=evicted,
                status={"phase": "Running", "attempt": 0, "workload": "train-0"},
                jobsets=[mounting(jobset_child("train", 0))])
    moved = workload_child("train", state="evicted")
    moved["status"]["conditions"].append({"type": "Requeued", "status": "False", "reason": "Evicted", "message": "",
                                          "lastTransitionTime": "2026-01-01T00:00:30Z"})
    again = run(FakeReader(pods()), spec=CHECKPOINTED, labels=QUEUE, workloads=[moved], status=status(first),
                jobsets=[mounting(jobset_child("train", 0))], now=NOW + timedelta(seconds=40))
    assert status(again)["checkpoint"]["id"] == status(first)["checkpoint"]["id"]


def test_a_suspend_after_a_cancelled_request_asks_again_under_a_new_id() -> None:
    first = suspending()
    resumed = run(FakeReader(pods()), spec=CHECKPOINTED, status=status(first),
                  jobsets=[mounting(jobset_child("train", 0))], now=NOW + timedelta(seconds=10))
    assert status(resumed)["checkpoint"]["outcome"] == "Cancelled"
    old = status(first)["checkpoint"]
    again = suspending(prior=status(resumed), annotations=ack(old), now=NOW + timedelta(seconds=300))
    record = status(again)["checkpoint"]
    assert record["outcome"] == "Requested" and record["id"] != old["id"]  # not expired at once, not the old ack
    assert record["requestedAt"] == "2026-01-01T00:05:00Z" and record["ignored"] == old["id"]


def test_the_history_names_the_attempt_s_last_request_not_a_cancelled_one() -> None:
    """``status.attempts[]`` keeps one request's keys: a cancelled request leaves none (the attempt
    kept running), and a request made again is the one its entry names, with its own acknowledgement."""
    first = suspending()
    assert status(first)["attempts"][0]["checkpointRequested"] == STAMP
    resumed = run(FakeReader(pods()), spec=CHECKPOINTED, status=status(first),
                  jobsets=[mounting(jobset_child("train", 0))], now=NOW + timedelta(seconds=10))
    assert "checkpointRequested" not in status(resumed)["attempts"][0]
    again = suspending(prior=status(resumed), now=NOW + timedelta(seconds=300))
    record = status(again)["checkpoint"]
    assert status(again)["attempts"][0]["checkpointRequested"] == record["requestedAt"] == "2026-01-01T00:05:00Z"
    acked = suspending(prior=status(again), annotations=ack(record), now=NOW + timedelta(seconds=320))
    entry = status(acked)["attempts"][0]
    assert (entry["checkpointRequested"], entry["checkpointStep"], entry["checkpointAcknowledged"]) == (
        "2026-01-01T00:05:00Z", 1200, "2026-01-01T00:05:20Z")
    fed_back = suspending(prior=status(acked), annotations=ack(record), now=NOW + timedelta(seconds=400))
    assert status(fed_back)["attempts"] == status(acked)["attempts"], "a fixed point"
