"""Every transition is stamped from the request's evidence (``hooks.core.stamps``), not the call's
clock: Metacontroller answers one cached parent version several times and writes the last answer
over newer ones, so answers that stamped their own ``now`` wrote times the cache replayed in turn
and the status never settled (the cluster tier's hot-loop check caught it on StatusMismatch,
Admitted, DrainStuck and status.attempts). Held over every recorded payload: with the API server's
write time on the parent, two answers a second apart give the same status."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import podread
from hooks.core.decide import decide
from hooks.core.observed import parse_request
from hooks.core.stamps import evidence_time
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.writer import MemoryWriter
from tests.record_payloads import load, scenario_dirs
from tests.support import FakeReader, job_request, job_spec

SCENARIOS = scenario_dirs()


def written_at(request: dict[str, Any], when: datetime) -> dict[str, Any]:
    """``request`` with the parent created five minutes before ``when`` and its status last written
    at ``when`` (the managed fields the API server keeps)."""
    stamped = copy.deepcopy(request)
    metadata = stamped["parent"].setdefault("metadata", {})
    created = (when - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    metadata["managedFields"] = [{"manager": "kubectl-create", "operation": "Update", "time": created},
                                 {"manager": "metacontroller", "operation": "Update", "subresource": "status",
                                  "time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return stamped


def status_at(folder: Any, request: dict[str, Any], now: datetime) -> tuple[int, Any]:
    app = create_app(reader=podread.reader_from_snapshot(load(folder, "pods")), clock=lambda: now,
                     settings=Settings(), writer=MemoryWriter())
    answer = app.test_client().post(f"/{load(folder, 'meta')['hook']}", data=json.dumps(request),
                                    content_type="application/json")
    body = answer.get_json()
    return answer.status_code, body.get("status") if isinstance(body, dict) else body


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_two_answers_to_one_parent_version_a_second_apart_write_the_same_status(folder: Any) -> None:
    meta = load(folder, "meta")
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
    request = written_at(load(folder, "request"), now - timedelta(seconds=1))
    first = status_at(folder, request, now)
    assert status_at(folder, request, now + timedelta(seconds=1)) == first


def test_the_stamp_is_the_worlds_newest_evidence_not_a_status_write_never_past_now() -> None:
    """Two versions that differ only by a status the hooks wrote stamp the same time (each would
    otherwise justify its own, and Metacontroller's last-writer-wins writes would alternate them)."""
    now = datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC)
    at = datetime(2026, 1, 1, 12, 0, 3, tzinfo=UTC)
    one, other = written_at(job_request(), at), written_at(job_request(), at + timedelta(seconds=2))
    other["parent"]["metadata"]["managedFields"][0]["time"] = one["parent"]["metadata"]["managedFields"][0]["time"]
    spec_written = at - timedelta(minutes=5)
    assert evidence_time(parse_request(one, "sync"), now) == spec_written
    assert evidence_time(parse_request(other, "sync"), now) == spec_written
    earlier = spec_written - timedelta(seconds=1)
    assert evidence_time(parse_request(one, "sync"), earlier) == earlier, "never past now"
    assert evidence_time(parse_request(job_request(), "sync"), now) == now, "no write time: the call's now"


def test_a_drain_passing_is_never_stamped_before_the_drain_began() -> None:
    """The evidence can lose a time when a child goes (the JobSet's condition times leave with it):
    ``Drained`` True is then stamped no earlier than ``Drained`` False was."""
    spec_written = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    waiting_since = "2026-01-01T12:00:10Z"  # from the JobSet's Failed condition, gone with the JobSet
    request = written_at(job_request(spec=job_spec(suspend=True), status={
        "phase": "Suspending", "attempt": 0, "restarts": 0,
        "conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive", "message": "waiting",
                        "lastTransitionTime": waiting_since}]}), spec_written + timedelta(minutes=5))
    request["parent"]["metadata"]["managedFields"][0]["time"] = "2026-01-01T12:00:00Z"
    d = decide(parse_request(request, "sync"), FakeReader([]), spec_written + timedelta(minutes=1))
    drained = next(c for c in d.response["status"]["conditions"] if c["type"] == "Drained")
    assert (drained["status"], drained["lastTransitionTime"]) == ("True", waiting_since)
