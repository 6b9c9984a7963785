"""The status is a fixed point under failing reads too.

Every error a read can end in is raised through the code that raises it in production (the live
client over a stubbed API, the Reader, the cache), with its variable parts (timeouts, hosts, ports,
server messages, garbage bodies) drawn by hypothesis. For each class, whatever those parts are, the
decision's status is the same, holds the same words, contains none of the variable text, and is a
fixed point when fed back. Before, urllib3's ``read timeout=<remaining deadline>`` went into
``status.message`` and ``Drained``: every call wrote a different status, and Metacontroller synced
again at once, against an API server that was already slow.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

import podread
from hooks.core.decide import decide
from hooks.core.observed import parse_request
from podread import JOB_LABEL, LiveClient, PodCache, PodReadError, PodSelector, Reader, ReadMetrics
from tests.support import FakeReader, job_request, job_spec, make_pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EXAMPLES = int(os.environ.get("NVCRE_PROPERTY_EXAMPLES", "150"))
fast = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SELECTOR = PodSelector(namespace="team-a", labels={JOB_LABEL: "train"})


class _Api:
    """The live client's list request (``PagedList._send``), answering ``outcome`` (an exception
    to raise, or body bytes)."""

    def __init__(self, outcomes: list[BaseException | bytes]) -> None:
        self.outcomes = outcomes

    def send(self, *_: Any) -> bytes:
        outcome = self.outcomes[0] if len(self.outcomes) == 1 else self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def through_live_client(outcomes: list[BaseException | bytes], *, clock: Callable[[], float] | None = None
                        ) -> PodReadError:
    """The error ``LiveClient.list_pods`` raises when the API answers ``outcomes``, located by a Reader."""
    options: dict[str, Any] = {"clock": clock} if clock is not None else {}
    live = LiveClient(k8s.ApiClient(), timeout_seconds=3.0, metrics=ReadMetrics(CollectorRegistry()), **options)
    live._send = _Api(outcomes).send  # type: ignore[method-assign]
    return caught(lambda: Reader(_NoCache(), live, metrics=ReadMetrics(CollectorRegistry()))
                  .active_launcher_pods("team-a", "train"))


class _NoCache:
    def list_pods(self, selector: PodSelector) -> list[dict]:
        raise AssertionError("the cache is not read here")


def caught(read: Callable[[], object]) -> PodReadError:
    try:
        read()
    except PodReadError as error:
        return error
    raise AssertionError("the read did not fail")


def _http(status: int, reason: str, message: str) -> BaseException:
    exc = ApiException(status=status, reason=reason)
    exc.body = orjson.dumps({"kind": "Status", "message": message, "reason": reason})
    return exc


words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 :./_=()'-", min_size=1, max_size=60)
hosts = st.from_regex(r"[a-z][a-z0-9]{0,12}(\.[a-z0-9]{1,8}){0,3}", fullmatch=True)
ports = st.integers(1, 65535)
seconds = st.floats(0.001, 9.99, allow_nan=False).map(lambda value: f"{value:.4f}")
json_not_pod_lists = st.sampled_from([b"{}", b'{"items":null}', b'{"kind":"Status","code":500}', b"[]",
                                      b'{"kind":"PodList"}', b'{"items":{}}', b'{"items":[1]}', b"7", b'"x"'])


def _raise(kind: str, draw: st.DrawFn) -> PodReadError:
    """An error of class ``kind`` with variable parts drawn by hypothesis, raised by the real code."""
    if kind.startswith("http-"):
        return through_live_client([_http(int(kind[5:]), draw(words), draw(words))])
    if kind == "timeout":
        host, port, value = draw(hosts), draw(ports), draw(seconds)
        return through_live_client([urllib3.exceptions.ReadTimeoutError(
            None, f"https://{host}:{port}/api/v1/pods",  # type: ignore[arg-type]
            f"HTTPSConnectionPool(host='{host}', port={port}): Read timed out. (read timeout={value})")])
    if kind == "connect-timeout":
        host, value = draw(hosts), draw(seconds)
        return through_live_client([urllib3.exceptions.ConnectTimeoutError(
            None, f"Connection to {host} timed out. (connect timeout={value})")])
    if kind == "refused":
        host, port = draw(hosts), draw(ports)
        return through_live_client([urllib3.exceptions.NewConnectionError(
            None, f"HTTPSConnection(host='{host}', port={port}): Failed to establish a new connection: "  # type: ignore[arg-type]
                  "[Errno 111] Connection refused")])
    if kind == "dropped":
        return through_live_client([urllib3.exceptions.ProtocolError(
            "Connection aborted.", ConnectionResetError(104, f"peer {draw(hosts)}:{draw(ports)} went away"))])
    if kind == "unreachable":
        return through_live_client([OSError(f"[Errno 113] No route to host {draw(hosts)}")])
    if kind == "invalid-json":
        return through_live_client([b'{"kind":"PodList","items":[' + draw(words).encode()])
    if kind == "not-a-pod-list":
        return through_live_client([draw(json_not_pod_lists)])
    if kind == "expired":
        page = orjson.dumps({"kind": "PodList", "items": [], "metadata": {"continue": draw(hosts)}})
        gone = _http(410, "Expired", draw(words))
        return through_live_client([page, gone, page, gone, page, gone])
    if kind == "gave-up":
        ticks = iter([0.0, 3.0 + float(draw(seconds))])
        return through_live_client([b"{}"], clock=lambda: next(ticks))
    if kind == "deadline":
        with podread.deadline(1e-9):
            return through_live_client([b'{"kind":"PodList","items":[]}'])
    if kind == "no-live-client":
        return caught(lambda: Reader(_NoCache(), None).active_launcher_pods("team-a", draw(hosts)))
    if kind == "no-source":
        return caught(lambda: Reader(PodCache(None, no_source_reason=draw(words)), None).job_pods("team-a", "train"))
    if kind == "cache-scope":
        cache = PodCache(_NoCache())
        return caught(lambda: Reader(cache, cache).active_launcher_pods("team-a", draw(hosts)))
    if kind == "unexpected":
        class Broken:
            def list_pods(self, selector: PodSelector) -> list[dict]:
                raise KeyError(draw(words))

        return caught(lambda: Reader(Broken(), Broken()).job_pods("team-a", "train"))
    raise AssertionError(kind)


CLASSES = ["http-401", "http-403", "http-404", "http-429", "http-500", "http-503", "http-504", "timeout",
           "connect-timeout", "refused", "dropped", "unreachable", "invalid-json", "not-a-pod-list", "expired",
           "gave-up", "deadline", "no-live-client", "no-source", "cache-scope", "unexpected"]
CODES = {"connect-timeout": "timeout"}


def barrier_status(error: PodReadError, *, fail: str = "active_launcher_pods",
                   status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The status a finalize answers when ``fail`` raises ``error`` (a copy for each call)."""
    reader = FakeReader([make_pod("w-0", job="train", phase="Succeeded")], fail={fail},
                        error=lambda: copy.copy(error))
    request = job_request(finalizing=True, spec=job_spec(launcher="launcher"), deleting="2025-12-31T23:00:00Z",
                          status=status or {"phase": "Terminating", "attempt": 0, "activePods": 2})
    return decide(parse_request(request, "finalize"), reader, NOW).response["status"]


@fast
@given(st.data())
def test_every_error_class_writes_one_status_whatever_its_details(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(CLASSES))
    one = _raise(kind, data.draw)
    other = _raise(kind, data.draw)
    assert one.code == other.code == CODES.get(kind, kind)  # each class names itself, never "failed"
    assert one.code.startswith("http-") or one.code in podread.CAUSES
    status = barrier_status(one)
    assert status == barrier_status(other)
    assert status["message"] == f"waiting for a pod read to succeed: {one.cause}"
    drained = next(c for c in status["conditions"] if c["type"] == "Drained")
    assert (drained["status"], drained["reason"], drained["message"]) == ("Unknown", "ReadFailed", one.cause)
    stable = f"waiting for a pod read to succeed: {one.cause}"
    for detail in (one.reason, str(one)):  # a detail that happens to be part of the fixed words proves nothing
        assert detail in stable or detail not in status["message"]
    fed = barrier_status(one, status=status)
    assert fed == status  # a fixed point
    later = decide(parse_request(job_request(finalizing=True, spec=job_spec(launcher="launcher"),
                                             deleting="2025-12-31T23:00:00Z", status=status), "finalize"),
                   FakeReader([], fail={"live"}, error=lambda: copy.copy(other)), NOW + timedelta(hours=1))
    assert later.response["status"] == status


def test_no_two_classes_share_words() -> None:
    causes = [podread.errors.cause_of(code) for code in podread.CAUSES] + [podread.errors.cause_of("http-500")]
    assert len(causes) == len(set(causes))
