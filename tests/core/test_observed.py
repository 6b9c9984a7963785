"""parse_request: what is a 4xx (shape, names), what is parsed, and both child keyings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hooks.core.observed import JOBSET_GROUP, InvalidRequest, PriorStatus, parse_request
from hooks.core.request import read_spec
from hooks.core.status import Condition
from tests.support import job_request, job_spec, jobset_child


def rejected(payload: object, status: int = 400) -> str:
    with pytest.raises(InvalidRequest) as raised:
        parse_request(payload, "sync")
    assert raised.value.status == status
    return raised.value.message


def with_path(path: str, value: Any) -> dict[str, Any]:
    """A valid request with ``value`` placed at dotted ``path`` (from the request root)."""
    payload = job_request(jobsets=[jobset_child("train", 0)], status={"phase": "Running"})
    node: Any = payload
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return payload


def test_parses_a_full_request() -> None:
    payload = job_request(spec=job_spec(max_restarts=2), jobsets=[jobset_child("train", 1)],
                          status={"phase": "Running", "attempt": 1, "restarts": 1, "workload": "train-1",
                                  "activePods": 2, "observedGeneration": 3, "unknown": {"x": 1},
                                  "conditions": [{"type": "Drained", "status": "True"}], "message": "m"})
    observed = parse_request(payload, "sync")
    assert (observed.namespace, observed.name) == ("default", "train")
    assert not observed.deletion_timestamp and not observed.finalizing
    assert observed.spec.max_restarts == 2
    assert observed.status == PriorStatus(phase="Running", attempt=1, restarts=1, workload="train-1",
                                          active_pods=2, conditions=(Condition(type="Drained", status="True"),),
                                          message="m")
    assert [js["metadata"]["name"] for js in observed.jobsets] == ["train-1"]


def test_both_keyings_give_the_same_jobsets() -> None:
    children = [jobset_child("train", 1), jobset_child("train", 0)]
    v1 = parse_request(job_request(jobsets=children, keying="v1"), "sync")
    v2 = parse_request(job_request(jobsets=children, keying="v2"), "sync")
    assert v1.jobsets == v2.jobsets
    assert [js["metadata"]["name"] for js in v1.jobsets] == ["train-0", "train-1"]


def test_name_and_namespace_default_from_the_key() -> None:
    child = jobset_child("train", 0)
    del child["metadata"]["name"], child["metadata"]["namespace"]
    payload = job_request()
    payload["children"][JOBSET_GROUP] = {"default/train-0": child}
    (jobset,) = parse_request(payload, "sync").jobsets
    assert (jobset["metadata"]["name"], jobset["metadata"]["namespace"]) == ("train-0", "default")


def test_missing_children_status_and_finalizing_are_empty() -> None:
    payload = job_request()
    del payload["children"], payload["finalizing"]
    observed = parse_request(payload, "finalize")
    assert observed.jobsets == () and observed.status == PriorStatus() and not observed.finalizing


def test_deleting_and_finalizing() -> None:
    observed = parse_request(job_request(finalizing=True, deleting="2026-01-01T00:00:00Z"), "finalize")
    assert observed.deletion_timestamp and observed.finalizing


def test_input_is_not_mutated() -> None:
    payload = job_request(jobsets=[jobset_child("train", 0)], keying="v2")
    before = copy.deepcopy(payload)
    parse_request(payload, "sync")
    assert payload == before


@pytest.mark.parametrize("payload", [[], "x", None, 3])
def test_not_an_object_is_400(payload: object) -> None:
    assert "expected an object" in rejected(payload)


def test_missing_parent_is_400() -> None:
    assert "parent is missing" in rejected({"children": {}})


@pytest.mark.parametrize(("field", "value"), [("apiVersion", "v1"), ("kind", "Pod"),
                                              ("apiVersion", "nvcre.nvidia.com/v1")])
def test_wrong_parent_kind_is_422(field: str, value: str) -> None:
    assert "expected apiVersion" in rejected(with_path(f"parent.{field}", value), 422)


@pytest.mark.parametrize(("path", "value", "message"), [
    ("parent", [], "parent: expected an object, got array"),
    ("parent.metadata.name", 5, "parent.metadata.name: expected a string, got integer"),
    ("parent.metadata.namespace", None, "parent.metadata.namespace: expected a string, got nothing"),
    ("parent.metadata.generation", "1", "parent.metadata.generation: expected an integer, got string"),
    ("parent.spec", "x", "parent.spec: expected an object, got string"),
    ("parent.spec.replicatedJobs", {}, "parent.spec.replicatedJobs: expected an array, got object"),
    ("parent.spec.maxRestarts", True, "parent.spec.maxRestarts: expected an integer, got boolean"),
    ("parent.spec.maxRestarts", 1.5, "parent.spec.maxRestarts: expected an integer, got number"),
    ("parent.spec.suspend", "true", "parent.spec.suspend: expected a boolean, got string"),
    ("parent.spec.launcher", 1, "parent.spec.launcher: expected a string, got integer"),
    ("parent.status", [], "parent.status: expected an object, got array"),
    ("parent.status.phase", 1, "parent.status.phase: expected a string, got integer"),
    ("parent.status.attempt", "2", "parent.status.attempt: expected an integer, got string"),
    ("parent.status.attempt", -1, "parent.status.attempt: expected an integer >= 0, got -1"),
    ("parent.status.restarts", False, "parent.status.restarts: expected an integer, got boolean"),
    ("parent.status.activePods", "3", "parent.status.activePods: expected an integer, got string"),
    ("parent.status.workload", 0, "parent.status.workload: expected a string, got integer"),
    ("parent.status.conditions", {}, "parent.status.conditions: expected an array, got object"),
    ("parent.status.conditions", [1], "parent.status.conditions[0]: expected an object, got integer"),
    ("parent.status.conditions", [{"status": "True"}], "parent.status.conditions[0].type: expected a string"),
    ("children", [], "children: expected an object, got array"),
    ("finalizing", "no", "finalizing: expected a boolean, got string"),
])
def test_wrong_types_are_400_naming_the_path(path: str, value: Any, message: str) -> None:
    assert message in rejected(with_path(path, value))


@pytest.mark.parametrize(("field", "value", "message"), [
    (None, "x", 'children["JobSet.jobset.x-k8s.io/v1alpha2"]["train-0"]: expected an object, got string'),
    ("metadata", 1, '["train-0"].metadata: expected an object'),
    ("status", "Failed", '["train-0"].status: expected an object'),
])
def test_bad_children_are_400(field: str | None, value: Any, message: str) -> None:
    payload = job_request(jobsets=[jobset_child("train", 0)])
    group = payload["children"][JOBSET_GROUP]
    if field is None:
        group["train-0"] = value
    else:
        group["train-0"][field] = value
    assert message in rejected(payload)


def test_bad_child_conditions_are_400() -> None:
    payload = job_request(jobsets=[jobset_child("train", 0)])
    payload["children"][JOBSET_GROUP]["train-0"]["status"]["conditions"] = "Failed"
    assert ".status.conditions: expected an array" in rejected(payload)
    payload["children"][JOBSET_GROUP] = []
    assert 'children["JobSet.jobset.x-k8s.io/v1alpha2"]: expected an object' in rejected(payload)


@pytest.mark.parametrize("name", ["Train", "train_1", "-train", "a" * 64, "", "train.", "tr..ain"])
def test_invalid_job_names_are_400(name: str) -> None:
    assert "parent.metadata.name" in rejected(job_request(name=name))


@pytest.mark.parametrize("name", ["t", "train.v2", "a" * 63, "1train"])
def test_valid_job_names_parse(name: str) -> None:
    assert parse_request(job_request(name=name), "sync").name == name


@pytest.mark.parametrize("namespace", ["Team", "team.a", "a" * 64, "team_a"])
def test_invalid_namespaces_are_400(namespace: str) -> None:
    assert "parent.metadata.namespace" in rejected(job_request(namespace=namespace))


def test_semantic_spec_errors_are_not_4xx() -> None:
    for spec in ({}, {"replicatedJobs": []}, {"replicatedJobs": [{"name": "w"}], "launcher": "x"},
                 {"replicatedJobs": [{"name": "w", "template": {}}], "maxRestarts": -1}):
        assert parse_request(job_request(spec=spec), "sync").spec == read_spec(spec)


def test_unknown_hook_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown hook"):
        parse_request(job_request(), "customize")


def test_a_null_parent_is_missing_not_the_wrong_kind() -> None:
    with pytest.raises(InvalidRequest) as raised:
        parse_request({"parent": None}, "sync")
    assert (raised.value.status, raised.value.message) == (400, "request: parent is missing")


@pytest.mark.parametrize("launcher", ["a b", "a,b", "Launcher", "l" * 64, "x=y"])
def test_a_launcher_that_cannot_go_in_a_selector_is_400(launcher: str) -> None:
    with pytest.raises(InvalidRequest) as raised:
        parse_request(job_request(spec=job_spec(launcher=launcher)), "sync")
    assert raised.value.status == 400 and "parent.spec.launcher" in raised.value.message


def test_a_launcher_naming_no_replicated_job_is_not_a_400() -> None:
    """A well-formed name that names no entry is InvalidSpec (a 200), the decision's to report."""
    observed = parse_request(job_request(spec=job_spec(launcher="mpirun")), "sync")
    assert observed.spec.launcher == "mpirun"


@pytest.mark.parametrize(("path", "value", "message"), [
    (("metadata", "annotations"), "x", ".metadata.annotations: expected an object, got string"),
    (("metadata", "annotations"), ["a"], ".metadata.annotations: expected an object, got array"),
    (("metadata", "annotations"), {"a": 1}, '.metadata.annotations["a"]: expected a string, got integer'),
    (("metadata", "labels"), {"team": None}, '.metadata.labels["team"]: expected a string, got null'),
    (("spec",), [], '["train-0"].spec: expected an object, got array'),
    (("apiVersion",), 2, '["train-0"].apiVersion: expected a string'),
    (("kind",), {}, '["train-0"].kind: expected a string'),
])
def test_bad_child_metadata_is_a_400_not_a_500(path: tuple[str, ...], value: Any, message: str) -> None:
    """The observed JobSet is re-emitted as observed when the spec cannot be built: a wrong type
    there made a 500 (an exception in the decision) instead of naming the bad field."""
    from datetime import UTC, datetime

    from hooks.server.app import create_app
    from hooks.server.config import Settings
    from tests.support import FakeReader

    payload = job_request(spec={"replicatedJobs": []}, jobsets=[jobset_child("train", 0)],
                          status={"phase": "Succeeded"})
    node = payload["children"][JOBSET_GROUP]["train-0"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert message in rejected(payload)
    app = create_app(FakeReader(), clock=lambda: datetime(2026, 1, 1, tzinfo=UTC), settings=Settings())
    answer = app.test_client().post("/sync", json=payload)
    assert answer.status_code == 400 and message in answer.get_json()["error"]


@pytest.mark.parametrize("where", ["child", "parent"])
def test_a_deletion_timestamp_the_api_server_would_not_store_is_a_400_naming_it(where: str) -> None:
    """A child read as "being deleted" is left out of the answer, so a junk ``deletionTimestamp`` is
    bad input (a 400 that changes nothing), never a JobSet dropped; an admitted spelling is read."""
    def request(stamp: str) -> dict[str, Any]:
        payload = job_request(status={"phase": "Running", "attempt": 0}, jobsets=[jobset_child("train", 0)])
        target = (next(iter(payload["children"][JOBSET_GROUP].values())) if where == "child"
                  else payload["parent"])["metadata"]
        target["deletionTimestamp"] = stamp
        return payload

    with pytest.raises(InvalidRequest) as raised:
        parse_request(request("x" * 40), "sync")
    assert raised.value.status == 400 and "deletionTimestamp" in str(raised.value)
    observed = parse_request(request("2025-12-31t23:31:00z"), "sync")
    assert (observed.jobsets[0]["metadata"].get("deletionTimestamp") if where == "child"
            else observed.deletion_timestamp) == "2025-12-31t23:31:00z"


def test_every_request_holds_the_one_frozen_default_gang_settings() -> None:
    """``Observed.gang`` defaults to one shared ``GangCluster`` (issue 32 item 4: none is built per
    request), which is safe because it cannot be changed: the defaults, equal to a new one."""
    import dataclasses

    from hooks.core.observed import NO_GANG_SETTINGS, GangCluster

    first, second = (parse_request(job_request(), "sync") for _ in range(2))
    assert first.gang is second.gang is NO_GANG_SETTINGS and GangCluster() == NO_GANG_SETTINGS
    with pytest.raises(dataclasses.FrozenInstanceError):
        NO_GANG_SETTINGS.api_note = "changed"  # type: ignore[misc]
