"""The hook call's deadline: one moment by which every read of a piece of work must end,
``with podread.deadline(8.0): ...`` (the module is named for it: ``calldeadline``).

A hook call may make several live lists one after the other (an MPI teardown makes three). Each is
bounded by the live client's own timeout, but together they must still end before Metacontroller
gives up on the call (10 s). Inside ``deadline(seconds)`` every read shares one moment: a live list
is given only the time that is left, a read whose time is gone is not sent
(``DeadlineExceeded``), and a read waiting for a cache fill another thread sends waits no longer.
The deadline is per context (thread), like ``podread.recording``; deadlines nest, the earlier wins.
"""

from __future__ import annotations

import contextvars
import time

_current: contextvars.ContextVar[float | None] = contextvars.ContextVar("podread_deadline", default=None)


class deadline:
    """Sets the moment (on ``time.monotonic``) by which every read in this context must end:
    ``seconds`` from now (taken on entering), or an enclosing deadline when that is earlier. Yields
    the moment; ``ValueError`` on entering when ``seconds`` is not above 0. A class, not a generator
    ``contextmanager``: it is entered on every hook call and costs a third as much (issue 32 item 4)."""

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> float:
        seconds = self._seconds
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        moment = time.monotonic() + seconds
        outer = _current.get()
        if outer is not None:
            moment = min(moment, outer)
        self._token = _current.set(moment)
        return moment

    def __exit__(self, *exc: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            _current.reset(token)


def current() -> float | None:
    """The deadline in force in this context (a ``time.monotonic`` moment), or ``None``."""
    return _current.get()


def remaining() -> float | None:
    """Seconds left before the deadline in force (negative once it passed), or ``None`` without one."""
    moment = _current.get()
    return None if moment is None else moment - time.monotonic()


def budget(what: str, timeout: float) -> float:
    """The seconds one request may take: its own ``timeout``, or what is left of the deadline in
    force when that is less. Raises ``DeadlineExceeded`` naming ``what`` when that deadline passed
    (the request is then not sent)."""
    left = remaining()
    if left is None or left >= timeout:
        return timeout
    if left <= 0:
        from podread.errors import DeadlineExceeded  # errors imports nothing: no cycle, just kept local

        raise DeadlineExceeded(f"{what}: not sent, the hook call's deadline for reads had passed")
    return left
