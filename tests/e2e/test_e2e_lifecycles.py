"""End-to-end lifecycles through the real gunicorn server, a Metacontroller-shaped driver and a
simulated cluster whose pods the server reads from the fake API server (tests/e2e/).

Every test checks the invariants of ``tests/e2e/invariants.py`` after every step and every answer
(``assert_safe``): no overlapping attempts, no early ``finalized``, no JobSet deleted outside a
teardown, attempt/restarts never backwards, every 200 whole and within the hook timeout.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from podread import ATTEMPT_LABEL, JOB_LABEL
from tests.e2e.harness import Harness
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer, Fault

VERSIONS = ["v1", "v2"]
_names = itertools.count()


@pytest.fixture(scope="module")
def stack() -> Iterator[tuple[FakeKubeServer, HookServer]]:
    """One fake API server and one gunicorn (2 workers, 0.3 s cache TTL) for the module."""
    with FakeKubeServer() as fake, HookServer(fake) as server:
        yield fake, server


@pytest.fixture(scope="module")
def stale_stack() -> Iterator[tuple[FakeKubeServer, HookServer]]:
    """A gunicorn with one worker and a 60 s cache TTL in TTL mode: its cache hides every pod change
    of a Job after the first read, so only the live check can see them. (A watch that stalls while
    confirmed is the same trap in watch mode: tests/podread/test_podread_watch.py, tests/cluster/test_watch.py.)"""
    with FakeKubeServer() as fake, HookServer(fake, env={"NVCRE_CACHE_TTL_SECONDS": "60", "NVCRE_CACHE_MODE": "ttl"},
                                              args=["--workers", "1"]) as server:
        yield fake, server


def world(stack: tuple[FakeKubeServer, HookServer], version: str = "v1", **kwargs: object) -> Harness:
    """A harness in a namespace of its own (faults injected for it touch no other test)."""
    fake, server = stack
    fake.clear_faults()
    return Harness.e2e(fake, server, namespace=f"e2e-{next(_names)}", version=version, **kwargs)  # type: ignore[arg-type]


def pods_path(namespace: str) -> str:
    """The fake API server path of every pod read in ``namespace``."""
    return f"/api/v1/namespaces/{namespace}/pods"


@pytest.mark.parametrize("version", VERSIONS)
def test_happy_path_to_succeeded(stack: tuple[FakeKubeServer, HookServer], version: str) -> None:
    h = world(stack, version)
    h.create_job("happy")
    assert h.jobsets("happy") == ["happy-0"]
    h.run_until(lambda: h.phase("happy") == "Running", "Running")
    h.cluster.succeed_workers(h.namespace, "happy-0")
    h.reconcile()
    h.run_until(lambda: h.phase("happy") == "Succeeded", "Succeeded")
    h.step(5)
    status = h.status("happy")
    assert (status["phase"], status["attempt"], status["restarts"]) == ("Succeeded", 0, 0)
    assert h.jobsets("happy") == ["happy-0"]  # a finished JobSet is kept
    h.assert_safe()


@pytest.mark.parametrize("version", VERSIONS)
def test_worker_failure_restarts_through_the_barrier(stack: tuple[FakeKubeServer, HookServer], version: str) -> None:
    h = world(stack, version, grace_steps=3)
    h.create_job("retry", max_restarts=1)
    h.run_until(lambda: h.phase("retry") == "Running", "Running")
    h.cluster.fail_worker(h.namespace, "retry-0")
    h.reconcile()
    assert h.phase("retry") == "Restarting"
    assert h.jobsets("retry") == []  # torn down ...
    assert h.cluster.active_pods(h.namespace, "retry")  # ... while its pods still run
    assert h.condition("retry", "Drained")["status"] in ("False", "Unknown")
    h.run_until(lambda: h.jobsets("retry") == ["retry-1"], "attempt 1 created")
    h.run_until(lambda: h.phase("retry") == "Running", "attempt 1 Running")
    h.cluster.succeed_workers(h.namespace, "retry-1")
    h.reconcile()
    h.run_until(lambda: h.phase("retry") == "Succeeded", "Succeeded")
    status = h.status("retry")
    assert (status["attempt"], status["restarts"], status["workload"]) == (1, 1, "retry-1")
    held = [c for c in h.driver.calls if c.body and c.body["status"]["phase"] == "Restarting"]
    assert any(c.body.get("resyncAfterSeconds") for c in held), "a held teardown must ask for a resync"
    h.assert_safe()


def test_restarts_exhausted_is_failed_and_final(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack)
    h.create_job("doomed", max_restarts=0)
    h.run_until(lambda: h.phase("doomed") == "Running", "Running")
    h.cluster.fail_worker(h.namespace, "doomed-0")
    h.reconcile()
    assert h.phase("doomed") == "Failed"
    h.driver.patch_spec(h.namespace, "doomed", maxRestarts=3)  # too late: terminal stays terminal
    h.reconcile()
    h.step(10)
    assert h.phase("doomed") == "Failed"
    assert h.jobsets("doomed") == ["doomed-0"]
    assert not any(c.created for c in h.driver.calls[1:]), "nothing is ever recreated for a Failed Job"
    h.assert_safe()


@pytest.mark.parametrize("version", VERSIONS)
def test_suspend_drain_suspended_and_resume_as_a_new_attempt(
    stack: tuple[FakeKubeServer, HookServer], version: str
) -> None:
    h = world(stack, version, grace_steps=3)
    h.create_job("pause")
    h.run_until(lambda: h.phase("pause") == "Running", "Running")
    h.driver.patch_spec(h.namespace, "pause", suspend=True)
    h.reconcile()
    assert h.phase("pause") == "Suspending" and h.jobsets("pause") == []
    h.run_until(lambda: h.phase("pause") == "Suspended", "Suspended")
    assert not h.cluster.active_pods(h.namespace, "pause")
    assert h.condition("pause", "Drained")["status"] == "True"
    h.step(3)
    assert h.jobsets("pause") == [] and h.phase("pause") == "Suspended"
    # The other gunicorn worker's cache may still hold the pods as they were while draining (active):
    # it would rightly hold the resume until its entry expires. Past the TTL, the resume is immediate.
    h.wait_cache(1.0)
    h.driver.patch_spec(h.namespace, "pause", suspend=None)
    h.reconcile()
    assert h.jobsets("pause") == ["pause-1"]
    status = h.status("pause")
    assert (status["attempt"], status["restarts"]) == (1, 0)  # a resume is not a restart
    h.run_until(lambda: h.phase("pause") == "Running", "Running again")
    h.assert_safe()


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_while_running_holds_the_finalizer_until_drained(
    stack: tuple[FakeKubeServer, HookServer], version: str
) -> None:
    h = world(stack, version, grace_steps=4)
    h.create_job("bye")
    h.run_until(lambda: h.phase("bye") == "Running", "Running")
    h.driver.delete_job(h.namespace, "bye")
    h.reconcile()
    assert not h.gone("bye") and h.phase("bye") == "Terminating"
    h.run_until(lambda: h.gone("bye"), "finalized")
    finals = [c for c in h.driver.calls if c.hook == "finalize"]
    assert finals[0].request["finalizing"] is True
    assert [c.body.get("finalized") for c in finals if c.body][-1] is True
    assert any(c.body and c.body.get("finalized") is False for c in finals)
    h.assert_safe()


def test_mpi_launcher_running_after_the_workers_finished_holds_everything(
    stack: tuple[FakeKubeServer, HookServer],
) -> None:
    h = world(stack, "v2", grace_steps=1, launcher_grace_steps=6)
    h.create_job("mpi", launcher=True)
    h.run_until(lambda: h.phase("mpi") == "Running", "Running")
    h.cluster.succeed_workers(h.namespace, "mpi-0")
    h.reconcile()
    h.step(5)
    assert h.phase("mpi") not in ("Succeeded", "Failed"), "the launcher decides success"
    assert h.jobsets("mpi") == ["mpi-0"]
    h.driver.delete_job(h.namespace, "mpi")
    h.reconcile()
    h.step(3)  # workers are gone; the launcher is still terminating
    assert h.cluster.active_pods(h.namespace, "mpi") and not h.gone("mpi")
    assert "launcher pod" in h.status("mpi")["message"]
    h.run_until(lambda: h.gone("mpi"), "finalized once the launcher is gone")
    h.assert_safe()


def test_mpi_launcher_success_completes_the_job(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack, "v1")
    h.create_job("mpiok", launcher=True)
    h.run_until(lambda: h.phase("mpiok") == "Running", "Running")
    h.cluster.succeed_workers(h.namespace, "mpiok-0")
    h.reconcile()
    h.step(2)
    assert h.phase("mpiok") != "Succeeded"
    h.cluster.finish_launcher(h.namespace, "mpiok-0")
    h.reconcile()
    h.run_until(lambda: h.phase("mpiok") == "Succeeded", "Succeeded")
    h.assert_safe()


def test_mpi_launcher_still_running_reports_running(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack, "v1")
    h.create_job("mpist", launcher=True)
    h.run_until(lambda: h.phase("mpist") == "Running", "Running")
    h.cluster.succeed_workers(h.namespace, "mpist-0")
    h.reconcile()
    h.step(35)  # past a periodic resync, so the cached read has caught up
    assert h.cluster.active_pods(h.namespace, "mpist"), "the launcher is still running"
    assert h.phase("mpist") == "Running", h.status("mpist")


@pytest.mark.parametrize("fault", ["500", "503", "dropped"])
def test_api_outage_in_a_teardown_holds_then_completes(
    stack: tuple[FakeKubeServer, HookServer], fault: str
) -> None:
    h = world(stack, "v2", grace_steps=2)
    h.create_job("outage", max_restarts=1)
    h.run_until(lambda: h.phase("outage") == "Running", "Running")
    path = pods_path(h.namespace)
    h.fake.inject(Fault.dropped(path) if fault == "dropped" else Fault.error(path, int(fault)))  # type: ignore[union-attr]
    h.cluster.fail_worker(h.namespace, "outage-0")
    h.reconcile()
    h.step(4)  # the pods are gone now, but nobody can tell
    assert not h.cluster.active_pods(h.namespace, "outage")
    h.run_until(lambda: h.condition("outage", "Drained").get("reason") == "ReadFailed", "Drained Unknown/ReadFailed")
    # Each gunicorn worker has its own cache: one whose entry from before the outage is still within
    # its TTL answers from it (a hold with PodsActive, just as safe). Past the TTL, every read fails.
    h.wait_cache(1.0)
    h.step(5)
    drained = h.condition("outage", "Drained")
    assert drained["status"] == "Unknown" and drained["reason"] == "ReadFailed"
    assert h.phase("outage") == "Restarting" and h.jobsets("outage") == []
    assert "pod read" in h.status("outage")["message"]
    h.fake.clear_faults()  # type: ignore[union-attr]
    h.run_until(lambda: h.jobsets("outage") == ["outage-1"], "attempt 1 after recovery")
    assert h.status("outage")["restarts"] == 1
    h.assert_safe()


def test_api_timeouts_in_a_teardown_hold_within_the_hook_timeout(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack, "v1", grace_steps=1)
    h.create_job("slowapi")
    h.run_until(lambda: h.phase("slowapi") == "Running", "Running")
    h.fake.inject(Fault.slow(pods_path(h.namespace), 2.5))  # type: ignore[union-attr]  # > NVCRE_API_TIMEOUT 1 s
    h.driver.delete_job(h.namespace, "slowapi")
    h.reconcile()
    h.step(3)
    assert not h.gone("slowapi")
    assert max(c.reply.seconds for c in h.driver.calls) < 10
    h.fake.clear_faults()  # type: ignore[union-attr]
    h.run_until(lambda: h.gone("slowapi"), "finalized after recovery")
    h.assert_safe()


def test_a_stale_cache_hiding_running_pods_is_caught_by_the_live_check(
    stale_stack: tuple[FakeKubeServer, HookServer],
) -> None:
    h = world(stale_stack, "v1", grace_steps=3)
    h.create_job("hidden", max_restarts=1)  # the first read fills the cache with no pods, for 60 s
    h.step(2)
    assert h.cluster.active_pods(h.namespace, "hidden")
    assert h.status("hidden")["activePods"] == 0, "the cache hides the running pods"
    h.cluster.fail_worker(h.namespace, "hidden-0")
    h.reconcile()
    assert h.phase("hidden") == "Restarting"
    assert "active pod" in h.status("hidden")["message"], "the live check saw the pods the cache hides"
    h.run_until(lambda: h.jobsets("hidden") == ["hidden-1"], "attempt 1 once drained")
    h.step(2)  # attempt 1's pods run; the cache still says none
    h.driver.patch_spec(h.namespace, "hidden", suspend=True)
    h.reconcile()
    assert h.phase("hidden") == "Suspending", "the newer attempt's pods are seen live"
    h.run_until(lambda: h.phase("hidden") == "Suspended", "Suspended")
    h.assert_safe()


def test_a_pod_stuck_terminating_is_named_and_holds_until_it_goes(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack, "v2", grace_steps=2)
    h.create_job("stuck")
    h.run_until(lambda: h.phase("stuck") == "Running", "Running")
    lost = h.cluster.pod_names(h.namespace, "stuck")[0]
    h.cluster.lose_node(h.namespace, lost)
    h.driver.delete_job(h.namespace, "stuck")
    h.reconcile()
    h.step(15)
    assert not h.gone("stuck")
    message = h.status("stuck")["message"]
    assert re.search(rf"{lost} \(terminating, grace period ends \d{{4}}-\d\d-\d\dT", message), message
    assert h.condition("stuck", "Drained")["status"] == "False"
    h.cluster.release()
    h.run_until(lambda: h.gone("stuck"), "finalized once the pod is gone")
    h.assert_safe()


# ---- the barrier finds every pod of the Job; a status is a claim; one deadline ---------------------

def test_a_worker_whose_job_label_was_removed_holds_the_finalizer(stack: tuple[FakeKubeServer, HookServer]) -> None:
    """Someone removes nvcre.nvidia.com/job from a running worker (its node is then lost): the
    invariants see it (it is still the JobSet's pod), and so does the barrier, by JobSet's label."""
    h = world(stack, "v2", grace_steps=2)
    h.create_job("relabel")
    h.run_until(lambda: h.phase("relabel") == "Running", "Running")
    worker = h.cluster.pod_names(h.namespace, "relabel")[0]
    h.cluster.strip_labels(h.namespace, worker, JOB_LABEL, ATTEMPT_LABEL)
    h.cluster.lose_node(h.namespace, worker)
    h.driver.delete_job(h.namespace, "relabel")
    h.reconcile()
    h.step(10)
    assert not h.gone("relabel"), "finalized while a relabelled worker runs"
    assert worker in h.status("relabel")["message"]
    h.cluster.release()
    h.run_until(lambda: h.gone("relabel"), "finalized once the pod is gone")
    h.assert_safe()


def test_a_launcher_is_waited_for_even_with_spec_launcher_removed(stack: tuple[FakeKubeServer, HookServer]) -> None:
    h = world(stack, "v1", grace_steps=1, launcher_grace_steps=6)
    h.create_job("nolauncher", launcher=True)
    h.run_until(lambda: h.phase("nolauncher") == "Running", "Running")
    h.driver.patch_spec(h.namespace, "nolauncher", launcher=None)  # e.g. the CRD's rule bypassed
    h.driver.delete_job(h.namespace, "nolauncher")
    h.reconcile()
    h.step(3)
    assert h.cluster.active_pods(h.namespace, "nolauncher") and not h.gone("nolauncher")
    assert "launcher pod" in h.status("nolauncher")["message"]
    h.run_until(lambda: h.gone("nolauncher"), "finalized once the launcher is gone")
    h.assert_safe()


def test_a_status_attempt_out_of_step_never_drops_the_running_jobset(
    stack: tuple[FakeKubeServer, HookServer],
) -> None:
    """Someone who can write jobs/status sets attempt 1 while attempt 0 runs (a restore from backup
    does the same): the JobSet is kept, nothing new is created, the status says why."""
    h = world(stack, "v2")
    h.create_job("forged")
    h.run_until(lambda: h.phase("forged") == "Running", "Running")
    write_status(h, "forged", attempt=1)
    h.reconcile()
    h.step(3)
    assert h.jobsets("forged") == ["forged-0"] and not any(call.deleted for call in h.driver.calls)
    assert h.condition("forged", "StatusMismatch")["reason"] == "WorkloadNotCurrent"
    write_status(h, "forged", attempt=0)  # corrected by hand
    h.reconcile()
    assert h.condition("forged", "StatusMismatch")["status"] == "False", h.describe()
    h.run_until(lambda: h.phase("forged") == "Running", "Running again")  # a cache may still hold no pods
    assert h.jobsets("forged") == ["forged-0"]
    h.assert_safe()


def write_status(h: Harness, name: str, **fields: object) -> None:
    """Writes status fields of a Job as someone with access to ``jobs/status`` would (through the
    driver's backend when it has one, else on the driver's own copy), as a change Metacontroller sees."""
    backend = getattr(h.driver, "backend", None)
    if backend is not None:
        parent = backend.parents()[(h.namespace, name)]
        backend.write_status(parent, {**(parent.get("status") or {}), **fields})
        h.driver.refresh()
        return
    obj = h.driver.jobs[(h.namespace, name)].obj
    obj["status"] = {**(obj.get("status") or {}), **fields}
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)


@pytest.fixture(scope="module")
def slow_api_stack() -> Iterator[tuple[FakeKubeServer, HookServer]]:
    """One worker, each list allowed 3.6 s (NVCRE_API_TIMEOUT_SECONDS, the most under 10 s that makes
    three lists overrun Metacontroller's timeout) and a cache that expires before every call."""
    with FakeKubeServer() as fake, HookServer(fake, env={"NVCRE_API_TIMEOUT_SECONDS": "3.6"},
                                              args=["--workers", "1"]) as server:
        yield fake, server


def test_an_mpi_teardown_with_slow_lists_answers_and_holds_within_the_hook_timeout(
    slow_api_stack: tuple[FakeKubeServer, HookServer],
) -> None:
    """An MPI restart reads three lists live; at 3.5 s each that is 10.5 s, past the 10 s after which
    Metacontroller abandons the call (and the teardown never advances). With one deadline for the
    call the third read is cut short and the call holds, a 200 in time."""
    h = world(slow_api_stack, "v2", grace_steps=1)
    h.create_job("slowmpi", launcher=True, max_restarts=1)
    h.run_until(lambda: h.phase("slowmpi") == "Running", "Running")
    h.fake.inject(Fault.slow(pods_path(h.namespace), 3.5))  # type: ignore[union-attr]
    h.cluster.fail_worker(h.namespace, "slowmpi-0")
    h.reconcile()
    slow = [c for c in h.driver.calls if c.reply.seconds > 3]
    assert slow and all(c.reply.status == 200 and c.reply.seconds < 9.0 for c in slow), \
        [(c.reply.status, round(c.reply.seconds, 2)) for c in slow]
    drained = h.condition("slowmpi", "Drained")
    assert (drained.get("status"), drained.get("reason")) == ("Unknown", "ReadFailed"), h.status("slowmpi")
    assert h.phase("slowmpi") == "Restarting"
    h.fake.clear_faults()  # type: ignore[union-attr]
    h.run_until(lambda: h.jobsets("slowmpi") == ["slowmpi-1"], "attempt 1 once the API server is fast again")
    h.assert_safe()
