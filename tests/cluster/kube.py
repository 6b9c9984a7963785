"""Putting the real things on the cluster tier's API server: manifests, CRDs, namespaces, tokens.

Everything goes through the official ``kubernetes`` client (the dynamic client for YAML
documents), as a user's ``kubectl apply`` would: an object that exists is replaced, a CRD is
waited on until it is ``Established``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import urllib3
import yaml
from kubernetes.client import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e.cluster import clone

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
REFERENCE = REPO.parent / "shared" / "reference"
METACONTROLLER_CRDS = REFERENCE / "metacontroller-v4.17.2-crds.yaml"
REQUEST_TIMEOUT = (2.0, 5.0)
"""(connect, read) seconds for every call the stand-ins make: a server that is away fails fast."""
UNSCHEDULED = "nvcre-test-unscheduled"
"""The ``schedulerName`` of pods a test writes by hand: no scheduler runs by that name, so the real
kube-scheduler leaves them unbound and kwok never runs them."""
SERVER_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError)
"""What a call meets when the API server refuses it or is away (stopped, or etcd behind it)."""


def kubectl_binary() -> str:
    """The real kubectl on PATH, for the tests that run the docs' commands as written: fails the test
    when the tier is required (``NVCRE_REQUIRE_CLUSTER=1``) and there is none, else skips it."""
    binary = shutil.which("kubectl")
    if binary is None:
        if os.environ.get("NVCRE_REQUIRE_CLUSTER") == "1":
            pytest.fail("needs kubectl (apt-get install kubectl)")
        pytest.skip("no kubectl on PATH")
    return binary


def rfc3339(seconds: float | None = None) -> str:
    """An API timestamp (``2026-12-03T09:29:52Z``) of ``seconds`` since the epoch (default: now)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def load_documents(path: Path) -> list[dict[str, Any]]:
    """The non-empty YAML documents of ``path``, parsed by libyaml when PyYAML has it (``CSafeLoader``,
    the same safe schema): the pure-Python parser took about 25 s of each session's start on the
    JobSet and Kueue CRDs (2 shared cores), libyaml about 1 s."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if doc]


def kustomized_manifests() -> list[dict[str, Any]]:
    """The objects ``kubectl apply -k manifests/`` creates, in the kustomization's order, with its
    common labels (a small kustomize: ``resources`` and ``labels`` pairs are all ours uses)."""
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    pairs: dict[str, str] = {}
    for entry in kustomization.get("labels") or []:
        pairs.update(entry.get("pairs") or {})
    objects = []
    for resource in kustomization["resources"]:
        for doc in load_documents(MANIFESTS / resource):
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(pairs)
            objects.append(doc)
    return objects


class Applier:
    """``kubectl apply`` through the dynamic client: create, or replace what exists."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self.api_client = api_client
        self.dynamic = DynamicClient(api_client)

    def resource(self, api_version: str, kind: str) -> Any:
        """The dynamic client's resource for ``kind``, rediscovered once if it is new (a CRD just
        established)."""
        try:
            return self.dynamic.resources.get(api_version=api_version, kind=kind)
        except kubernetes.dynamic.exceptions.ResourceNotFoundError:
            self.dynamic.resources.invalidate_cache()
            return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Creates ``obj`` or replaces the existing one; returns the server's object. A CRD is
        waited on until ``Established``. Raises ``ApiException`` when the server refuses it."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        try:
            result = resource.create(body=dict(obj), namespace=namespace).to_dict()
        except ApiException as exc:
            if exc.status != 409:
                raise
            current = resource.get(name=obj["metadata"]["name"], namespace=namespace)
            body = clone(dict(obj))
            body["metadata"]["resourceVersion"] = current.metadata.resourceVersion
            result = resource.replace(body=body, namespace=namespace).to_dict()
        if obj["kind"] == "CustomResourceDefinition":
            self.wait_established(obj["metadata"]["name"])
        return result

    def apply_all(self, objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``apply`` for each object, CRDs first (what uses them can then be created)."""
        ordered = sorted(objects, key=lambda o: o["kind"] != "CustomResourceDefinition")
        return [self.apply(obj) for obj in ordered]

    def wait_established(self, name: str, timeout: float = 30.0) -> None:
        """Waits until the CRD ``name`` is ``Established`` and its resource is discoverable."""
        api = kubernetes.client.ApiextensionsV1Api(self.api_client)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            crd = api.read_custom_resource_definition(name)
            conditions = {c.type: c.status for c in (crd.status.conditions or [])}
            if conditions.get("Established") == "True" and self._listable(crd):
                self.dynamic.resources.invalidate_cache()
                return
            time.sleep(0.1)
        raise TimeoutError(f"CRD {name} not Established after {timeout:g}s")


    def _listable(self, crd: Any) -> bool:
        """Whether a list of the CRD's resource is served: right after Established the server
        answers 429 "storage is (re)initializing" for a moment (found on the real server)."""
        version = next(v.name for v in crd.spec.versions if v.storage)
        try:
            kubernetes.client.CustomObjectsApi(self.api_client).list_cluster_custom_object(
                crd.spec.group, version, crd.spec.names.plural, limit=1)
        except ApiException as exc:
            if exc.status == 429:
                return False
            raise
        return True


def ensure_namespace(api_client: kubernetes.client.ApiClient, name: str, timeout: float = 30.0) -> None:
    """Creates namespace ``name`` (if missing) and waits for its ``default`` ServiceAccount, without
    which the ServiceAccount admission plugin refuses every pod the Job controller creates."""
    core = kubernetes.client.CoreV1Api(api_client)
    try:
        core.create_namespace({"metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_service_account("default", name)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
        time.sleep(0.1)
    raise TimeoutError(f"no default ServiceAccount in {name} after {timeout:g}s")


def create_pods(api_client: kubernetes.client.ApiClient, namespace: str, count: int,
                labels: Mapping[str, str]) -> list[str]:
    """Creates ``count`` pods ``pod-0``... with ``labels`` in ``namespace`` that no scheduler binds
    (``UNSCHEDULED``); returns their names."""
    core = kubernetes.client.CoreV1Api(api_client)
    names = []
    for index in range(count):
        name = f"pod-{index}"
        core.create_namespaced_pod(namespace, {"metadata": {"name": name, "labels": dict(labels)},
                                               "spec": {"schedulerName": UNSCHEDULED,
                                                        "containers": [{"name": "c", "image": "i"}]}},
                                   _request_timeout=REQUEST_TIMEOUT)
        names.append(name)
    return names


def service_account_token(api_client: kubernetes.client.ApiClient, namespace: str, name: str,
                          seconds: int = 3600) -> str:
    """A TokenRequest token of ServiceAccount ``namespace/name`` (what a pod using it gets)."""
    core = kubernetes.client.CoreV1Api(api_client)
    answer = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": seconds}})
    return str(answer.status.token)
