"""Events and the hooks' own writes: which transitions make Events, that resyncs never
flood, that a failed write never changes an answer; ApiWriter and the node reads on the wire-level fake."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY

import podread
from hooks.core.actions import DeleteJob, ForceDeletePod
from hooks.core.decide import decide
from hooks.core.events import Event, transition_events
from hooks.core.lifecycle import Move, Transition, taken
from hooks.core.observed import PriorStatus, parse_request
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.effects import BURST, Effects, event_name
from hooks.server.writer import ApiWriter, MemoryWriter, WriteError
from podread.access import AccessClient
from podread.nodes import NodeClient
from tests.fakekube.faults import Fault
from tests.fakekube.server import FakeKubeServer
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.uids import uid

pytest_plugins = ["tests.fakekube.fixtures"]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def reasons(events: list[Event]) -> list[str]:
    return [event.reason for event in events]


def prior(**status: Any) -> PriorStatus:
    return parse_request(job_request(status=status), "sync").status


def moved(move: Move, source: str, target: str, attempts: tuple[int, int] = (0, 0)) -> tuple[Transition, ...]:
    """The one transition ``move`` makes from ``source`` to ``target`` (an arrow of the table)."""
    arrow = taken(move, source, target)
    assert arrow is not None, (move, source, target)
    return (Transition(move, source, target, attempts, arrow),)


# ---- which transitions make Events ---------------------------------------------------------------

def test_a_fixed_point_makes_no_event() -> None:
    body = job_request(jobsets=[jobset_child("train", 0)])
    first = decide(parse_request(body, "sync"), FakeReader(), NOW)
    body["parent"]["status"] = first.response["status"]
    again = decide(parse_request(body, "sync"), FakeReader(), NOW)
    assert reasons(transition_events(parse_request(body, "sync").status, again.response["status"])) == []


def test_transitions_make_their_events() -> None:
    created = {"phase": "Pending", "attempt": 0, "workload": "train-0", "conditions": []}
    assert reasons(transition_events(prior(), created)) == ["AttemptCreated"]
    assert reasons(transition_events(prior(), created, children=())) == [], "a gate held it back: not created"
    restarting = {"phase": "Restarting", "attempt": 0, "workload": "", "restarts": 1,
                  "lastFailure": {"cause": "default", "message": "JobSet failed (FailedJobs)", "action": "RestartJob"},
                  "conditions": [{"type": "Drained", "status": "False", "message": "waiting for 2 active pods",
                                  "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    events = transition_events(prior(phase="Running", workload="train-0"), restarting,
                               transitions=moved(Move.FAIL, "Running", "Restarting"))
    assert reasons(events) == ["Restarting", "DrainWaiting"]
    assert "because JobSet failed (FailedJobs)" in events[0].note and "counts against" in events[0].note
    assert events[1].note == "waiting for 2 active pods"
    passed = {"phase": "Suspended", "attempt": 0, "conditions": [
        {"type": "Drained", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]}
    was = prior(phase="Suspending", conditions=restarting["conditions"])
    assert reasons(transition_events(was, passed, transitions=moved(Move.SUSPEND, "Suspending", "Suspended"))) == [
        "DrainPassed", "Suspended"]
    resumed = {"phase": "Pending", "attempt": 1, "workload": "train-1", "conditions": []}
    assert reasons(transition_events(prior(phase="Suspended"), resumed, transitions=moved(
        Move.NEXT_ATTEMPT, "Suspended", "Pending", (0, 1)))) == ["Resumed", "AttemptCreated"]
    deadline = {"phase": "Terminating", "attempt": 0, "conditions": [
        {"type": "DeadlineExceeded", "status": "True", "message": "m", "lastTransitionTime": "t"},
        {"type": "DrainStuck", "status": "True", "message": "1 pod waits", "lastTransitionTime": "t"}]}
    assert reasons(transition_events(prior(phase="Running"), deadline)) == ["DrainStuck", "DeadlineExceeded"]
    actions = (DeleteJob("ns", "train", "u", "ttl passed"), ForceDeletePod("ns", "p", "pu", "n", "node n deleted"))
    done = {"phase": "Succeeded", "attempt": 0, "conditions": [], "completionTime": "c"}
    assert reasons(transition_events(prior(phase="Succeeded"), done, actions)) == ["Deleting", "ForceDeletingPod"]


def test_the_same_transition_has_the_same_event_name_and_another_one_does_not() -> None:
    status = {"phase": "Pending", "attempt": 2, "workload": "train-2", "conditions": []}
    one, = transition_events(prior(), status)
    two, = transition_events(prior(), dict(status))
    other, = transition_events(prior(), {**status, "attempt": 3, "workload": "train-3"})
    assert event_name("train", "uid", one) == event_name("train", "uid", two) != event_name("train", "uid", other)
    assert event_name("train", "uid", one) != event_name("train", "uid-of-a-new-job", one)


# ---- Effects: deduplicated, rate-limited, never in the way ---------------------------------------

def _decided(body: dict[str, Any], reader: FakeReader | None = None) -> tuple[Any, Any]:
    observed = parse_request(body, "sync")
    return observed, decide(observed, reader or FakeReader(), NOW)


def test_resyncs_with_a_stale_status_write_one_event() -> None:
    writer = MemoryWriter()
    effects = Effects(writer, instance="test")
    observed, decision = _decided(job_request())
    for _ in range(5):  # Metacontroller calling again before its status write landed
        effects.submit(observed, decision, NOW)
    assert effects.flush()
    assert [(kind, body["reason"]) for kind, body in writer.writes] == [("event", "AttemptCreated")]
    body = writer.writes[0][1]
    assert body["regarding"] == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "train",
                                 "namespace": "default", "uid": uid("job/train")}
    assert body["eventTime"] == "2026-01-01T00:00:00.000000Z" and body["reportingInstance"] == "test"


def test_events_of_one_job_are_rate_limited() -> None:
    clock = [0.0]
    writer = MemoryWriter()
    effects = Effects(writer, instance="test", clock=lambda: clock[0])
    observed = parse_request(job_request(), "sync")
    def created(attempt: int) -> Any:
        status = {"phase": "Pending", "attempt": attempt, "workload": f"train-{attempt}", "conditions": []}
        response = {"status": status, "children": [{"metadata": {"name": f"train-{attempt}"}}]}
        return type("D", (), {"response": response, "actions": (), "transitions": ()})()

    for attempt in range(BURST + 5):
        effects.submit(observed, created(attempt), NOW)
    assert effects.flush()
    assert len(writer.writes) == BURST
    clock[0] += 60.0
    effects.submit(observed, created(99), NOW)
    assert effects.flush() and len(writer.writes) == BURST + 1


class FailingWriter(MemoryWriter):
    def create_event(self, namespace: str, body: Any) -> str:
        raise WriteError("the API server answered 500", "http-500")

    def delete_job(self, action: DeleteJob) -> str:
        raise RuntimeError("a bug in the writer")


def test_a_failed_write_never_changes_the_answer() -> None:
    body = job_request(spec={**job_spec(), "ttlSecondsAfterFinished": 0},
                       status={"phase": "Succeeded", "attempt": 0, "workload": "train-0"},
                       jobsets=[jobset_child("train", 0, state="Completed")])
    raw = json.dumps(body)
    silent = create_app(FakeReader(), clock=lambda: NOW, settings=Settings(), writer=MemoryWriter()).test_client()
    failing_app = create_app(FakeReader(), clock=lambda: NOW, settings=Settings(), writer=FailingWriter())
    failing = failing_app.test_client()
    expected = silent.post("/sync", data=raw, content_type="application/json")
    answered = failing.post("/sync", data=raw, content_type="application/json")
    assert failing_app.extensions["nvcre_effects"].flush()
    assert answered.status_code == expected.status_code == 200
    assert answered.get_json() == expected.get_json()
    again = failing.post("/sync", data=raw, content_type="application/json")
    assert again.get_json() == expected.get_json(), "and the next call asks for the delete again"


# ---- on the wire-level fake ------------------------------------------------------------------------

def _app(fake: FakeKubeServer, reader: Any = None) -> Any:
    return create_app(reader or FakeReader(), clock=lambda: NOW, settings=Settings(),
                      writer=ApiWriter(fake.api_client(retries=False)))


def test_events_reach_the_api_server_once_across_processes(fake_kube: FakeKubeServer) -> None:
    raw = json.dumps(job_request(namespace="team-a"))
    first, second = _app(fake_kube), _app(fake_kube)  # two gunicorn workers, or two replicas
    for app in (first, second, first):
        assert app.test_client().post("/sync", data=raw, content_type="application/json").status_code == 200
        assert app.extensions["nvcre_effects"].flush()
    events = list(fake_kube.writes.events.values())
    assert [e["reason"] for e in events] == ["AttemptCreated"] and events[0]["note"] == \
        "created attempt 0 (JobSet train-0)"
    posts = fake_kube.request_count("/apis/events.k8s.io/v1/namespaces/team-a/events")
    assert posts == 2, "the second process got 409 AlreadyExists; the first did not send again"


def test_an_event_write_that_fails_on_the_wire_changes_nothing(fake_kube: FakeKubeServer) -> None:
    fake_kube.inject(Fault(path="/apis/events.k8s.io", status=500, times=10))
    raw = json.dumps(job_request(namespace="team-a"))
    app = _app(fake_kube)
    answer = app.test_client().post("/sync", data=raw, content_type="application/json")
    assert app.extensions["nvcre_effects"].flush()
    assert answer.status_code == 200 and [c["metadata"]["name"] for c in answer.get_json()["children"]] == ["train-0"]
    assert fake_kube.writes.events == {}


def test_ttl_deletes_the_job_with_its_uid(fake_kube: FakeKubeServer) -> None:
    fake_kube.writes.jobs[("team-a", "train")] = {"metadata": {"name": "train", "uid": uid("job/train")}}
    # Failed as its JobSet shows (the TTL delete needs that evidence, not only the status), completed when it failed.
    finished = {"phase": "Failed", "attempt": 0, "workload": "train-0", "completionTime": "2025-12-31T23:00:00Z"}
    raw = json.dumps(job_request(namespace="team-a", spec={**job_spec(), "ttlSecondsAfterFinished": 3600},
                                 status=finished, jobsets=[jobset_child("train", 0, namespace="team-a",
                                                                        state="Failed")]))
    app = _app(fake_kube)
    assert app.test_client().post("/sync", data=raw, content_type="application/json").status_code == 200
    assert app.extensions["nvcre_effects"].flush()
    assert fake_kube.writes.deleted_jobs == [("team-a", "train")]
    assert [e["reason"] for e in fake_kube.writes.events.values()] == ["Deleting"]
    writer = ApiWriter(fake_kube.api_client(retries=False))
    assert writer.delete_job(DeleteJob("team-a", "train", "uid-of-another-job", "x")) == "gone"


def test_a_stuck_pod_is_force_deleted_through_the_wire(fake_kube: FakeKubeServer) -> None:
    pod = make_pod("train-0-worker-0-0", job="train", namespace="team-a", workload="train-0", node="gpu-7",
                   deleting="2025-12-31T23:00:00Z")
    pod["metadata"]["uid"] = uid("pod/x")
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-0-worker-0",
                                           "uid": uid("job/x"), "controller": True}]
    fake_kube.put_pod(pod)
    fake_kube.writes.nodes["gpu-8"] = {"metadata": {"name": "gpu-8"}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2025-12-01T00:00:00Z"}]}}
    api = fake_kube.api_client(retries=False)
    live = podread.LiveClient(api)
    reader = podread.Reader(podread.PodCache(live, ttl_seconds=0.05), live, nodes=NodeClient(api),
                            access=AccessClient(api), jobs=podread.JobClient(api))
    states = reader.node_states(["gpu-7", "gpu-8"])
    assert (states["gpu-7"].exists, states["gpu-8"].exists, states["gpu-8"].unhealthy) == (False, True, False)
    drained = {"type": "Drained", "status": "False", "reason": "PodsActive", "message": "w",
               "lastTransitionTime": "2025-12-31T23:00:00Z"}
    body = job_request(namespace="team-a", finalizing=True, deleting="2025-12-31T23:00:00Z",
                       spec={**job_spec(), "drain": {"forceDeleteStuckPodsAfterSeconds": 600}},
                       status={"phase": "Terminating", "attempt": 0, "workload": "", "conditions": [drained]})
    app = _app(fake_kube, reader)
    answer = app.test_client().post("/finalize", data=json.dumps(body), content_type="application/json").get_json()
    assert answer["finalized"] is False and "node gpu-7 deleted" in answer["status"]["message"]
    assert app.extensions["nvcre_effects"].flush()
    assert [(ns, name, opts["gracePeriodSeconds"], opts["preconditions"]) for ns, name, opts
            in fake_kube.writes.deleted_pods] == [("team-a", "train-0-worker-0-0", 0, {"uid": uid("pod/x")})]
    assert sorted(e["reason"] for e in fake_kube.writes.events.values()) == ["DrainStuck", "ForceDeletingPod"]
    body["parent"]["status"] = answer["status"]
    time.sleep(0.1)  # the cache's TTL: it held the pod as it was before the delete
    after = app.test_client().post("/finalize", data=json.dumps(body), content_type="application/json").get_json()
    assert after["finalized"] is True, "the pod is gone: the barrier passes"


def test_a_node_read_that_fails_is_an_error_never_deleted(fake_kube: FakeKubeServer) -> None:
    fake_kube.inject(Fault(path="/api/v1/nodes/", status=503, times=5))
    reader = podread.Reader(FakeReader(), None, nodes=NodeClient(fake_kube.api_client(retries=False)))
    with pytest.raises(podread.PodReadError) as failed:
        reader.node_states(["gpu-1"])
    assert failed.value.code == "http-503" and failed.value.method == "node_states"



# ---- writes bound to the caller and the parent ------------------------------------------------------

def _writes(kind: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("nvcre_writes_total", {"kind": kind, "outcome": outcome}) or 0.0


@pytest.mark.parametrize("missing", ["", "   "], ids=["empty", "blank"])
def test_a_delete_without_a_uid_is_refused_never_sent_and_counted(fake_kube: FakeKubeServer, missing: str) -> None:
    fake_kube.writes.jobs[("team-a", "train")] = {"metadata": {"name": "train", "uid": uid("job/train")}}
    writer = ApiWriter(fake_kube.api_client(retries=False))
    for action, call in ((DeleteJob("team-a", "train", missing, "ttl"), writer.delete_job),
                         (ForceDeletePod("team-a", "train-0-worker-0-0", missing, "gpu-7", "stuck"),
                          writer.force_delete_pod)):
        with pytest.raises(WriteError) as refused:
            call(action)  # type: ignore[operator]
        assert refused.value.code == "no-uid" and action.name in str(refused.value)
    assert fake_kube.request_count(predicate=lambda r: r.method == "DELETE") == 0, "nothing went on the wire"
    assert fake_kube.writes.deleted_jobs == []

    memory = MemoryWriter()
    effects = Effects(memory, instance="test")
    before = (_writes("delete-job", "refused"), _writes("force-delete-pod", "refused"))
    decision = type("D", (), {"response": {"status": {}, "children": []}, "transitions": (), "actions": (
        DeleteJob("team-a", "train", missing, "ttl"),
        ForceDeletePod("team-a", "train-0-worker-0-0", missing, "gpu-7", "stuck"))})()
    effects.submit(parse_request(job_request(namespace="team-a"), "sync"), decision, NOW)
    assert effects.flush()
    assert [kind for kind, _ in memory.writes if kind != "event"] == [], "every writer refuses it"
    assert (_writes("delete-job", "refused"), _writes("force-delete-pod", "refused")) == (before[0] + 1,
                                                                                          before[1] + 1)


def test_every_delete_carries_the_uid_precondition_on_the_wire(fake_kube: FakeKubeServer) -> None:
    """The fake refuses a DELETE whose precondition names another UID (409): the Job of that name
    now is another object, so the delete of the old one hits nothing."""
    fake_kube.writes.jobs[("team-a", "train")] = {"metadata": {"name": "train", "uid": uid("job/train-v2")}}
    writer = ApiWriter(fake_kube.api_client(retries=False))
    assert writer.delete_job(DeleteJob("team-a", "train", uid("job/train"), "ttl")) == "gone"
    assert fake_kube.writes.deleted_jobs == []
    pod = make_pod("train-0-worker-0-0", job="train", namespace="team-a", workload="train-0", node="gpu-7")
    pod["metadata"]["uid"] = uid("pod/now")
    fake_kube.put_pod(pod)
    assert writer.force_delete_pod(ForceDeletePod("team-a", pod["metadata"]["name"], uid("pod/before"), "gpu-7",
                                                  "stuck")) == "gone"
    assert writer.force_delete_pod(ForceDeletePod("team-a", pod["metadata"]["name"], uid("pod/now"), "gpu-7",
                                                  "stuck")) == "deleted"
    [(_, _, options)] = fake_kube.writes.deleted_pods
    assert options["preconditions"] == {"uid": uid("pod/now")} and options["gracePeriodSeconds"] == 0


def test_events_regard_only_the_parent_of_the_request_in_its_namespace(fake_kube: FakeKubeServer) -> None:
    """Whatever else the request names (a child in another namespace, a controller), the Event's
    body, its ``regarding`` and the namespace it is posted to are the parsed parent's."""
    body = job_request(name="eval", namespace="team-b")
    foreign = jobset_child("train", 0)
    foreign["metadata"]["namespace"] = "team-a"
    body["controller"] = {"metadata": {"name": "someone-else", "namespace": "team-a"}}
    app = _app(fake_kube)
    assert app.test_client().post("/sync", data=json.dumps(body), content_type="application/json").status_code == 200
    assert app.extensions["nvcre_effects"].flush()
    posts = [r.path for r in fake_kube.requests if r.method == "POST"]
    assert posts and set(posts) == {"/apis/events.k8s.io/v1/namespaces/team-b/events"}
    assert {namespace for namespace, _ in fake_kube.writes.events} == {"team-b"}
    for event in fake_kube.writes.events.values():
        assert event["regarding"] == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "eval",
                                      "namespace": "team-b", "uid": uid("job/eval")}
        assert event["metadata"]["namespace"] == "team-b" and event["metadata"]["name"].startswith("eval.")


def test_a_new_uid_per_request_does_not_escape_the_rate_limit() -> None:
    """50 requests for the same Job, each with a fresh uid (so a fresh Event name each time, which
    no deduplication catches): the bucket is the Job's namespace/name, at most BURST Events."""
    writer = MemoryWriter()
    app = create_app(FakeReader(), clock=lambda: NOW, settings=Settings(), writer=writer)
    client = app.test_client()
    for n in range(50):
        body = job_request(name="train", namespace="team-a")
        body["parent"]["metadata"]["uid"] = uid(f"job/train-forged-{n}")
        assert client.post("/sync", data=json.dumps(body), content_type="application/json").status_code == 200
    assert app.extensions["nvcre_effects"].flush()
    events = [body for kind, body in writer.writes if kind == "event"]
    assert len({e["regarding"]["uid"] for e in events}) > 1, "the requests did make Events for several uids"
    assert len(events) <= BURST
