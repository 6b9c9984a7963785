"""manifests-gang/, the overlay for gang scheduling (issue 22): the PodGroup child type beside the
JobSets, and Metacontroller's right to write PodGroups; the CRD's ``spec.gang`` as the hooks read it."""

from __future__ import annotations

import pathlib

import yaml

from hooks.core import gang

ROOT = pathlib.Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "manifests-gang"


def load(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((OVERLAY / name).read_text()) if doc]


def test_the_overlay_adds_podgroups_to_the_base() -> None:
    (kustomization,) = load("kustomization.yaml")
    assert kustomization["resources"] == ["../manifests", "podgroup-rbac.yaml"]
    (patch,) = load("compositecontroller-patch.yaml")
    assert patch["spec"]["childResources"] == [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "resource": "jobsets", "updateStrategy": {"method": "OnDelete"}},
        {"apiVersion": gang.API_VERSION, "resource": "podgroups", "updateStrategy": {"method": "OnDelete"}},
        {"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}]


def test_metacontroller_may_write_podgroups_and_nothing_else() -> None:
    role, binding = load("podgroup-rbac.yaml")
    assert role["rules"] == [{"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups"],
                              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_the_crd_spells_the_gang_values_the_hooks_read() -> None:
    crd = yaml.safe_load((ROOT / "manifests" / "crd-job.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["gang"]
    assert tuple(schema["properties"]["policy"]["enum"]) == gang.POLICIES
    assert tuple(schema["properties"]["whenUnavailable"]["enum"]) == gang.WHEN_UNAVAILABLE
