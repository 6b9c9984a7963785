"""Bearer-token check of hook requests, with a token read from a file that may be rotated.

Metacontroller sends ``Authorization: Bearer <token>`` from a Secret (``webhook.authorization``);
the same Secret is mounted into our pod and named by ``NVCRE_HOOK_TOKEN_FILE``. Kubernetes updates a
mounted Secret by swapping the file, so the token is re-read whenever the file's identity (inode,
modification time, size) changes.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading

log = logging.getLogger("nvcre.hooks.auth")

SCHEME = "bearer"


class BearerToken:
    """The token hook requests must present, kept in step with the file at ``path``.

    The file must exist and hold a non-empty token (surrounding whitespace stripped) when this is
    built; otherwise ``ValueError`` names the file. If the file later disappears or becomes empty,
    the last good token stays in force and a warning is logged.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        try:
            signature = _signature(path)
            token = _read_token(path)
        except OSError as exc:
            raise ValueError(f"NVCRE_HOOK_TOKEN_FILE: cannot read token file {path}: {exc.strerror}") from None
        if not token:
            raise ValueError(f"NVCRE_HOOK_TOKEN_FILE: token file {path} is empty")
        self._token = token
        self._signature = signature
        self._problem: str | None = None

    @property
    def path(self) -> str:
        """The token file."""
        return self._path

    def allows(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the current token.

        Reads the token file again if it changed; compares in constant time
        (``hmac.compare_digest``). A missing header, another scheme or an empty token is refused.
        """
        presented = _bearer(authorization)
        token = self._current()
        return hmac.compare_digest(presented.encode("utf-8"), token)

    def _current(self) -> bytes:
        """The token in force, re-read from the file when its signature changed since the last read."""
        try:
            signature = _signature(self._path)
        except OSError as exc:
            return self._keep(f"token file {self._path} is unreadable ({exc.strerror})")
        if signature == self._signature:
            return self._token
        with self._lock:
            if signature == self._signature:
                return self._token
            try:
                token = _read_token(self._path)
            except OSError as exc:
                return self._keep(f"token file {self._path} is unreadable ({exc.strerror})")
            if not token:
                return self._keep(f"token file {self._path} is empty")
            self._token, self._signature, self._problem = token, signature, None
            log.info("hook token reloaded from %s", self._path)
            return token

    def _keep(self, problem: str) -> bytes:
        """Logs ``problem`` once (until it changes) and returns the last good token."""
        if problem != self._problem:
            self._problem = problem
            log.warning("%s; keeping the previous token", problem)
        return self._token


def _signature(path: str) -> tuple[int, int, int]:
    """What identifies one version of the file: inode, modification time (ns) and size."""
    stat = os.stat(path)
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _read_token(path: str) -> bytes:
    """The file's content, stripped of surrounding whitespace."""
    with open(path, "rb") as handle:
        return handle.read().strip()


def _bearer(authorization: str | None) -> str:
    """The credentials of a ``Bearer`` Authorization header (scheme in any case), or ``""``."""
    if not authorization:
        return ""
    scheme, _, credentials = authorization.strip().partition(" ")
    if scheme.lower() != SCHEME:
        return ""
    return credentials.strip()
