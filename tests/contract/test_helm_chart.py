"""The Helm chart charts/nvcre-hooks against the kustomizations it stands for (issue 35).

``helm lint --strict`` passes for every values combination, and ``helm template`` of each renders,
object by object, what ``kubectl kustomize`` of the matching overlay builds: the same (kind,
namespace, name) set, then each object's content equal once parsed, except what the chart adds on
purpose (tests/support/helm.py, ``HELM_LABELS`` and ``HELM_ANNOTATIONS``; charts/nvcre-hooks/README.md):

- Helm's labels on every object's metadata (never on selectors or the pod template);
- ``helm.sh/resource-policy: keep`` on the CRD and the Namespace (``helm uninstall`` keeps them);
- the hook token Secret, rendered only when ``hookToken.existingSecret`` is empty (the manifests ship
  no token: the operator makes the Secret).

The combinations without an overlay of their own (Kueue with gang scheduling, everything at once) are
compared with the kustomization the overlays' comments tell an operator to write, made in a temporary
folder from the overlays themselves. The helm binary comes from ``make helm`` (tests/cluster/helm/);
without it these tests skip, except in CI, which builds it first and fails them instead.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm import (
    CHART,
    NAMESPACE,
    REPO,
    kustomize,
    normalised,
    render,
    require_helm,
    run_helm,
    values_args,
)

TOKEN_SECRET = "nvcre-hooks-token"
EXISTING = {"hookToken.existingSecret": TOKEN_SECRET}
"""The Secret the manifests' CompositeController and Deployment name, made by the operator."""
EVERYTHING = {**EXISTING, "kueue.enabled": True, "gang.enabled": True, "large.enabled": True,
              "monitoring.enabled": True, "forceDelete.namespaces": ["training"]}
ALL_CHILD_TYPES = """apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  name: nvcre-jobs
spec:
  childResources:
    - apiVersion: jobset.x-k8s.io/v1alpha2
      resource: jobsets
      updateStrategy:
        method: OnDelete
    - apiVersion: kueue.x-k8s.io/v1beta2
      resource: workloads
      updateStrategy:
        method: OnDelete
    - apiVersion: scheduling.k8s.io/v1beta1
      resource: podgroups
      updateStrategy:
        method: OnDelete
    - apiVersion: v1
      resource: configmaps
      updateStrategy:
        method: InPlace
"""
"""The patch manifests-gang/kustomization.yaml tells a Kueue user to write: a merge patch replaces the
list, so it names every child type (the checkpoint's ConfigMaps included)."""


@pytest.fixture(scope="module")
def helm() -> Path:
    return require_helm()


def written_kustomization(folder: Path, bases: list[str], resources: Mapping[str, Path],
                          patches: Mapping[str, str | Path]) -> Path:
    """A kustomization in ``folder`` listing the repository's ``bases`` (paths relative to the
    repository: kustomize refuses absolute ones), files copied in as ``resources`` (name -> source)
    and ``patches`` (name -> text, or a file to copy), with the base's part-of label."""
    for name, source in resources.items():
        shutil.copy(source, folder / name)
    for name, patch in patches.items():
        if isinstance(patch, Path):
            shutil.copy(patch, folder / name)
        else:
            (folder / name).write_text(patch)
    relative = os.path.relpath(REPO, folder)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"{relative}/{base}" for base in bases] + list(resources),
        "labels": [{"pairs": {"app.kubernetes.io/part-of": "nvcre-hooks"}}],
        "patches": [{"path": name} for name in patches],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


def overlay(name: str, tmp_path: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize`` of what an operator applies for values combination ``name``: an overlay
    of the repository, the base beside a folder that only adds to it (monitoring, the force-delete
    grants), or a kustomization made of the overlays as their comments say."""
    if name == "base":
        return kustomize(REPO / "manifests")
    if name in ("kueue", "gang", "large"):
        return kustomize(REPO / f"manifests-{name}")
    if name == "monitoring":
        return kustomize(REPO / "manifests") + kustomize(REPO / "manifests" / "monitoring")
    if name == "force-delete":
        return kustomize(REPO / "manifests") + kustomize(REPO / "manifests" / "overlays" / "force-delete")
    podgroups = {"podgroup-rbac.yaml": REPO / "manifests-gang" / "podgroup-rbac.yaml"}
    patches: dict[str, str | Path] = {"all-child-types.yaml": ALL_CHILD_TYPES}
    if name == "kueue-gang":
        return kustomize(written_kustomization(tmp_path, ["manifests-kueue"], podgroups, patches))
    assert name == "everything", name
    patches["deployment-patch.yaml"] = REPO / "manifests-large" / "deployment-patch.yaml"
    patches["compositecontroller-patch.yaml"] = REPO / "manifests-large" / "compositecontroller-patch.yaml"
    return kustomize(written_kustomization(
        tmp_path, ["manifests-kueue", "manifests/monitoring", "manifests/overlays/force-delete"], podgroups, patches))


COMBINATIONS: dict[str, dict[str, Any]] = {
    "base": EXISTING,
    "kueue": {**EXISTING, "kueue.enabled": True},
    "gang": {**EXISTING, "gang.enabled": True},
    "large": {**EXISTING, "large.enabled": True},
    "monitoring": {**EXISTING, "monitoring.enabled": True},
    "force-delete": {**EXISTING, "forceDelete.namespaces": ["training"]},
    "kueue-gang": {**EXISTING, "kueue.enabled": True, "gang.enabled": True},
    "everything": EVERYTHING,
}
"""Values combination -> the values that stand for it (each with the operator's Secret)."""


def assert_same_objects(rendered: list[dict[str, Any]], built: list[dict[str, Any]]) -> None:
    """The same (kind, namespace, name) set, then each object equal once Helm's marks are removed;
    a difference is reported as the keys of the objects that differ and the first differing field."""
    ours, theirs = normalised(rendered), normalised(built)
    assert sorted(ours) == sorted(theirs), (f"only helm: {sorted(ours.keys() - theirs.keys())}, "
                                            f"only kustomize: {sorted(theirs.keys() - ours.keys())}")
    differing = {key: first_difference(ours[key], theirs[key]) for key in ours if ours[key] != theirs[key]}
    assert not differing, "objects that differ (path: helm != kustomize):\n" + "\n".join(
        f"{key}: {where}" for key, where in differing.items())


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where ``a`` and ``b`` first differ, as ``path: a != b``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            if a.get(key) != b.get(key):
                return first_difference(a.get(key), b.get(key), f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{path}[{index}]")
    return f"{path}: {a!r:.300} != {b!r:.300}"


@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_helm_template_renders_what_kustomize_builds_for_the_matching_overlay(
        helm: Path, name: str, tmp_path: Path) -> None:
    assert_same_objects(render(helm, COMBINATIONS[name]), overlay(name, tmp_path))


def test_by_default_the_chart_adds_only_a_generated_token_secret_to_the_base(helm: Path, tmp_path: Path) -> None:
    """Without ``hookToken.existingSecret`` the chart makes the Secret the manifests leave to the
    operator: keys ``token`` (64 random letters and digits, new at each render: ``helm template``
    cannot look the live Secret up) and ``previous`` (empty); everything else is the base's."""
    rendered = render(helm)
    secrets = [o for o in rendered if o["kind"] == "Secret"]
    assert [(s["metadata"]["namespace"], s["metadata"]["name"]) for s in secrets] == [(NAMESPACE, TOKEN_SECRET)]
    data = {key: base64.b64decode(value).decode() for key, value in secrets[0]["data"].items()}
    assert re.fullmatch(r"[A-Za-z0-9]{64}", data["token"]), data["token"]
    assert data["previous"] == ""
    again = next(o for o in render(helm) if o["kind"] == "Secret")
    assert again["data"]["token"] != secrets[0]["data"]["token"], "a render without the live Secret draws a new token"
    assert_same_objects([o for o in rendered if o["kind"] != "Secret"], overlay("base", tmp_path))


def test_an_existing_secret_is_named_by_the_controller_and_the_deployment_and_none_is_made(helm: Path) -> None:
    rendered = render(helm, {"hookToken.existingSecret": "my-token"})
    assert not [o for o in rendered if o["kind"] == "Secret"]
    controller = next(o for o in rendered if o["kind"] == "CompositeController")
    refs = {hook: spec["webhook"]["authorization"]["secretRef"] for hook, spec in controller["spec"]["hooks"].items()}
    assert refs == {hook: {"name": "my-token", "namespace": NAMESPACE, "key": "token"} for hook in ("sync", "finalize")}
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "hook-token")
    assert volume["secret"]["secretName"] == "my-token"


def test_another_namespace_moves_every_namespaced_object_and_every_reference(helm: Path) -> None:
    """``--namespace`` places the hooks, and every reference to them follows: the CompositeController's
    Service and Secret, the RBAC subjects, the ServiceMonitor's selector. Only the Roles of
    ``forceDelete.namespaces`` and the grants to Kueue's and Metacontroller's accounts stay where they
    are told to be."""
    rendered = render(helm, EVERYTHING, namespace="hooks-elsewhere")
    text = yaml.safe_dump_all(rendered)
    assert NAMESPACE not in text, "nothing names the manifests' namespace"
    placed = {(o["kind"], o["metadata"].get("namespace")) for o in rendered if o["metadata"].get("namespace")}
    assert {ns for _, ns in placed} == {"hooks-elsewhere", "training"}
    namespace = next(o for o in rendered if o["kind"] == "Namespace")
    assert namespace["metadata"]["name"] == "hooks-elsewhere"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_options_that_have_no_overlay_render_as_told(helm: Path) -> None:
    """The values beside the overlays: no Namespace, no NetworkPolicy, another image, a thread count,
    monitoring labels for the operator's Prometheus, another Metacontroller namespace."""
    rendered = render(helm, {**EXISTING, "namespace.create": False, "networkPolicy.enabled": False,
                             "image.repository": "registry.example/nvcre-hooks", "image.tag": "0.2.0",
                             "large.enabled": True, "large.threads": 4, "monitoring.enabled": True,
                             "monitoring.labels": {"release": "kube-prometheus-stack"}, "replicas": 3})
    kinds = {o["kind"] for o in rendered}
    assert "Namespace" not in kinds and "NetworkPolicy" not in kinds
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/nvcre-hooks:0.2.0"
    assert {"name": "GUNICORN_CMD_ARGS", "value": "--threads 4"} in container["env"]
    assert deployment["spec"]["replicas"] == 3
    for kind in ("ServiceMonitor", "PrometheusRule"):
        labels = next(o for o in rendered if o["kind"] == kind)["metadata"]["labels"]
        assert labels["release"] == "kube-prometheus-stack"
    policy = next(o for o in render(helm, {"metacontroller.namespace": "mc"}) if o["kind"] == "NetworkPolicy")
    assert policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "mc"}


@pytest.mark.parametrize("name", ["defaults", *COMBINATIONS])
def test_helm_lint_passes_strict(helm: Path, name: str) -> None:
    values = {} if name == "defaults" else COMBINATIONS[name]
    result = run_helm(helm, ["lint", "--strict", str(CHART), "--namespace", NAMESPACE, *values_args(values)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_helm_lint_fails_a_broken_chart(helm: Path, tmp_path: Path) -> None:
    """The lint above can fail: a template that does not parse is refused."""
    broken = tmp_path / "nvcre-hooks"
    shutil.copytree(CHART, broken, symlinks=False)
    (broken / "templates" / "service.yaml").write_text("{{ if }}\n")
    result = run_helm(helm, ["lint", "--strict", str(broken)])
    assert result.returncode != 0
    assert "1 chart(s) failed" in result.stdout + result.stderr


def test_the_chart_reads_the_crd_rules_and_dashboard_from_manifests() -> None:
    """One home for the CRD's schema, the Prometheus rules and the dashboard: files/ links to them."""
    for name, target in (("crd-job.yaml", "manifests/crd-job.yaml"),
                         ("prometheusrule.yaml", "manifests/monitoring/prometheusrule.yaml"),
                         ("nvcre-hooks.json", "manifests/monitoring/dashboards/nvcre-hooks.json")):
        link = CHART / "files" / name
        assert link.is_symlink(), f"{link} is a copy"
        assert link.resolve() == (REPO / target).resolve()
