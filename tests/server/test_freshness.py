"""The request's Job checked against the live one before an answer that acts on it (hooks/server/freshness.py).

Metacontroller writes an answer's status over the live Job, whichever version of the Job the
answer was computed from: a request from a lagging cache must not be answered with a 200 that acts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from hooks.core.decide import decide
from hooks.core.observed import parse_request
from hooks.server.config import Settings
from hooks.server.effects import Effects
from hooks.server.freshness import (
    METADATA_ONLY,
    RECENT_STATUS_SECONDS,
    FixedParentVersions,
    LiveParentVersions,
    ParentReadError,
    UnreadableParentVersions,
    needs_check,
)
from hooks.server.handler import handle
from hooks.server.writer import MemoryWriter
from tests.fakekube import FakeKubeServer
from tests.support import FakeReader, job_request, jobset_child, make_pod

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
KEY = ("default", "train")


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def running_request(*, status_written: datetime | None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Job whose attempt 0 runs, its status as the hooks wrote it ``status_written`` (managedFields)."""
    body = job_request(status=status, jobsets=[jobset_child("train", 0)])
    fields: list[dict[str, Any]] = [{"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:00Z"}]
    if status_written is not None:
        fields.append({"manager": "metacontroller", "operation": "Update", "subresource": "status",
                       "time": stamp(status_written)})
    body["parent"]["metadata"]["managedFields"] = fields
    return body


def reader() -> FakeReader:
    return FakeReader([make_pod(f"train-0-worker-0-{i}", job="train", workload="train-0") for i in range(2)])


def settled(written: datetime) -> dict[str, Any]:
    """The request whose status is what the hooks answer for it (a fixed point), written at ``written``."""
    first = decide(parse_request(running_request(status_written=written), "sync"), reader(), NOW)
    return running_request(status_written=written, status=first.response["status"])


def answer(body: dict[str, Any], parents: FixedParentVersions | UnreadableParentVersions,
           effects: Effects | None = None) -> tuple[int, dict[str, Any]]:
    result = handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW, settings=Settings(),
                    parents=parents, effects=effects)
    return result.status_code, result.body


def test_a_settled_status_written_long_ago_is_answered_from_the_cache_alone() -> None:
    parents = FixedParentVersions({KEY: "41"})  # another version: would be refused if it were read
    code, _ = answer(settled(NOW - timedelta(seconds=RECENT_STATUS_SECONDS + 5)), parents)
    assert code == 200
    assert parents.reads == 0


def test_the_observed_generation_metacontroller_adds_is_no_change() -> None:
    """Metacontroller writes ``observedGeneration`` into every status it writes; the hooks' answer
    leaves it to Metacontroller: a settled Job is still answered without a read."""
    body = settled(NOW - timedelta(hours=1))
    body["parent"]["status"]["observedGeneration"] = body["parent"]["metadata"]["generation"]
    parents = FixedParentVersions({KEY: "41"})
    assert answer(body, parents)[0] == 200
    assert parents.reads == 0


def test_an_answer_that_changes_the_status_is_decided_on_the_live_job() -> None:
    """Issue 36 item 1: a request whose Job is behind the live one is not refused: the live Job is
    read whole and the request decided again with it as the parent, children as Metacontroller sent
    them. The answer is the one the live Job gets, and the recorder keeps the request decided on."""
    body = running_request(status_written=NOW - timedelta(hours=1))  # no status yet: the answer writes one
    assert answer(body, FixedParentVersions({KEY: "42"}))[0] == 200
    live = running_request(status_written=NOW - timedelta(seconds=3),
                           status={"phase": "Running", "attempt": 0, "message": "newer"})
    live["parent"]["metadata"]["resourceVersion"] = "43"
    parents = FixedParentVersions(jobs={KEY: live["parent"]})
    result = handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW, settings=Settings(),
                    parents=parents)
    on_live = decide(parse_request(live, "sync"), reader(), NOW).response
    assert result.status_code == 200 and result.body == on_live
    assert orjson.loads(result.decided_on) == {**body, "parent": live["parent"]}
    assert result.refusal == "" and parents.reads == 1  # the whole Job, its version with it: one read (issue 36 item 8)
    assert handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW, settings=Settings(),
                  parents=FixedParentVersions({KEY: "42"})).decided_on == b""


def test_a_settled_status_written_moments_ago_is_checked_too() -> None:
    """The self-reproducing stale answer: the request's status is a fixed point, so the answer
    changes nothing against the request, but the live Job may hold a newer status that this answer
    would overwrite (Metacontroller compares with the live one): the answer is the live Job's."""
    body = settled(NOW - timedelta(seconds=2))
    newer = running_request(status_written=NOW - timedelta(seconds=1),
                            status={**body["parent"]["status"], "message": "a newer write"})
    newer["parent"]["metadata"]["resourceVersion"] = "43"
    parents = FixedParentVersions(jobs={KEY: newer["parent"]})
    code, sent = answer(body, parents)
    assert code == 200 and parents.reads == 1
    assert sent == decide(parse_request(newer, "sync"), reader(), NOW).response
    parents = FixedParentVersions({KEY: "42"})
    assert answer(body, parents)[0] == 200 and parents.reads == 1


def test_the_window_of_a_recent_status_is_the_settings_one() -> None:
    """``Settings.recent_status_seconds`` (``NVCRE_RECENT_STATUS_SECONDS``) is the window the handler
    checks within: a status written 10 s ago is recent under the default 30 s (one read) and settled
    under a 5 s window (no read)."""
    body = settled(NOW - timedelta(seconds=10))
    for window, expected_reads in ((RECENT_STATUS_SECONDS, 1), (5.0, 0)):
        parents = FixedParentVersions({KEY: "42"})
        result = handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW,
                        settings=Settings(recent_status_seconds=window), parents=parents)
        assert (result.status_code, parents.reads) == (200, expected_reads), window


def refused(body: dict[str, Any], parents: FixedParentVersions) -> tuple[int, str, str]:
    result = handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW, settings=Settings(),
                    parents=parents)
    return result.status_code, result.refusal, str(result.body.get("error", ""))


def test_a_job_gone_from_the_api_server_is_refused() -> None:
    code, cause, error = refused(running_request(status_written=None), FixedParentVersions({}))
    assert (code, cause) == (409, "parent-gone")
    assert "gone" in error


def test_another_job_under_the_same_name_is_refused() -> None:
    body = running_request(status_written=None)
    other = running_request(status_written=None)
    other["parent"]["metadata"].update(uid="00000000-0000-4000-8000-000000000099", resourceVersion="50")
    code, cause, error = refused(body, FixedParentVersions(jobs={KEY: other["parent"]}))
    assert (code, cause) == (409, "parent-replaced") and "another object" in error


@pytest.mark.parametrize("deleted_in", ["live", "request"])
def test_a_deletion_in_one_copy_only_is_refused(deleted_in: str) -> None:
    """A /sync whose live Job is being deleted (Metacontroller calls /finalize next), or a request
    that carries a deletion the live Job does not: neither stands in for the other."""
    body = running_request(status_written=None)
    live = running_request(status_written=None)
    live["parent"]["metadata"]["resourceVersion"] = "43"
    (live if deleted_in == "live" else body)["parent"]["metadata"]["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    code, cause, _ = refused(body, FixedParentVersions(jobs={KEY: live["parent"]}))
    assert (code, cause) == (409, "parent-deleting")


def test_a_failed_read_holds_with_a_503_and_writes_nothing() -> None:
    writer = MemoryWriter()
    effects = Effects(writer)
    code, error = answer(running_request(status_written=None), UnreadableParentVersions("no kubeconfig"), effects)
    assert effects.flush()
    assert code == 503
    assert "no cluster configuration" in error["error"]
    assert writer.writes == []


def test_a_request_without_managed_fields_is_always_checked() -> None:
    body = settled(NOW - timedelta(hours=1))
    del body["parent"]["metadata"]["managedFields"]
    observed = parse_request(body, "sync")
    decision = decide(observed, reader(), NOW)
    assert needs_check(observed, decision, NOW)


def test_a_new_or_removed_child_is_checked_even_when_the_status_stays() -> None:
    body = settled(NOW - timedelta(hours=1))
    observed = parse_request(body, "sync")
    decision = decide(observed, reader(), NOW)
    assert not needs_check(observed, decision, NOW)
    decision.response["children"] = []
    assert needs_check(observed, decision, NOW)


@pytest.fixture()
def fake_kube() -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as server:
        yield server


def test_the_live_client_reads_the_version_from_the_api_server(fake_kube: FakeKubeServer) -> None:
    live = LiveParentVersions(fake_kube.api_client(retries=False))
    fake_kube.writes.jobs[KEY] = {"metadata": {"name": "train", "namespace": "default", "resourceVersion": "77"}}
    assert live.resource_version(*KEY) == "77"
    assert live.resource_version("default", "other") is None
    assert fake_kube.writes.job_reads == 2


def test_the_live_client_asks_for_the_jobs_metadata_only_and_reads_a_whole_job_as_well(
        fake_kube: FakeKubeServer) -> None:
    """Issue 32 item 4: the parent read asks for a ``PartialObjectMetadata`` (a server that cannot
    convert answers the whole Job, as this fake does, and that is read the same), every time: the
    client adds to the headers it is given, so each call passes its own."""
    live = LiveParentVersions(fake_kube.api_client(retries=False))
    fake_kube.writes.jobs[KEY] = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "spec": {"workers": 2},
                                  "metadata": {"name": "train", "namespace": "default", "resourceVersion": "78"}}
    assert [live.resource_version(*KEY) for _ in range(2)] == ["78", "78"]
    accepts = [request.headers.get("accept") for request in fake_kube.requests if request.path.endswith("/train")]
    assert accepts == [METADATA_ONLY] * 2
    assert METADATA_ONLY.startswith("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,")


def test_the_live_client_fails_clearly_when_the_server_is_unreachable() -> None:
    configuration = k8s.Configuration()
    configuration.host = "http://127.0.0.1:9"
    live = LiveParentVersions(k8s.ApiClient(configuration), timeout_seconds=0.5)
    with pytest.raises(ParentReadError, match="could not read Job default/train"):
        live.resource_version(*KEY)


def test_a_finalize_behind_the_live_job_is_decided_on_it_too() -> None:
    """A /finalize whose Job (being deleted in both copies) is behind the live one is decided on the
    live Job, as a /sync is: the answer is the finalize the live Job gets."""
    body = running_request(status_written=NOW - timedelta(seconds=3))
    live = running_request(status_written=NOW - timedelta(seconds=1),
                           status={"phase": "Running", "attempt": 0, "message": "newer"})
    for request in (body, live):
        request["parent"]["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    live["parent"]["metadata"]["resourceVersion"] = "43"
    result = handle(orjson.dumps(body), "finalize", reader=reader(), clock=lambda: NOW, settings=Settings(),
                    parents=FixedParentVersions(jobs={KEY: live["parent"]}))
    on_live = decide(parse_request(live, "finalize"), reader(), NOW).response
    assert (result.status_code, result.body) == (200, on_live)
    assert orjson.loads(result.decided_on)["parent"]["metadata"]["resourceVersion"] == "43"


def test_a_job_behind_the_live_one_costs_one_live_read_on_the_wire(fake_kube: FakeKubeServer) -> None:
    """Issue 36 item 8: deciding again on the live Job reads it once, whole (its version with it),
    not its metadata first and then the whole Job: one round trip on the answer's path, not two."""
    body = running_request(status_written=NOW - timedelta(hours=1))  # no status yet: the answer writes one
    live = running_request(status_written=NOW - timedelta(seconds=3),
                           status={"phase": "Running", "attempt": 0, "message": "newer"})["parent"]
    live["metadata"]["resourceVersion"] = "43"
    fake_kube.writes.jobs[KEY] = live
    result = handle(orjson.dumps(body), "sync", reader=reader(), clock=lambda: NOW, settings=Settings(),
                    parents=LiveParentVersions(fake_kube.api_client(retries=False)))
    assert result.status_code == 200 and result.decided_on
    assert fake_kube.writes.job_reads == 1
