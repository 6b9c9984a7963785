"""Bearer-token check of hook requests, with tokens read from files that may be rotated.

Metacontroller sends ``Authorization: Bearer <token>`` from a Secret (``webhook.authorization``,
key ``token`` of ``nvcre-system/nvcre-hooks-token``); the same Secret is mounted into our pod. The
hooks accept two tokens: the one in ``NVCRE_HOOK_TOKEN_FILE`` (key ``token``, required) and, during a
rotation, the one in ``NVCRE_HOOK_PREVIOUS_TOKEN_FILE`` (key ``previous``; a missing or empty file
means none). Metacontroller reads the Secret only when it builds the controller, so it keeps
sending the previous token until it is rebuilt; accepting both is what lets a rotation refuse no
call (docs/operations.md, "Rotate the token").

Kubernetes updates a mounted Secret by swapping a directory symlink (both keys at once), so both
files are re-read whenever either file's identity (inode, modification time, size, or its absence)
changes. The public placeholder token earlier manifests shipped is never accepted: at start-up it
is an error naming the Secret to create, on a reload it is ignored with a warning.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading

log = logging.getLogger("nvcre.hooks.auth")

SCHEME = "bearer"
SECRET = "nvcre-system/nvcre-hooks-token"
PLACEHOLDER_PREFIX = b"replace-me"
"""Tokens starting with this (any case) are placeholders, never accepted: the manifests once shipped
``REPLACE-ME-this-placeholder-token-is-public`` in the Secret, public to anyone who read them."""
CREATE_SECRET = (
    f"create the Secret {SECRET} with a token of your own: kubectl -n nvcre-system create secret generic "
    'nvcre-hooks-token --from-literal=token="$(openssl rand -hex 32)" --from-literal=previous= '
    '(docs/operations.md, "Set the hook token")'
)

Signature = tuple[tuple[int, int, int] | None, ...]


class BearerToken:
    """The tokens hook requests may present, kept in step with the files at ``path`` (the current
    token, required) and ``previous_path`` (optional: a second token accepted during a rotation).

    When this is built, ``path`` must exist and hold a non-empty token that is not a placeholder
    (surrounding whitespace stripped); otherwise ``ValueError`` names the file and says how to create
    the Secret. Later, if ``path`` disappears, becomes empty or holds a placeholder, the last good
    current token stays in force and a warning is logged; the previous token is whatever
    ``previous_path`` holds now (none when it is missing, empty or a placeholder).
    """

    def __init__(self, path: str, previous_path: str | None = None) -> None:
        self._path = path
        self._previous_path = previous_path or None
        self._lock = threading.Lock()
        try:
            signature = self._signature()
            token = _read_token(path)
        except OSError as exc:
            raise ValueError(f"NVCRE_HOOK_TOKEN_FILE: cannot read token file {path}: {exc.strerror}; "
                             f"{CREATE_SECRET}") from None
        if not token:
            raise ValueError(f"NVCRE_HOOK_TOKEN_FILE: token file {path} is empty; {CREATE_SECRET}")
        if _is_placeholder(token):
            raise ValueError(f"NVCRE_HOOK_TOKEN_FILE: token file {path} holds the public placeholder token, "
                             f"which the hooks refuse; {CREATE_SECRET}")
        self._token = token
        self._previous = self._read_previous()
        self._signature_seen = signature
        self._problem: str | None = None

    @property
    def path(self) -> str:
        """The current token's file."""
        return self._path

    def allows(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries one of the tokens in force.

        Reads the token files again if either changed; compares the presented credentials with
        every token in force, each in constant time (``hmac.compare_digest``), without stopping at
        the first match. A missing header, another scheme or empty credentials are refused.
        """
        presented = _bearer(authorization).encode("utf-8")
        allowed = False
        for token in self.tokens():
            allowed |= hmac.compare_digest(presented, token)
        return allowed and bool(presented)

    def tokens(self) -> tuple[bytes, ...]:
        """The tokens in force: the current one, then the previous one when there is one. Re-reads
        both files when the signature of either changed since the last read."""
        signature = self._signature()
        if signature == self._signature_seen:
            return self._in_force()
        with self._lock:
            if signature == self._signature_seen:
                return self._in_force()
            problem = None
            try:
                token = _read_token(self._path)
            except OSError as exc:
                token, problem = b"", f"token file {self._path} is unreadable ({exc.strerror})"
            if not token:
                problem = problem or f"token file {self._path} is empty"
            elif _is_placeholder(token):
                problem = f"token file {self._path} holds a placeholder token"
            if problem is None:
                self._token = token
            self._previous = self._read_previous()
            self._signature_seen = signature
            self._report(problem)
            return self._in_force()

    def _in_force(self) -> tuple[bytes, ...]:
        return (self._token,) if not self._previous else (self._token, self._previous)

    def _read_previous(self) -> bytes:
        """The previous token, ``b""`` when there is no file, it is empty or holds a placeholder."""
        if self._previous_path is None:
            return b""
        try:
            token = _read_token(self._previous_path)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            log.warning("previous token file %s is unreadable (%s); not accepting a previous token",
                        self._previous_path, exc.strerror)
            return b""
        if _is_placeholder(token):
            log.warning("previous token file %s holds a placeholder token; not accepted", self._previous_path)
            return b""
        return token

    def _signature(self) -> Signature:
        """Identifies one version of both files (``None`` for a file that is missing)."""
        paths = (self._path,) if self._previous_path is None else (self._path, self._previous_path)
        return tuple(_stat(path) for path in paths)

    def _report(self, problem: str | None) -> None:
        """Logs a reload: the problem once (until it changes) and that the last token is kept, or
        that the tokens were reloaded."""
        if problem is None:
            self._problem = None
            log.info("hook token reloaded from %s (previous token: %s)", self._path,
                     "accepted" if self._previous else "none")
        elif problem != self._problem:
            self._problem = problem
            log.warning("%s; keeping the previous token", problem)


def _stat(path: str) -> tuple[int, int, int] | None:
    """What identifies one version of the file: inode, modification time (ns) and size; ``None``
    when it does not exist or cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def _read_token(path: str) -> bytes:
    """The file's content, stripped of surrounding whitespace."""
    with open(path, "rb") as handle:
        return handle.read().strip()


def _is_placeholder(token: bytes) -> bool:
    """Whether ``token`` is a shipped placeholder (module doc), never a real token."""
    return token.lower().startswith(PLACEHOLDER_PREFIX)


def _bearer(authorization: str | None) -> str:
    """The credentials of a ``Bearer`` Authorization header (scheme in any case), or ``""``."""
    if not authorization:
        return ""
    scheme, _, credentials = authorization.strip().partition(" ")
    if scheme.lower() != SCHEME:
        return ""
    return credentials.strip()
