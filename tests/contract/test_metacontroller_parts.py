"""The pure parts of the Metacontroller stand-in (tests/cluster/metacontroller_parts.py), each
against the Metacontroller v4.17.2 behaviour its docstring names. Fast: no server, no clock."""

from __future__ import annotations

import json
import math

import pytest

from tests.cluster.metacontroller import FINALIZER, Metacontroller, Snapshot
from tests.cluster.metacontroller_parts import (
    LAST_APPLIED,
    CustomizeCache,
    DecodeError,
    ItemBackoff,
    LaggedCache,
    RequeueLimiter,
    ResyncTimer,
    SelectorError,
    SettleJudge,
    TokenBucket,
    WorkQueue,
    claim,
    decode_response,
    desired_children,
    has_gc_finalizer,
    with_last_applied,
)
from tests.e2e.driver import Reply

PARENT = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
          "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "generation": 1}}
JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j-0"}}


# -- fact 6 ----------------------------------------------------------------------------------------

def test_a_whole_answer_decodes() -> None:
    body = json.dumps({"status": {"phase": "Running"}, "children": [JOBSET], "resyncAfterSeconds": 2.5,
                       "finalized": False}).encode()
    response = decode_response(body, strict=True)
    assert response.status == {"phase": "Running"} and response.children == [JOBSET]
    assert (response.resync_after, response.finalized) == (2.5, False)


@pytest.mark.parametrize("body", [
    b'{"status": {}, "children": [], "extra": 1}',            # unknown top-level field
    b'{"status": {}, "children": [], "Status": {}}',          # names are case-sensitive
    b'{"status": {}, "children": [], "children": []}',        # duplicate top-level field
])
def test_v2_refuses_unknown_and_duplicate_fields_v1_ignores_them(body: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_response(body, strict=True)
    decode_response(body, strict=False)


@pytest.mark.parametrize("body", [
    b'{"status": {}, "children": [], "resyncAfterSeconds": "5"}',
    b'{"status": {}, "children": [], "resyncAfterSeconds": true}',
    b'{"status": {}, "children": [], "finalized": "true"}',
    b'{"status": {}, "children": [], "finalized": 1}',
    b'{"status": [], "children": []}',
    b'{"status": {}, "children": {}}',
    b'{"status": {}, "children": ["JobSet"]}',
    b'{"status": {}, "children": [null]}',
    b'{"status": {}, "children": [{"metadata": {"name": "x"}}]}',
    b'[]',
    b'not json',
])
def test_a_field_of_the_wrong_type_fails_in_both_modes(body: bytes) -> None:
    for strict in (True, False):
        with pytest.raises(DecodeError):
            decode_response(body, strict=strict)


def test_a_duplicate_inside_the_status_is_not_a_top_level_duplicate() -> None:
    response = decode_response(b'{"status": {"a": 1, "a": 2}, "children": []}', strict=True)
    assert response.status == {"a": 2}


def test_null_and_missing_fields_are_zero_values() -> None:
    assert decode_response(b'{}', strict=True) == decode_response(b'null', strict=True)
    response = decode_response(b'{"status": null, "children": null, "resyncAfterSeconds": null}', strict=True)
    assert (response.status, response.children, response.resync_after) == (None, [], 0.0)


# -- fact 7 ----------------------------------------------------------------------------------------

def _child(name: str, uid: str | None, owner: str | None, deleting: bool = False) -> dict:
    metadata: dict = {"name": name, "namespace": "ns", "labels": {"controller-uid": uid} if uid else {}}
    if owner:
        metadata["ownerReferences"] = [{"kind": "Job", "uid": owner, "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"kind": "JobSet", "metadata": metadata}


def test_claim_owns_adopts_releases_and_ignores() -> None:
    owned, orphan = _child("a", "u-1", "u-1"), _child("b", "u-1", None)
    stopped = _child("c", "other", "u-1")
    foreign, dying_orphan = _child("d", "u-1", "u-2"), _child("e", "u-1", None, deleting=True)
    unrelated = _child("f", None, None)
    result = claim(PARENT, [owned, orphan, stopped, foreign, dying_orphan, unrelated])
    assert [c["metadata"]["name"] for c in result.owned] == ["a"]
    assert [c["metadata"]["name"] for c in result.adopt] == ["b"]
    assert [c["metadata"]["name"] for c in result.release] == ["c"]


def test_a_parent_being_deleted_adopts_and_releases_nothing() -> None:
    deleting = {**PARENT, "metadata": {**PARENT["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    result = claim(deleting, [_child("b", "u-1", None), _child("c", "other", "u-1")])
    assert (result.owned, result.adopt, result.release) == ([], [], [])


def test_desired_children_get_the_label_and_namespace_and_must_match() -> None:
    [child] = desired_children(PARENT, [JOBSET])
    assert child["metadata"]["labels"] == {"controller-uid": "u-1"} and child["metadata"]["namespace"] == "ns"
    assert "labels" not in JOBSET["metadata"], "the answer itself is not changed"
    wrong = {**JOBSET, "metadata": {"name": "j-0", "labels": {"controller-uid": "u-9"}}}
    with pytest.raises(SelectorError, match="don't match parent selector"):
        desired_children(PARENT, [JOBSET, wrong])
    with pytest.raises(SelectorError):
        desired_children(PARENT, [{"kind": "JobSet", "metadata": {}}])


def test_a_create_carries_the_last_applied_configuration() -> None:
    [child] = desired_children(PARENT, [JOBSET])
    created = with_last_applied(child)
    assert json.loads(created["metadata"]["annotations"][LAST_APPLIED]) == child
    assert LAST_APPLIED not in (child["metadata"].get("annotations") or {})


def test_gc_finalizers() -> None:
    assert has_gc_finalizer({"metadata": {"finalizers": ["foregroundDeletion"]}})
    assert has_gc_finalizer({"metadata": {"finalizers": ["x", "orphan"]}})
    assert not has_gc_finalizer({"metadata": {"finalizers": ["metacontroller.io/compositecontroller-x"]}})


# -- fact 8 ----------------------------------------------------------------------------------------

def test_the_token_bucket_allows_the_burst_then_the_rate() -> None:
    bucket = TokenBucket(5.0, 10)
    assert [bucket.reserve(0.0) for _ in range(10)] == [0.0] * 10
    assert bucket.reserve(0.0) == pytest.approx(0.2)
    assert bucket.reserve(0.0) == pytest.approx(0.4), "waits queue up"
    assert bucket.reserve(10.0) == 0.0, "refilled"


def test_the_item_backoff_doubles_from_5ms_and_forgets() -> None:
    backoff = ItemBackoff()
    assert [backoff.when("k") for _ in range(4)] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert backoff.when("other") == pytest.approx(0.005), "per item"
    backoff.forget("k")
    assert backoff.when("k") == pytest.approx(0.005)
    for _ in range(40):
        last = backoff.when("k")
    assert last == 1000.0


def test_the_requeue_limiter_is_the_larger_of_both() -> None:
    limiter = RequeueLimiter()
    delays = [limiter.when(f"k{i}", 0.0) for i in range(101)]
    assert delays[:100] == pytest.approx([0.005] * 100)
    assert delays[100] == pytest.approx(0.1), "past the burst of 100, 10 a second"


# -- facts 8, 9 ------------------------------------------------------------------------------------

def test_the_work_queue_dedups_keeps_the_earliest_time_and_never_hands_a_key_twice() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add_after("b", 5.0, now=0.0)
    queue.add_after("b", 2.0, now=0.0)
    queue.add_after("b", 9.0, now=0.0)
    assert queue.take(0.0, 5) == ["a"]
    queue.add("a")  # changed while processed: ready again, but not for a second worker
    assert queue.take(0.0, 5) == []
    queue.done("a")
    assert queue.take(1.0, 5) == ["a"]
    assert queue.next_time() == 2.0
    assert queue.take(2.0, 5) == ["b"]
    assert queue.next_time() == math.inf


def test_the_work_queue_measures_each_key_s_wait_from_when_it_became_ready() -> None:
    now = [10.0]
    queue: WorkQueue[str] = WorkQueue(lambda: now[0])
    queue.add("a")
    now[0] = 11.0
    queue.add("a")  # added again while ready: it keeps its first time
    queue.add_after("b", 3.0, now=10.0)  # ready at 13
    now[0] = 12.5
    assert queue.take(now[0], 5) == ["a"] and queue.waits == [2.5]
    assert len(queue) == 1, "b still waits"
    now[0] = 14.0
    assert queue.take(now[0], 5) == ["b"] and queue.waits == [2.5, 1.0], "from its add_after time, not the add call"
    assert len(queue) == 0


def test_the_work_queue_hands_at_most_limit_keys() -> None:
    queue: WorkQueue[int] = WorkQueue()
    for key in range(8):
        queue.add(key)
    assert queue.take(0.0, 5) == [0, 1, 2, 3, 4]
    assert queue.take(0.0, 5) == [5, 6, 7]


def test_the_resync_timer_fires_once_per_period() -> None:
    timer = ResyncTimer(30.0, now=0.0)
    assert [timer.due(t) for t in (10.0, 30.0, 31.0, 59.0, 95.0, 96.0)] == [False, True, False, False, True, False]
    assert ResyncTimer(0.1, now=0.0).period == 1.0, "at least 1 s"
    assert not ResyncTimer(None, now=0.0).due(1e9)


# -- fact 10 ---------------------------------------------------------------------------------------

def test_the_customize_cache_is_per_uid_and_generation_for_20_minutes() -> None:
    cache = CustomizeCache()
    cache.put("u-1", 1, "rules", now=0.0)
    assert cache.get("u-1", 1, now=1199.0) == "rules"
    assert cache.get("u-1", 2, now=1.0) is None
    assert cache.get("u-2", 1, now=1.0) is None
    assert cache.get("u-1", 1, now=1200.0) is None


# -- fact 1 ----------------------------------------------------------------------------------------

def test_the_lagged_cache_serves_what_the_server_held_lag_seconds_ago() -> None:
    cache: LaggedCache[str] = LaggedCache(lag=0.6)
    assert cache.view(0.0) is None, "not synced"
    cache.record(0.0, "v0")
    cache.record(0.5, "v1")
    assert cache.view(0.5) == "v0"
    assert cache.view(1.1) == "v1"
    assert LaggedCache(lag=0.0).view(0.0) is None


def test_after_a_failed_list_the_cache_serves_the_old_view_for_restart_lag() -> None:
    cache: LaggedCache[str] = LaggedCache(lag=0.0, restart_lag=5.0)
    cache.record(0.0, "before")
    cache.failed(1.0)
    cache.failed(2.0)
    assert cache.view(2.0) == "before"
    cache.record(3.0, "after")
    assert cache.view(7.9) == "before", "the relist is not served yet"
    assert cache.view(8.0) == "after"
    cache.restarted(8.0)
    cache.record(9.0, "newer")
    assert cache.view(12.0) == "after" and cache.view(13.0) == "newer"


def test_try_take_drops_without_a_saved_token() -> None:
    bucket = TokenBucket(1 / 300, 25)
    assert all(bucket.try_take(0.0) for _ in range(25))
    assert not bucket.try_take(1.0) and not bucket.try_take(2.0)
    assert bucket.try_take(301.0)


# -- fact 10, through the stand-in's sync (an in-memory backend: no server) ---------------------------

class _Memory:
    """What ``Metacontroller`` asks of ``ApiBackend``, in memory: one Job, no children."""

    def __init__(self) -> None:
        self.job = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                    "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "1",
                                 "finalizers": [FINALIZER]},
                    "spec": {}}
        self.events: list[dict] = []

    def snapshot(self) -> Snapshot:
        flavor = {"metadata": {"name": "default-flavor"}}
        return Snapshot(jobs=(json.loads(json.dumps(self.job)),),
                        related=(("ResourceFlavor.kueue.x-k8s.io/v1beta2", (flavor,)),
                                 ("WorkloadPriorityClass.kueue.x-k8s.io/v1beta2", ())))

    def get_parent(self, namespace: str, name: str) -> dict:
        return json.loads(json.dumps(self.job))

    def update_parent_status(self, obj: dict) -> dict:
        self.job = obj
        self.job["metadata"]["resourceVersion"] = str(int(self.job["metadata"]["resourceVersion"]) + 1)
        return obj

    def create_event(self, body: dict) -> None:
        self.events.append(body)


class _Hooks:
    def __init__(self, customize_status: int = 200) -> None:
        self.customize_status = customize_status
        self.paths: list[str] = []
        self.related: list[dict] = []

    def post(self, path: str, body: bytes, headers: dict) -> Reply:
        self.paths.append(path)
        if path == "/customize":
            answer = {"relatedResources": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "resourceflavors",
                                            "labelSelector": {}}]}
            return Reply(self.customize_status, json.dumps(answer).encode(), 0.0)
        self.related.append(json.loads(body)["related"])
        return Reply(200, json.dumps({"status": {"phase": "Running"}, "children": []}).encode(), 0.0)


class _Judge:
    def __init__(self) -> None:
        self.violations: list[str] = []

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None

    def fail(self, message: str) -> None:
        self.violations.append(message)


def _stand_in(hooks: _Hooks, backend: _Memory) -> Metacontroller:
    return Metacontroller(backend, hooks, _Judge(), resync_period=None, workloads=True)  # type: ignore[arg-type]


def test_customize_is_asked_once_per_uid_and_generation_and_related_come_from_its_rules() -> None:
    backend, hooks = _Memory(), _Hooks()
    mc = _stand_in(hooks, backend)
    for _ in range(3):
        mc.reconcile("ns", "j")
    assert hooks.paths.count("/customize") == 1 and hooks.paths.count("/sync") == 3
    assert hooks.related[-1] == {"ResourceFlavor.kueue.x-k8s.io/v1beta2": {"default-flavor": {
        "metadata": {"name": "default-flavor"}}}}, "only the types its rules name"
    backend.job["metadata"]["generation"] = 2
    mc.refresh()
    mc.reconcile("ns", "j")
    assert hooks.paths.count("/customize") == 2


def test_a_failing_customize_fails_the_sync_before_the_sync_hook() -> None:
    backend, hooks = _Memory(), _Hooks(customize_status=500)
    mc = _stand_in(hooks, backend)
    mc.reconcile("ns", "j")
    assert hooks.paths == ["/customize"] and mc.sync_errors
    assert [e["reason"] for e in backend.events] == ["SyncError"]


def _drained(stamp: str, reason: str = "PodsActive", **fields: object) -> dict[str, object]:
    return {"phase": "Running", **fields,
            "conditions": [{"type": "Drained", "status": "False", "reason": reason, "lastTransitionTime": stamp}]}


def test_a_hook_stamping_now_on_every_call_is_a_hot_loop() -> None:
    """Nothing in the world changes, the answer does (a new lastTransitionTime per call, one write
    a second as the stamps tick): caught once the window holds more than the limit."""
    judge, verdicts = SettleJudge(), []
    for second in range(10):
        before = _drained(f"2026-12-05T09:00:{second:02d}Z")
        after = _drained(f"2026-12-05T09:00:{second + 1:02d}Z")
        verdicts.append(judge.record(float(second), before, after))
    flagged = [v for v in verdicts if v]
    assert len(flagged) == 1 and "Drained.lastTransitionTime" in flagged[0][0]


def test_a_status_flipping_between_two_values_is_a_hot_loop() -> None:
    judge = SettleJudge()
    a, b = _drained("t", observedGeneration=1), _drained("t", observedGeneration=2)
    verdicts = [judge.record(i * 0.5, *((a, b) if i % 2 else (b, a))) for i in range(9)]
    assert any(verdicts)


def test_progress_and_a_stale_answer_or_two_are_no_hot_loop() -> None:
    """Metacontroller writes every changed status (last writer wins): a drain that progresses writes
    often, and a stale cached parent answered after a fresher one writes an older value back once
    before the fresh answer wins again. 16 writes in 4 s, none a loop."""
    judge, t, writes = SettleJudge(), 0.0, []
    status = _drained("2026-12-05T09:00:00Z", reason="WorkloadPresent", activePods=2)
    for pods, reason, message in [(2, "PodsActive", "waiting for 2"), (1, "PodsActive", "waiting for 1"),
                                  (0, "NoActivePods", "drained"), (0, "NoActivePods", "restarting")]:
        for _ in range(4):
            after = dict(_drained("2026-12-05T09:00:01Z", reason=reason, activePods=pods), message=message,
                         attempts=[{"attempt": 0, "step": len(writes)}])
            writes.append(judge.record(t, status, after))
            status, t = after, t + 0.25
    stale = dict(status, observedGeneration=1)
    writes += [judge.record(t, status, stale), judge.record(t + 0.3, stale, status)]
    assert not any(writes)
