"""The stand-in's informers (tests/cluster/informers.py) against a scripted server: what a list, a
watch the server ends, a 410 and a broken stream each make the reflector do, and what the store
hands its handler (client-go's ``Replace`` and watch events). No API server: fast."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson

from tests.cluster.informers import Informer, Notification, Reflector, StoreKey


def obj(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": version}}


class Response:
    """A streamed watch: its events, then the server's end, or a cut (``broken``)."""

    def __init__(self, events: list[dict[str, Any]], *, broken: bool = False) -> None:
        self.events, self.broken = events, broken
        self.closed = self.released = False

    def stream(self, amount: int, decode_content: bool = True) -> Iterator[bytes]:
        for event in self.events:
            yield orjson.dumps(event) + b"\n"
        if self.broken:
            raise ConnectionResetError("cut")

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released = True

    def shutdown(self) -> None:
        pass


class Server:
    """Answers each list and watch in turn from its scripts; the last watch stops the reflector."""

    def __init__(self, lists: list[tuple[list[dict[str, Any]], str]], watches: list[Any],
                 stop: threading.Event) -> None:
        self.lists, self.watches, self.stop = lists, watches, stop
        self.calls: list[str] = []

    def list_objects(self, kind: str, namespace: str) -> tuple[list[dict[str, Any]], str]:
        self.calls.append("list")
        return self.lists.pop(0)

    def watch(self, kind: str, namespace: str, resource_version: str, seconds: float) -> Any:
        self.calls.append(f"watch@{resource_version}")
        if len(self.watches) == 1:
            self.stop.set()
        answer = self.watches.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Expired(Exception):
    """The API server's answer to a watch from a resourceVersion it no longer has (410)."""

    status = 410


def run(lists: list[tuple[list[dict[str, Any]], str]], watches: list[Any]) -> tuple[Server, list[Notification],
                                                                                  list[str]]:
    notes: list[Notification] = []

    def install(informer: Informer, store: dict[StoreKey, Any], changes: list[Notification]) -> None:
        notes.extend(changes)

    stop = threading.Event()
    server = Server(lists, watches, stop)
    errors: list[str] = []
    reflector = Reflector(Informer("Job", "ns", install), server, stop, errors, watch_seconds=1)
    thread = threading.Thread(target=reflector.run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    return server, notes, errors


def test_a_watch_the_server_ends_is_made_again_from_the_last_version_seen_without_a_list() -> None:
    first = Response([{"type": "MODIFIED", "object": obj("a", "11")},
                      {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}}])
    server, notes, errors = run([([obj("a", "10")], "10")], [first, Response([])])
    assert server.calls == ["list", "watch@10", "watch@15"]
    assert notes == [(None, obj("a", "10")), (obj("a", "10"), obj("a", "11"))], "each event as it came"
    assert first.released and not errors


def test_a_410_lists_again_at_once_and_the_list_replaces_the_store() -> None:
    gone = Response([{"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}])
    server, notes, errors = run([([obj("a", "10"), obj("b", "10")], "10"), ([obj("a", "10"), obj("c", "12")], "12")],
                                [gone, Response([])])
    assert server.calls == ["list", "watch@10", "list", "watch@12"]
    assert notes[2:] == [(obj("a", "10"), obj("a", "10")), (None, obj("c", "12")), (obj("b", "10"), None)], \
        "the relist: an update of each held (version unchanged or not), an add, a delete of what is gone"
    assert gone.closed and not errors


def test_a_watch_refused_with_410_lists_again_at_once() -> None:
    server, notes, errors = run([([obj("a", "10")], "10"), ([obj("a", "12")], "12")], [Expired(), Response([])])
    assert server.calls == ["list", "watch@10", "list", "watch@12"]
    assert notes[-1] == (obj("a", "10"), obj("a", "12")) and not errors


def test_a_broken_stream_lists_again_after_the_backoff() -> None:
    cut = Response([{"type": "ADDED", "object": obj("b", "11")}], broken=True)
    server, notes, errors = run([([], "10"), ([obj("b", "11")], "11")], [cut, Response([])])
    assert server.calls == ["list", "watch@10", "list", "watch@11"]
    assert notes == [(None, obj("b", "11")), (obj("b", "11"), obj("b", "11"))]
    assert cut.closed and len(errors) == 1 and "cut" in errors[0]


class Endless(Response):
    """A watch the server keeps open with nothing to send: it ends only when shut down."""

    def __init__(self) -> None:
        super().__init__([])
        self.cut = threading.Event()

    def stream(self, amount: int, decode_content: bool = True) -> Iterator[bytes]:
        if not self.cut.wait(10):
            raise AssertionError("the stream was never shut down")
        raise ConnectionResetError("shut down")
        yield b""

    def shutdown(self) -> None:
        self.cut.set()


def test_a_stop_whose_close_came_while_the_watch_was_being_opened_ends_the_run_at_once() -> None:
    """serve's stop: ``stop`` set, then ``close``; a watch request on its way at that moment comes
    back after the close found no stream to shut. The reflector must not read it for its 300 s."""
    stream = Endless()
    stop = threading.Event()
    reflector: Reflector

    class Opening(Server):
        def watch(self, kind: str, namespace: str, resource_version: str, seconds: float) -> Any:
            stop.set()
            reflector.close()  # nothing open yet: the request has not come back
            return stream

    server = Opening([([], "10")], [], stop)
    errors: list[str] = []
    reflector = Reflector(Informer("Job", "ns", lambda informer, store, changes: None), server, stop, errors,
                          watch_seconds=300)
    thread = threading.Thread(target=reflector.run)
    thread.start()
    thread.join(5)
    assert not thread.is_alive() and stream.cut.is_set() and stream.closed
    assert not errors, "a stop is no failure"


def test_a_lag_holds_each_event_until_its_time() -> None:
    notes: list[Notification] = []
    informer = Informer("Job", "ns", lambda informer, store, changes: notes.extend(changes), lag=0.5)
    informer.replace(0.0, [obj("a", "1")])
    informer.event(0.2, "DELETED", obj("a", "1"))
    informer.pump(0.4)
    assert notes == []
    informer.pump(0.5)
    assert notes == [(None, obj("a", "1"))] and informer.store == {("ns", "a"): obj("a", "1")}
    informer.pump(0.7)
    assert notes[-1] == (obj("a", "1"), None) and informer.store == {}


def test_after_a_failure_the_next_list_and_what_follows_wait_the_restart_lag() -> None:
    notes: list[Notification] = []
    informer = Informer("Job", "ns", lambda informer, store, changes: notes.extend(changes), restart_lag=5.0)
    informer.replace(0.0, [obj("a", "1")])
    informer.failed()
    informer.replace(10.0, [obj("a", "2")])
    informer.event(12.0, "MODIFIED", obj("a", "3"))
    assert informer.store == {("ns", "a"): obj("a", "1")}, "the store from before the outage is served"
    informer.pump(15.0)
    assert informer.store == {("ns", "a"): obj("a", "3")} and len(notes) == 3
