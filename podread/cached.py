"""The Reader's cached side, as an interface: a ``CachedLister`` answers a read with a ``CachedRead``.

``PodCache`` (TTL entries, fed by a watch or not) is the production one. A plain ``PodLister`` (a
live-only Reader's client, a snapshot, a test fake) is used as the cached side through
``Uncached``, which the Reader wraps it in once, when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from podread.selector import Pod, PodLister, PodSelector


@dataclass(frozen=True)
class CachedRead:
    """What one cached read answered.

    ``pods``: the pods the selector selects (callers must not mutate them). ``active``: how many of
    them are active, when the cache knows (below). ``listed_from``: the
    source this very call listed them from, when it filled the entry itself (not from an entry
    listed earlier, nor by a fill another thread had started, nor from the watch); ``None``
    otherwise. The Reader compares it with its own live client: a list this call sent there is
    already the API server's current answer (``Reader.active_job_pods``).
    """

    pods: list[Pod]
    listed_from: PodLister | None = None
    active: int | None = None
    """How many of ``pods`` are active (``podread.selector.count_active``), when the cache counted
    them where it keeps them (once per entry, not once per read); ``None``: not counted here."""

    @property
    def filled(self) -> bool:
        """Whether this call listed the pods itself (``listed_from`` is set)."""
        return self.listed_from is not None


@runtime_checkable
class CachedLister(Protocol):
    """The Reader's cached side: ``read`` answers a selector, ``close`` stops what it runs in the
    background (a watch). ``read`` raises ``PodReadError`` for a failed read, never "no pods"."""

    def read(self, selector: PodSelector) -> CachedRead: ...

    def close(self) -> None: ...


@runtime_checkable
class DepartedLister(Protocol):
    """What keeps pods seen deleted (``PodCache`` through its watch, a snapshot's ``departed`` side):
    ``departed_pods`` returns a workload's departed pods, each annotated
    ``podread.constants.DEPARTED_ANNOTATION``; an empty list when it holds none. In memory: it
    never fails."""

    def departed_pods(self, namespace: str, workload: str) -> list[Pod]: ...


class Uncached:
    """A plain ``PodLister`` as the cached side: every read lists from it, and is never a fill.

    ``listed_from`` stays ``None`` because nothing is cached: a Reader whose two sides are the same
    client (``Reader(live, live)``, the live-only mode) therefore still sends its own live check
    after a cached read that shows no active pod, as it always did. ``close`` does nothing.
    """

    def __init__(self, lister: PodLister) -> None:
        self.lister = lister

    def read(self, selector: PodSelector) -> CachedRead:
        """``CachedRead(lister.list_pods(selector))``."""
        return CachedRead(self.lister.list_pods(selector))

    def close(self) -> None:
        """Nothing runs in the background."""


def as_cached(side: CachedLister | PodLister) -> CachedLister:
    """``side`` itself when it is a ``CachedLister``, else ``Uncached(side)``."""
    return side if isinstance(side, CachedLister) else Uncached(side)
