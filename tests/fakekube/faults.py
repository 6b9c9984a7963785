"""Faults the fake API server can inject: error statuses, delays, dropped connections, broken JSON."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class Fault:
    """What to do instead of (or before) answering requests whose path matches ``path``.

    ``path`` is a regular expression matched at the start of the request path (so a plain prefix
    such as ``/api/v1/namespaces/ns1/pods`` works too); ``None`` matches every path. ``query`` maps
    query parameter names to regular expressions their values must fully match (a missing parameter
    is matched as ``""``). ``times`` is how many matching requests the fault applies to, ``None``
    for every one until cleared.

    Effects, applied in this order: wait ``delay`` seconds; then ``drop`` closes the connection with
    no answer, or ``status`` answers that code with a Kubernetes ``Status`` body (and a
    ``Retry-After: retry_after`` header when set), or ``invalid_json`` answers 200 with a body that
    is not JSON, or ``body`` answers 200 with exactly those bytes (JSON that is not a PodList, say);
    ``body`` with ``status`` answers that status with exactly those bytes as ``content_type`` (a
    proxy's plain-text ``404 page not found``, a ``Status`` about another object).
    A fault with only a delay answers normally after it.
    """

    path: str | None = None
    status: int | None = None
    delay: float = 0.0
    drop: bool = False
    invalid_json: bool = False
    body: bytes | None = None
    retry_after: int | None = None
    times: int | None = None
    query: Mapping[str, str] = field(default_factory=dict)
    method: str | None = None
    content_type: str = "application/json"
    hits: int = 0

    def __post_init__(self) -> None:
        self._path_re = re.compile(self.path) if self.path is not None else None
        self._query_re = {name: re.compile(pattern) for name, pattern in self.query.items()}

    def matches(self, method: str, path: str, query: Mapping[str, str]) -> bool:
        """Whether this fault applies to a request (ignoring how many times it has been used)."""
        if self.method is not None and method != self.method:
            return False
        if self._path_re is not None and not self._path_re.match(path):
            return False
        return all(pattern.fullmatch(query.get(name, "")) for name, pattern in self._query_re.items())

    @property
    def kind(self) -> str:
        """A short name for the effect, recorded with each request it hits."""
        if self.drop:
            return "drop"
        if self.status is not None:
            return f"status:{self.status}"
        if self.invalid_json:
            return "invalid_json"
        if self.body is not None:
            return "body"
        return "delay"

    # Convenience constructors ---------------------------------------------------------------------

    @classmethod
    def error(
        cls,
        path: str | None,
        status: int,
        *,
        times: int | None = None,
        retry_after: int | None = None,
        query: Mapping[str, str] | None = None,
    ) -> Fault:
        """Answer ``status`` (500, 503, 429, 410, ...) with a ``Status`` body."""
        return cls(path=path, status=status, times=times, retry_after=retry_after, query=query or {})

    @classmethod
    def slow(
        cls,
        path: str | None,
        delay: float,
        *,
        times: int | None = None,
        query: Mapping[str, str] | None = None,
    ) -> Fault:
        """Wait ``delay`` seconds, then answer normally."""
        return cls(path=path, delay=delay, times=times, query=query or {})

    @classmethod
    def dropped(
        cls, path: str | None, *, times: int | None = None, query: Mapping[str, str] | None = None
    ) -> Fault:
        """Close the connection without answering."""
        return cls(path=path, drop=True, times=times, query=query or {})

    @classmethod
    def garbled(
        cls, path: str | None, *, times: int | None = None, query: Mapping[str, str] | None = None
    ) -> Fault:
        """Answer 200 with a truncated, invalid JSON body."""
        return cls(path=path, invalid_json=True, times=times, query=query or {})


    @classmethod
    def answer(
        cls, path: str | None, body: bytes, *, times: int | None = None, query: Mapping[str, str] | None = None
    ) -> Fault:
        """Answer 200 with ``body`` as it is (e.g. ``b"{}"`` or a ``Status`` object)."""
        return cls(path=path, body=body, times=times, query=query or {})

    @classmethod
    def raw(
        cls, path: str | None, status: int, body: bytes, *, content_type: str = "application/json",
        times: int | None = None,
    ) -> Fault:
        """Answer ``status`` with ``body`` as it is, as ``content_type``: an error that is not the
        API server's own (a proxy's ``404 page not found`` as text/plain), or a Status of its own making."""
        return cls(path=path, status=status, body=body, content_type=content_type, times=times)


class FaultList:
    """The faults in force, in injection order; the first that matches a request takes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        """Put ``fault`` in force; returns it (its ``hits`` counts the requests it took)."""
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str, query: Mapping[str, str]) -> Fault | None:
        """The fault that applies to this request, counting the use; used-up faults are removed."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, query):
                    fault.hits += 1
                    if fault.times is not None and fault.hits >= fault.times:
                        self._faults.remove(fault)
                    return fault
        return None
