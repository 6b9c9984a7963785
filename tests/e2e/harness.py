"""One simulated world: a ``Cluster``, a ``Driver`` calling the hooks, and the ``Invariants``.

Two ways to reach the hooks:
- ``Harness.e2e(fake, server, ...)``: the real gunicorn server over HTTP, pods mirrored into the
  ``FakeKubeServer`` it reads (its cache TTL is wall-clock, so steps may sleep a little);
- ``Harness.fast(...)``: ``create_app(reader=...)`` in process through Flask's test client, with a
  podread ``Reader(PodCache(lister), lister)`` over the cluster whose TTL runs on the driver's
  simulated clock: deterministic and cheap enough for thousands of schedules.

Every step: the cluster moves, the driver's clock moves one second, every due Job is reconciled,
and the per-step invariants are checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from hooks.server.app import create_app
from hooks.server.config import Settings
from podread import PodCache, Reader
from tests.e2e.cluster import EPOCH, Cluster, ClusterLister
from tests.e2e.driver import AppTransport, Driver, Transport
from tests.e2e.invariants import Invariants
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
RESYNC_PERIOD_SECONDS = 30.0
"""``resyncPeriodSeconds`` of manifests/compositecontroller.yaml: the driver's periodic resync."""


def job_spec(
    workers: int = 2,
    *,
    launcher: bool = False,
    max_restarts: int = 0,
    suspend: bool = False,
    marker: str | None = None,
) -> dict[str, Any]:
    """An NVCRE Job spec: ``workers`` worker replicas, optionally an MPI launcher replicated job."""

    def template(role: str) -> dict[str, Any]:
        container: dict[str, Any] = {"name": role, "image": IMAGE, "command": ["torchrun", "train.py"]}
        if marker is not None:
            container["env"] = [{"name": "MARKER", "value": marker}]
        return {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": {"metadata": {"labels": {"app": "train", "role": role}},
                                      "spec": {"restartPolicy": "Never", "containers": [container]}}}}

    replicated = [{"name": "worker", "replicas": workers, "template": template("worker")}]
    spec: dict[str, Any] = {"replicatedJobs": replicated, "maxRestarts": max_restarts}
    if launcher:
        replicated.insert(0, {"name": "launcher", "replicas": 1, "template": template("launcher")})
        spec["launcher"] = "launcher"
    if suspend:
        spec["suspend"] = True
    return spec


class Harness:
    """A cluster, a driver and the invariants, stepped together in one namespace."""

    def __init__(
        self,
        cluster: Cluster,
        transport: Transport,
        *,
        namespace: str,
        version: str = "v1",
        token: str | None = None,
        wall_wait: float = 0.0,
        lister: ClusterLister | None = None,
        fake: FakeKubeServer | None = None,
        resync_period: float | None = RESYNC_PERIOD_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.invariants = Invariants(cluster)
        self.driver = Driver(cluster, transport, self.invariants, version=version, token=token,
                             resync_period=resync_period)
        self.wall_wait = wall_wait
        self.lister = lister
        self.fake = fake
        self.steps = 0
        self.reader: Reader | None = None
        """The in-process server's Reader (fast path only), e.g. to fill its cache at a chosen moment."""

    @classmethod
    def e2e(
        cls,
        fake: FakeKubeServer,
        server: HookServer,
        *,
        namespace: str,
        version: str = "v1",
        token: str | None = None,
        grace_steps: int = 2,
        launcher_grace_steps: int | None = None,
        wall_wait: float = 0.02,
    ) -> Harness:
        """Against the real gunicorn ``server``, whose pods come from ``fake``."""
        cluster = Cluster(fake, grace_steps=grace_steps, launcher_grace_steps=launcher_grace_steps)
        transport = server.transport()
        harness = cls(cluster, transport, namespace=namespace, version=version, token=token,
                      wall_wait=wall_wait, fake=fake)
        # The hooks check a request's Job against the live one (hooks.server.freshness): the fake
        # API server serves the Jobs the driver holds (then those it served before).
        before = fake.writes.job_source
        fake.writes.job_source = lambda ns, name: harness.driver.backend.parents().get((ns, name)) or before(ns, name)
        return harness

    @classmethod
    def fast(
        cls,
        *,
        namespace: str = "fast",
        version: str = "v1",
        ttl_seconds: float = 2.0,
        resync_seconds: float = 1.0,
        grace_steps: int = 2,
        launcher_grace_steps: int | None = None,
    ) -> Harness:
        """In process: the Flask app over a Reader whose cache TTL runs on the simulated clock."""
        cluster = Cluster(None, grace_steps=grace_steps, launcher_grace_steps=launcher_grace_steps)
        lister = ClusterLister(cluster)
        holder: list[Harness] = []

        def sim_seconds() -> float:
            return holder[0].driver.now if holder else 0.0

        reader = Reader(PodCache(lister, ttl_seconds=ttl_seconds, clock=sim_seconds), lister, jobs=lister)
        app = create_app(reader, clock=lambda: EPOCH + timedelta(seconds=sim_seconds()),
                         settings=Settings(resync_seconds=resync_seconds))
        harness = cls(cluster, AppTransport(app), namespace=namespace, version=version, lister=lister)
        harness.reader = reader
        holder.append(harness)
        return harness

    # -- the world ---------------------------------------------------------------------------------

    def create_job(self, name: str, spec: Mapping[str, Any] | None = None, **spec_args: Any) -> None:
        """Creates a Job (default spec: ``job_spec(**spec_args)``) and reconciles at once."""
        self.driver.create_job(self.namespace, name, spec if spec is not None else job_spec(**spec_args))
        self.reconcile()

    def reconcile(self) -> None:
        """Calls the hooks for every due Job now (after an event), then checks the step invariants."""
        self.driver.reconcile_due()
        self.invariants.check_step(self.tracked())

    def step(self, count: int = 1) -> None:
        """``count`` steps: the cluster moves, the clock moves a second, due Jobs are reconciled."""
        for _ in range(count):
            self.steps += 1
            self.cluster.step()
            self.driver.advance(1.0)
            self.reconcile()
            if self.wall_wait:
                time.sleep(self.wall_wait)

    def wait_cache(self, seconds: float) -> None:
        """Lets the server's cache age by ``seconds`` (wall clock for e2e, simulated for fast)."""
        if self.lister is None:
            time.sleep(seconds)
        else:
            self.driver.advance(seconds)
        self.reconcile()

    def run_until(self, predicate: Callable[[], bool], what: str, max_steps: int = 80) -> int:
        """Steps until ``predicate()`` holds; fails with the Jobs' statuses after ``max_steps``."""
        for taken in range(max_steps + 1):
            if predicate():
                return taken
            self.step()
        raise AssertionError(f"not reached after {max_steps} steps: {what}\n{self.describe()}")

    def tracked(self) -> dict[str, tuple[str, str]]:
        """Job name -> (namespace, uid) for every Job the driver holds."""
        return {key[1]: (key[0], job.obj["metadata"]["uid"]) for key, job in self.driver.jobs.items()}

    # -- reading -----------------------------------------------------------------------------------

    def status(self, name: str) -> dict[str, Any]:
        """The Job's status (``{}`` when gone)."""
        return self.driver.status(self.namespace, name)

    def phase(self, name: str) -> str:
        """The Job's phase (``""`` when gone or never written)."""
        return str(self.status(name).get("phase", ""))

    def gone(self, name: str) -> bool:
        """Whether the Job was finalized and removed."""
        return self.driver.job(self.namespace, name) is None

    def condition(self, name: str, type_: str) -> dict[str, Any]:
        """The Job's condition of ``type_`` (``{}`` when absent)."""
        for condition in self.status(name).get("conditions") or []:
            if condition.get("type") == type_:
                return condition
        return {}

    def jobsets(self, name: str) -> list[str]:
        """Names of the JobSets the Job owns now."""
        job = self.driver.jobs.get((self.namespace, name))
        if job is None:
            return []
        return sorted(js["metadata"]["name"] for js in self.cluster.jobsets_of(job.obj["metadata"]["uid"]))

    def current_jobset(self, name: str) -> str:
        """``<job>-<status.attempt>``."""
        return f"{name}-{self.status(name).get('attempt', 0)}"

    def describe(self) -> str:
        """The Jobs, their statuses and JobSets, and the pods: for failure messages."""
        lines = []
        for (namespace, name), job in sorted(self.driver.jobs.items()):
            lines.append(f"job {namespace}/{name}: {job.obj.get('status')} jobsets={self.jobsets(name)}")
        for pod in self.cluster.pods(self.namespace):
            meta = pod["metadata"]
            lines.append(f"pod {meta['name']} {pod['status']['phase']} deleting={meta.get('deletionTimestamp')}")
        lines += [f"violation: {v}" for v in self.invariants.violations]
        return "\n".join(lines)

    def assert_safe(self) -> None:
        """Fails listing every invariant violation seen so far."""
        assert not self.invariants.violations, "\n".join(self.invariants.violations) + "\n" + self.describe()
