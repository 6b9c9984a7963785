"""build_jobset: design §3 shape, labels, policies, validation and the JobSet CRD schema."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pytest

from hooks.core.jobset import MAX_ATTEMPT, InvalidSpec, build_jobset
from tests.support import crdschema, job_spec

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


def test_every_batch_job_template_carries_the_jobs_label() -> None:
    """JobSet copies a replicated job's template labels onto each batch Job it makes, so every batch
    Job of every attempt, the launcher's too, carries JOB_LABEL=<job>: the barrier finds them by the
    Job's name, whatever the status says (issue 31). User labels on the Job template stay."""
    spec = job_spec(launcher="launcher")
    spec["replicatedJobs"][0]["template"]["metadata"] = {"labels": {"tier": "a", "nvcre.nvidia.com/job": "x"}}
    out = build_jobset(job(spec), 7)
    assert [rj["template"]["metadata"]["labels"] for rj in out["spec"]["replicatedJobs"]] == [
        {"tier": "a", "nvcre.nvidia.com/job": "train"}, {"nvcre.nvidia.com/job": "train"}]
    assert schema_errors(out) == []
    bad = job_spec()
    bad["replicatedJobs"][0]["template"]["metadata"] = {"labels": {"tier": 1}}
    with pytest.raises(InvalidSpec, match=r"template\.metadata\.labels"):
        build_jobset(job(bad), 0)


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
    ({"replicatedJobs": [{"name": "W", "template": {}}]}, "InvalidName", "DNS-1035"),
    ({"replicatedJobs": [{"name": "w", "template": {"spec": {"parallelism": -1}}}]}, "InvalidReplicatedJob",
     "parallelism"),
    ({"replicatedJobs": [{"name": "w", "template": {"spec": {"completions": "4"}}}]}, "InvalidReplicatedJob",
     "completions"),
    ({"replicatedJobs": [{"name": "w", "replicas": 3, "template": {"spec": {"parallelism": 2**30}}}]},
     "TooManyPods", "over JobSet's limit"),
    ({"replicatedJobs": [{"name": "w", "template": {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}}]},
     "ManagedElsewhere", "kubernetes.io/job-controller"),
    ({"replicatedJobs": [{"name": "w", "template": {}}], "managedBy": "kueue.x-k8s.io/multikueue"},
     "ManagedElsewhere", "jobset.sigs.k8s.io/jobset-controller"),
])
def test_invalid_specs(spec: dict[str, Any], code: str, words: str) -> None:
    with pytest.raises(InvalidSpec) as raised:
        build_jobset(job(spec), 0)
    assert raised.value.code == code
    assert words in raised.value.reason


def test_job_name_limit_uses_replicas_minus_one_at_the_last_attempt() -> None:
    rj = {"name": "worker", "replicas": 10, "template": {"spec": {"completions": 0}}}
    name = "a" * (63 - len(f"-{MAX_ATTEMPT}-worker-9"))
    build_jobset(job({"replicatedJobs": [rj]}, name=name), 0)
    with pytest.raises(InvalidSpec, match="generated job name") as raised:
        build_jobset(job({"replicatedJobs": [{**rj, "replicas": 11}]}, name=name), 0)
    assert raised.value.code == "NameTooLong" and str(MAX_ATTEMPT) in raised.value.reason


def test_pod_name_limit_with_completions_defaulting_to_one() -> None:
    rj = {"name": "w", "replicas": 1, "template": {"spec": {"completions": 4}}}
    name = "a" * (63 - len(f"-{MAX_ATTEMPT}-w-0-3-abcde"))
    build_jobset(job({"replicatedJobs": [rj]}, name=name), 0)
    with pytest.raises(InvalidSpec, match="generated pod name"):
        build_jobset(job({"replicatedJobs": [{**rj, "template": {"spec": {"completions": 11}}}]}, name=name), 0)
    unset = {"name": "w", "replicas": 1, "template": {}}  # the batch API defaults completions to 1
    build_jobset(job({"replicatedJobs": [unset]}, name="a" * (63 - len(f"-{MAX_ATTEMPT}-w-0-0-abcde"))), 0)
    with pytest.raises(InvalidSpec, match="generated pod name"):
        build_jobset(job({"replicatedJobs": [unset]}, name="a" * (64 - len(f"-{MAX_ATTEMPT}-w-0-0-abcde"))), 0)


def test_names_are_judged_for_the_worst_attempt_so_they_never_park_a_job() -> None:
    """A 52-character name fits attempt 9 and not attempt 10: it is refused before attempt 0, so no
    restart is ever spent on a JobSet that cannot be created."""
    spec = {"replicatedJobs": [{"name": "worker", "replicas": 2, "template": {}}]}
    for attempt in (0, 9, 10, MAX_ATTEMPT):
        with pytest.raises(InvalidSpec) as raised:
            build_jobset(job(spec, name="j" * 52), attempt)
        assert raised.value.code == "NameTooLong"
    fits = "j" * (63 - len(f"-{MAX_ATTEMPT}-worker-1-0-abcde"))
    assert build_jobset(job(spec, name=fits), MAX_ATTEMPT)["metadata"]["name"] == f"{fits}-{MAX_ATTEMPT}"


def test_attempts_beyond_the_last_are_refused() -> None:
    with pytest.raises(InvalidSpec) as raised:
        build_jobset(job(job_spec()), MAX_ATTEMPT + 1)
    assert raised.value.code == "AttemptLimitReached"


@pytest.mark.parametrize("name", ["my.job", "1train", "a.b.c"])
def test_a_name_invalid_for_another_reason_than_length_is_invalid_name(name: str) -> None:
    with pytest.raises(InvalidSpec, match="DNS-1035") as raised:
        build_jobset(job(job_spec(), name=name), 0)
    assert raised.value.code == "InvalidName"


def test_the_controllers_own_managed_by_values_are_accepted() -> None:
    spec = job_spec()
    spec["managedBy"] = "jobset.sigs.k8s.io/jobset-controller"
    spec["replicatedJobs"][0]["template"]["spec"]["managedBy"] = "kubernetes.io/job-controller"
    out = build_jobset(job(spec), 0)
    assert schema_errors(out) == [] and "managedBy" not in out["spec"]


def test_messages_stay_short_whatever_the_input() -> None:
    with pytest.raises(InvalidSpec) as raised:
        build_jobset(job({"replicatedJobs": [{"name": "w", "template": {}, "replicas": list(range(10**4))}]}), 0)
    assert len(raised.value.reason) < 200


@pytest.mark.parametrize("launcher", ["", "launcher"])
def test_output_validates_against_jobset_crd(launcher: str) -> None:
    assert schema_errors(build_jobset(job(job_spec(launcher=launcher)), 7)) == []


def test_schema_check_catches_a_broken_jobset() -> None:
    out = build_jobset(job(job_spec()), 0)
    out["spec"]["replicatedJobs"][0]["replicas"] = "two"
    assert schema_errors(out)
