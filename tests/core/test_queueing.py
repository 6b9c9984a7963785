"""Queue-managed Jobs (docs/adr/0103): the Workload child, Queued, admission, eviction, and
the rule that the Workload (the quota) is left out only after the drain barrier passes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hooks.core import queueing
from hooks.core.decide import Decision, decide
from hooks.core.observed import InvalidRequest, parse_request
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod, workload_child
from tests.support.settling import drain_dated

NOW = datetime(2026, 1, 1, tzinfo=UTC)
QUEUE = {"kueue.x-k8s.io/queue-name": "team"}


def run(reader: FakeReader | None = None, *, labels: dict[str, str] | None = None,
        workloads: list[dict[str, Any]] | None = None, **request: Any) -> Decision:
    """Decides a request of a queue-managed Job (``QUEUE`` unless ``labels``) under the Kueue
    overlay (a Workload group, ``workloads`` default empty)."""
    body = job_request(labels=QUEUE if labels is None else labels,
                       workloads=[] if workloads is None else workloads, **request)
    observed = parse_request(body, "finalize" if request.get("finalizing") else "sync")
    return decide(observed, reader if reader is not None else FakeReader(), NOW)


def kinds(d: Decision) -> list[tuple[str, str]]:
    return [(c["kind"], c["metadata"]["name"]) for c in d.response["children"]]


def status(d: Decision) -> dict[str, Any]:
    return d.response["status"]


def condition(d: Decision, type_: str) -> dict[str, Any]:
    return next((c for c in status(d)["conditions"] if c["type"] == type_), {})


def pods(n: int = 2, attempt: int = 0) -> list[dict[str, Any]]:
    return [make_pod(f"train-{attempt}-worker-0-{i}", job="train") for i in range(n)]


def feed(d: Decision, **request: Any) -> Decision:
    """The same request again with the answer's status as parent.status."""
    return run(status=status(d), **request)


# ---- the Workload ---------------------------------------------------------------------------------

def test_a_new_queue_managed_job_emits_its_workload_and_no_jobset() -> None:
    d = run()
    assert kinds(d) == [("Workload", "train")]
    assert status(d)["phase"] == "Queued"
    assert condition(d, "Admitted")["status"] == "False"
    assert "LocalQueue team" in status(d)["message"]
    workload = d.response["children"][0]
    assert workload["spec"]["queueName"] == "team"
    assert workload["spec"]["podSets"][0]["name"] == "worker"
    assert workload["spec"]["podSets"][0]["count"] == 2
    labels = workload["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    assert labels["nvcre.nvidia.com/job"] == "train" and labels["team"] == "research"


def test_pod_set_count_is_replicas_times_parallelism() -> None:
    spec = job_spec(workers=3)
    spec["replicatedJobs"][0]["template"]["spec"]["parallelism"] = 4
    d = run(spec=spec)
    assert d.response["children"][0]["spec"]["podSets"][0]["count"] == 12


def test_kueue_labels_are_passed_on_and_priority_comes_from_the_related_class() -> None:
    labels = {**QUEUE, "kueue.x-k8s.io/priority-class": "high", "kueue.x-k8s.io/max-exec-time-seconds": "60",
              "kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/prebuilt-workload-name": "other", "team": "x"}
    d = run(labels=labels, priority_classes={"high": 1000, "low": 10})
    workload = d.response["children"][0]
    assert workload["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                    "name": "high"}
    assert workload["spec"]["priority"] == 1000
    assert workload["metadata"]["labels"] == {"kueue.x-k8s.io/max-exec-time-seconds": "60",
                                              "kueue.x-k8s.io/priority-class": "high",
                                              "kueue.x-k8s.io/queue-name": "team"}


def test_an_unknown_priority_class_queues_without_a_workload() -> None:
    d = run(labels={**QUEUE, "kueue.x-k8s.io/priority-class": "urgent"}, priority_classes={"high": 1000})
    assert kinds(d) == []
    assert status(d)["phase"] == "Queued"
    assert condition(d, "Admitted")["reason"] == "PriorityClassNotFound"
    assert d.response["resyncAfterSeconds"] > 0


def test_without_the_label_nothing_changes() -> None:
    d = run(labels={})
    assert kinds(d) == [("JobSet", "train-0")]
    assert status(d)["phase"] == "Pending"
    assert condition(d, "Admitted") == {}


def test_the_label_without_a_workload_child_type_is_an_invalid_spec() -> None:
    body = job_request(labels=QUEUE)  # the base CompositeController: no Workload group
    d = decide(parse_request(body, "sync"), FakeReader(), NOW)
    assert kinds(d) == []
    assert condition(d, "InvalidSpec")["reason"] == "QueueingUnavailable"


def test_more_than_eight_replicated_jobs_cannot_be_a_workload() -> None:
    spec = job_spec()
    template = spec["replicatedJobs"][0]
    spec["replicatedJobs"] = [{**template, "name": f"w{i}"} for i in range(9)]
    d = run(spec=spec)
    assert condition(d, "InvalidSpec")["reason"] == "TooManyPodSets"
    assert kinds(d) == []


# ---- admission ------------------------------------------------------------------------------------

def test_pending_workload_keeps_the_job_queued_with_kueues_reason() -> None:
    d = run(workloads=[workload_child("train", state="pending")], status={"phase": "Queued"})
    assert kinds(d) == [("Workload", "train")]
    assert status(d)["phase"] == "Queued"
    assert condition(d, "Admitted")["reason"] == "Pending"
    assert "insufficient unused quota" in status(d)["message"]
    again = feed(d, workloads=[workload_child("train", state="pending")])
    assert again.response == d.response


def test_admission_creates_the_jobset_and_keeps_the_workload() -> None:
    d = run(workloads=[workload_child("train", state="admitted")], status={"phase": "Queued"})
    assert kinds(d) == [("JobSet", "train-0"), ("Workload", "train")]
    assert status(d)["phase"] == "Pending"
    assert condition(d, "Admitted")["status"] == "True"
    assert "team-cq" in condition(d, "Admitted")["message"]
    jobset = d.response["children"][0]
    assert not any(key.startswith("kueue.x-k8s.io/") for key in jobset["metadata"]["labels"])


def test_a_restart_keeps_the_workload_throughout() -> None:
    wl = [workload_child("train", state="admitted")]
    failed = run(FakeReader(pods(1)), workloads=wl, spec=job_spec(max_restarts=1),
                 jobsets=[jobset_child("train", 0, state="Failed")], status={"phase": "Running"})
    assert status(failed)["phase"] == "Restarting"
    assert ("Workload", "train") in kinds(failed)
    holding = run(FakeReader(pods(1)), workloads=wl, spec=job_spec(max_restarts=1), status=status(failed))
    assert kinds(holding) == [("Workload", "train")]
    drained = run(FakeReader([]), workloads=wl, spec=job_spec(max_restarts=1), status=status(failed))
    assert kinds(drained) == [("JobSet", "train-1"), ("Workload", "train")]
    assert (status(drained)["attempt"], status(drained)["restarts"]) == (1, 1)


# ---- eviction -------------------------------------------------------------------------------------

def test_eviction_tears_down_and_keeps_the_workload_until_the_pods_are_gone() -> None:
    wl = [workload_child("train", state="evicted")]
    running = {"phase": "Running", "attempt": 0, "workload": "train-0"}
    d = run(FakeReader(pods(2)), workloads=wl, jobsets=[jobset_child("train", 0)], status=running)
    assert kinds(d) == [("Workload", "train")]
    assert status(d)["phase"] == "Suspending"
    assert condition(d, "Admitted")["reason"] == "Preempted"
    held = run(FakeReader(pods(1)), workloads=wl, status=status(d))
    assert kinds(held) == [("Workload", "train")], "the quota is held while a pod is active"
    assert condition(held, "Drained")["status"] == "False"
    gone = run(FakeReader([]), workloads=wl, status=status(held))
    assert kinds(gone) == [], "the barrier passed: the Workload goes, the quota with it"
    assert (status(gone)["phase"], status(gone)["attempt"], status(gone)["restarts"]) == ("Queued", 1, 0)
    again = run(FakeReader([]), workloads=wl, status=status(gone))
    assert drain_dated(status(gone), again.response["status"]), \
        "fed back, the attempt does not move twice (only the drain is dated, once)"
    assert run(FakeReader([]), workloads=wl, status=again.response["status"]).response["status"] == \
        again.response["status"]
    requeued = run(FakeReader([]), workloads=[], status=status(gone))
    assert kinds(requeued) == [("Workload", "train")]
    assert status(requeued)["phase"] == "Queued"


def test_a_failed_read_never_releases_the_quota() -> None:
    wl = [workload_child("train", state="evicted")]
    d = run(FakeReader(fail={"live"}), workloads=wl, status={"phase": "Suspending", "attempt": 0})
    assert kinds(d) == [("Workload", "train")]
    assert condition(d, "Drained")["reason"] == "ReadFailed"


def test_a_running_jobset_without_an_admitted_workload_is_an_eviction() -> None:
    d = run(FakeReader(pods(2)), workloads=[], jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    assert kinds(d) == []
    assert status(d)["phase"] == "Suspending"
    assert condition(d, "Admitted")["reason"] == "WorkloadMissing"


# ---- teardowns and the end ------------------------------------------------------------------------

@pytest.mark.parametrize("finalizing", [True, False])
def test_delete_and_suspend_release_the_workload_only_after_the_barrier(finalizing: bool) -> None:
    wl = [workload_child("train", state="admitted")]
    extra: dict[str, Any] = ({"finalizing": True, "deleting": "2026-01-01T00:00:00Z"} if finalizing
                             else {"spec": job_spec(suspend=True)})
    held = run(FakeReader(pods(1)), workloads=wl, status={"phase": "Running"}, **extra)
    assert kinds(held) == [("Workload", "train")]
    passed = run(FakeReader([]), workloads=wl, status=status(held), **extra)
    assert kinds(passed) == []
    assert status(passed)["phase"] == ("Terminating" if finalizing else "Suspended")


def test_delete_while_queued_releases_at_once() -> None:
    d = run(workloads=[workload_child("train", state="pending")], finalizing=True,
            deleting="2026-01-01T00:00:00Z", status={"phase": "Queued"})
    assert kinds(d) == [] and d.response["finalized"] is True


def test_a_finished_job_keeps_its_quota_until_its_last_pod_is_gone() -> None:
    wl = [workload_child("train", state="admitted")]
    completed = [jobset_child("train", 0, state="Completed")]
    lingering = run(FakeReader(pods(1)), workloads=wl, jobsets=completed, status={"phase": "Running"})
    assert status(lingering)["phase"] == "Succeeded"
    assert kinds(lingering) == [("JobSet", "train-0"), ("Workload", "train")]
    done = run(FakeReader([]), workloads=wl, jobsets=completed, status=status(lingering))
    assert kinds(done) == [("JobSet", "train-0")]
    assert condition(done, "Admitted")["reason"] == "QuotaReleased"
    assert feed(done, workloads=[], jobsets=completed).response == done.response


def test_a_parent_from_before_the_release_says_released_too_once_the_workload_is_gone() -> None:
    """Metacontroller's cache can answer a parent written before the release (Admitted True) after
    the Workload is gone: it must say what the parent written after it says, or last-writer-wins
    writes alternate Admitted True and False (seen on the cluster tier's preemption test)."""
    wl = [workload_child("train", state="admitted")]
    completed = [jobset_child("train", 0, state="Completed")]
    admitted = status(run(FakeReader(pods(2)), workloads=wl, jobsets=[jobset_child("train", 0)],
                          status={"phase": "Running", "attempt": 0, "workload": "train-0"}))
    assert condition_of(admitted, "Admitted")["status"] == "True"
    before_release = status(run(FakeReader(pods(1)), workloads=wl, jobsets=completed, status=admitted))
    assert condition_of(before_release, "Admitted")["status"] == "True", "a pod left: the quota is kept"
    stale = run(FakeReader([]), workloads=[], jobsets=completed, status=before_release)
    fresh = run(FakeReader([]), workloads=wl, jobsets=completed, status=before_release)
    assert condition(stale, "Admitted")["reason"] == condition(fresh, "Admitted")["reason"] == "QuotaReleased"
    assert condition(stale, "Admitted") == condition(fresh, "Admitted")


def condition_of(found: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in found["conditions"] if c["type"] == type_), {})


def test_removing_the_label_never_drops_a_held_workload() -> None:
    wl = [workload_child("train", state="admitted")]
    d = run(FakeReader(pods(2)), labels={}, workloads=wl, jobsets=[jobset_child("train", 0)],
            status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    assert ("Workload", "train") in kinds(d)


# ---- managedBy ------------------------------------------------------------------------------------

def test_a_jobset_managed_elsewhere_is_refused() -> None:
    jobset = jobset_child("train", 0)
    jobset["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    d = run(labels={}, jobsets=[jobset], status={"phase": "Running", "attempt": 0})
    assert condition(d, "InvalidSpec")["reason"] == "ManagedElsewhere"
    assert kinds(d) == [("JobSet", "train-0")], "kept as observed, nothing new"


def test_a_workload_dispatched_to_another_cluster_is_refused() -> None:
    wl = workload_child("train", state="admitted")
    wl["status"]["clusterName"] = "worker-1"
    d = run(workloads=[wl], status={"phase": "Queued"})
    assert condition(d, "InvalidSpec")["reason"] == "ManagedElsewhere"
    assert kinds(d) == [("Workload", "train")]


def test_wrong_types_in_a_workload_are_a_400() -> None:
    wl = workload_child("train", state="admitted")
    wl["status"]["conditions"] = "Admitted"
    with pytest.raises(InvalidRequest):
        parse_request(job_request(labels=QUEUE, workloads=[wl]), "sync")


def test_customize_relates_every_priority_class_and_flavor() -> None:
    assert queueing.customize_response() == {"relatedResources": [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "workloadpriorityclasses", "labelSelector": {}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "resourceflavors", "labelSelector": {}}]}


# ---- what the admission puts into the pods ----------------------------------------------------------

A100 = {"nodeLabels": {"nvidia.com/gpu.product": "A100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


def pod_spec(d: Decision) -> dict[str, Any]:
    jobset = next(c for c in d.response["children"] if c["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def test_the_admitted_flavors_node_labels_and_tolerations_go_into_the_pods() -> None:
    d = run(workloads=[workload_child("train", state="admitted")], flavors={"default-flavor": A100},
            status={"phase": "Queued"})
    spec = pod_spec(d)
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "A100"}
    assert spec["tolerations"] == A100["tolerations"]


def test_admission_check_pod_set_updates_go_into_the_pods() -> None:
    wl = workload_child("train", state="admitted")
    wl["status"]["admissionChecks"] = [{"name": "prov", "state": "Ready", "message": "", "lastTransitionTime":
                                        "2025-12-31T23:00:00Z", "podSetUpdates": [
                                            {"name": "worker", "labels": {"pool": "p1"},
                                             "nodeSelector": {"zone": "z1"}}]}]
    d = run(workloads=[wl], flavors={"default-flavor": A100}, status={"phase": "Queued"})
    jobset = next(c for c in d.response["children"] if c["kind"] == "JobSet")
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "A100", "zone": "z1"}
    assert template["metadata"]["labels"]["pool"] == "p1"
    assert template["metadata"]["labels"]["nvcre.nvidia.com/job"] == "train"


def test_an_unknown_flavor_holds_the_jobset() -> None:
    d = run(workloads=[workload_child("train", state="admitted")], flavors={}, status={"phase": "Queued"})
    assert kinds(d) == [("Workload", "train")]
    assert status(d)["phase"] == "Pending" and "default-flavor" in status(d)["message"]
    assert d.response["resyncAfterSeconds"] > 0


def test_a_node_selector_the_admission_contradicts_is_an_invalid_spec() -> None:
    spec = job_spec()
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "nvidia.com/gpu.product": "H100"}
    d = run(spec=spec, workloads=[workload_child("train", state="admitted")], flavors={"default-flavor": A100},
            status={"phase": "Queued"})
    assert condition(d, "InvalidSpec")["reason"] == "PodSetUpdateConflict"
    assert kinds(d) == [("Workload", "train")]


def test_a_running_admitted_jobset_is_kept_as_observed() -> None:
    jobset = jobset_child("train", 0)
    jobset["spec"] = {"replicatedJobs": [{"name": "worker", "template": {"spec": {"template": {
        "spec": {"nodeSelector": {"nvidia.com/gpu.product": "A100"}}}}}}]}
    d = run(FakeReader(pods(2)), workloads=[workload_child("train", state="admitted")], flavors={},
            jobsets=[jobset], status={"phase": "Running", "attempt": 0, "workload": "train-0"})
    assert status(d)["phase"] == "Running"
    assert pod_spec(d)["nodeSelector"] == {"nvidia.com/gpu.product": "A100"}
