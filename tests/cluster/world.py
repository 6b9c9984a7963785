"""One world on the real control plane: the driver, the real JobSet controller, kube-scheduler and kwok, the invariants.

``ClusterWorld`` lives in a namespace of its own on a shared ``ControlPlane`` where the real JobSet
controller (tests/cluster/jobsetctl.py), kube-scheduler (tests/cluster/scheduler.py) and kwok's nodes
(tests/cluster/kwokctl.py) run on their own. Every ``step()`` the driver (Metacontroller's stand-in,
``ApiBackend``) calls the hooks for every due Job, and the invariants are checked against the real
server's pods. ``pods`` (``PodScript``) holds pods Terminating, tells kwok to end them, and
``kwok`` loses, restores and deletes nodes:

- ``tests.e2e.invariants.Invariants`` over a ``ServerView`` (what the simulator's ``Cluster``
  offers it, read from the API server): no JobSet created while another attempt's pod is active,
  no ``finalized`` while a pod is active, no JobSet deleted outside a teardown, attempt and
  restarts never backwards, every answer whole and in time, terminal stays terminal;
- after every step: never a pod of attempt N active while a JobSet of a later attempt exists, and
  never a Job gone from the server while one of its pods is active.

A Job's pods are found by every identity they carry: the job label, the launcher label, and
JobSet's own ``jobset-name`` label for ``<job>-<attempt>``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import kubernetes

from podread import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, is_active
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT, SERVER_ERRORS, ensure_namespace
from tests.cluster.kwokctl import Kwok, PodScript
from tests.cluster.metacontroller import ApiBackend, Metacontroller
from tests.cluster.metacontroller_parts import Staleness
from tests.e2e.cluster import names
from tests.e2e.harness import RESYNC_PERIOD_SECONDS, job_spec
from tests.e2e.invariants import Invariants, attempt_of
from tests.e2e.server import HookServer

STEP_SECONDS = 0.1
TIER_STALENESS = Staleness(lag=0.6, child_lag=0.3, restart_lag=5.0)
"""Metacontroller's caches on the tier: parents 0.6 s behind, children 0.3 s, and after an API server
outage the pre-outage view 5 s more (tests/cluster/metacontroller.py, fact 1)."""


class KubeconfigSource:
    """What ``HookServer`` asks of a server: a kubeconfig, here with a ServiceAccount token."""

    def __init__(self, plane: ControlPlane, token: str, user: str) -> None:
        self.plane, self.token, self.user = plane, token, user

    def write_kubeconfig(self, path: str | Path) -> str:
        return self.plane.write_kubeconfig(path, token=self.token, user=self.user)


class ServerView:
    """The ground truth the invariants judge, read from the API server (admin credentials)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespace: str) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.batch = kubernetes.client.BatchV1Api(api_client)
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self._started = time.monotonic()

    @property
    def time(self) -> int:
        """Seconds since the world began (stamped on violations)."""
        return int(time.monotonic() - self._started)

    def pods(self) -> list[dict[str, Any]]:
        raw = self.core.list_namespaced_pod(self.namespace, _preload_content=False,
                                           _request_timeout=REQUEST_TIMEOUT)
        return list(json.loads(raw.data)["items"])

    def job_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """Every pod of ``job`` by any identity: job label, launcher label, JobSet's name label."""
        pattern = re.compile(rf"^{re.escape(job)}-\d+$")
        found = []
        for pod in self.pods():
            labels = pod["metadata"].get("labels") or {}
            if job in (labels.get(JOB_LABEL), labels.get(LAUNCHER_LABEL)) or \
                    pattern.match(labels.get(JOBSET_NAME_LABEL, "")):
                found.append(pod)
        return found

    def active_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return [pod for pod in self.job_pods(namespace, job) if is_active(pod)]

    def active_attempts(self, namespace: str, job: str) -> set[str]:
        return {attempt_of_pod(pod) for pod in self.active_pods(namespace, job)}

    def jobset_of(self, pod: Mapping[str, Any]) -> str:
        """The JobSet that made ``pod``, by its owners (pod -> batch Job -> JobSet), whatever its
        labels say now; ``""`` when the chain is broken (the Job already gone)."""
        job = _controller(pod, "Job")
        if not job:
            return ""
        try:
            raw = self.batch.read_namespaced_job(job, pod["metadata"]["namespace"], _preload_content=False,
                                                 _request_timeout=REQUEST_TIMEOUT)
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return ""
            raise
        return _controller(json.loads(raw.data), "JobSet")

    def jobsets_of(self, owner_uid: str) -> list[dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", self.namespace, "jobsets",
                                                          _request_timeout=REQUEST_TIMEOUT)["items"]
        return [js for js in items if any(o.get("uid") == owner_uid
                                          for o in js["metadata"].get("ownerReferences") or [])]


def _controller(obj: Mapping[str, Any], kind: str) -> str:
    """The name of ``obj``'s controller owner of ``kind``, or ``""``."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") == kind:
            return str(owner.get("name", ""))
    return ""


def attempt_of_pod(pod: Mapping[str, Any]) -> str:
    """A pod's attempt: its attempt label, else the suffix of JobSet's name label."""
    labels = pod["metadata"].get("labels") or {}
    if labels.get(ATTEMPT_LABEL):
        return str(labels[ATTEMPT_LABEL])
    return labels.get(JOBSET_NAME_LABEL, "?").rsplit("-", 1)[-1]


class ClusterWorld:
    """A namespace on the real control plane with the driver (module doc)."""

    def __init__(self, plane: ControlPlane, hooks: HookServer, namespace: str, kwok: Kwok, *,
                 version: str = "v2", resync_period: float | None = RESYNC_PERIOD_SECONDS,
                 workloads: bool = False, podgroups: bool = False, configmaps: bool = False,
                 staleness: Staleness = TIER_STALENESS) -> None:
        self.plane = plane
        self.namespace = namespace
        admin = plane.api_client()
        ensure_namespace(admin, namespace)
        self.kwok = kwok
        self.pods = PodScript(admin, namespace)
        self.backend = ApiBackend(admin, [namespace], workloads=workloads, podgroups=podgroups,
                                  configmaps=configmaps)
        self.view = ServerView(admin, namespace)
        self.invariants = Invariants(self.view)
        self.driver = Metacontroller(self.backend, hooks.transport(), self.invariants,
                                     version=version, token=hooks.token, resync_period=resync_period,
                                     workloads=workloads, staleness=staleness, podgroups=podgroups,
                                     configmaps=configmaps)
        self.created: dict[str, str] = {}
        """Job name -> uid of every Job this world created (to check that none goes too early)."""

    # -- the world ---------------------------------------------------------------------------------

    def create_job(self, name: str, spec: Mapping[str, Any] | None = None, *,
                   labels: Mapping[str, str] | None = None, **spec_args: Any) -> None:
        """Creates an NVCRE Job on the server (default spec: ``job_spec(**spec_args)``, with
        ``labels``) and steps once."""
        spec = spec if spec is not None else job_spec(**spec_args)
        if labels:
            body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                    "metadata": {"name": name, "namespace": self.namespace, "labels": dict(labels)}, "spec": dict(spec)}
            self.backend.custom.create_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", self.namespace,
                                                                "jobs", body, _request_timeout=REQUEST_TIMEOUT)
            self.driver.refresh()
        else:
            self.driver.create_job(self.namespace, name, spec)
        job = self.job(name)
        assert job is not None, f"Job {name} not on the server after its create"
        self.created[name] = job["metadata"]["uid"]
        self.step()

    def step(self) -> None:
        """Due hook calls, and the invariants."""
        self.driver.reconcile_due()
        self.check()
        time.sleep(STEP_SECONDS)

    def check(self) -> None:
        """The per-step invariants (module doc); a server that does not answer skips them."""
        try:
            self.invariants.check_step({name: (self.namespace, uid) for name, uid in self.created.items()})
            present = {key[1] for key in self.driver.jobs}
            for name, uid in self.created.items():
                active = self.view.active_pods(self.namespace, name)
                if name not in present and active:
                    self.invariants.fail(f"{name}: the Job is gone while pods are active: {names(active)}")
                newest = max((attempt_of(js) for js in self.view.jobsets_of(uid)), default=-1)
                for pod in active:
                    attempt = attempt_of_pod(pod)
                    if attempt.isdigit() and int(attempt) < newest:
                        self.invariants.fail(f"{name}: pod {pod['metadata']['name']} of attempt {attempt} active "
                                             f"while the JobSet of attempt {newest} exists")
        except SERVER_ERRORS:
            pass  # the API server is away (a fault test): the next step checks again

    def run_until(self, predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> float:
        """Steps until ``predicate()`` holds; returns the seconds taken. Fails with a description
        of the world after ``timeout`` seconds."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if predicate():
                return time.monotonic() - began
            self.step()
        raise AssertionError(f"not reached after {timeout:g}s: {what}\n{self.describe()}")

    def run_until_pods_run(self, name: str, count: int, timeout: float = 60.0) -> list[str]:
        """Steps until ``count`` pods of the Job run (bound, phase ``Running``); returns their names."""
        def running() -> list[str]:
            return [p["metadata"]["name"] for p in self.active_pods(name)
                    if p["status"].get("phase") == "Running" and "deletionTimestamp" not in p["metadata"]]
        self.run_until(lambda: len(running()) >= count, f"{count} pods of {name} running", timeout)
        return running()

    def run_for(self, seconds: float) -> None:
        """Steps for ``seconds``."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.step()

    # -- reading -----------------------------------------------------------------------------------

    def job(self, name: str) -> dict[str, Any] | None:
        """The Job as the server holds it now, or ``None``."""
        try:
            return self.backend.custom.get_namespaced_custom_object("nvcre.nvidia.com", "v1alpha1", self.namespace,
                                                                    "jobs", name)
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def status(self, name: str) -> dict[str, Any]:
        job = self.job(name)
        return dict((job or {}).get("status") or {})

    def phase(self, name: str) -> str:
        return str(self.status(name).get("phase", ""))

    def condition(self, name: str, type_: str) -> dict[str, Any]:
        for condition in self.status(name).get("conditions") or []:
            if condition.get("type") == type_:
                return dict(condition)
        return {}

    def gone(self, name: str) -> bool:
        return self.job(name) is None

    def jobsets(self, name: str) -> list[str]:
        uid = self.created.get(name, "")
        return sorted(js["metadata"]["name"] for js in self.view.jobsets_of(uid)
                      if "deletionTimestamp" not in js["metadata"])

    def active_pods(self, name: str) -> list[dict[str, Any]]:
        return self.view.active_pods(self.namespace, name)

    def events(self, name: str) -> list[dict[str, Any]]:
        """The events.k8s.io Events regarding Job ``name`` (issue 15), oldest first."""
        raw = kubernetes.client.EventsV1Api(self.plane.api_client()).list_namespaced_event(
            self.namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        items = json.loads(raw.data)["items"]
        return sorted((e for e in items if (e.get("regarding") or {}).get("name") == name
                       and (e.get("regarding") or {}).get("kind") == "Job"),
                      key=lambda e: (e.get("eventTime") or "", e["metadata"]["name"]))

    def event_reasons(self, name: str) -> list[str]:
        return [str(e.get("reason")) for e in self.events(name)]

    def describe(self) -> str:
        lines = []
        for name in self.created:
            lines.append(f"job {name}: {self.status(name)} jobsets={self.jobsets(name)}")
        for pod in self.view.pods():
            meta = pod["metadata"]
            lines.append(f"pod {meta['name']} {pod['status'].get('phase')} node={pod['spec'].get('nodeName')} "
                         f"deleting={meta.get('deletionTimestamp')} finalizers={meta.get('finalizers')}")
        lines += [f"violation: {v}" for v in self.invariants.violations]
        return "\n".join(lines)

    def assert_safe(self) -> None:
        assert not self.invariants.violations, "\n".join(self.invariants.violations) + "\n" + self.describe()
