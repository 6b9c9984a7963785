"""Real Kueue on the cluster tier's API server: its manager, its webhooks, its CRDs, a queue.

The manager is ``sigs.k8s.io/kueue/cmd/kueue`` built from its Go module by
``tests/cluster/kueue/build.sh`` (cached outside the work tree, with the module's CRDs and webhook
manifests beside the binary). ``Kueue`` runs it as a subprocess against a ``ControlPlane``:

- its webhook server on 127.0.0.1 with a certificate made here (openssl: a CA and a serving
  certificate for IP 127.0.0.1), and Kueue's own Mutating/ValidatingWebhookConfigurations with each
  ``clientConfig`` pointed at it by URL with that CA as ``caBundle``; only the webhooks of the kinds
  this tier has (``kueue.x-k8s.io`` and ``jobset.x-k8s.io``) are registered, and the JobSet ones only
  for namespaces labelled ``KUEUE_NAMESPACE_LABEL`` (the other tests' JobSets never reach Kueue);
- a ``Configuration`` with the ``jobset.x-k8s.io/jobset`` integration and the NVCRE Job as an
  external framework (``Job.v1alpha1.nvcre.nvidia.com``: docs/adr/0103), no leader election, no
  internal certificate management (the certificate is given), no visibility server;
- the admin's credentials (Kueue's RBAC is not what is tested here);
- Kueue v0.17.0's ``main.go`` reads the metrics server's certificate from the fixed folder
  ``METRICS_CERT_DIR`` whenever internal certificate management is off (and exits without it). The
  manager therefore runs in a mount namespace of its own (``unshare --mount``) where the generated
  certificate is bind-mounted on that folder; the host only gets the empty mount point.

``start()`` waits until the health probe answers and a dry-run create through the webhooks passes;
``queue()`` creates a ResourceFlavor, a ClusterQueue with ``nvidia.com/gpu`` (and cpu) quota and a
LocalQueue; ``close()`` stops the manager and removes the webhook configurations.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
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
from tests.support.ports import free_port

BUILD_SCRIPT = REPO / "tests" / "cluster" / "kueue" / "build.sh"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
EXTERNAL_FRAMEWORK = "Job.v1alpha1.nvcre.nvidia.com"
KUEUE_NAMESPACE_LABEL = "nvcre.nvidia.com/kueue-test"
WEBHOOK_GROUPS = frozenset({"kueue.x-k8s.io", "jobset.x-k8s.io"})
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


class KueueError(RuntimeError):
    """Kueue did not build, start or become ready; the message names its log."""


def kueue_dir(*, build: bool = True) -> Path:
    """The folder with the ``kueue`` binary, ``crd/`` and ``webhook.yaml``: ``NVCRE_KUEUE_BIN`` when
    set, else what build.sh prints (it builds once, then only prints). With ``build=False`` a cache
    miss raises instead of building. Raises ``KueueError`` when it cannot be had."""
    folder = cached_build(BUILD_SCRIPT, override_env="NVCRE_KUEUE_BIN", no_build_env="NVCRE_KUEUE_NO_BUILD",
                          build=build, error=KueueError)
    if not (os.access(folder / "kueue", os.X_OK) and (folder / "crd").is_dir() and (folder / "webhook.yaml").is_file()):
        raise KueueError(f"{folder} lacks kueue, crd/ or webhook.yaml")
    return folder


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certificates(folder: Path) -> bytes:
    """A CA and a serving certificate for IP 127.0.0.1 signed by it, in ``folder`` (``tls.crt``,
    ``tls.key``: controller-runtime's names). Returns the CA certificate (PEM) for ``caBundle``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = folder / "ca.key", folder / "ca.crt"
    key, csr, crt, ext = folder / "tls.key", folder / "tls.csr", folder / "tls.crt", folder / "san.cnf"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca_crt),
             "-days", "2", "-subj", "/CN=nvcre-kueue-test-ca")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
             "-subj", "/CN=127.0.0.1")
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(crt), "-days", "2", "-extfile", str(ext))
    return ca_crt.read_bytes()


def webhook_configurations(folder: Path, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (``webhook.yaml`` from its module), keeping only the webhooks
    for ``WEBHOOK_GROUPS``, each pointed at ``https://127.0.0.1:<port><path>`` with ``ca_bundle``;
    the JobSet ones select only namespaces labelled ``KUEUE_NAMESPACE_LABEL``."""
    configurations = []
    for doc in load_documents(folder / "webhook.yaml"):
        kept = []
        for hook in doc.get("webhooks") or []:
            groups = {g for rule in hook.get("rules") or [] for g in rule.get("apiGroups") or []}
            if not groups or not groups <= WEBHOOK_GROUPS:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                    "caBundle": base64.b64encode(ca_bundle).decode()}
            if "jobset.x-k8s.io" in groups:
                hook["namespaceSelector"] = {"matchLabels": {KUEUE_NAMESPACE_LABEL: "true"}}
            hook["timeoutSeconds"] = 10
            kept.append(hook)
        doc["webhooks"] = kept
        doc["metadata"]["name"] = f"nvcre-test-kueue-{doc['metadata']['name']}"
        configurations.append(doc)
    return configurations


class Kueue:
    """Kueue's manager on loopback against ``plane`` (module doc). Use as a context manager."""

    def __init__(self, plane: ControlPlane, folder: Path | None = None) -> None:
        self.plane = plane
        self.folder = folder or kueue_dir()
        self.workdir = plane.workdir / "kueue"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._choose_ports()
        self.log_path = plane.logs_dir / "kueue.log"
        self.api_client = plane.api_client()
        self.applier = Applier(self.api_client)
        self.started_in: float | None = None
        self._webhooks: list[dict[str, Any]] = []
        self._process = _Process("kueue", self._command(), self.log_path)

    def _choose_ports(self) -> None:
        self.webhook_port, self.health_port, self.metrics_port = free_port(), free_port(), free_port()
        self.visibility_port = free_port()

    def configuration(self) -> dict[str, Any]:
        """Kueue's ``Configuration`` (module doc)."""
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": "kueue-system",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": f"127.0.0.1:{self.metrics_port}"},
            "webhook": {"host": "127.0.0.1", "port": self.webhook_port, "certDir": str(self.workdir / "certs")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"], "externalFrameworks": [EXTERNAL_FRAMEWORK]},
        }

    def _command(self) -> list[str]:
        """The manager, in a mount namespace where the metrics certificate is at ``METRICS_CERT_DIR``."""
        bind = 'mount --bind "$0" "$1" && shift && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", bind, str(self.workdir / "certs"),
                str(METRICS_CERT_DIR), str(self.folder / "kueue"), f"--config={self.workdir / 'config.yaml'}",
                "--feature-gates=VisibilityOnDemand=false", f"--visibility-server-port={self.visibility_port}",
                "--zap-log-level=3"]

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> Kueue:
        """Installs the CRDs, starts the manager, registers its webhooks and waits until they
        answer. Raises ``KueueError`` (naming the log) when it does not come up."""
        began = time.monotonic()
        ca_bundle = make_certificates(self.workdir / "certs")
        try:
            METRICS_CERT_DIR.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KueueError(f"kueue needs the mount point {METRICS_CERT_DIR} (Kueue reads its metrics certificate "
                             f"there): {exc}") from exc
        kubeconfig = self.plane.write_kubeconfig(self.workdir / "kubeconfig")
        for path in sorted((self.folder / "crd").glob("*.yaml")):
            self.applier.apply_all(load_documents(path))
        with contextlib.suppress(ApiException):
            kubernetes.client.CoreV1Api(self.api_client).create_namespace({"metadata": {"name": "kueue-system"}})
        try:
            self._start_manager(kubeconfig, timeout)
            self._webhooks = webhook_configurations(self.folder, self.webhook_port, ca_bundle)
            self.applier.apply_all(self._webhooks)
            self._wait(self._webhooks_answer, timeout - (time.monotonic() - began), "webhooks")
        except BaseException:
            self.close()
            raise
        self.started_in = time.monotonic() - began
        print(f"\nkueue: ready in {self.started_in:.1f}s (log {self.log_path})", file=sys.stderr)
        return self

    def _start_manager(self, kubeconfig: str, timeout: float, attempts: int = 3) -> None:
        """Starts the manager and waits for its health probe. A port chosen for it can still be
        taken before it binds (``tests.support.ports``); when it exits on ``address already in use`` it is
        started again on new ports, up to ``attempts`` times."""
        for attempt in range(1, attempts + 1):
            (self.workdir / "config.yaml").write_text(yaml.safe_dump(self.configuration()))
            self._process.command = [*self._command(), f"--kubeconfig={kubeconfig}"]
            self._process.start()
            try:
                self._wait(self._healthy, timeout, "health probe")
                return
            except KueueError:
                port_taken = not self._process.alive() and "address already in use" in self._process.tail(5)
                if attempt == attempts or not port_taken:
                    raise
            print(f"\nkueue: a port was taken before it bound; starting again on new ports ({attempt})",
                  file=sys.stderr)
            self._process.stop()
            self._choose_ports()

    def _wait(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._process.alive():
                raise KueueError(f"kueue exited; log {self.log_path}:\n{self._process.tail(40)}")
            if ready():
                return
            time.sleep(0.3)
        raise KueueError(f"kueue: {what} not ready after {timeout:.0f}s; log {self.log_path}:\n"
                         f"{self._process.tail(40)}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def _webhooks_answer(self) -> bool:
        """Whether a dry-run create of a ResourceFlavor passes Kueue's webhooks."""
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": "probe"}}
        try:
            self.custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", body, dry_run="All",
                                                     _request_timeout=5)
        except ApiException as exc:
            return exc.status == 409
        return True

    @property
    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.api_client)

    def alive(self) -> bool:
        return self._process.alive()

    def close(self) -> None:
        """Removes the webhook configurations (so nothing calls a stopped server) and stops Kueue."""
        admission = kubernetes.client.AdmissionregistrationV1Api(self.api_client)
        for doc in self._webhooks:
            with contextlib.suppress(ApiException):
                if doc["kind"] == "MutatingWebhookConfiguration":
                    admission.delete_mutating_webhook_configuration(doc["metadata"]["name"])
                else:
                    admission.delete_validating_webhook_configuration(doc["metadata"]["name"])
        self._process.stop()

    def __enter__(self) -> Kueue:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- queues ------------------------------------------------------------------------------------

    def queue(self, namespace: str, name: str, *, gpus: int, cpu: str = "64", cluster_queue: str = "",
              preemption: bool = True, flavor: str = "default-flavor",
              flavor_spec: dict[str, Any] | None = None) -> str:
        """A ResourceFlavor ``flavor`` (with ``flavor_spec``: ``nodeLabels``, ``tolerations``), a
        ClusterQueue (``cluster_queue``, default ``<name>-cq``) with ``gpus`` of ``nvidia.com/gpu``
        and ``cpu`` of cpu in it, preempting lower priorities within itself when ``preemption``, and
        LocalQueue ``name`` in ``namespace``. The namespace is labelled for the JobSet webhooks.
        Returns the ClusterQueue's name."""
        cq = cluster_queue or f"{name}-cq"
        kubernetes.client.CoreV1Api(self.api_client).patch_namespace(
            namespace, {"metadata": {"labels": {KUEUE_NAMESPACE_LABEL: "true"}}})
        body: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor",
                                "metadata": {"name": flavor}}
        if flavor_spec:
            body["spec"] = flavor_spec
        self.applier.apply(body)
        spec: dict[str, Any] = {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [{
                "name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu},
                                                        {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}],
        }
        if preemption:
            spec["preemption"] = {"withinClusterQueue": "LowerPriority"}
        self.applier.apply({"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": {"name": cq},
                            "spec": spec})
        self.applier.apply({"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue",
                            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}})
        return cq

    def priority_class(self, name: str, value: int) -> None:
        """A WorkloadPriorityClass ``name`` of ``value``."""
        self.applier.apply({"apiVersion": f"{GROUP}/{VERSION}", "kind": "WorkloadPriorityClass",
                            "metadata": {"name": name}, "value": value})

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        """The Workloads of ``namespace``, as the server holds them."""
        return list(self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads",
                                                              _request_timeout=5)["items"])

    def cluster_queue(self, name: str) -> dict[str, Any]:
        return dict(self.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", name, _request_timeout=5))
