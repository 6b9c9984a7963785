"""build_jobset: design §3 shape, labels, policies, validation and the JobSet CRD schema."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

from hooks.jobset import InvalidSpec, build_jobset
from tests import crdschema
from tests.fake_reader import job_spec

JOBSET_CRD = "jobset-v0.12.0-crd.yaml"


def job(spec: dict[str, Any], name: str = "train", namespace: str = "team-a") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod_labels(jobset: dict[str, Any], index: int) -> dict[str, str]:
    return jobset["spec"]["replicatedJobs"][index]["template"]["spec"]["template"]["metadata"]["labels"]


@functools.cache
def _schema() -> dict[str, Any]:
    return crdschema.crd_schema(crdschema.require_reference(JOBSET_CRD), "v1alpha2")


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Errors of ``obj`` against the published JobSet v1alpha2 schema (skips when it is absent)."""
    crdschema.require_reference(JOBSET_CRD)
    return crdschema.validate(obj, _schema(), strict=True)


def test_shape_and_labels_without_launcher() -> None:
    out = build_jobset(job(job_spec()), 3)
    assert out["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and out["kind"] == "JobSet"
    assert out["metadata"] == {"name": "train-3", "namespace": "team-a",
                               "labels": {"nvcre.nvidia.com/job": "train", "nvcre.nvidia.com/attempt": "3"}}
    assert out["spec"]["failurePolicy"] == {"maxRestarts": 0}
    assert "successPolicy" not in out["spec"]
    assert pod_labels(out, 0) == {"team": "research", "nvcre.nvidia.com/job": "train",
                                  "nvcre.nvidia.com/attempt": "3"}


def test_launcher_gets_launcher_label_instead_of_job_label() -> None:
    spec = job_spec(launcher="launcher")
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"]["nvcre.nvidia.com/job"] = "x"
    out = build_jobset(job(spec), 0)
    assert pod_labels(out, 0) == {"team": "research", "nvcre.nvidia.com/launcher": "train",
                                  "nvcre.nvidia.com/attempt": "0"}
    assert pod_labels(out, 1)["nvcre.nvidia.com/job"] == "train"
    assert out["spec"]["successPolicy"] == {"operator": "Any", "targetReplicatedJobs": ["launcher"]}


def test_input_is_not_mutated_and_user_fields_pass_through() -> None:
    spec = job_spec()
    spec["replicatedJobs"][0]["groupName"] = "g"
    del spec["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    before = copy.deepcopy(spec)
    out = build_jobset(job(spec), 0)
    assert spec == before
    assert out["spec"]["replicatedJobs"][0]["groupName"] == "g"
    assert pod_labels(out, 0) == {"nvcre.nvidia.com/job": "train", "nvcre.nvidia.com/attempt": "0"}


@pytest.mark.parametrize(("spec", "code", "words"), [
    ({}, "NoReplicatedJobs", "at least one"),
    ({"replicatedJobs": []}, "NoReplicatedJobs", "at least one"),
    ({"replicatedJobs": ["w"]}, "InvalidReplicatedJob", "must be an object"),
    ({"replicatedJobs": [{"template": {}}]}, "InvalidReplicatedJob", "has no name"),
    ({"replicatedJobs": [{"name": "w"}]}, "InvalidReplicatedJob", "has no template"),
    ({"replicatedJobs": [{"name": "w", "template": {}}, {"name": "w", "template": {}}]},
     "DuplicateReplicatedJob", "more than once"),
    ({"replicatedJobs": [{"name": "w", "template": {}, "replicas": -1}]}, "InvalidReplicas", "non-negative"),
    ({"replicatedJobs": [{"name": "w", "template": {}, "replicas": True}]}, "InvalidReplicas", "non-negative"),
    ({"replicatedJobs": [{"name": "w", "template": {}}], "launcher": "l"}, "UnknownLauncher", "names no"),
    ({"replicatedJobs": [{"name": "w", "template": {}}], "maxRestarts": -2}, "InvalidMaxRestarts", "-2"),
    ({"replicatedJobs": [{"name": "w", "template": {"spec": {"template": "x"}}}]}, "InvalidReplicatedJob",
     "must be an object"),
    ({"replicatedJobs": [{"name": "W", "template": {}}]}, "NameTooLong", "DNS-1035"),
])
def test_invalid_specs(spec: dict[str, Any], code: str, words: str) -> None:
    with pytest.raises(InvalidSpec) as raised:
        build_jobset(job(spec), 0)
    assert raised.value.code == code
    assert words in raised.value.reason


def test_job_name_limit_uses_replicas_minus_one() -> None:
    rj = {"name": "worker", "replicas": 10, "template": {}}
    name = "a" * (63 - len("-0-worker-9"))
    build_jobset(job({"replicatedJobs": [rj]}, name=name), 0)
    with pytest.raises(InvalidSpec, match="generated job name"):
        build_jobset(job({"replicatedJobs": [{**rj, "replicas": 11}]}, name=name), 0)


def test_pod_name_limit_with_completions() -> None:
    rj = {"name": "w", "replicas": 1, "template": {"spec": {"completions": 4}}}
    name = "a" * (63 - len("-0-w-0-3-abcde"))
    build_jobset(job({"replicatedJobs": [rj]}, name=name), 0)
    with pytest.raises(InvalidSpec, match="generated pod name"):
        build_jobset(job({"replicatedJobs": [rj]}, name=name), 10)


def test_job_name_starting_with_a_digit_is_invalid_spec() -> None:
    with pytest.raises(InvalidSpec, match="DNS-1035"):
        build_jobset(job(job_spec(), name="1train"), 0)


@pytest.mark.parametrize("launcher", ["", "launcher"])
def test_output_validates_against_jobset_crd(launcher: str) -> None:
    assert schema_errors(build_jobset(job(job_spec(launcher=launcher)), 7)) == []


def test_schema_check_catches_a_broken_jobset() -> None:
    out = build_jobset(job(job_spec()), 0)
    out["spec"]["replicatedJobs"][0]["replicas"] = "two"
    assert schema_errors(out)
