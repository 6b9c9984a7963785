"""The one error family every failed Pod read raises. A failed read is never "no pods"."""

from __future__ import annotations


class PodReadError(Exception):
    """A Pod read failed. Says which read (``method``), from where (``source``) and why.

    ``source`` is ``"cache"`` or ``"live"``; ``method`` is the Reader method or, for reads made
    below the Reader, the list that failed (for example ``"list pods"``).
    """

    def __init__(self, reason: str, *, method: str = "", source: str = "") -> None:
        self.reason = reason
        self.method = method
        self.source = source
        super().__init__(self._text())

    def _text(self) -> str:
        where = " ".join(part for part in (self.method, f"from {self.source}" if self.source else "") if part)
        return f"{where}: {self.reason}" if where else self.reason

    def located(self, method: str, source: str) -> PodReadError:
        """Names the Reader method and source on an error raised below the Reader, and returns it."""
        self.method = self.method or method
        self.source = self.source or source
        self.args = (self._text(),)
        return self


class NoLiveReaderError(PodReadError):
    """The Reader was built without a live client, so it cannot read the API server.

    Raised by every live read of a ``Reader(cached, None)``: the cache is never used in its place.
    """


class ApiError(PodReadError):
    """The API server answered a list with an error status, or could not be reached or parsed.

    ``status`` is the HTTP status code, or ``None`` when there was no HTTP answer (timeout, refused
    connection, invalid JSON).
    """

    def __init__(self, reason: str, *, status: int | None = None, method: str = "", source: str = "") -> None:
        self.status = status
        super().__init__(reason, method=method, source=source)


class CacheScopeError(PodReadError):
    """The cache was asked for pods it cannot hold: a read not scoped by JOB_LABEL.

    The cache never goes to the API server on such a read; reads of other pods belong to the
    Reader's live methods.
    """


class NoSourceError(PodReadError):
    """The cache has nothing to fill from (no cluster configuration was found at start-up)."""
