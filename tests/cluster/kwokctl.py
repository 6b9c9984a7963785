"""kwok on the cluster tier's API server: fake nodes with GPUs, and the lifecycle of the pods bound to them.

kwok (``sigs.k8s.io/kwok/cmd/kwok`` v0.8.0, built by ``tests/cluster/kwok/build.sh``) plays the
kubelets. ``Kwok`` runs it as a subprocess against a ``ControlPlane`` and keeps a pool of Nodes
labelled ``type=kwok`` (the only ones it manages) with ``nvidia.com/gpu`` capacity. The real
kube-scheduler (tests/cluster/scheduler.py) binds pods to them; kwok moves each bound pod through
the stages it is given, chosen from the module's own ``kustomize/stage`` (copied by build.sh):

- ``node-initialize`` and ``node-heartbeat-with-lease``: a new node becomes Ready and stays so;
- ``pod-ready``: a bound pod becomes Running and Ready;
- ``pod-complete``, gated by the label ``COMPLETE_LABEL`` (the stock stage completes every Job-owned
  pod at once): the containers exit 0 and the pod Succeeds; with ``complete_after`` (``make dev``)
  every Running pod completes after that many seconds instead;
- ``pod-container-running-failed``, gated by its own label: the containers fail with the exit code
  of its annotation, the pod Fails;
- ``pod-delete`` (``pod/general``): a pod being deleted without finalizers is deleted for good; its
  delay is shortened from "random up to the deletionTimestamp" to 0.2-1 s so tests wait for
  nothing but what they hold.

What kwok cannot express is done by ``PodScript`` and the node methods, through the API server with
real semantics (tests/cluster/README.md): a pod held Terminating is a pod with a finalizer of ours;
a lost node is a node kwok stops managing (its label removed), set NotReady and cordoned; a
``DisruptionTarget`` condition is written to the pod's status as the component that disrupts it
would.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import kubernetes
import yaml
from kubernetes.client import ApiException

from tests.cluster.controlplane import REPO, ControlPlane, _Process, cached_build
from tests.cluster.kube import REQUEST_TIMEOUT as TIMEOUT
from tests.cluster.kube import load_documents, rfc3339

BUILD_SCRIPT = REPO / "tests" / "cluster" / "kwok" / "build.sh"
NODE_LABEL = ("type", "kwok")
COMPLETE_LABEL = "nvcre.test/complete"
FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"
EXIT_CODE_ANNOTATION = f"{FAIL_LABEL}/exit-code"
HOLD_FINALIZER = "nvcre.test/hold"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
GPUS_PER_NODE = 8
STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
          "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/chaos/pod-container-running-failed.yaml",
          "pod/general/pod-delete.yaml")
Pod = dict[str, Any]


class KwokError(RuntimeError):
    """kwok did not build, start or bring its nodes up; the message names its log."""


def kwok_dir(*, build: bool = True) -> Path:
    """The folder with ``kwok`` and ``stage/``: ``NVCRE_KWOK_BIN`` when set, else what build.sh prints
    (it builds once, then only prints). With ``build=False`` a cache miss raises instead of building."""
    folder = cached_build(BUILD_SCRIPT, override_env="NVCRE_KWOK_BIN", no_build_env="NVCRE_KWOK_NO_BUILD",
                          build=build, error=KwokError)
    if not (os.access(folder / "kwok", os.X_OK) and (folder / "stage").is_dir()):
        raise KwokError(f"{folder} lacks kwok or stage/")
    return folder


def stages(folder: Path, complete_after: float | None = None) -> list[dict[str, Any]]:
    """The Stage objects kwok is given (module doc), read from ``folder/stage`` and adjusted."""
    chosen = []
    for relative in STAGES:
        stage = load_documents(folder / "stage" / relative)[0]
        spec = stage["spec"]
        name = stage["metadata"]["name"]
        if name == "pod-complete":
            if complete_after is None:
                spec["selector"]["matchExpressions"].append(
                    {"key": f'.metadata.labels["{COMPLETE_LABEL}"]', "operator": "In", "values": ["true"]})
            else:
                millis = int(complete_after * 1000)
                spec["delay"] = {"durationMilliseconds": millis, "jitterDurationMilliseconds": millis}
        elif name == "pod-delete":
            spec["delay"] = {"durationMilliseconds": 200, "jitterDurationMilliseconds": 1000,
                             "durationFrom": spec["delay"].get("durationFrom")}
        chosen.append(stage)
    return chosen


def node_body(name: str, labels: dict[str, str] | None = None, gpus: int = GPUS_PER_NODE) -> dict[str, Any]:
    """A Node kwok manages, with ``gpus`` GPUs and ``labels``."""
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {**(labels or {}), NODE_LABEL[0]: NODE_LABEL[1],
                                                  "kubernetes.io/hostname": name}},
            "status": {"capacity": resources, "allocatable": dict(resources)}}


class Kwok:
    """kwok and its node pool against ``plane`` (module doc). Use as a context manager."""

    def __init__(self, plane: ControlPlane, folder: Path | None = None, *, nodes: int = 8,
                 complete_after: float | None = None, gpus_per_node: int = GPUS_PER_NODE) -> None:
        self.plane = plane
        self.gpus_per_node = gpus_per_node
        self.folder = folder or kwok_dir()
        self.workdir = plane.workdir / "kwok"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = plane.logs_dir / "kwok.log"
        self.core = kubernetes.client.CoreV1Api(plane.api_client())
        self.pool_size = nodes
        self.complete_after = complete_after
        self.started_in: float | None = None
        self._numbers = itertools.count()
        self._process = _Process("kwok", [], self.log_path)

    def start(self, timeout: float = 60.0) -> Kwok:
        """Starts kwok with its stages, creates the node pool and waits until every node is Ready
        and schedulable. Raises ``KwokError`` (naming the log) when it does not come up."""
        began = time.monotonic()
        config = self.workdir / "stages.yaml"
        config.write_text(yaml.safe_dump_all(stages(self.folder, self.complete_after)))
        kubeconfig = self.plane.write_kubeconfig(self.workdir / "kubeconfig")
        self._process.command = [str(self.folder / "kwok"), f"--kubeconfig={kubeconfig}", f"--config={config}",
                                 f"--manage-nodes-with-label-selector={NODE_LABEL[0]}={NODE_LABEL[1]}",
                                 "--node-lease-duration-seconds=40", "--cidr=10.0.0.0/16", "--node-ip=10.0.0.1"]
        try:
            self._process.start()
            for _ in range(self.pool_size):
                self.add_node()
        except BaseException:
            self.close()
            raise
        self.started_in = time.monotonic() - began
        print(f"\nkwok: {self.pool_size} nodes ready in {self.started_in:.1f}s (log {self.log_path})",
              file=sys.stderr)
        return self

    def alive(self) -> bool:
        return self._process.alive()

    def close(self) -> None:
        self._process.stop()

    def __enter__(self) -> Kwok:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- nodes -------------------------------------------------------------------------------------

    def add_node(self, labels: dict[str, str] | None = None, timeout: float = 30.0,
                 taints: list[dict[str, str]] | None = None) -> str:
        """Creates a new node ``kwok-node-<n>`` with ``labels``, waits until kwok has made it Ready, then removes the
        ``not-ready`` NoSchedule taint the API server's admission put on it (no node lifecycle
        controller runs here to do it). ``taints`` are set at creation (a node of a test's own: nothing
        else is placed there). Returns its name."""
        name = f"kwok-node-{next(self._numbers)}"
        body = node_body(name, labels, self.gpus_per_node)
        if taints:
            body["spec"] = {"taints": list(taints)}
        self.core.create_node(body, _request_timeout=TIMEOUT)
        deadline = time.monotonic() + timeout
        while not self._ready(name):
            if not self._process.alive():
                raise KwokError(f"kwok exited; log {self.log_path}:\n{self._process.tail(40)}")
            if time.monotonic() > deadline:
                raise KwokError(f"node {name} not Ready after {timeout:g}s; log {self.log_path}:\n"
                                f"{self._process.tail(40)}")
            time.sleep(0.1)
        self._set_taints(name, lambda taints: [t for t in taints if t.get("key") != NOT_READY_TAINT])
        return name

    def _node(self, name: str) -> dict[str, Any]:
        raw = self.core.read_node(name, _preload_content=False, _request_timeout=TIMEOUT)
        return dict(json.loads(raw.data))

    def _ready(self, name: str) -> bool:
        conditions = self._node(name).get("status", {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def _set_taints(self, name: str, change: Any) -> None:
        taints = self._node(name).get("spec", {}).get("taints") or []
        self.core.patch_node(name, {"spec": {"taints": change(taints) or None}}, _request_timeout=TIMEOUT)

    def nodes(self) -> list[str]:
        """The nodes kwok manages now."""
        found = self.core.list_node(label_selector=f"{NODE_LABEL[0]}={NODE_LABEL[1]}", _request_timeout=TIMEOUT)
        return sorted(node.metadata.name for node in found.items)

    def lose_node(self, name: str) -> None:
        """The node stops answering: kwok stops managing it (its label removed), so its pods keep
        whatever phase they have and a deleted one stays Terminating; it is cordoned (no node
        lifecycle controller runs to taint it) and its Ready condition set to Unknown."""
        self.core.patch_node(name, {"metadata": {"labels": {NODE_LABEL[0]: None}},
                                    "spec": {"unschedulable": True}}, _request_timeout=TIMEOUT)
        now = rfc3339()
        self.core.patch_node_status(name, {"status": {"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "lost by the test",
             "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, _request_timeout=TIMEOUT)

    def restore_node(self, name: str) -> None:
        """The node is back: kwok manages it again (Ready, and it finishes its pods' deletions)."""
        self.core.patch_node(name, {"metadata": {"labels": {NODE_LABEL[0]: NODE_LABEL[1]}},
                                    "spec": {"unschedulable": None}}, _request_timeout=TIMEOUT)

    def delete_node(self, name: str) -> str:
        """Deletes the Node (its pods stay bound to a node that no longer exists) and adds a new one
        to the pool in its place; returns the new node's name."""
        self.core.delete_node(name, _request_timeout=TIMEOUT)
        return self.add_node()


class PodScript:
    """What the tests do to the pods of ``namespace`` that kwok cannot (module doc), and the labels
    that tell kwok to end a pod."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.namespace = namespace

    def pods(self, selector: str = "") -> list[Pod]:
        """The pods of the namespace (with a label selector), as raw JSON."""
        raw = self.core.list_namespaced_pod(self.namespace, label_selector=selector or None,
                                            _preload_content=False, _request_timeout=TIMEOUT)
        return list(json.loads(raw.data)["items"])

    def hold(self, *names: str) -> None:
        """Pods with these names stay Terminating once deleted, until ``release``: a finalizer of ours
        (JSON patch ``add``: a merge patch would replace the Job controller's ``job-tracking``)."""
        for name in names:
            pod = self._pod(name)
            if HOLD_FINALIZER in (pod["metadata"].get("finalizers") or []):
                continue
            patch = ([{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD_FINALIZER}]
                     if pod["metadata"].get("finalizers") else
                     [{"op": "add", "path": "/metadata/finalizers", "value": [HOLD_FINALIZER]}])
            self.core.patch_namespaced_pod(name, self.namespace, patch, _request_timeout=TIMEOUT)

    def release(self, *names: str) -> None:
        """Removes our finalizer from the named pods (all held pods when no name is given)."""
        for pod in self.pods():
            if names and pod["metadata"]["name"] not in names:
                continue
            self._remove_finalizer(pod)

    def _remove_finalizer(self, pod: Pod, attempts: int = 5) -> None:
        for _ in range(attempts):
            finalizers = pod["metadata"].get("finalizers") or []
            if HOLD_FINALIZER not in finalizers:
                return
            index = finalizers.index(HOLD_FINALIZER)
            patch = [{"op": "test", "path": f"/metadata/finalizers/{index}", "value": HOLD_FINALIZER},
                     {"op": "remove", "path": f"/metadata/finalizers/{index}"}]
            try:
                self.core.patch_namespaced_pod(pod["metadata"]["name"], self.namespace, patch,
                                               _request_timeout=TIMEOUT)
                return
            except ApiException as exc:
                if exc.status == 404:
                    return
                if exc.status not in (409, 422):
                    raise
            pod = self._pod(pod["metadata"]["name"])
        raise RuntimeError(f"could not remove {HOLD_FINALIZER} from {pod['metadata']['name']}")

    def _pod(self, name: str) -> Pod:
        raw = self.core.read_namespaced_pod(name, self.namespace, _preload_content=False, _request_timeout=TIMEOUT)
        return dict(json.loads(raw.data))

    def finish(self, selector: str, phase: str = "Succeeded", exit_code: int = 0, limit: int | None = None,
               disruption: str = "") -> list[str]:
        """Tells kwok to end the Running, not deleted pods ``selector`` selects (at most ``limit``,
        by name): ``Succeeded`` (exit 0, stage ``pod-complete``) or ``Failed`` with ``exit_code``
        (stage ``pod-container-running-failed``). ``disruption`` first writes the condition
        ``DisruptionTarget=True`` with that reason to the pod's status, as the component disrupting it
        would (``TerminationByKubelet``: a kubelet's eviction). Returns the pods' names."""
        done: list[str] = []
        for pod in sorted(self.pods(selector), key=lambda p: p["metadata"]["name"]):
            if limit is not None and len(done) >= limit:
                break
            if pod["status"].get("phase") != "Running" or "deletionTimestamp" in pod["metadata"]:
                continue
            name = pod["metadata"]["name"]
            if disruption:
                self.disrupt(name, disruption)
            if phase == "Succeeded":
                body: dict[str, Any] = {"metadata": {"labels": {COMPLETE_LABEL: "true"}}}
            else:
                body = {"metadata": {"labels": {FAIL_LABEL: "true"},
                                     "annotations": {EXIT_CODE_ANNOTATION: str(exit_code)}}}
            self.core.patch_namespaced_pod(name, self.namespace, body, _request_timeout=TIMEOUT)
            done.append(name)
        return done

    def disrupt(self, name: str, reason: str) -> None:
        """Adds ``DisruptionTarget=True`` (``reason``) to the pod's status conditions."""
        now = rfc3339()
        condition = {"type": "DisruptionTarget", "status": "True", "reason": reason,
                     "message": "the test disrupted the pod", "lastTransitionTime": now}
        self.core.patch_namespaced_pod_status(name, self.namespace, {"status": {"conditions": [condition]}},
                                              _request_timeout=TIMEOUT)
