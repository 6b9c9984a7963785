"""The install and the token rotation of docs/operations.md, run block by block as written, with the
real kubectl, on a control plane of their own (issue 35 item 2).

The session's control plane already has manifests/ applied and its token Secret made, so its
``kubectl create namespace nvcre-system`` would fail: these blocks get a plane of their own (the
tier's binaries: etcd, kube-apiserver, kube-controller-manager with the Deployment, ReplicaSet and
StatefulSet controllers too, the real kube-scheduler and kwok's
nodes), with the two CRDs a cluster brings before this project (JobSet's, Metacontroller's
CompositeController). The Deployment's pods run on kwok's nodes (kwok runs no containers: it moves
their status as a kubelet would), so ``rollout status`` waits on the real Deployment and ReplicaSet
controllers, the scheduler and the Pod Security admission of the Namespace the manifests label
``restricted``. The rotation's ``statefulset/metacontroller`` is a StatefulSet of that name made
here: the tier runs Metacontroller's stand-in (tests/cluster/metacontroller.py), not its StatefulSet;
``rollout restart`` and ``rollout status`` of it are kubectl's and the controllers' own.

What is run: the Secret block, the site overlay (``mkdir -p deploy/prod`` and its heredoc, in a copy
of the repository's manifests/ so that nothing is written into the work tree), the Apply block
(``kubectl get nvjob -A -w`` without ``-w``: it never returns), and the Rotate-the-token block; each
block as one ``bash -euo pipefail`` script. The Secret holds what each step says.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest

from tests.cluster.conftest import built_jobset, metacontroller_crds, missing
from tests.cluster.controlplane import CONTROLLERS, ControlPlane, binaries_dir
from tests.cluster.jobsetctl import jobset_crds
from tests.cluster.kube import REPO, REQUEST_TIMEOUT, Applier, kubectl_binary, load_documents
from tests.cluster.kwokctl import Kwok, KwokError, kwok_dir
from tests.cluster.scheduler import Scheduler

pytestmark = pytest.mark.cluster

OPERATIONS = REPO / "docs" / "operations.md"
COMPOSITE_CONTROLLERS = "compositecontrollers.metacontroller.k8s.io"
BLOCKS = {
    "secret": "kubectl create namespace nvcre-system",
    "site overlay": "mkdir -p deploy/prod",
    "apply": "kubectl -n nvcre-system rollout status deploy/nvcre-hooks",
    "rotate": "NS=nvcre-system",
}
"""Each block run here, by a line it holds (its first line for the secret, overlay and rotate blocks)."""
WORKLOAD_CONTROLLERS = "deployment,replicaset,statefulset"
"""The controllers of kube-controller-manager the blocks wait on (``rollout status``), beside the tier's own."""


def sh_blocks(text: str) -> list[str]:
    """The bodies of the ```sh fenced blocks of a Markdown ``text``, in order."""
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S)


def block(marker: str) -> str:
    """The one ```sh block of docs/operations.md that holds the line ``marker``."""
    found = [body for body in sh_blocks(OPERATIONS.read_text()) if marker in body.splitlines()
             or any(line.startswith(marker) for line in body.splitlines())]
    assert len(found) == 1, f"docs/operations.md: {len(found)} sh blocks hold {marker!r}"
    return found[0]


@pytest.fixture(scope="module")
def install_plane(control_plane: ControlPlane) -> Iterator[tuple[ControlPlane, str]]:
    """A control plane of its own with the real scheduler, kwok's nodes and the CRDs a cluster brings
    (``control_plane`` is asked for first so that the tier's skip-or-fail rule applies here too);
    yields it and an admin kubeconfig for it."""
    crds = metacontroller_crds()
    if not crds.is_file():
        missing("Metacontroller's CRDs", "the install commands test", FileNotFoundError(str(crds)))
    try:
        folder = kwok_dir()
    except KwokError as exc:
        missing("kwok", "the install commands test", exc)
    needed = [*jobset_crds(built_jobset()),
              *(crd for crd in load_documents(crds) if crd["metadata"]["name"] == COMPOSITE_CONTROLLERS)]
    with ControlPlane(binaries_dir()) as plane, tempfile.TemporaryDirectory(prefix="nvcre-install-") as workdir:
        applier = Applier(plane.api_client())
        applier.apply_all(needed)
        for crd in needed:
            applier.wait_established(crd["metadata"]["name"])
        plane.restart_controller_manager(f"{CONTROLLERS},{WORKLOAD_CONTROLLERS}")
        with Scheduler(plane), Kwok(plane, folder, nodes=2):
            yield plane, plane.write_kubeconfig(Path(workdir) / "kubeconfig")


def run_block(script: str, cwd: Path, env: dict[str, str], what: str) -> str:
    """``script`` run by ``bash -euo pipefail`` in ``cwd``; fails the test with its output on a non-zero exit."""
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0, f"docs/operations.md, the {what} block:\n{script}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def secret_keys(api: kubernetes.client.ApiClient) -> dict[str, str]:
    secret = kubernetes.client.CoreV1Api(api).read_namespaced_secret("nvcre-hooks-token", "nvcre-system",
                                                                       _request_timeout=REQUEST_TIMEOUT)
    return {key: base64.b64decode(value).decode() for key, value in (secret.data or {}).items()}


IMAGE = "ghcr.io/metacontroller/metacontroller:v4.17.2"
"""Never pulled: kwok runs no containers."""


def metacontroller_statefulset() -> list[dict[str, object]]:
    """Namespace ``metacontroller`` and a StatefulSet ``metacontroller`` in it, where a cluster has
    Metacontroller's: the rotation restarts it (module doc)."""
    labels = {"app": "metacontroller"}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "metacontroller"}},
            {"apiVersion": "apps/v1", "kind": "StatefulSet",
             "metadata": {"name": "metacontroller", "namespace": "metacontroller"},
             "spec": {"replicas": 1, "serviceName": "", "selector": {"matchLabels": labels},
                      "template": {"metadata": {"labels": labels},
                                   "spec": {"containers": [{"name": "metacontroller", "image": IMAGE}]}}}}]


def test_the_install_and_the_token_rotation_run_as_written(install_plane: tuple[ControlPlane, str],
                                                           tmp_path: Path) -> None:
    binary = kubectl_binary()
    plane, kubeconfig = install_plane
    api = plane.api_client()
    work = tmp_path / "repo"
    shutil.copytree(REPO / "manifests", work / "manifests")  # the overlay's ../../manifests, outside the tree
    env = {"PATH": f"{Path(binary).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp_path),
           "KUBECONFIG": kubeconfig}

    run_block(block(BLOCKS["secret"]), work, env, "token Secret")
    first = secret_keys(api)
    assert re.fullmatch(r"[0-9a-f]{64}", first["token"]) and first["previous"] == "", first

    overlay = block(BLOCKS["site overlay"])
    apply = block(BLOCKS["apply"]).replace(" -w ", " ")
    run_block(overlay, work, env, "site overlay")
    run_block(apply, work, env, "Apply")
    assert (work / "deploy" / "prod" / "kustomization.yaml").is_file()
    apps = kubernetes.client.AppsV1Api(api)
    deployment = apps.read_namespaced_deployment("nvcre-hooks", "nvcre-system", _request_timeout=REQUEST_TIMEOUT)
    assert deployment.spec.template.spec.containers[0].image == "registry.example.com/nvcre-hooks:0.1.0"
    assert deployment.status.ready_replicas == deployment.spec.replicas, deployment.status

    Applier(api).apply_all(metacontroller_statefulset())
    run_block(block(BLOCKS["rotate"]), work, env, "Rotate the token")
    rotated = secret_keys(api)
    assert rotated["token"] != first["token"] and re.fullmatch(r"[0-9a-f]{64}", rotated["token"]), rotated
    assert rotated["previous"] == "", "step 3 empties previous"
    restarted = apps.read_namespaced_deployment("nvcre-hooks", "nvcre-system", _request_timeout=REQUEST_TIMEOUT)
    assert "kubectl.kubernetes.io/restartedAt" in (restarted.spec.template.metadata.annotations or {})
    statefulset = apps.read_namespaced_stateful_set("metacontroller", "metacontroller",
                                                    _request_timeout=REQUEST_TIMEOUT)
    assert "kubectl.kubernetes.io/restartedAt" in (statefulset.spec.template.metadata.annotations or {})
