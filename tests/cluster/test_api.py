"""What the real API server says of manifests/, of the JobSets the hooks emit, of ``LiveClient``'s
reads and of the hooks' RBAC (the cluster tier)."""

from __future__ import annotations

import json
import pathlib
import ssl
import urllib.request
from collections.abc import Mapping
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

from hooks.server.freshness import METADATA_ONLY, LiveParentVersions
from hooks.server.writer import ApiWriter
from podread import JOB_LABEL, ApiError, LiveClient, PodSelector
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REPO, Applier, create_pods, ensure_namespace, load_documents, service_account_token
from tests.cluster.kueue import KueueError, kueue_dir
from tests.e2e.cluster import clone

pytestmark = pytest.mark.cluster

SAMPLES = REPO / "manifests" / "samples"
PAYLOADS = REPO / "tests" / "payloads"
CEL_MESSAGES = {"launcher-not-a-replicated-job.yaml": "launcher must name an entry of replicatedJobs",
                "failure-policy-in-exit-code-zero.yaml": "exit code 0 is success",
                "force-delete-before-stuck.yaml": "forceDeleteStuckPodsAfterSeconds must be at least stuckAfterSeconds"}


def _custom(plane: ControlPlane, token: str | None = None) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(plane.api_client(token))


def _create_job(plane: ControlPlane, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
    doc = clone(dict(body))
    doc["metadata"]["namespace"] = namespace
    return _custom(plane).create_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", namespace, "jobs", doc,
                                                          field_validation="Strict")


# ---- the CRD ---------------------------------------------------------------------------------


def test_valid_samples_are_accepted_with_defaults(control_plane: ControlPlane, installed: dict) -> None:
    ensure_namespace(control_plane.api_client(), "samples-ok")
    for path in sorted([*SAMPLES.glob("*.yaml"), *SAMPLES.glob("kueue/*.yaml"), *SAMPLES.glob("gang/*.yaml")]):
        created = _create_job(control_plane, "samples-ok", load_documents(path)[0])
        spec = created["spec"]
        assert spec["maxRestarts"] >= 0 and spec["suspend"] in (True, False), path.name
        assert all("replicas" in rj for rj in spec["replicatedJobs"]), path.name


@pytest.mark.parametrize("path", sorted((SAMPLES / "invalid").glob("*.yaml")), ids=lambda p: p.name)
def test_invalid_samples_are_refused(control_plane: ControlPlane, installed: dict, path: pathlib.Path) -> None:
    ensure_namespace(control_plane.api_client(), "samples-bad")
    with pytest.raises(ApiException) as refused:
        _create_job(control_plane, "samples-bad", load_documents(path)[0])
    assert refused.value.status in (400, 422), refused.value.body
    if path.name in CEL_MESSAGES:
        assert CEL_MESSAGES[path.name] in refused.value.body


def test_defaults_and_immutable_replicated_jobs(control_plane: ControlPlane, installed: dict) -> None:
    ensure_namespace(control_plane.api_client(), "crd-rules")
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "rules"},
            "spec": {"replicatedJobs": [{"name": "worker", "template": {"spec": {"template": {"spec": {
                "containers": [{"name": "c", "image": "i"}]}}}}}]}}
    created = _create_job(control_plane, "crd-rules", body)
    assert created["spec"]["maxRestarts"] == 0 and created["spec"]["suspend"] is False
    assert created["spec"]["replicatedJobs"][0]["replicas"] == 1
    custom = _custom(control_plane)
    with pytest.raises(ApiException) as refused:
        custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "crd-rules", "jobs", "rules",
                                              {"spec": {"replicatedJobs": [{"name": "worker", "replicas": 3,
                                                                            "template": {}}]}})
    assert refused.value.status == 422 and "replicatedJobs is immutable" in refused.value.body
    with pytest.raises(ApiException) as launcher:
        custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "crd-rules", "jobs", "rules",
                                              {"spec": {"launcher": "worker"}})
    assert "launcher is immutable" in launcher.value.body
    custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "crd-rules", "jobs", "rules",
                                          {"spec": {"maxRestarts": 3, "suspend": True}})


def test_the_crds_immutability_rule_misses_a_replaced_field(control_plane: ControlPlane, installed: dict) -> None:
    """A real-server fact the hooks work around (``hooks.core.specpin``): CEL's ``self == oldSelf``
    over a template level that declares some fields and preserves the rest is true when both sides
    have as many fields and every field only the new side has is undeclared, so replacing one field
    by another is accepted; changing a value, adding or removing a field is refused. Should this
    test start failing (the server refuses the edit), the pin is no longer the only guard."""
    ensure_namespace(control_plane.api_client(), "crd-template")
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "tpl"},
            "spec": {"replicatedJobs": [{"name": "worker", "template": {"spec": {"parallelism": 1}}}]}}
    _create_job(control_plane, "crd-template", body)
    custom = _custom(control_plane)

    def edit(template: dict[str, Any]) -> None:
        custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "crd-template", "jobs", "tpl", {
            "spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": template}]}})

    for refused in ({"spec": {"parallelism": 2}}, {"spec": {"parallelism": 1, "x": 1}}, {"spec": {}}):
        with pytest.raises(ApiException) as error:
            edit(refused)
        assert "replicatedJobs is immutable" in error.value.body
    edit({"spec": {"x": 1}})  # parallelism replaced by an undeclared field: accepted
    stored = custom.get_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "crd-template", "jobs", "tpl")
    assert stored["spec"]["replicatedJobs"][0]["template"] == {"spec": {"x": 1}}


def test_printer_columns_through_the_table_api(control_plane: ControlPlane, installed: dict) -> None:
    ensure_namespace(control_plane.api_client(), "columns")
    body = load_documents(SAMPLES / "job-multinode.yaml")[0]
    _create_job(control_plane, "columns", body)
    context = ssl.create_default_context(cafile=str(control_plane.ca_file))
    request = urllib.request.Request(f"{control_plane.url}/apis/nvcre.nvidia.com/v1alpha1/namespaces/columns/jobs",
                                     headers={"Authorization": f"Bearer {control_plane.admin_token}",
                                              "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        table = json.loads(response.read())
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Phase", "Attempt", "Restarts", "Active", "Queue", "Gang", "Age"]
    priorities = {c["name"]: c.get("priority", 0) for c in table["columnDefinitions"]}
    assert priorities["Queue"] == 1, "the queue shows with -o wide only"
    assert priorities["Gang"] == 1, "the gang shows with -o wide only"
    assert table["rows"][0]["cells"][0] == body["metadata"]["name"]


# ---- the JobSets the hooks emit ----------------------------------------------------------------


def _subset_missing(sent: Any, got: Any, path: str = "") -> list[str]:
    """Paths of ``sent`` that ``got`` lacks or holds differently (what the server pruned or changed)."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [path]
        return [m for key, value in sent.items() for m in _subset_missing(value, got.get(key), f"{path}.{key}")]
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [path]
        pairs = enumerate(zip(sent, got, strict=True))
        return [m for i, (a, b) in pairs for m in _subset_missing(a, b, f"{path}[{i}]")]
    return [] if sent == got else [path]


def test_every_emitted_child_survives_its_crd(control_plane: ControlPlane, installed: dict) -> None:
    """Every JobSet the recorded answers emit against the JobSet CRD, every Workload (issue 14)
    against Kueue's Workload CRD from its module (when the Kueue build is cached), and every PodGroup
    (issue 22) against the API server's own scheduling.k8s.io/v1beta1 (the tier serves it)."""
    ensure_namespace(control_plane.api_client(), "emitted")
    custom = _custom(control_plane)
    try:
        crd = kueue_dir(build=False) / "crd" / "kueue.x-k8s.io_workloads.yaml"
        Applier(control_plane.api_client()).apply_all(load_documents(crd))
        workloads = True
    except KueueError:
        workloads = False
    plurals = {"JobSet": ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
               "Workload": ("kueue.x-k8s.io", "v1beta2", "workloads"),
               "PodGroup": ("scheduling.k8s.io", "v1beta1", "podgroups")}
    checked = {"JobSet": 0, "Workload": 0, "PodGroup": 0}
    for response_file in sorted(PAYLOADS.glob("*/response.json")):
        answer = json.loads(response_file.read_text())
        body = answer.get("body", answer)
        for child in body.get("children") or []:
            if child["kind"] == "Workload" and not workloads:
                continue
            group, version, plural = plurals[child["kind"]]
            child = clone(child)
            child["metadata"]["namespace"] = "emitted"
            # a name of its own: a deleted PodGroup stays until podgroup-protection lets it go, and
            # several answers emit the same llama-0
            child["metadata"]["name"] = f"{child['metadata']['name']}-e{sum(checked.values())}"
            created = custom.create_namespaced_custom_object(group, version, "emitted", plural, child,
                                                             field_validation="Strict")
            try:
                back = custom.get_namespaced_custom_object(group, version, "emitted", plural,
                                                           created["metadata"]["name"])
                missing = _subset_missing(child["spec"], back["spec"], "spec")
                assert not missing, f"{response_file.parent.name}: pruned or changed {missing}"
                assert _subset_missing(child["metadata"].get("labels") or {}, back["metadata"].get("labels")) == []
            finally:
                custom.delete_namespaced_custom_object(group, version, "emitted", plural, created["metadata"]["name"])
            checked[child["kind"]] += 1
    assert checked["JobSet"] >= 10, "the payloads carry JobSets"
    assert not workloads or checked["Workload"] >= 5, "the payloads carry Workloads"
    assert checked["PodGroup"] >= 2, "the gang payloads carry PodGroups"


def test_every_recorded_status_is_kept_whole_by_the_status_subresource(control_plane: ControlPlane,
                                                                       installed: dict) -> None:
    """The statuses the hooks answer (restartsByCause, lastFailure, startTime, ... included) pass the
    CRD's status schema and come back unpruned: Metacontroller writes them through /status, with the
    ``observedGeneration`` it adds (a bound the server could not take on it once made every write a 422)."""
    ensure_namespace(control_plane.api_client(), "statuses")
    custom = _custom(control_plane)
    job = _create_job(control_plane, "statuses", load_documents(SAMPLES / "job-policies.yaml")[0])
    checked = 0
    for response_file in sorted(PAYLOADS.glob("*/response.json")):
        status = {**json.loads(response_file.read_text())["status"], "observedGeneration": 1}
        job = custom.get_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "statuses", "jobs", "llm-finetune")
        job["status"] = status
        custom.replace_namespaced_custom_object_status("nvcre.nvidia.com", "v1alpha1", "statuses", "jobs",
                                                       "llm-finetune", job)
        back = custom.get_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "statuses", "jobs", "llm-finetune")
        assert _subset_missing(status, back["status"], "status") == [], response_file.parent.name
        checked += 1
    assert checked >= 60


# ---- LiveClient on the real server ---------------------------------------------------------------


def test_live_client_pages_and_selects_on_the_real_server(control_plane: ControlPlane, installed: dict,
                                                          hooks_token: str) -> None:
    ensure_namespace(control_plane.api_client(), "live-paging")
    names = create_pods(control_plane.api_client(), "live-paging", 12, {JOB_LABEL: "paged"})
    core = kubernetes.client.CoreV1Api(control_plane.api_client())
    core.create_namespaced_pod("live-paging", {"metadata": {"name": "other"},
                                               "spec": {"containers": [{"name": "c", "image": "i"}]}})
    core.create_namespaced_pod_binding("pod-3", "live-paging", {"metadata": {"name": "pod-3"},
                                                                 "target": {"kind": "Node", "name": "gpu-9"}},
                                       _preload_content=False)
    live = LiveClient(control_plane.api_client(hooks_token), page_size=5)
    pods = live.list_pods(PodSelector(namespace="live-paging", labels={JOB_LABEL: "paged"}))
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(names)
    on_node = live.list_pods(PodSelector(node_name="gpu-9", has_labels=(JOB_LABEL,)))
    assert [p["metadata"]["name"] for p in on_node] == ["pod-3"]
    everywhere = live.list_pods(PodSelector(has_labels=(JOB_LABEL,)))
    assert {"pod-0", "pod-11"} <= {p["metadata"]["name"] for p in everywhere}
    assert live.list_pods(PodSelector(namespace="no-such-namespace", labels={JOB_LABEL: "x"})) == []


def test_live_client_maps_real_status_errors(control_plane: ControlPlane, installed: dict,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_namespace(control_plane.api_client(), "live-errors")
    stranger = service_account_token(control_plane.api_client(), "live-errors", "default")
    with pytest.raises(ApiError) as forbidden:
        LiveClient(control_plane.api_client(stranger)).list_pods(PodSelector(namespace="live-errors"))
    assert forbidden.value.status == 403
    assert 'cannot list resource "pods"' in str(forbidden.value)
    monkeypatch.setattr(PodSelector, "field_selector", lambda self: "spec.bogus=x")
    with pytest.raises(ApiError) as bad:
        LiveClient(control_plane.api_client()).list_pods(PodSelector(namespace="live-errors"))
    assert bad.value.status == 400 and "spec.bogus" in str(bad.value)


# ---- RBAC ------------------------------------------------------------------------------------------


def test_the_parent_check_reads_the_live_jobs_version_as_metadata_with_the_hooks_rbac(
        control_plane: ControlPlane, installed: dict, hooks_token: str) -> None:
    """Issue 32 item 4: the parent check's GET asks for the Job's metadata only. The real API server
    answers a ``PartialObjectMetadata`` of the custom resource, with the live ``resourceVersion``,
    to the hooks' own service account; a Job that is not there is ``None``."""
    namespace = "parent-check"
    ensure_namespace(control_plane.api_client(), namespace)
    created = _create_job(control_plane, namespace, load_documents(sorted(SAMPLES.glob("*.yaml"))[0])[0])
    name = created["metadata"]["name"]
    live = LiveParentVersions(control_plane.api_client(hooks_token))
    assert live.resource_version(namespace, name) == created["metadata"]["resourceVersion"]
    assert live.resource_version(namespace, "no-such-job") is None
    raw = _custom(control_plane, hooks_token).get_namespaced_custom_object(
        "nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name, _preload_content=False,
        _headers={"Accept": METADATA_ONLY}).data
    answer = json.loads(raw)
    assert (answer["kind"], answer["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert "spec" not in answer and answer["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    _custom(control_plane).patch_namespaced_custom_object(  # a newer Job: the check sees the new version
        "nvcre.nvidia.com", "v1alpha1", namespace, "jobs", name, {"metadata": {"labels": {"touched": "yes"}}})
    assert live.resource_version(namespace, name) not in (None, created["metadata"]["resourceVersion"])


def test_the_hooks_service_account_reads_pods_and_makes_only_its_own_writes(
        control_plane: ControlPlane, installed: dict, hooks_token: str) -> None:
    core = kubernetes.client.CoreV1Api(control_plane.api_client(hooks_token))
    core.list_pod_for_all_namespaces(limit=1, _preload_content=False)
    core.list_namespaced_pod("default", limit=1, _preload_content=False)
    with pytest.raises(ApiException) as missing:  # allowed (get nodes), and this one does not exist
        core.read_node("no-such-node", _preload_content=False)
    assert missing.value.status == 404
    ensure_namespace(control_plane.api_client(), "rbac-writes")
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "rbac.check"},
             "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "nvcre.nvidia.com/nvcre-hooks",
             "reportingInstance": "test", "action": "Check", "reason": "Check", "type": "Normal", "note": "rbac",
             "regarding": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "x",
                           "namespace": "rbac-writes"}}
    writer = ApiWriter(control_plane.api_client(hooks_token))  # a zero fraction: the MicroTime must stay whole
    assert (writer.create_event("rbac-writes", event), writer.create_event("rbac-writes", event)) == (
        "created", "exists")
    custom = _custom(control_plane, hooks_token)
    with pytest.raises(ApiException) as absent:  # allowed (delete jobs), and this one does not exist
        custom.delete_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "rbac-writes", "jobs", "none")
    assert absent.value.status == 404
    with pytest.raises(ApiException) as no_pod:  # no pod delete in the base (issue 20: the force-delete overlay)
        core.delete_namespaced_pod("none", "rbac-writes", _preload_content=False)
    assert no_pod.value.status == 403
    watching = core.list_pod_for_all_namespaces(watch=True, timeout_seconds=1, allow_watch_bookmarks=True,
                                                label_selector="nvcre.nvidia.com/job", _preload_content=False)
    assert watching.status == 200  # the watch that feeds the pod cache
    watching.read()
    watching.release_conn()
    nodes = core.list_node(limit=1, _preload_content=False)  # the Node watch's list (issue 36 item 3); no write
    assert nodes.status == 200
    nodes.read()
    nodes.release_conn()
    for forbidden in (lambda: core.list_namespaced_secret("nvcre-system", _preload_content=False),
                      lambda: core.patch_node("none", {"metadata": {"labels": {"x": "y"}}}, _preload_content=False),
                      lambda: custom.patch_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", "rbac-writes",
                                                                    "jobs", "none", {"spec": {}}),
                      lambda: core.delete_collection_namespaced_pod("default", _preload_content=False),
                      lambda: core.create_namespaced_pod("default", {"metadata": {"name": "x"}, "spec": {
                          "containers": [{"name": "c", "image": "i"}]}}, _preload_content=False),
                      lambda: _custom(control_plane, hooks_token).list_namespaced_custom_object(
                          "nvcre.nvidia.com", "v1alpha1", "default", "jobs")):
        with pytest.raises(ApiException) as refused:
            forbidden()
        assert refused.value.status == 403
