"""Randomized event orders (hypothesis ``RuleBasedStateMachine``) with the safety invariants checked
after every rule, and liveness checked at the end (faults cleared, stuck pods released: every Job
comes to rest: deleted ones finalized, suspended ones Suspended, none left Restarting/Suspending).

Two variants over the same rules (``tests/e2e/schedules.py``):
- through the real gunicorn server (one per module, unique namespace per example) with faults
  injected in the fake API server: 500/503/429, dropped connections, garbled bodies, reads slower
  than NVCRE_API_TIMEOUT_SECONDS;
- in process (``create_app(reader=...)`` and the Flask test client), cheap enough for more examples;
  ``make soak`` runs 10,000+ of these schedules (tests/soak.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from tests.e2e.harness import Harness
from tests.e2e.schedules import FAULT_KINDS, World
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer

MAX_JOBS = 3
_names = itertools.count()
jobs = st.integers(min_value=0, max_value=MAX_JOBS - 1)


class LifecycleMachine(RuleBasedStateMachine):
    """Events in any order on up to three Jobs; ``make_harness`` decides how the hooks are reached."""

    fault_kinds: ClassVar[tuple[str, ...]] = FAULT_KINDS

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None

    def make_harness(self, version: str) -> Harness:  # pragma: no cover - overridden
        raise NotImplementedError

    @initialize(version=st.sampled_from(["v1", "v2"]), workers=st.integers(1, 3), launcher=st.booleans(),
                max_restarts=st.integers(0, 2))
    def start(self, version: str, workers: int, launcher: bool, max_restarts: int) -> None:
        self.world = World(self.make_harness(version), MAX_JOBS)
        self.world.apply(("create", 0, workers, launcher, max_restarts))

    @property
    def w(self) -> World:
        assert self.world is not None
        return self.world

    @rule(index=jobs, workers=st.integers(1, 3), launcher=st.booleans(), max_restarts=st.integers(0, 2))
    def create(self, index: int, workers: int, launcher: bool, max_restarts: int) -> None:
        self.w.apply(("create", index, workers, launcher, max_restarts))

    @rule(count=st.integers(1, 4))
    def pods_progress(self, count: int) -> None:
        self.w.apply(("step", count))

    @rule(index=jobs)
    def worker_fails(self, index: int) -> None:
        self.w.apply(("fail", index))

    @rule(index=jobs)
    def workers_succeed(self, index: int) -> None:
        self.w.apply(("succeed", index))

    @rule(index=jobs, phase=st.sampled_from(["Succeeded", "Failed"]))
    def launcher_finishes(self, index: int, phase: str) -> None:
        self.w.apply(("launcher", index, phase))

    @rule(index=jobs, value=st.booleans())
    def suspend(self, index: int, value: bool) -> None:
        self.w.apply(("suspend", index, value))

    @rule(index=jobs)
    def delete(self, index: int) -> None:
        self.w.apply(("delete", index))

    @rule(index=jobs, launcher=st.booleans())
    def node_lost(self, index: int, launcher: bool) -> None:
        self.w.apply(("lose", index, launcher))

    @rule()
    def node_back(self) -> None:
        self.w.apply(("release",))

    @rule(data=st.data())
    def api_fault(self, data: Any) -> None:
        self.w.apply(("fault", data.draw(st.sampled_from(self.fault_kinds))))

    @rule()
    def api_recovers(self) -> None:
        self.w.apply(("clear",))

    @rule(seconds=st.sampled_from([0.35, 0.7]))
    def cache_ages(self, seconds: float) -> None:
        self.w.apply(("wait", seconds))

    @rule(version=st.sampled_from(["v1", "v2"]))
    def hook_version(self, version: str) -> None:
        self.w.apply(("version", version))

    @invariant()
    def safe(self) -> None:
        if self.world is not None:
            self.world.h.assert_safe()

    def teardown(self) -> None:
        if self.world is None:
            return
        problems = self.world.settle()
        self.world.h.assert_safe()
        assert not problems, f"not at rest after the schedule {self.world.actions}: {problems}"


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[FakeKubeServer, HookServer]]:
    """One fake API server and one gunicorn for the module's examples."""
    with FakeKubeServer() as fake, HookServer(fake) as server:
        yield fake, server


@pytest.mark.slow
def test_random_event_orders_through_gunicorn(stack: tuple[FakeKubeServer, HookServer]) -> None:
    fake, server = stack

    class ThroughGunicorn(LifecycleMachine):
        def make_harness(self, version: str) -> Harness:
            fake.clear_faults()
            return Harness.e2e(fake, server, namespace=f"st-{next(_names)}", version=version, wall_wait=0.005)

    run_state_machine_as_test(
        ThroughGunicorn,
        settings=settings(max_examples=25, stateful_step_count=25, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck), database=None),
    )


def test_random_event_orders_in_process() -> None:
    class InProcess(LifecycleMachine):
        def make_harness(self, version: str) -> Harness:
            harness = Harness.fast(namespace=f"ip-{next(_names)}", version=version)
            harness.driver.keep_calls = False
            return harness

    run_state_machine_as_test(
        InProcess,
        settings=settings(max_examples=120, stateful_step_count=25, deadline=None,
                          suppress_health_check=list(HealthCheck), database=None),
    )
