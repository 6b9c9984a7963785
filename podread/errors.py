"""The one error family every failed Pod read raises. A failed read is never "no pods".

Every error carries two texts. ``str(error)`` (and ``reason``) is the whole story for the log: which
read, from where, the selector, the server's own words, the timeout that expired. ``cause`` is the
error's class in a fixed phrase with no variable part (``"the API server did not answer in
time"``), with ``code`` its short name for metrics (``"timeout"``): what a status may show, so that
the same failure, read again, writes the same status.
"""

from __future__ import annotations

CAUSES: dict[str, str] = {
    "failed": "the pod read failed",
    "timeout": "the API server did not answer in time",
    "gave-up": "the pod list did not finish in time",
    "deadline": "the hook call ran out of time for pod reads",
    "refused": "the API server refused the connection",
    "dropped": "the connection to the API server was dropped",
    "unreachable": "the API server could not be reached",
    "invalid-json": "the API server's answer is not JSON",
    "not-a-pod-list": "the API server's answer is not a PodList",
    "not-a-job-list": "the API server's answer is not a JobList",
    "expired": "the pod list's continue token kept expiring",
    "no-live-client": "there is no live client to read the API server with",
    "no-source": "there is no cluster configuration to read pods from",
    "cache-scope": "the pod cache cannot answer this read",
    "not-in-snapshot": "the snapshot replayed does not hold what this read asks for",
    "unexpected": "an unexpected error stopped the pod read",
}
"""Every error class a read can end in: code -> the fixed phrase a status shows. HTTP errors add
``http-<status>`` codes, phrased ``the API server answered HTTP <status>``."""


def cause_of(code: str) -> str:
    """The fixed phrase of ``code`` (``CAUSES``, or ``http-<status>``); an unknown code reads as
    ``"failed"`` does."""
    if code.startswith("http-") and code[5:].isdigit():
        return f"the API server answered HTTP {code[5:]}"
    return CAUSES.get(code, CAUSES["failed"])


class PodReadError(Exception):
    """A Pod read failed. Says which read (``method``), from where (``source``) and why.

    ``source`` is ``"cache"`` or ``"live"``; ``method`` is the Reader method or, for reads made
    below the Reader, the list that failed (for example ``"list pods"``). ``reason`` is the full,
    variable text; ``code`` and ``cause`` name the error's class in fixed words (see ``CAUSES``).
    """

    default_code = "failed"

    def __init__(self, reason: str, *, method: str = "", source: str = "", code: str = "") -> None:
        self.reason = reason
        self.method = method
        self.source = source
        self.code = code or self.default_code
        super().__init__(self._text())

    @property
    def cause(self) -> str:
        """The error's class in a fixed phrase: the same for every error of this class, whatever
        the read, the selector or the timeout. What a status shows."""
        return cause_of(self.code)

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

    default_code = "no-live-client"


class ApiError(PodReadError):
    """The API server answered a list with an error status, or could not be reached or parsed.

    ``status`` is the HTTP status code, or ``None`` when there was no HTTP answer (timeout, refused
    connection, invalid JSON). Without an explicit ``code``, an HTTP status gives ``http-<status>``.
    """

    def __init__(self, reason: str, *, status: int | None = None, method: str = "", source: str = "",
                 code: str = "") -> None:
        self.status = status
        if not code and status is not None:
            code = f"http-{status}"
        super().__init__(reason, method=method, source=source, code=code)


class DeadlineExceeded(PodReadError):
    """The hook call's one deadline for its reads (``podread.deadline``) passed: the read was not
    sent, or was cut short. The call holds; it never waits past the hook timeout."""

    default_code = "deadline"


class CacheScopeError(PodReadError):
    """The cache was asked for pods it cannot hold: a read not scoped by JOB_LABEL.

    The cache never goes to the API server on such a read; reads of other pods belong to the
    Reader's live methods.
    """

    default_code = "cache-scope"


class NoSourceError(PodReadError):
    """The cache has nothing to fill from (no cluster configuration was found at start-up)."""

    default_code = "no-source"
