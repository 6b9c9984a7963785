"""No value the CRD admits is a 5xx, and a request without a parent uid is refused: what reproduced a
5xx (or a JobSet emitted as is that waits forever) on values the CRD admits or a request can carry, each
through the real handler.

A status time at the ends of datetime's range, a pod spec that is not an object, ``null`` counts and
drain limits, a Workload admission of the wrong shape: never a 5xx; a spec that cannot become a
JobSet is ``InvalidSpec`` naming the field; a request without a UID for its parent is a 400 and
decides and writes nothing.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.server.config import Settings
from hooks.server.effects import Effects
from hooks.server.handler import HookResult, handle
from hooks.server.writer import MemoryWriter
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child

NOW = datetime(2026, 1, 1, tzinfo=UTC)
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}
EDGES = ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00+23:59"]


def answer(body: dict[str, Any], reader: FakeReader | None = None, *, hook: str = "sync",
           effects: Effects | None = None) -> HookResult:
    return handle(json.dumps(body).encode(), hook, reader=reader if reader is not None else FakeReader(),
                  clock=lambda: NOW, settings=Settings(), effects=effects)


def ok(result: HookResult) -> dict[str, Any]:
    assert result.status_code == 200, result.body
    return result.body


def running_pods() -> list[dict[str, Any]]:
    return [make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)]


def names(body: dict[str, Any]) -> list[str]:
    return [child["metadata"]["name"] for child in body["children"]]


def invalid_spec(body: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in body["status"]["conditions"] if c["type"] == "InvalidSpec")


# ---- status times at the ends of datetime's range ---------------------------------------------------

@pytest.mark.parametrize("moment", EDGES)
def test_a_start_time_at_the_end_of_the_range_is_no_5xx_and_the_jobset_is_kept(moment: str) -> None:
    spec = {**job_spec(), "activeDeadlineSeconds": 3600}
    body = job_request(spec=spec, jobsets=[jobset_child("train", 0, created="2025-12-31T23:00:00Z")],
                       status={"phase": "Running", "attempt": 0, "workload": "train-0", "startTime": moment})
    kept = ok(answer(body, FakeReader(running_pods())))
    assert "train-0" in names(kept)
    assert kept["status"]["phase"] != "Failed"


@pytest.mark.parametrize("moment", EDGES)
def test_suspend_still_works_with_such_a_start_time(moment: str) -> None:
    spec = {**job_spec(suspend=True), "activeDeadlineSeconds": 3600}
    body = job_request(spec=spec, jobsets=[jobset_child("train", 0, created="2025-12-31T23:00:00Z")],
                       status={"phase": "Running", "attempt": 0, "workload": "train-0", "startTime": moment})
    suspending = ok(answer(body, FakeReader(running_pods())))
    assert suspending["status"]["phase"] == "Suspending" and suspending["children"] == []


@pytest.mark.parametrize("moment", EDGES)
def test_a_completion_time_at_the_end_of_the_range_deletes_nothing(moment: str) -> None:
    writer = MemoryWriter()
    effects = Effects(writer)
    spec = {**job_spec(), "ttlSecondsAfterFinished": 60}
    body = job_request(spec=spec, jobsets=[jobset_child("train", 0, state="Completed")],
                       status={"phase": "Succeeded", "attempt": 0, "workload": "train-0",
                               "startTime": "2025-12-31T00:00:00Z", "completionTime": moment})
    done = ok(answer(body, effects=effects))
    assert effects.flush()
    assert done["status"]["phase"] == "Succeeded"
    assert not [kind for kind, _ in writer.writes if kind != "event"], writer.writes


# ---- a pod spec that is not an object ---------------------------------------------------------------

def spec_with_pod_spec(pod_spec: Any) -> dict[str, Any]:
    spec = job_spec()
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"] = pod_spec
    return spec


@pytest.mark.parametrize("pod_spec", ["x", ["x"], 5, True])
def test_a_pod_spec_that_is_not_an_object_is_invalid_spec(pod_spec: Any) -> None:
    body = ok(answer(job_request(spec=spec_with_pod_spec(pod_spec))))
    assert body["children"] == []
    said = invalid_spec(body)
    assert said["status"] == "True" and said["reason"] == "InvalidReplicatedJob"
    assert "spec.replicatedJobs[0].template.spec.template.spec (worker) must be an object" in said["message"]


@pytest.mark.parametrize("pod_spec", ["x", ["x"], 5])
def test_a_pod_spec_that_is_not_an_object_is_invalid_spec_once_kueue_admits(pod_spec: Any) -> None:
    body = job_request(spec=spec_with_pod_spec(pod_spec), labels=QUEUE,
                       workloads=[workload_child("train", state="admitted")], status={"phase": "Queued"})
    held = ok(answer(body))
    assert [c["kind"] for c in held["children"]] == ["Workload"]
    assert invalid_spec(held)["reason"] == "InvalidReplicatedJob"


@pytest.mark.parametrize(("where", "value", "field"), [
    (("metadata", "annotations"), "x", "metadata.annotations"),
    (("metadata", "labels"), {"team": 5}, "metadata.labels"),
    (("metadata",), [], "metadata"),
    (("spec", "nodeSelector"), "x", "spec.nodeSelector"),
    (("spec", "tolerations"), "x", "spec.tolerations"),
    (("spec", "tolerations"), ["x"], "spec.tolerations"),
])
def test_the_pod_template_fields_the_hooks_write_must_have_their_type(where: tuple[str, ...], value: Any,
                                                                      field: str) -> None:
    spec = job_spec()
    node = spec["replicatedJobs"][0]["template"]["spec"]["template"]
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = value
    body = ok(answer(job_request(spec=spec, labels=QUEUE, workloads=[workload_child("train", state="admitted")],
                                 status={"phase": "Queued"})))
    assert f"template.spec.template.{field} (worker)" in invalid_spec(body)["message"]


# ---- null counts and limits -------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["parallelism", "completions"])
def test_a_null_count_is_unset(key: str) -> None:
    spec = job_spec()
    spec["replicatedJobs"][0]["template"]["spec"][key] = None
    created = ok(answer(job_request(spec=spec)))
    assert names(created) == ["train-0"]
    queued = ok(answer(job_request(spec=spec, labels=QUEUE, workloads=[])))
    workload = next(c for c in queued["children"] if c["kind"] == "Workload")
    assert workload["spec"]["podSets"][0]["count"] == 2


def test_a_null_stuck_after_beside_a_force_delete_is_its_default() -> None:
    spec = {**job_spec(), "drain": {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 600}}
    created = ok(answer(job_request(spec=spec)))
    assert names(created) == ["train-0"]
    too_soon = {**job_spec(), "drain": {"stuckAfterSeconds": None, "forceDeleteStuckPodsAfterSeconds": 60}}
    refused = ok(answer(job_request(spec=too_soon)))
    assert invalid_spec(refused)["reason"] == "InvalidTimeLimit"


# ---- a Workload admission of the wrong shape: admitted, nothing created yet -------------------------

WRONG_ADMISSIONS = [
    ("podSetAssignments", "worker", "status.admission.podSetAssignments"),
    ("podSetAssignments", [5], "status.admission.podSetAssignments"),
    ("flavors", "default-flavor", "status.admission.podSetAssignments[0].flavors"),
    ("flavors", {"nvidia.com/gpu": ["default-flavor"]}, "status.admission.podSetAssignments[0].flavors"),
    ("name", 5, "status.admission.podSetAssignments[0].name"),
    ("admissionChecks", {"x": 1}, "status.admissionChecks"),
    ("podSetUpdates", [{"name": "worker", "nodeSelector": "x"}], "status.admissionChecks[0].podSetUpdates[0]"),
]


def wrong_workload(key: str, value: Any) -> dict[str, Any]:
    workload = workload_child("train", state="admitted")
    admission = workload["status"]["admission"]
    if key == "podSetAssignments":
        admission["podSetAssignments"] = value
    elif key in ("flavors", "name"):
        admission["podSetAssignments"][0][key] = value
    elif key == "admissionChecks":
        workload["status"]["admissionChecks"] = value
    else:
        workload["status"]["admissionChecks"] = [{"name": "check", "state": "Ready", "podSetUpdates": value}]
    return workload


@pytest.mark.parametrize(("key", "value", "field"), WRONG_ADMISSIONS)
def test_an_admission_of_the_wrong_shape_creates_nothing_and_says_so(key: str, value: Any, field: str) -> None:
    body = job_request(labels=QUEUE, workloads=[wrong_workload(key, value)], status={"phase": "Queued"})
    held = ok(answer(body))
    assert [c["kind"] for c in held["children"]] == ["Workload"]
    assert held["status"]["phase"] == "Pending" and held.get("resyncAfterSeconds")
    assert field in held["status"]["message"]


@pytest.mark.parametrize(("key", "value", "field"), WRONG_ADMISSIONS[:3])
def test_an_admission_of_the_wrong_shape_keeps_what_runs_and_suspend_works(key: str, value: Any, field: str) -> None:
    workload = wrong_workload(key, value)
    status = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    body = job_request(labels=QUEUE, workloads=[workload], jobsets=[jobset_child("train", 0)], status=status)
    kept = ok(answer(body, FakeReader(running_pods())))
    assert sorted(names(kept)) == ["train", "train-0"]
    assert kept["status"]["phase"] == "Running"
    body["parent"]["spec"]["suspend"] = True
    suspending = ok(answer(body, FakeReader(running_pods())))
    assert suspending["status"]["phase"] == "Suspending" and names(suspending) == ["train"]


# ---- evidence times at the ends of datetime's range -------------------------------------------------

@pytest.mark.parametrize("created", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_creation_and_transition_times_at_the_ends_of_the_range_are_no_5xx(created: str) -> None:
    """The Job's creationTimestamp and a JobSet condition's lastTransitionTime are compared with the
    status' times, a clock skew allowed: compared as differences, never shifted past datetime's range."""
    jobset = jobset_child("train", 0, state="Completed", created=created)
    jobset["status"]["conditions"][0]["lastTransitionTime"] = created
    body = job_request(spec={**job_spec(), "ttlSecondsAfterFinished": 60}, jobsets=[jobset],
                       status={"phase": "Succeeded", "attempt": 0, "workload": "train-0",
                               "startTime": "2025-12-31T00:00:00Z", "completionTime": "2025-12-31T23:30:00Z"})
    body["parent"]["metadata"]["creationTimestamp"] = created
    ok(answer(body))
    first = job_request(jobsets=[jobset_child("train", 0, created=created)])
    first["parent"]["metadata"]["creationTimestamp"] = created
    assert "train-0" in names(ok(answer(first, FakeReader(running_pods()))))


# ---- the request uid --------------------------------------------------------------------------------

@pytest.mark.parametrize("uid", [None, "", "uid-1", "6f1d2c3b4a594e688f709a1b2c3d4e5f", "6f1d2c3b-4a59-4e68-8f70",
                                 "6f1d2c3b-4a59-4e68-8f70-9a1b2c3d4e5fff", "zf1d2c3b-4a59-4e68-8f70-9a1b2c3d4e5f",
                                 " 6f1d2c3b-4a59-4e68-8f70-9a1b2c3d4e5f", 5, ["x"]])
@pytest.mark.parametrize("hook", ["sync", "finalize"])
def test_a_request_without_a_uid_for_its_parent_is_a_400_and_writes_nothing(uid: Any, hook: str) -> None:
    writer = MemoryWriter()
    effects = Effects(writer)
    spec = {**job_spec(), "ttlSecondsAfterFinished": 0}
    body = job_request(spec=spec, jobsets=[jobset_child("train", 0, state="Completed")], finalizing=hook == "finalize",
                       status={"phase": "Succeeded", "attempt": 0, "workload": "train-0",
                               "startTime": "2025-12-31T00:00:00Z", "completionTime": "2025-12-31T23:30:00Z"})
    control = copy.deepcopy(body)
    if uid is None:
        del body["parent"]["metadata"]["uid"]
    else:
        body["parent"]["metadata"]["uid"] = uid
    refused = answer(body, hook=hook, effects=effects)
    assert refused.status_code == 400 and refused.decision is None
    assert set(refused.body) == {"error"} and refused.body["error"].startswith("parent.metadata.uid: ")
    assert effects.flush() and writer.writes == []
    # The same request with its UID is answered, and asks for writes (the TTL delete, its Event).
    assert answer(control, hook=hook, effects=effects).status_code == 200
    assert effects.flush() and writer.writes
    if hook == "sync":
        assert ("delete-job", {"namespace": "default", "name": "train",
                               "uid": control["parent"]["metadata"]["uid"]}) in writer.writes


def test_an_upper_case_uuid_is_a_uid() -> None:
    body = job_request()
    body["parent"]["metadata"]["uid"] = body["parent"]["metadata"]["uid"].upper()
    assert answer(body).status_code == 200
