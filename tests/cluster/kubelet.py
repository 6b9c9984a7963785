"""A scheduler and kubelet stand-in for the cluster tier: pods get nodes, run, finish, terminate.

There are no real nodes here, so this plays what kube-scheduler and the kubelets would do to the
pods of its namespaces, through the API server:

- Node objects ``<prefix>-0..N-1`` (Ready), created by ``start()``;
- an unbound pod is bound to a node through the ``pods/binding`` subresource (round robin);
- a bound ``Pending`` pod is moved to ``Running`` (containers running, ``Ready``) through
  ``pods/status``;
- a deleted bound pod stays terminating (``deletionTimestamp`` set, phase still ``Running``) for
  ``linger`` seconds (per pod: ``linger_pods``), then its containers stop: the phase becomes
  terminal (``Failed``, exit code 143, as a SIGTERM ends them) and the pod is deleted with grace
  period 0, as a kubelet confirms; the Job controller then removes its tracking finalizer and the
  object is gone. ``hold`` keeps chosen pods terminating until ``release``;
- a lost node (``lose_node``) is marked ``Ready=Unknown`` and its pods are left alone: they stay
  ``Running``, and once deleted, terminating, until the node comes back (``restore_node``);
- ``finish`` ends chosen running pods (``Succeeded`` exit 0, or ``Failed`` with an exit code), as
  their containers would.

``sync()`` does one pass; the world calls it every step. A failing API server skips the pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import kubernetes
from kubernetes.client import ApiException

from podread import is_active
from tests.cluster.kube import REQUEST_TIMEOUT as TIMEOUT
from tests.cluster.kube import SERVER_ERRORS, rfc3339

Pod = dict[str, Any]


class Kubelet:
    """Binds, starts, finishes and terminates the pods of ``namespaces`` on ``nodes`` stand-in
    nodes (see the module doc). ``linger`` is how long a deleted pod keeps running."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespaces: Iterable[str], *,
                 nodes: int = 4, node_prefix: str = "node", linger: float = 0.5,
                 succeed_after: float | None = None) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.namespaces = sorted(namespaces)
        self.node_names = [f"{node_prefix}-{i}" for i in range(nodes)]
        self.linger = linger
        self.succeed_after = succeed_after
        """When set, a running pod's containers exit 0 after that many seconds (``make dev``)."""
        self._running_since: dict[str, float] = {}
        self.lost: set[str] = set()
        self.held: set[str] = set()
        self.pod_linger: list[tuple[Callable[[Pod], bool], float]] = []
        self.errors = 0
        self._next_node = 0
        self._deleted_at: dict[str, float] = {}

    # -- nodes -------------------------------------------------------------------------------------

    def start(self) -> Kubelet:
        """Creates the Node objects (Ready); existing ones are kept."""
        for name in self.node_names:
            try:
                self.core.create_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                                       "status": self._node_status("True")})
            except ApiException as exc:
                if exc.status != 409:
                    raise
            self._set_ready(name, "True")
        return self

    @staticmethod
    def _node_status(ready: str) -> dict[str, Any]:
        reason = "KubeletReady" if ready == "True" else "NodeStatusUnknown"
        return {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                "conditions": [{"type": "Ready", "status": ready, "reason": reason,
                                "message": "stand-in kubelet", "lastHeartbeatTime": rfc3339(),
                                "lastTransitionTime": rfc3339()}]}

    def _set_ready(self, node: str, ready: str) -> None:
        self.core.patch_node_status(node, {"status": self._node_status(ready)}, _request_timeout=TIMEOUT)

    def lose_node(self, node: str) -> None:
        """The node stops answering: ``Ready=Unknown``, and its pods are left as they are."""
        self.lost.add(node)
        self._set_ready(node, "Unknown")

    def restore_node(self, node: str) -> None:
        """The node is back: its kubelet finishes what was asked of its pods."""
        self.lost.discard(node)
        self._set_ready(node, "True")

    # -- scripting ---------------------------------------------------------------------------------

    def hold(self, *names: str) -> None:
        """Pods with these names stay terminating once deleted, until ``release``."""
        self.held.update(names)

    def release(self, *names: str) -> None:
        """Lets held pods finish terminating (all of them when no name is given)."""
        if names:
            self.held.difference_update(names)
        else:
            self.held.clear()

    def linger_pods(self, predicate: Callable[[Pod], bool], seconds: float) -> None:
        """Deleted pods that ``predicate`` picks keep running ``seconds`` instead of ``linger``."""
        self.pod_linger.append((predicate, seconds))

    def pods(self, namespace: str, selector: str = "") -> list[Pod]:
        """The pods of ``namespace`` (with a label selector), as raw JSON."""
        raw = self.core.list_namespaced_pod(namespace, label_selector=selector or None,
                                            _preload_content=False, _request_timeout=TIMEOUT)
        return list(json.loads(raw.data)["items"])

    def finish(self, namespace: str, selector: str, phase: str = "Succeeded", exit_code: int = 0,
               limit: int | None = None, disruption: str = "") -> list[str]:
        """Ends the active, not deleted pods ``selector`` selects (at most ``limit``) in ``phase``;
        returns their names. ``disruption`` also sets the condition ``DisruptionTarget=True`` with
        that reason (``PreemptionByScheduler``: what the scheduler writes on a preempted pod)."""
        done = []
        for pod in sorted(self.pods(namespace, selector), key=lambda p: p["metadata"]["name"]):
            if limit is not None and len(done) >= limit:
                break
            if is_active(pod) and "deletionTimestamp" not in pod["metadata"] and pod["spec"].get("nodeName"):
                self._terminate(pod, phase, exit_code, disruption)
                done.append(pod["metadata"]["name"])
        return done

    # -- one pass ----------------------------------------------------------------------------------

    def sync(self) -> None:
        """Binds, starts and terminates what is due in every namespace (see the module doc)."""
        for namespace in self.namespaces:
            try:
                for pod in self.pods(namespace):
                    self._sync_pod(pod)
            except SERVER_ERRORS:
                self.errors += 1

    def _sync_pod(self, pod: Pod) -> None:
        metadata, spec = pod["metadata"], pod["spec"]
        node = spec.get("nodeName")
        if not node:
            if "deletionTimestamp" not in metadata:
                self._bind(pod)
            return
        if node in self.lost:
            return
        phase = pod["status"].get("phase")
        if "deletionTimestamp" in metadata:
            first = self._deleted_at.setdefault(metadata["uid"], time.monotonic())
            if metadata["name"] in self.held or time.monotonic() - first < self._linger_of(pod):
                return
            if is_active(pod):
                self._terminate(pod, "Failed", 143)
            self._confirm_deletion(pod)
            return
        if phase == "Pending":
            self._set_status(pod, "Running", running=True)
        elif phase == "Running" and self.succeed_after is not None:
            since = self._running_since.setdefault(metadata["uid"], time.monotonic())
            if time.monotonic() - since >= self.succeed_after:
                self._terminate(pod, "Succeeded", 0)

    def _linger_of(self, pod: Pod) -> float:
        for predicate, seconds in self.pod_linger:
            if predicate(pod):
                return seconds
        return self.linger

    def _bind(self, pod: Pod) -> None:
        nodes = [n for n in self.node_names if n not in self.lost]
        node = nodes[self._next_node % len(nodes)]
        self._next_node += 1
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod["metadata"]["name"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            self.core.create_namespaced_pod_binding(pod["metadata"]["name"], pod["metadata"]["namespace"], body,
                                                    _preload_content=False, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def _terminate(self, pod: Pod, phase: str, exit_code: int, disruption: str = "") -> None:
        self._set_status(pod, phase, running=False, exit_code=exit_code, disruption=disruption)

    def _set_status(self, pod: Pod, phase: str, *, running: bool, exit_code: int = 0, disruption: str = "") -> None:
        now = rfc3339()
        containers = pod["spec"].get("containers") or []
        state: dict[str, Any] = ({"running": {"startedAt": now}} if running else
                                 {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0
                                                 else "Error", "startedAt": now, "finishedAt": now}})
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if running else "False", "lastTransitionTime": now},
                           {"type": "ContainersReady", "status": "True" if running else "False",
                            "lastTransitionTime": now}],
            "containerStatuses": [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                                   "ready": running, "restartCount": 0, "started": running, "state": state}
                                  for c in containers],
        }
        if running:
            status["startTime"] = now
        if disruption:
            status["conditions"].append({"type": "DisruptionTarget", "status": "True", "reason": disruption,
                                         "message": "stand-in: the pod was disrupted", "lastTransitionTime": now})
        try:
            self.core.patch_namespaced_pod_status(pod["metadata"]["name"], pod["metadata"]["namespace"],
                                                  {"status": status}, _preload_content=False,
                                                  _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise

    def _confirm_deletion(self, pod: Pod) -> None:
        """The kubelet's final delete: grace period 0, on this pod's UID."""
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"]["uid"]}}
        try:
            self.core.delete_namespaced_pod(pod["metadata"]["name"], pod["metadata"]["namespace"], body=options,
                                            _preload_content=False, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
