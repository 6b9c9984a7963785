"""The real JobSet controller on the cluster tier's API server: its manager, its webhooks, its CRD.

The manager is the root package of ``sigs.k8s.io/jobset`` v0.12.0, built from its Go module by
``tests/cluster/jobset/build.sh`` (cached outside the work tree, with the module's CRD and webhook
manifests beside the binary). ``JobSetManager`` runs it as a subprocess against a ``ControlPlane``:

- its ``Configuration``: no leader election, no internal certificate management (a certificate made
  here, as for Kueue: ``tests.cluster.kueue.make_certificates``), the webhook server on 127.0.0.1, no
  metrics server (``bindAddress: "0"``), the health probe on 127.0.0.1;
- the module's CRD as is (one version, v1alpha2: no conversion webhook), and its Mutating and
  ValidatingWebhookConfigurations with each ``clientConfig`` pointed at the manager by URL with the
  CA as ``caBundle``; the two pod webhooks get the ``objectSelector`` of the module's own kustomize
  patches (only pods carrying ``jobset.sigs.k8s.io/jobset-name``), else they would gate every pod
  of the cluster with ``failurePolicy: Fail``;
- the admin's credentials (JobSet's RBAC is not what is tested here).

``start()`` applies the CRD, starts the manager, registers the webhooks and waits until the health
probe answers and a dry-run JobSet create passes them; ``close()`` removes the webhook
configurations and stops the manager.
"""

from __future__ import annotations

import base64
import contextlib
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client import ApiException

from tests.cluster.controlplane import REPO, ControlPlane, _Process, cached_build
from tests.cluster.kube import Applier, load_documents
from tests.cluster.kueue import make_certificates
from tests.support.ports import free_port

BUILD_SCRIPT = REPO / "tests" / "cluster" / "jobset" / "build.sh"
GROUP, VERSION = "jobset.x-k8s.io", "v1alpha2"
POD_WEBHOOK_PATCHES = ("mutating-patch.yaml", "validating-patch.yaml")


class JobSetError(RuntimeError):
    """JobSet's manager did not build, start or become ready; the message names its log."""


def jobset_dir(*, build: bool = True) -> Path:
    """The folder with ``jobset-manager``, ``crd/`` and ``webhook/``: ``NVCRE_JOBSET_BIN`` when set,
    else what build.sh prints (it builds once, then only prints). With ``build=False`` a cache miss
    raises instead of building. Raises ``JobSetError`` when it cannot be had."""
    folder = cached_build(BUILD_SCRIPT, override_env="NVCRE_JOBSET_BIN", no_build_env="NVCRE_JOBSET_NO_BUILD",
                          build=build, error=JobSetError)
    if not (os.access(folder / "jobset-manager", os.X_OK) and (folder / "crd").is_dir()
            and (folder / "webhook" / "manifests.yaml").is_file()):
        raise JobSetError(f"{folder} lacks jobset-manager, crd/ or webhook/manifests.yaml")
    return folder


def jobset_crds(folder: Path) -> list[dict[str, Any]]:
    """JobSet's CRD(s) from the module's ``config/components/crd/bases`` (copied by build.sh)."""
    return [doc for path in sorted((folder / "crd").glob("*.yaml")) for doc in load_documents(path)]


def webhook_configurations(folder: Path, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """JobSet's webhook configurations (``webhook/manifests.yaml``), the pod webhooks replaced as the
    module's kustomize patches replace them (their ``objectSelector``), each pointed at
    ``https://127.0.0.1:<port><path>`` with ``ca_bundle``, named ``nvcre-test-jobset-...``."""
    patched: dict[str, dict[str, Any]] = {}
    for name in POD_WEBHOOK_PATCHES:
        for op in load_documents(folder / "webhook" / name)[0]:
            patched[op["value"]["name"]] = op["value"]
    configurations = []
    for doc in load_documents(folder / "webhook" / "manifests.yaml"):
        hooks = []
        for hook in doc.get("webhooks") or []:
            hook = dict(patched.get(hook["name"], hook))
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                    "caBundle": base64.b64encode(ca_bundle).decode()}
            hook["timeoutSeconds"] = 10
            hooks.append(hook)
        doc["webhooks"] = hooks
        doc["metadata"]["name"] = f"nvcre-test-jobset-{doc['metadata']['name']}"
        configurations.append(doc)
    return configurations


class JobSetManager:
    """JobSet's manager on loopback against ``plane`` (module doc). Use as a context manager."""

    def __init__(self, plane: ControlPlane, folder: Path | None = None) -> None:
        self.plane = plane
        self.folder = folder or jobset_dir()
        self.workdir = plane.workdir / "jobset"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.webhook_port, self.health_port = free_port(), free_port()
        self.log_path = plane.logs_dir / "jobset.log"
        self.api_client = plane.api_client()
        self.applier = Applier(self.api_client)
        self.started_in: float | None = None
        self._webhooks: list[dict[str, Any]] = []
        self._process = _Process("jobset", [], self.log_path)

    def configuration(self) -> dict[str, Any]:
        """JobSet's ``Configuration`` (module doc)."""
        certs = str(self.workdir / "certs")
        return {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": self.webhook_port, "certDir": certs},
            "metrics": {"bindAddress": "0", "certDir": certs},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
        }

    def install_crds(self) -> None:
        """Applies JobSet's CRD (before kube-controller-manager's garbage collector is (re)started,
        so it watches JobSets from the start: tests/cluster/README.md)."""
        self.applier.apply_all(jobset_crds(self.folder))

    def start(self, timeout: float = 60.0) -> JobSetManager:
        """Applies the CRD, starts the manager, registers its webhooks and waits until they answer.
        Raises ``JobSetError`` (naming the log) when it does not come up."""
        began = time.monotonic()
        ca_bundle = make_certificates(self.workdir / "certs")
        self.install_crds()
        kubeconfig = self.plane.write_kubeconfig(self.workdir / "kubeconfig")
        (self.workdir / "config.yaml").write_text(yaml.safe_dump(self.configuration()))
        self._process.command = [str(self.folder / "jobset-manager"), f"--config={self.workdir / 'config.yaml'}",
                                 f"--kubeconfig={kubeconfig}", "--zap-log-level=2"]
        try:
            self._process.start()
            self._wait(self._healthy, timeout, "health probe")
            self._webhooks = webhook_configurations(self.folder, self.webhook_port, ca_bundle)
            self.applier.apply_all(self._webhooks)
            self._wait(self._webhooks_answer, timeout - (time.monotonic() - began), "webhooks")
        except BaseException:
            self.close()
            raise
        self.started_in = time.monotonic() - began
        print(f"\njobset: ready in {self.started_in:.1f}s (log {self.log_path})", file=sys.stderr)
        return self

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._process.alive():
                raise JobSetError(f"jobset exited; log {self.log_path}:\n{self._process.tail(40)}")
            if ready():
                return
            time.sleep(0.3)
        raise JobSetError(f"jobset: {what} not ready after {timeout:.0f}s; log {self.log_path}:\n"
                          f"{self._process.tail(40)}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def _webhooks_answer(self) -> bool:
        """Whether a server dry-run create of a small JobSet passes JobSet's webhooks."""
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "JobSet", "metadata": {"name": "probe"},
                "spec": {"replicatedJobs": [{"name": "r", "template": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}]}}
        try:
            kubernetes.client.CustomObjectsApi(self.api_client).create_namespaced_custom_object(
                GROUP, VERSION, "default", "jobsets", body, dry_run="All", _request_timeout=5)
        except ApiException as exc:
            return exc.status == 409
        return True

    def alive(self) -> bool:
        return self._process.alive()

    def close(self) -> None:
        """Removes the webhook configurations (so nothing calls a stopped server) and stops the manager."""
        admission = kubernetes.client.AdmissionregistrationV1Api(self.api_client)
        for doc in self._webhooks:
            with contextlib.suppress(ApiException):
                if doc["kind"] == "MutatingWebhookConfiguration":
                    admission.delete_mutating_webhook_configuration(doc["metadata"]["name"])
                else:
                    admission.delete_validating_webhook_configuration(doc["metadata"]["name"])
        self._process.stop()

    def __enter__(self) -> JobSetManager:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
