"""Where a hook call's time goes (issue 36 item 8): every answer timed by what it did
(``nvcre_hook_outcome_duration_seconds``: steady, checked, redecided, refused, unavailable, ...), its
own time told to the caller (``Server-Timing``, so the caller can tell the time spent waiting
outside the handler), the live Job reads of the freshness check timed
(``nvcre_parent_read_duration_seconds``) and the effects thread's writes timed
(``nvcre_write_duration_seconds``). In process, on prometheus_client's default registry (read as
differences: other tests count on it too)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import orjson
import pytest
from kubernetes import client as k8s
from prometheus_client import REGISTRY

from hooks.server import metrics
from hooks.server.app import create_app
from hooks.server.effects import Effects
from hooks.server.freshness import (
    RECENT_STATUS_SECONDS,
    FixedParentVersions,
    LiveParentVersions,
    ParentReadError,
    UnreadableParentVersions,
)
from hooks.server.writer import MemoryWriter
from tests.fakekube import FakeKubeServer
from tests.server.test_freshness import KEY, NOW, reader, running_request, settled
from tests.support import FakeReader, job_request


def count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(f"{name}_count", labels) or 0.0


def outcomes() -> dict[str, float]:
    return {outcome: count("nvcre_hook_outcome_duration_seconds", hook="sync", outcome=outcome)
            for outcome in metrics.OUTCOMES}


def post(body: dict[str, object], parents: object, fake_reader: FakeReader | None = None) -> tuple[int, str]:
    app = create_app(fake_reader or reader(), clock=lambda: NOW, parents=parents)  # type: ignore[arg-type]
    response = app.test_client().post("/sync", data=orjson.dumps(body), content_type="application/json")
    return response.status_code, response.headers.get("Server-Timing", "")


def test_every_answer_is_timed_by_what_it_did() -> None:
    """A settled Job answered from the cache alone is ``steady``; one whose answer changes the status
    is ``checked`` (its version read live); one behind the live Job is ``redecided``; a Job gone is
    ``refused`` (409) and one that cannot be read ``unavailable`` (503). Each call is counted once,
    under one outcome, beside the per-hook histogram."""
    before, calls = outcomes(), count("nvcre_hook_request_duration_seconds", hook="sync")
    steady = settled(NOW - timedelta(seconds=RECENT_STATUS_SECONDS + 5))
    changing = running_request(status_written=NOW - timedelta(hours=1))
    live = running_request(status_written=NOW - timedelta(seconds=3),
                           status={"phase": "Running", "attempt": 0, "message": "newer"})
    live["parent"]["metadata"]["resourceVersion"] = "43"
    assert post(steady, FixedParentVersions({KEY: "41"}))[0] == 200
    assert post(changing, FixedParentVersions({KEY: "42"}))[0] == 200
    assert post(changing, FixedParentVersions(jobs={KEY: live["parent"]}))[0] == 200
    assert post(changing, FixedParentVersions({}))[0] == 409
    assert post(changing, UnreadableParentVersions("none in this test"))[0] == 503
    after = outcomes()
    assert {k: after[k] - before[k] for k in after} == {"steady": 1, "checked": 1, "redecided": 1, "refused": 1,
                                                        "unavailable": 1, "invalid": 0, "error": 0}
    assert count("nvcre_hook_request_duration_seconds", hook="sync") == calls + 5


@pytest.mark.parametrize(("code", "redecided", "reads", "outcome"), [
    (200, False, 0, "steady"), (200, False, 1, "checked"), (200, True, 2, "redecided"), (409, False, 1, "refused"),
    (503, False, 1, "unavailable"), (400, False, 0, "invalid"), (413, False, 0, "invalid"), (500, False, 0, "error"),
])
def test_the_outcome_of_an_answer(code: int, redecided: bool, reads: int, outcome: str) -> None:
    assert metrics.outcome_of(code, redecided, reads) == outcome
    assert outcome in metrics.OUTCOMES


def test_the_answer_tells_the_hooks_own_time() -> None:
    """``Server-Timing: hook;dur=<ms>``: the handler's time of the call, what the histograms observe;
    the caller's wall time less it is the time spent outside the handler (a gunicorn thread, HTTP)."""
    code, timing = post(settled(NOW - timedelta(hours=1)), FixedParentVersions({}))
    name, _, duration = timing.partition(";dur=")
    assert code == 200 and name == "hook"
    assert 0.0 < float(duration) < 10_000.0


@pytest.fixture
def fake_kube() -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as server:
        yield server


def test_the_live_job_reads_are_timed_by_read(fake_kube: FakeKubeServer) -> None:
    versions, jobs = (count("nvcre_parent_read_duration_seconds", read="version"),
                      count("nvcre_parent_read_duration_seconds", read="job"))
    live = LiveParentVersions(fake_kube.api_client(retries=False))
    fake_kube.writes.jobs[KEY] = {"metadata": {"name": "train", "namespace": "default", "resourceVersion": "77"}}
    assert live.resource_version(*KEY) == "77"
    assert live.live_job(*KEY) is not None
    assert live.resource_version("default", "other") is None
    assert count("nvcre_parent_read_duration_seconds", read="version") == versions + 2
    assert count("nvcre_parent_read_duration_seconds", read="job") == jobs + 1


def test_a_failed_live_job_read_is_timed_too() -> None:
    """A read that fails is a 503 (the hook holds), and its time is observed: a slow failure is part of the tail."""
    before = count("nvcre_parent_read_duration_seconds", read="version")
    configuration = k8s.Configuration()
    configuration.host = "http://127.0.0.1:9"
    live = LiveParentVersions(k8s.ApiClient(configuration), timeout_seconds=0.5)
    with pytest.raises(ParentReadError):
        live.resource_version(*KEY)
    assert count("nvcre_parent_read_duration_seconds", read="version") == before + 1


def test_the_effects_threads_writes_are_timed_by_kind() -> None:
    from hooks.core.decide import decide
    from hooks.core.observed import parse_request

    before = count("nvcre_write_duration_seconds", kind="event")
    effects = Effects(MemoryWriter(), instance="test")
    observed = parse_request(job_request(name="timed"), "sync")
    effects.submit(observed, decide(observed, FakeReader([]), NOW), NOW)  # the first attempt: an Event
    assert effects.flush(5.0)
    assert count("nvcre_write_duration_seconds", kind="event") == before + 1


class BlockedWriter(MemoryWriter):
    """A writer whose every Event write hangs until ``release`` is set: an API server that does not answer."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.release = threading.Event()
        self.started = threading.Event()

    def create_event(self, namespace: str, body: object) -> str:  # type: ignore[override]
        self.started.set()
        self.release.wait(30)
        return super().create_event(namespace, body)  # type: ignore[arg-type]


def test_an_event_write_that_hangs_never_delays_an_answer() -> None:
    """Events are written off the answer's path (issue 36 item 8 asked): with the API server hanging
    on every Event write, and the effects queue full behind it, each answer that makes an Event still
    returns at once, the same answer; the Events that did not fit are dropped and counted."""
    import time

    from hooks.server.config import Settings
    from hooks.server.effects import MAX_QUEUE
    from hooks.server.handler import handle

    writer = BlockedWriter()
    effects = Effects(writer, instance="test")
    full = REGISTRY.get_sample_value("nvcre_writes_total", {"kind": "event", "outcome": "queue-full"}) or 0.0
    try:
        slowest = 0.0
        for index in range(MAX_QUEUE + 5):  # each a new Job's first attempt: one Event each
            body = job_request(name=f"train-{index}")
            began = time.perf_counter()
            result = handle(orjson.dumps(body), "sync", reader=FakeReader([]), clock=lambda: NOW,
                            settings=Settings(), effects=effects)
            slowest = max(slowest, time.perf_counter() - began)
            assert result.status_code == 200
        assert writer.started.wait(5), "the first Event write is in flight, hanging"
        assert slowest < 1.0, f"an answer waited {slowest:.2f} s on an Event write"
        assert (REGISTRY.get_sample_value("nvcre_writes_total", {"kind": "event", "outcome": "queue-full"})
                or 0.0) > full
    finally:
        writer.release.set()
        effects.flush(10.0)
