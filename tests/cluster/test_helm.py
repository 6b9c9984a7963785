"""``helm install`` of charts/nvcre-hooks on the tier's real API server (issue 35), and the hooks
serving a Job with what it installed.

The chart goes on a control plane of its own (the tier's binaries, started for this module): the
session's has manifests/ applied with ``kubectl apply``, whose objects Helm refuses to take over, and
an uninstall there would take from the other tests what they use. JobSet's CRD (from its module) and
Metacontroller's CompositeController CRD (../shared/reference) go first, as on a cluster that has both.

- With the token generated: the API server holds the CRD, the Namespace with Pod Security enforced,
  the RBAC (judged by the API server's own authorizer for the hooks' ServiceAccount), the
  CompositeController and the Secret it names, which the Deployment mounts; a token rotated by hand
  survives ``helm upgrade``; the hooks, run as that ServiceAccount (locally, as everywhere on the
  tier) with the token files the Deployment's volume projects, serve a Job that Metacontroller's
  stand-in, built from the installed CompositeController and its Secret, syncs: the JobSet is
  created and the status written, every call answered 200 (or 409 while the stand-in's cache is
  behind, answered on the next sync). ``helm uninstall`` keeps the CRD (and so
  the Job) and the Namespace, and removes the rest.
- What ``kubectl apply -k manifests/`` installed, with the operator's Secret, taken over by
  ``helm install --take-ownership`` with ``hookToken.existingSecret``: the same Deployment, no Secret
  made, the operator's named by the CompositeController and the Deployment, and left by uninstall.
"""

from __future__ import annotations

import base64
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

from tests.cluster.conftest import built_jobset, metacontroller_crds, missing
from tests.cluster.controlplane import ControlPlane, binaries_dir
from tests.cluster.jobsetctl import jobset_crds
from tests.cluster.kube import (
    REQUEST_TIMEOUT,
    Applier,
    ensure_namespace,
    kustomized_manifests,
    load_documents,
    service_account_token,
)
from tests.cluster.metacontroller import ApiBackend, CompositeControllerStandIn, Metacontroller, token_secret
from tests.cluster.world import KubeconfigSource, ServerView
from tests.e2e.harness import job_spec
from tests.e2e.invariants import Invariants
from tests.e2e.server import HookServer
from tests.support.helm import CHART, NAMESPACE, RELEASE, HelmMissing, helm_binary, run_helm, values_args

pytestmark = pytest.mark.cluster

CRD = "jobs.nvcre.nvidia.com"
COMPOSITE_CONTROLLERS = "compositecontrollers.metacontroller.k8s.io"
"""The one CRD of Metacontroller's the chart needs (its CompositeController)."""
HOOKS_SA = f"system:serviceaccount:{NAMESPACE}:nvcre-hooks"
JOBS_NAMESPACE = "helm-served"


class HelmPlane:
    """The module's control plane, the helm binary and an admin kubeconfig for it."""

    def __init__(self, plane: ControlPlane, helm: Path, kubeconfig: str) -> None:
        self.plane, self.helm, self.kubeconfig = plane, helm, kubeconfig
        self.api = plane.api_client()
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.custom = kubernetes.client.CustomObjectsApi(self.api)

    def helm_run(self, *args: str, values: dict[str, Any] | None = None) -> str:
        """``helm ARGS`` against the plane; fails the test with helm's words on a non-zero exit."""
        result = run_helm(self.helm, [*args, *values_args(values or {})], kubeconfig=self.kubeconfig)
        assert result.returncode == 0, f"helm {' '.join(args)}: {result.stdout}{result.stderr}"
        return result.stdout

    def install(self, values: dict[str, Any] | None = None, *extra: str) -> None:
        self.helm_run("install", RELEASE, str(CHART), "--namespace", NAMESPACE, *extra, values=values)

    def secret(self, name: str) -> dict[str, str]:
        """The keys of Secret ``name`` of the hooks' namespace, decoded."""
        secret = self.core.read_namespaced_secret(name, NAMESPACE, _request_timeout=REQUEST_TIMEOUT)
        return {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}

    def deployment_secret(self) -> str:
        """The Secret the Deployment's hook-token volume projects."""
        deployment = kubernetes.client.AppsV1Api(self.api).read_namespaced_deployment(
            "nvcre-hooks", NAMESPACE, _request_timeout=REQUEST_TIMEOUT)
        volume = next(v for v in deployment.spec.template.spec.volumes if v.name == "hook-token")
        return str(volume.secret.secret_name)

    def exists(self, read: Any, *args: str) -> bool:
        try:
            read(*args, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True


@pytest.fixture(scope="module")
def helm_plane(control_plane: ControlPlane) -> Iterator[HelmPlane]:
    """A control plane of its own with JobSet's CRD and Metacontroller's CompositeController CRD
    (``control_plane`` is asked for first so that the tier's skip-or-fail rule applies here too), and
    helm (built on a miss)."""
    try:
        helm = helm_binary(build=True)
    except HelmMissing as exc:
        missing("helm", "the Helm chart's install test", exc)
    crds = metacontroller_crds()
    if not crds.is_file():
        missing("Metacontroller's CRDs", "the Helm chart's install test", FileNotFoundError(str(crds)))
    needed = [*jobset_crds(built_jobset()),
              *(crd for crd in load_documents(crds) if crd["metadata"]["name"] == COMPOSITE_CONTROLLERS)]
    with ControlPlane(binaries_dir()) as plane, tempfile.TemporaryDirectory(prefix="nvcre-helm-") as workdir:
        extensions = kubernetes.client.ApiextensionsV1Api(plane.api_client())
        for crd in needed:  # all created, then all waited on: the API server establishes them at once
            extensions.create_custom_resource_definition(crd, _request_timeout=REQUEST_TIMEOUT)
        for crd in needed:
            Applier(plane.api_client()).wait_established(crd["metadata"]["name"])
        yield HelmPlane(plane, helm, plane.write_kubeconfig(Path(workdir) / "kubeconfig"))


def allowed(api: kubernetes.client.ApiClient, verb: str, group: str, resource: str, namespace: str = "") -> bool:
    """The API server's own authorizer on whether the hooks' ServiceAccount may ``verb`` ``resource``."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"]
    review = {"spec": {"user": HOOKS_SA, "groups": groups,
                       "resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                              "namespace": namespace}}}
    answer = kubernetes.client.AuthorizationV1Api(api).create_subject_access_review(review)
    return bool(answer.status.allowed)


def project(secret: dict[str, str], directory: Path) -> dict[str, str]:
    """The Deployment's hook-token volume as the kubelet fills it: keys ``token`` and ``previous``
    as files; returns the hooks' environment naming them."""
    for key in ("token", "previous"):
        (directory / key).write_text(secret.get(key, ""))
    return {"NVCRE_HOOK_TOKEN_FILE": str(directory / "token"),
            "NVCRE_HOOK_PREVIOUS_TOKEN_FILE": str(directory / "previous")}


def test_helm_install_with_a_generated_token_serves_a_job_and_uninstall_keeps_the_crd(
        helm_plane: HelmPlane, tmp_path: Path) -> None:
    helm_plane.install(None, "--create-namespace")
    Applier(helm_plane.api).wait_established(CRD)
    api = helm_plane.api

    namespace = helm_plane.core.read_namespace(NAMESPACE, _request_timeout=REQUEST_TIMEOUT).metadata
    assert namespace.labels["pod-security.kubernetes.io/enforce"] == "restricted"
    crd = kubernetes.client.ApiextensionsV1Api(api).read_custom_resource_definition(CRD).metadata
    assert crd.annotations["helm.sh/resource-policy"] == "keep"
    assert crd.labels["app.kubernetes.io/managed-by"] == "Helm"

    grants = {("list", "", "pods"): True, ("watch", "", "pods"): True, ("get", "", "nodes"): True,
              ("list", "batch", "jobs"): True, ("get", "nvcre.nvidia.com", "jobs"): True,
              ("create", "events.k8s.io", "events"): True, ("delete", "nvcre.nvidia.com", "jobs"): True,
              ("delete", "", "pods"): False, ("list", "", "nodes"): True,
              ("watch", "", "nodes"): True, ("patch", "", "nodes"): False, ("list", "nvcre.nvidia.com", "jobs"): False,
              ("get", "", "secrets"): False, ("create", "jobset.x-k8s.io", "jobsets"): False}
    judged = {grant: allowed(api, *grant, namespace=JOBS_NAMESPACE) for grant in grants}
    assert judged == grants, "the chart's RBAC, as the API server judges it for the hooks"

    controller = helm_plane.custom.get_cluster_custom_object("metacontroller.k8s.io", "v1alpha1",
                                                            "compositecontrollers", "nvcre-jobs")
    sync = controller["spec"]["hooks"]["sync"]["webhook"]
    assert sync["service"] == {"name": "nvcre-hooks", "namespace": NAMESPACE, "port": 80, "protocol": "http"}
    assert sync["authorization"]["secretRef"] == {"name": "nvcre-hooks-token", "namespace": NAMESPACE, "key": "token"}
    assert helm_plane.deployment_secret() == "nvcre-hooks-token", "the hooks mount the Secret Metacontroller reads"
    generated = helm_plane.secret("nvcre-hooks-token")
    assert re.fullmatch(r"[A-Za-z0-9]{64}", generated["token"]) and generated["previous"] == ""

    # A rotation by hand (docs/operations.md, "Rotate the token"), then an upgrade: the Secret stays.
    rotated = {"token": "r" * 64, "previous": generated["token"]}
    helm_plane.core.patch_namespaced_secret("nvcre-hooks-token", NAMESPACE, {"stringData": rotated})
    helm_plane.helm_run("upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE)
    assert helm_plane.secret("nvcre-hooks-token") == rotated, "helm upgrade keeps the Secret's keys"

    metacontroller = CompositeControllerStandIn(api)
    assert metacontroller.token == rotated["token"]
    ensure_namespace(api, JOBS_NAMESPACE)
    env = project(helm_plane.secret(helm_plane.deployment_secret()), tmp_path)
    source = KubeconfigSource(helm_plane.plane, service_account_token(api, NAMESPACE, "nvcre-hooks"), "nvcre-hooks")
    with HookServer(source, env=env, args=["--workers", "1"]) as hooks:  # one worker starts sooner
        view = ServerView(api, JOBS_NAMESPACE)
        driver = Metacontroller(ApiBackend(api, [JOBS_NAMESPACE]), hooks.transport(), Invariants(view),
                                token=metacontroller.token, resync_period=1.0)  # fresh caches: no lag to wait out
        driver.create_job(JOBS_NAMESPACE, "served", job_spec(workers=2))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            driver.reconcile_due()
            job = driver.backend.get_parent(JOBS_NAMESPACE, "served") or {}
            jobsets = helm_plane.custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", JOBS_NAMESPACE,
                                                                     "jobsets")["items"]
            if jobsets and (job.get("status") or {}).get("phase"):
                break
            time.sleep(0.1)
    assert [js["metadata"]["name"] for js in jobsets] == ["served-0"], "the hooks' JobSet, made by Metacontroller"
    assert job["status"]["phase"], job
    assert driver.calls and all(call.reply.status == 200 for call in driver.calls if not _behind(call)), \
        [(call.hook, call.reply.status) for call in driver.calls]
    assert not driver.invariants.violations, driver.invariants.violations

    helm_plane.helm_run("uninstall", RELEASE, "--namespace", NAMESPACE)
    assert helm_plane.exists(kubernetes.client.ApiextensionsV1Api(api).read_custom_resource_definition, CRD)
    assert helm_plane.exists(helm_plane.core.read_namespace, NAMESPACE)
    assert driver.backend.get_parent(JOBS_NAMESPACE, "served") is not None, "the CRD kept, the Job is still there"
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    assert not helm_plane.exists(rbac.read_cluster_role, "nvcre-hooks-pod-reader")
    assert not helm_plane.exists(helm_plane.core.read_namespaced_secret, "nvcre-hooks-token", NAMESPACE)
    assert not helm_plane.exists(helm_plane.custom.get_cluster_custom_object, "metacontroller.k8s.io", "v1alpha1",
                                "compositecontrollers", "nvcre-jobs")


def test_an_install_of_kubectl_apply_k_moves_to_helm_with_its_secret(helm_plane: HelmPlane) -> None:
    """docs/operations.md, "Install with Helm": what ``kubectl apply -k manifests/`` installed, with
    the operator's token Secret, is taken over by ``helm install --take-ownership`` with
    ``hookToken.existingSecret``: the same Deployment (not recreated: its pods stay), now Helm's; no
    Secret made, the operator's named by both sides; and ``helm uninstall`` leaves that Secret."""
    applier = Applier(helm_plane.api)
    objects = kustomized_manifests()
    applier.apply_all([o for o in objects if o["kind"] in ("Namespace", "CustomResourceDefinition")])
    token = "s" * 64
    applier.apply(token_secret(token))
    applier.apply_all([o for o in objects if o["kind"] not in ("Namespace", "CustomResourceDefinition")])
    apps = kubernetes.client.AppsV1Api(helm_plane.api)
    before = apps.read_namespaced_deployment("nvcre-hooks", NAMESPACE).metadata

    helm_plane.install({"hookToken.existingSecret": "nvcre-hooks-token"}, "--take-ownership")
    try:
        after = apps.read_namespaced_deployment("nvcre-hooks", NAMESPACE).metadata
        assert after.uid == before.uid, "taken over, not recreated"
        assert after.labels["app.kubernetes.io/managed-by"] == "Helm" and "app.kubernetes.io/managed-by" not in (
            before.labels or {})
        assert "kind: Secret" not in helm_plane.helm_run("get", "manifest", RELEASE, "--namespace", NAMESPACE)
        assert CompositeControllerStandIn(helm_plane.api).token == token
        assert helm_plane.deployment_secret() == "nvcre-hooks-token"
    finally:
        helm_plane.helm_run("uninstall", RELEASE, "--namespace", NAMESPACE)
    assert helm_plane.secret("nvcre-hooks-token") == {"token": token, "previous": ""}, "the operator's Secret stays"


def _behind(call: Any) -> bool:
    """A call the hooks refused because the stand-in's cache was behind the API server (409, then
    answered on the next sync): not a refusal of the token or the RBAC."""
    return call.reply.status == 409 and b"behind the cluster" in bytes(call.reply.body or b"")
