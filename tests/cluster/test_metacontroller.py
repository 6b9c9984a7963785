"""The Metacontroller stand-in (tests/cluster/metacontroller.py) against the real control plane.

First each v4.17.2 behaviour the hooks depend on (the facts of issue 21, numbered as in the module
doc), with a scripted hook in place of the real one, so that each answer is exactly the case; then
the lifecycles with the caches stale, with the real hooks, judged by what Metacontroller writes (the
status writes over the live status, the Events).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import kubernetes
import orjson
import pytest
from kubernetes.client import ApiException

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT, ensure_namespace
from tests.cluster.metacontroller import (
    FINALIZER,
    ApiBackend,
    CompositeControllerStandIn,
    Metacontroller,
)
from tests.cluster.metacontroller_parts import FRESH, LAST_APPLIED, LaggedCache, Staleness
from tests.cluster.world import ClusterWorld, ServerView
from tests.e2e.driver import BackendError, Reply
from tests.e2e.harness import job_spec
from tests.e2e.invariants import Invariants

pytestmark = pytest.mark.cluster
_names = itertools.count()
GROUP, VERSION = "nvcre.nvidia.com", "v1alpha1"
Answer = Callable[[str, dict[str, Any]], tuple[int, Any]]


class Scripted:
    """A hook that answers with ``answer(path, request)`` -> (HTTP status, JSON body or raw bytes);
    keeps every request and the most calls in flight at once."""

    def __init__(self, answer: Answer, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        request = orjson.loads(body)
        with self._lock:
            self.requests.append((path, request))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            status, answer = self.answer(path, request)
        finally:
            with self._lock:
                self.in_flight -= 1
        raw = answer if isinstance(answer, bytes) else orjson.dumps(answer)
        return Reply(status, raw, self.delay)


def jobset(name: str, **labels: str) -> dict[str, Any]:
    """A JobSet the CRD admits (suspended: nothing runs it)."""
    template = {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"suspend": True, "replicatedJobs": [{"name": "worker", "replicas": 1, "template": template}]}}


class Bench:
    """A namespace with the stand-in over it, a scripted hook, and admin access to check."""

    def __init__(self, plane: ControlPlane, answer: Answer, *, staleness: Staleness = FRESH,
                 resync: float | None = None, delay: float = 0.0) -> None:
        self.namespace = f"mc-{next(_names)}"
        admin = plane.api_client()
        ensure_namespace(admin, self.namespace)
        self.custom = kubernetes.client.CustomObjectsApi(admin)
        self.core = kubernetes.client.CoreV1Api(admin)
        self.hook = Scripted(answer, delay)
        self.invariants = Invariants(ServerView(admin, self.namespace))
        self.mc = Metacontroller(ApiBackend(admin, [self.namespace]), self.hook, self.invariants,
                                 resync_period=resync, staleness=staleness)

    def create(self, name: str) -> str:
        self.mc.create_job(self.namespace, name, job_spec())
        return str(self.job(name)["metadata"]["uid"])

    def job(self, name: str) -> dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "jobs", name,
                                                             _request_timeout=REQUEST_TIMEOUT))

    def jobsets(self) -> dict[str, dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", self.namespace, "jobsets",
                                                          _request_timeout=REQUEST_TIMEOUT)["items"]
        return {js["metadata"]["name"]: js for js in items}

    def sync_errors(self, name: str) -> list[str]:
        events = self.core.list_namespaced_event(self.namespace, field_selector=f"involvedObject.name={name}",
                                                 _request_timeout=REQUEST_TIMEOUT).items
        return [e.message for e in events if e.reason == "SyncError" and e.type == "Warning"]

    def settle(self, seconds: float = 1.0) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.mc.reconcile_due()
            time.sleep(0.05)


def ok(status: Mapping[str, Any] | None = None, children: list[Any] | None = None, **more: Any) -> tuple[int, Any]:
    return 200, {"status": dict(status or {}), "children": list(children or []), **more}


@pytest.fixture
def plane(control_plane: ControlPlane, installed: dict[str, str]) -> ControlPlane:
    return control_plane


# -- facts 1, 2 ------------------------------------------------------------------------------------

def test_a_stale_answer_overwrites_a_newer_status_with_the_live_resource_version(plane: ControlPlane) -> None:
    bench = Bench(plane, lambda path, request: ok({"phase": "Pending"}), staleness=Staleness(restart_lag=60.0))
    bench.create("lww")
    bench.settle(0.5)
    job = bench.job("lww")
    assert FINALIZER in job["metadata"]["finalizers"] and job["status"]["phase"] == "Pending"
    bench.mc.parent_cache.restarted(time.monotonic())  # the cache keeps this version of the Job
    job["status"] = {"phase": "Running"}
    bench.custom.replace_namespaced_custom_object_status(GROUP, VERSION, bench.namespace, "jobs", "lww", job)
    bench.mc.refresh()
    call = bench.mc.reconcile(bench.namespace, "lww")
    assert call is not None and call.request["parent"]["status"]["phase"] == "Pending", "a stale parent"
    assert bench.job("lww")["status"] == {"phase": "Pending", "observedGeneration": 1}, "the last writer wins"
    assert bench.mc.status_log[-1][2] == {"phase": "Running"}, "written over the live status, not the cached one"


# -- fact 3 ----------------------------------------------------------------------------------------

def test_finalized_removes_the_finalizer_first_and_the_last_status_is_never_written(plane: ControlPlane) -> None:
    def answer(path: str, request: dict[str, Any]) -> tuple[int, Any]:
        if path == "/finalize":
            return ok({"phase": "Terminating", "message": "the last status"}, finalized=True)
        return ok({"phase": "Running"})
    bench = Bench(plane, answer)
    bench.create("fin")
    bench.settle(0.5)
    bench.mc.delete_job(bench.namespace, "fin")
    bench.settle(0.5)
    assert [path for path, _ in bench.hook.requests][-1] == "/finalize"
    with pytest.raises(ApiException) as gone:
        bench.job("fin")
    assert gone.value.status == 404
    assert all(after.get("message") != "the last status" for _, _, _, after in bench.mc.status_log)


# -- fact 4 ----------------------------------------------------------------------------------------

def test_a_gc_finalizer_calls_finalize_but_manages_no_children(plane: ControlPlane) -> None:
    def answer(path: str, request: dict[str, Any]) -> tuple[int, Any]:
        if path == "/finalize":
            return ok({"phase": "Terminating"}, finalized=False)  # omits the JobSet
        held = jobset("fg-0")
        held["metadata"]["finalizers"] = ["nvcre.test/hold"]  # the garbage collector cannot finish meanwhile
        return ok({"phase": "Running"}, [held])
    bench = Bench(plane, answer)
    bench.create("fg")
    bench.settle(0.5)
    assert "fg-0" in bench.jobsets()
    bench.custom.delete_namespaced_custom_object(GROUP, VERSION, bench.namespace, "jobs", "fg",
                                                 body={"propagationPolicy": "Foreground"})
    bench.mc.refresh()
    call = bench.mc.reconcile(bench.namespace, "fg")
    assert call is not None and call.hook == "finalize"
    assert "foregroundDeletion" in call.request["parent"]["metadata"]["finalizers"]
    assert call.deleted == [], "the garbage collector's children are left to it"


# -- facts 5, 7 ------------------------------------------------------------------------------------

def test_children_created_with_owner_label_and_last_applied_never_updated_deleted_background(
        plane: ControlPlane) -> None:
    answers = iter([[jobset("ch-0", tier="a")], [jobset("ch-0", tier="b")], []])
    current: list[Any] = next(answers)
    bench = Bench(plane, lambda path, request: ok({"phase": "Running"}, current))
    uid = bench.create("ch")
    bench.settle(0.5)
    created = bench.jobsets()["ch-0"]["metadata"]
    assert created["labels"] == {"tier": "a", "controller-uid": uid}
    assert [(o["uid"], o["controller"], o["blockOwnerDeletion"]) for o in created["ownerReferences"]] == [
        (uid, True, True)]
    assert orjson.loads(created["annotations"][LAST_APPLIED])["metadata"]["labels"]["tier"] == "a"
    current = next(answers)
    bench.mc.reconcile(bench.namespace, "ch")
    assert bench.jobsets()["ch-0"]["metadata"]["labels"]["tier"] == "a", "OnDelete: never updated"
    current = next(answers)
    call = bench.mc.reconcile(bench.namespace, "ch")
    assert call is not None and call.deleted == ["ch-0"]
    assert "ch-0" not in bench.jobsets() or bench.jobsets()["ch-0"]["metadata"].get("deletionTimestamp")


def test_orphans_are_adopted_strays_released_and_a_child_off_the_selector_fails_the_sync(
        plane: ControlPlane) -> None:
    wrong: list[Any] = []
    kept = [jobset("ad-0")]  # an adopted child is the parent's: an answer that omits it deletes it
    bench = Bench(plane, lambda path, request: ok({"phase": "Running"}, [*kept, *wrong]))
    uid = bench.create("ad")
    bench.settle(0.5)
    orphan = jobset("ad-orphan", **{"controller-uid": uid})
    kept.append(jobset("ad-orphan"))
    bench.custom.create_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", bench.namespace, "jobsets", orphan)
    bench.settle(0.5)
    owners = bench.jobsets()["ad-orphan"]["metadata"].get("ownerReferences") or []
    assert [o["uid"] for o in owners if o.get("controller")] == [uid], "a matching orphan is adopted"
    assert f"{bench.namespace}/ad-orphan" in bench.hook.requests[-1][1]["children"]["JobSet.jobset.x-k8s.io/v1alpha2"]
    kept.pop()
    bench.custom.patch_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", bench.namespace, "jobsets", "ad-orphan",
                                                {"metadata": {"labels": {"controller-uid": "someone-else"}}})
    bench.settle(0.5)
    assert not bench.jobsets()["ad-orphan"]["metadata"].get("ownerReferences"), "a stray is released"
    wrong.append(jobset("ad-9", **{"controller-uid": "someone-else"}))
    bench.mc.refresh()
    bench.mc.reconcile(bench.namespace, "ad")
    assert "ad-9" not in bench.jobsets()
    assert any("don't match parent selector" in m for m in bench.sync_errors("ad"))


# -- facts 6, 8 ------------------------------------------------------------------------------------

def test_an_answer_the_strict_decoder_refuses_writes_nothing_and_records_a_sync_error(plane: ControlPlane) -> None:
    body = b'{"status": {"phase": "Running"}, "children": [], "resyncAfterSeconds": "5"}'
    bench = Bench(plane, lambda path, request: (200, body))
    bench.create("strict")
    bench.settle(0.5)
    assert "status" not in bench.job("strict") and bench.mc.status_log == []
    assert any("resyncAfterSeconds is not a number" in m for m in bench.sync_errors("strict"))
    assert any("cannot decode" in v for v in bench.invariants.violations), "a hook must never answer so"
    assert len(bench.hook.requests) > 2, "requeued with backoff from 5 ms"


def test_five_workers_sync_five_parents_at_once(plane: ControlPlane) -> None:
    bench = Bench(plane, lambda path, request: ok({"phase": "Running"}), delay=0.3)
    for i in range(7):
        bench.mc.backend.create_parent(bench.namespace, f"w{i}", job_spec())
    bench.settle(1.5)
    assert bench.hook.most_in_flight == 5


# -- fact 9 ----------------------------------------------------------------------------------------

def test_the_resync_calls_every_parent_at_once_and_resync_after_once(plane: ControlPlane) -> None:
    def answer(path: str, request: dict[str, Any]) -> tuple[int, Any]:
        name = request["parent"]["metadata"]["name"]
        if name == "failing":
            return 500, {"error": "no"}
        return ok({"phase": "Running"}, resyncAfterSeconds=0.5) if name == "soon" else ok({"phase": "Running"})
    bench = Bench(plane, answer, resync=2.0)
    for name in ("a", "b", "failing", "soon"):
        bench.mc.backend.create_parent(bench.namespace, name, job_spec())
    bench.settle(1.2)
    counts = Counter(r["parent"]["metadata"]["name"] for _, r in bench.hook.requests)
    assert counts["soon"] >= 2 and counts["failing"] >= 3, counts
    mark = len(bench.hook.requests)
    bench.settle(1.5)  # the resync period passes once
    after = Counter(r["parent"]["metadata"]["name"] for _, r in bench.hook.requests[mark:])
    assert {"a", "b", "failing", "soon"} <= set(after), after


# -- serve: the informers watch (issue 36 item 1) --------------------------------------------------

def test_serve_delivers_each_change_as_an_event_and_a_cut_watch_lists_again(plane: ControlPlane) -> None:
    bench = Bench(plane, lambda path, request: ok({"phase": "Running"}, [jobset("ev-0")]))
    backend = bench.mc.backend
    uid = bench.create("ev")
    stop = threading.Event()
    serving = threading.Thread(target=bench.mc.serve, args=(stop,), daemon=True)

    def synced_after(mark: int, what: Callable[[dict[str, Any]], bool], within: float) -> float:
        began = time.monotonic()
        while time.monotonic() - began < within:
            if any(what(request) for _, request in bench.hook.requests[mark:]):
                return time.monotonic() - began
            time.sleep(0.01)
        raise AssertionError(f"no sync within {within:g} s; lists {backend.lists}, errors {bench.mc.informer_errors}")

    def spec(value: bool) -> Callable[[dict[str, Any]], bool]:
        return lambda request: request["parent"]["spec"].get("suspend", False) is value

    serving.start()
    try:
        synced_after(0, lambda request: "ev-0" in str(request["children"]), 10.0)  # the child made, seen
        time.sleep(1.0)
        lists = backend.lists
        mark = len(bench.hook.requests)
        bench.mc.patch_spec(bench.namespace, "ev", suspend=True)
        assert synced_after(mark, spec(True), 2.0) < 0.5, "a spec patch is synced as soon as its event comes"
        mark = len(bench.hook.requests)
        bench.custom.patch_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", bench.namespace, "jobsets", "ev-0",
                                                    {"metadata": {"labels": {"touched": "yes"}}})
        synced_after(mark, lambda request: "touched" in str(request["children"]), 2.0)  # a child's update too
        time.sleep(1.0)
        assert backend.lists == lists, "no list after the start: the watches deliver every change"
        bench.mc.cut_watches()
        began = time.monotonic()
        while backend.lists < lists + 2 and time.monotonic() - began < 5.0:
            time.sleep(0.05)
        assert backend.lists == lists + 2, "each cut watch (Jobs, JobSets) lists again, once"
        mark = len(bench.hook.requests)
        bench.mc.patch_spec(bench.namespace, "ev", suspend=False)
        synced_after(mark, spec(False), 2.0)  # and watches on from the new list
        assert backend.lists == lists + 2
        assert len(bench.mc.informer_errors) == 2, bench.mc.informer_errors
        assert bench.job("ev")["metadata"]["uid"] == uid
    finally:
        stop.set()
        serving.join(10.0)
    assert not serving.is_alive(), "a stop shuts the 300-second watches down at once"


# -- fact 11 ---------------------------------------------------------------------------------------

@pytest.fixture
def probe_controller(plane: ControlPlane) -> Iterator[str]:
    custom = kubernetes.client.CustomObjectsApi(plane.api_client())
    body = {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
            "metadata": {"name": "discovery-probe"},
            "spec": {"generateSelector": True,
                     "parentResource": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "resource": "jobs"},
                     "childResources": [{"apiVersion": "widgets.example.com/v1", "resource": "widgets"}],
                     "hooks": {"sync": {"webhook": {"url": "http://127.0.0.1:1/sync"}}}}}
    custom.create_cluster_custom_object("metacontroller.k8s.io", "v1alpha1", "compositecontrollers", body)
    try:
        yield "discovery-probe"
    finally:
        custom.delete_cluster_custom_object("metacontroller.k8s.io", "v1alpha1", "compositecontrollers",
                                            "discovery-probe")


def test_no_controller_runs_while_a_child_type_is_not_in_discovery(plane: ControlPlane, probe_controller: str) -> None:
    with pytest.raises(BackendError, match="not in discovery"):
        CompositeControllerStandIn(plane.api_client(), probe_controller)


# -- the lifecycles with stale caches --------------------------------------------------------------

def drained_times(world: ClusterWorld, name: str) -> list[str]:
    """``Drained``'s lastTransitionTime in every status written for Job ``name``, once per change."""
    found: list[str] = []
    for _at, key, _before, after in world.driver.status_log:
        for condition in after.get("conditions") or [] if key[1] == name else []:
            if condition.get("type") == "Drained" and condition["status"] == "False" and \
                    (not found or found[-1] != condition["lastTransitionTime"]):
                found.append(condition["lastTransitionTime"])
    return found


def test_a_restart_under_stale_caches_makes_one_drain_and_takes_nothing_back(world: ClusterWorld) -> None:
    """The tier's staleness (``TIER_STALENESS``): requests from stale caches come (answered, since
    ADR-107 mostly as decided on the live Job, or refused by the hooks as behind the cluster), and
    still one drain, one stamp of it, one Event of each step."""
    world.create_job("stale", max_restarts=1)
    world.run_until_pods_run("stale", 2)
    world.pods.finish("nvcre.nvidia.com/job=stale", phase="Failed", exit_code=1, limit=1)
    world.run_until(lambda: world.jobsets("stale") == ["stale-1"], "attempt 1 created", timeout=90)
    world.run_until_pods_run("stale", 2)
    assert world.driver.stale_answers + world.driver.stale_refusals > 0, "requests from stale caches came"
    counts = Counter(world.event_reasons("stale"))
    assert (counts["Restarting"], counts["DrainWaiting"], counts["AttemptCreated"]) == (1, 1, 2), counts
    assert len(drained_times(world, "stale")) == 1
    assert (world.status("stale")["attempt"], world.status("stale")["restarts"]) == (1, 1)
    world.assert_safe()


def test_suspend_resume_under_stale_caches(world: ClusterWorld) -> None:
    """The parent cache 2 s behind (an API server under load): nothing is taken back and no
    invariant breaks (a hot loop included). Each cached parent version is answered with its own
    evidence times, so two versions can still stamp a drain twice: ``DrainWaiting`` and
    ``DrainPassed`` may repeat (up to 3 each seen), the residual of issue 21's report."""
    world.driver.parent_cache = LaggedCache(2.0, world.driver.staleness.restart_lag)
    world.create_job("nap")
    world.run_until_pods_run("nap", 2)
    world.driver.patch_spec(world.namespace, "nap", suspend=True)
    world.run_until(lambda: world.phase("nap") == "Suspended", "Suspended", timeout=90)
    world.driver.patch_spec(world.namespace, "nap", suspend=False)
    world.run_until(lambda: world.jobsets("nap") == ["nap-1"], "resumed as attempt 1")
    world.run_until_pods_run("nap", 2)
    world.run_for(2)
    counts = Counter(world.event_reasons("nap"))
    assert (counts["Suspended"], counts["Resumed"]) == (1, 1) and counts["DrainWaiting"] >= 1, counts
    assert world.status("nap")["attempt"] == 1
    world.assert_safe()
