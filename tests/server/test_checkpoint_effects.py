"""The checkpoint's Events and metrics (issue 33): each request and each end makes one Event keyed by
the request id, an acknowledgement for another request a Warning; the outcome counter and the
request-to-acknowledgement histogram count once per end, through the HTTP edge."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import REGISTRY

from hooks.core import checkpoint
from hooks.core.events import transition_events
from hooks.core.observed import parse_request
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.writer import MemoryWriter
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.requests import checkpoint_request, mounting

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STAMP = "2026-01-01T00:00:00Z"


def prior(**status: Any) -> Any:
    return parse_request(job_request(status=status), "sync").status


def reasons(before: Any, after: dict[str, Any]) -> list[str]:
    return [event.reason for event in transition_events(before, after)]


def test_each_request_and_each_end_makes_one_event() -> None:
    asked = checkpoint_request(0, "suspend", STAMP)
    waiting = {"phase": "Suspending", "attempt": 0, "conditions": [], "checkpoint": asked}
    assert reasons(prior(phase="Running"), waiting) == ["CheckpointRequested"]
    assert reasons(prior(phase="Suspending", checkpoint=asked), waiting) == [], "a fixed point: none"
    ignored = waiting | {"checkpoint": asked | {"ignored": "0-suspend-1"}}
    assert reasons(prior(phase="Suspending", checkpoint=asked), ignored) == ["CheckpointAckIgnored"]
    for outcome, reason in (("Acknowledged", "CheckpointAcknowledged"), ("GraceExpired", "CheckpointGraceExpired"),
                            ("Cancelled", "CheckpointCancelled"), ("WorkloadEnded", "CheckpointAbandoned")):
        ended = waiting | {"checkpoint": asked | {"outcome": outcome}}
        events = transition_events(prior(phase="Suspending", checkpoint=asked), ended)
        assert [e.reason for e in events] == [reason]
        assert events[0].key == f"{reason}/{asked['id']}"
        assert events[0].type == ("Warning" if outcome in ("GraceExpired", "WorkloadEnded") else "Normal")


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def test_an_acknowledgement_is_counted_once_with_its_seconds() -> None:
    spec = job_spec() | {"checkpoint": {}, "suspend": True}
    jobsets = [mounting(jobset_child("train", 0))]
    pods = [make_pod("train-0-worker-0-0", job="train", workload="train-0")]
    later = NOW + timedelta(seconds=42)
    app = create_app(FakeReader(pods), clock=lambda: later, settings=Settings(), writer=MemoryWriter())
    client = app.test_client()
    asked = checkpoint_request(0, "suspend", STAMP)
    body = job_request(spec=spec, jobsets=jobsets, status={"phase": "Suspending", "attempt": 0, "checkpoint": asked},
                       annotations={checkpoint.ACK_ANNOTATION: json.dumps({"id": asked["id"], "step": 7})})
    acked = sample("nvcre_checkpoint_outcomes_total", {"outcome": "Acknowledged"})
    count = sample("nvcre_checkpoint_acknowledge_seconds_count")
    total = sample("nvcre_checkpoint_acknowledge_seconds_sum")
    for _ in range(3):  # Metacontroller replays the same parent: one end, counted once
        answer = client.post("/sync", data=json.dumps(body), content_type="application/json")
        assert answer.status_code == 200
        assert answer.get_json()["status"]["checkpoint"]["outcome"] == "Acknowledged"
    assert app.extensions["nvcre_effects"].flush()
    assert sample("nvcre_checkpoint_outcomes_total", {"outcome": "Acknowledged"}) == acked + 1
    assert sample("nvcre_checkpoint_acknowledge_seconds_count") == count + 1
    assert sample("nvcre_checkpoint_acknowledge_seconds_sum") == total + 42.0
    assert checkpoint.reached({}, {"outcome": "Requested"}) is None
