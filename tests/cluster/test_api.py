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

from podread import JOB_LABEL, ApiError, LiveClient, PodSelector
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REPO, ensure_namespace, load_documents, service_account_token
from tests.e2e.cluster import clone

pytestmark = pytest.mark.cluster

SAMPLES = REPO / "manifests" / "samples"
PAYLOADS = REPO / "tests" / "payloads"
CEL_MESSAGES = {"launcher-not-a-replicated-job.yaml": "launcher must name an entry of replicatedJobs"}


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
    for path in sorted(SAMPLES.glob("*.yaml")):
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


@pytest.mark.xfail(strict=True, reason="found on the real server: replacing a template's content by other unknown "
                   "fields passes `self == oldSelf` (changing a value in it is refused); cause not yet known")
def test_template_edits_are_refused(control_plane: ControlPlane, installed: dict) -> None:
    ensure_namespace(control_plane.api_client(), "crd-template")
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "tpl"},
            "spec": {"replicatedJobs": [{"name": "worker", "template": {"spec": {"parallelism": 1}}}]}}
    _create_job(control_plane, "crd-template", body)
    with pytest.raises(ApiException) as refused:
        _custom(control_plane).patch_namespaced_custom_object(
            "nvcre.nvidia.com", "v1alpha1", "crd-template", "jobs", "tpl",
            {"spec": {"replicatedJobs": [{"name": "worker", "replicas": 1, "template": {"spec": {"x": 1}}}]}})
    assert "replicatedJobs is immutable" in refused.value.body


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
    assert names == ["Name", "Phase", "Attempt", "Restarts", "Active", "Age"]
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


def test_every_emitted_jobset_survives_the_jobset_crd(control_plane: ControlPlane, installed: dict) -> None:
    ensure_namespace(control_plane.api_client(), "emitted")
    custom = _custom(control_plane)
    checked = 0
    for response_file in sorted(PAYLOADS.glob("*/response.json")):
        answer = json.loads(response_file.read_text())
        body = answer.get("body", answer)
        for child in body.get("children") or []:
            child = clone(child)
            child["metadata"]["namespace"] = "emitted"
            created = custom.create_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", "emitted", "jobsets",
                                                             child, field_validation="Strict")
            try:
                back = custom.get_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", "emitted", "jobsets",
                                                           created["metadata"]["name"])
                missing = _subset_missing(child["spec"], back["spec"], "spec")
                assert not missing, f"{response_file.parent.name}: pruned or changed {missing}"
                assert _subset_missing(child["metadata"].get("labels") or {}, back["metadata"].get("labels")) == []
            finally:
                custom.delete_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", "emitted", "jobsets",
                                                       created["metadata"]["name"])
            checked += 1
    assert checked >= 10, "the payloads carry JobSets"


# ---- LiveClient on the real server ---------------------------------------------------------------


def _pods(plane: ControlPlane, namespace: str, count: int, labels: Mapping[str, str]) -> list[str]:
    core = kubernetes.client.CoreV1Api(plane.api_client())
    names = []
    for index in range(count):
        name = f"pod-{index}"
        core.create_namespaced_pod(namespace, {"metadata": {"name": name, "labels": dict(labels)},
                                               "spec": {"containers": [{"name": "c", "image": "i"}]}})
        names.append(name)
    return names


def test_live_client_pages_and_selects_on_the_real_server(control_plane: ControlPlane, installed: dict,
                                                          hooks_token: str) -> None:
    ensure_namespace(control_plane.api_client(), "live-paging")
    names = _pods(control_plane, "live-paging", 12, {JOB_LABEL: "paged"})
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


def test_the_hooks_service_account_reads_pods_and_nothing_more(control_plane: ControlPlane, installed: dict,
                                                               hooks_token: str) -> None:
    core = kubernetes.client.CoreV1Api(control_plane.api_client(hooks_token))
    core.list_pod_for_all_namespaces(limit=1, _preload_content=False)
    core.list_namespaced_pod("default", limit=1, _preload_content=False)
    watching = core.list_pod_for_all_namespaces(watch=True, timeout_seconds=1, allow_watch_bookmarks=True,
                                                label_selector="nvcre.nvidia.com/job", _preload_content=False)
    assert watching.status == 200  # the watch that feeds the pod cache
    watching.read()
    watching.release_conn()
    for forbidden in (lambda: core.list_namespaced_secret("nvcre-system", _preload_content=False),
                      lambda: core.delete_collection_namespaced_pod("default", _preload_content=False),
                      lambda: core.create_namespaced_pod("default", {"metadata": {"name": "x"}, "spec": {
                          "containers": [{"name": "c", "image": "i"}]}}, _preload_content=False),
                      lambda: _custom(control_plane, hooks_token).list_namespaced_custom_object(
                          "nvcre.nvidia.com", "v1alpha1", "default", "jobs")):
        with pytest.raises(ApiException) as refused:
            forbidden()
        assert refused.value.status == 403
