"""Randomized schedules of cluster and user events over a ``Harness``, shared by the hypothesis state
machine (tests/e2e/test_e2e_stateful.py) and the soak (tests/soak.py).

An action is a tuple ``(name, *args)``; ``World.apply`` performs it and reconciles. ``settle``
ends a schedule: faults cleared, stuck pods released, then enough steps for every Job to reach a
resting phase; a Job that does not is a liveness problem (reported like a violation).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from tests.e2e.harness import Harness, job_spec
from tests.fakekube import Fault

Action = tuple[Any, ...]
FAULT_KINDS = ("500", "503", "429", "timeout", "dropped", "garbled")
RESTING = frozenset({"Pending", "Running", "Succeeded", "Failed", "Suspended"})


class World:
    """Up to ``max_jobs`` Jobs (``j0``, ``j1``, ...) in one harness, driven by actions."""

    def __init__(self, harness: Harness, max_jobs: int = 3) -> None:
        self.h = harness
        self.max_jobs = max_jobs
        self.created: set[int] = set()
        self.deleted: set[int] = set()
        self.actions: list[Action] = []

    def name(self, index: int) -> str:
        """The name of Job ``index``."""
        return f"j{index % self.max_jobs}"

    def workload(self, index: int) -> str:
        """The current JobSet name of Job ``index``."""
        return self.h.current_jobset(self.name(index))

    # -- faults --------------------------------------------------------------------------------------

    def inject(self, kind: str) -> None:
        """An API outage of ``kind`` for this world's namespace."""
        if self.h.fake is None:
            assert self.h.lister is not None
            self.h.lister.fail = f"injected {kind}"
            return
        path = f"/api/v1/namespaces/{self.h.namespace}/pods"
        if kind == "timeout":
            fault = Fault.slow(path, 1.5, times=2)  # over NVCRE_API_TIMEOUT_SECONDS: the read gives up
        elif kind == "dropped":
            fault = Fault.dropped(path)
        elif kind == "garbled":
            fault = Fault.garbled(path)
        elif kind == "429":
            fault = Fault.error(path, 429, retry_after=1)
        else:
            fault = Fault.error(path, int(kind))
        self.h.fake.inject(fault)

    def clear(self) -> None:
        """Ends every outage."""
        if self.h.fake is None:
            assert self.h.lister is not None
            self.h.lister.fail = None
        else:
            self.h.fake.clear_faults()

    # -- actions -------------------------------------------------------------------------------------

    def apply(self, action: Action) -> None:
        """Performs one action and reconciles what it changed."""
        self.actions.append(action)
        kind, *args = action
        h, ns = self.h, self.h.namespace
        if kind == "create":
            index, workers, launcher, max_restarts = args
            if index in self.created:
                return
            self.created.add(index)
            h.create_job(self.name(index), job_spec(workers, launcher=launcher, max_restarts=max_restarts))
        elif kind == "step":
            h.step(args[0])
        elif kind == "fail":
            h.cluster.fail_worker(ns, self.workload(args[0]))
        elif kind == "succeed":
            h.cluster.succeed_workers(ns, self.workload(args[0]))
        elif kind == "launcher":
            h.cluster.finish_launcher(ns, self.workload(args[0]), args[1])
        elif kind == "suspend":
            h.driver.patch_spec(ns, self.name(args[0]), suspend=True if args[1] else None)
        elif kind == "delete":
            if h.driver.delete_job(ns, self.name(args[0])):
                self.deleted.add(args[0] % self.max_jobs)
        elif kind == "lose":
            pods = h.cluster.pod_names(ns, self.name(args[0]), launcher=args[1])
            if pods:
                h.cluster.lose_node(ns, pods[0])
        elif kind == "release":
            h.cluster.release()
        elif kind == "fault":
            self.inject(args[0])
        elif kind == "clear":
            self.clear()
        elif kind == "wait":
            h.wait_cache(args[0])
        elif kind == "version":
            h.driver.version = args[0]
        else:
            raise ValueError(f"unknown action {action!r}")
        h.reconcile()

    def run(self, actions: Iterable[Action]) -> None:
        """Applies every action in order."""
        for action in actions:
            self.apply(action)

    # -- the end of a schedule -----------------------------------------------------------------------

    def unsettled(self) -> list[str]:
        """The Jobs not at rest: a deleted Job still there, or one in a transient phase, or one
        whose phase disagrees with ``spec.suspend``."""
        problems = []
        for (namespace, name), job in sorted(self.h.driver.jobs.items()):
            status = job.obj.get("status") or {}
            phase = status.get("phase", "")
            suspended = job.obj["spec"].get("suspend") is True
            if "deletionTimestamp" in job.obj["metadata"]:
                problems.append(f"{name}: deleted but not finalized ({phase}: {status.get('message')})")
            elif phase not in RESTING:
                problems.append(f"{name}: still {phase or 'without a status'} ({status.get('message')})")
            elif suspended and phase not in ("Suspended", "Succeeded", "Failed"):
                problems.append(f"{name}: suspended but {phase}")
            elif not suspended and phase == "Suspended":
                problems.append(f"{name}: resumed but still Suspended")
            del namespace
        return problems

    def settle(self, max_steps: int = 70) -> list[str]:
        """Clears faults, releases stuck pods and steps until every Job rests; returns what did not."""
        self.clear()
        self.h.cluster.release()
        self.h.reconcile()
        for _ in range(max_steps):
            if not self.unsettled():
                break
            self.h.step()
        return self.unsettled()


def random_action(rng: random.Random, max_jobs: int = 3, *, slow_faults: bool = False) -> Action:
    """One action drawn with weights that keep schedules eventful (creation and steps first)."""
    index = rng.randrange(max_jobs)
    roll = rng.random()
    if roll < 0.18:
        return ("create", index, rng.randint(1, 3), rng.random() < 0.3, rng.randint(0, 2))
    if roll < 0.40:
        return ("step", rng.randint(1, 4))
    if roll < 0.50:
        return ("fail", index)
    if roll < 0.58:
        return ("succeed", index)
    if roll < 0.62:
        return ("launcher", index, rng.choice(["Succeeded", "Failed"]))
    if roll < 0.71:
        return ("suspend", index, rng.random() < 0.6)
    if roll < 0.76:
        return ("delete", index)
    if roll < 0.79:
        return ("lose", index, rng.random() < 0.3)
    if roll < 0.82:
        return ("release",)
    if roll < 0.87:
        kinds = FAULT_KINDS if slow_faults else tuple(k for k in FAULT_KINDS if k != "timeout")
        return ("fault", rng.choice(kinds))
    if roll < 0.92:
        return ("clear",)
    if roll < 0.96:
        return ("wait", rng.choice([0.5, 1.0, 3.0]))
    return ("version", rng.choice(["v1", "v2"]))


def random_schedule(rng: random.Random, length: int, max_jobs: int = 3) -> list[Action]:
    """A schedule of ``length`` actions, starting with the creation of the first Job."""
    first: Action = ("create", 0, rng.randint(1, 3), rng.random() < 0.3, rng.randint(0, 2))
    return [first] + [random_action(rng, max_jobs) for _ in range(length - 1)]
