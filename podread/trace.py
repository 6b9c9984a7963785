"""Which reads a piece of work made: ``recording()`` collects a ReadRecord for every Reader read.

The hooks wrap each decision in ``recording()`` so that the log line, the recorder and the replay
command can say which reads went to the cache and which went live.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import msgspec

from podread.selector import Pod


class Describable(Protocol):
    """What a read asked for, able to say it in words (``PodSelector``)."""

    def describe(self) -> str: ...


class ReadRecord(msgspec.Struct, frozen=True, dict=True):
    """One read: the Reader method, its source (``cache``/``live``), what it asked for, and how it went.

    ``query`` is what the read asked for: its text (``"nodes=a,b"``), or the ``PodSelector`` itself,
    which the Reader notes so that a read costs no text when nobody asks for it; ``selector`` is
    the text either way (``PodSelector.describe()``, computed on first use and kept).
    ``items`` holds the pods read when the recording asked to keep them, else ``None``. ``filled``
    marks a cached read that missed and was answered by the list this read sent to fill the cache.
    ``error`` is a failed read's full text, ``error_code`` its class (``podread.errors.CAUSES``).
    A frozen msgspec Struct (``dict=True`` keeps ``selector`` once computed): every read makes one,
    in about 0.4 µs where a frozen dataclass took 5 (issue 32 item 4).
    """

    method: str
    source: str
    query: str | Describable
    outcome: str
    pods: int
    seconds: float
    error: str | None = None
    items: tuple[Pod, ...] | None = None
    filled: bool = False
    error_code: str | None = None

    @cached_property
    def selector(self) -> str:
        """What the read asked for, in words: ``query`` itself when it is text, else its ``describe()``."""
        return self.query if isinstance(self.query, str) else self.query.describe()


@dataclass
class _Recording:
    records: list[ReadRecord]
    keep_pods: bool


_current: contextvars.ContextVar[_Recording | None] = contextvars.ContextVar("podread_recording", default=None)


class recording:
    """Collects every Reader read made in this context (thread) while open, in order.

    Yields the list the records are appended to. Recordings nest: an inner one collects its own
    reads and the outer one does not see them. A class, not a generator ``contextmanager``: every
    hook call opens one, and this costs a third as much (issue 32 item 4).
    """

    __slots__ = ("_keep_pods", "_token")

    def __init__(self, keep_pods: bool = False) -> None:
        self._keep_pods = keep_pods
        self._token: contextvars.Token[_Recording | None] | None = None

    def __enter__(self) -> list[ReadRecord]:
        state = _Recording([], self._keep_pods)
        self._token = _current.set(state)
        return state.records

    def __exit__(self, *exc: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            _current.reset(token)


def note(record: ReadRecord) -> None:
    """Appends ``record`` to the open recording, if any."""
    state = _current.get()
    if state is not None:
        state.records.append(record)


def keeping_pods() -> bool:
    """Whether the open recording wants the pods themselves."""
    state = _current.get()
    return state is not None and state.keep_pods


def recording_open() -> bool:
    """Whether a recording is open in this context."""
    return _current.get() is not None
