"""A bounded memo of a pure function of one document (bytes) that keeps the document's digest, not
the document.

``functools.lru_cache`` keeps its arguments as the keys: a memo of a function of a Job's history or
of its JobSet's spec keeps every such document it remembers (1-10 KB each, thousands of them), beside
what it remembers of each. At 1,000 Jobs the two memos of the core (``hooks.core.status``,
``hooks.core.built``) held 19 MiB after a burst of restarts, most of it in their keys (issue 36
item 2). ``by_digest(maxsize)`` remembers each document by its SHA-256 digest (32 bytes) instead:
two documents with one digest are taken as one (a collision of a 256-bit digest, which nobody can
produce), so a hit still answers only what the document would.

Bounded, least recently used first out, thread-safe: ``functools.lru_cache`` underneath, keyed by a
``_Document`` that hashes and compares by its digest alone. A miss hands the function the document
and then keeps only the digest (the key object lru_cache stores drops the bytes once the function
has them); a call that raises is not remembered. Pure: hashlib and functools.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Generic, TypeVar

R = TypeVar("R")

DIGEST = hashlib.sha256
"""SHA-256: collisions are out of reach (2^128 work by the birthday bound), and it is the cheapest
digest here (the CPU's SHA instructions: 3 µs for a 3 KB document, BLAKE2b 6 µs)."""


class _Document:
    """A memo key: the digest of ``payload``, which it carries until the memo's function has read it."""

    __slots__ = ("digest", "payload")

    def __init__(self, payload: bytes) -> None:
        self.digest = DIGEST(payload).digest()
        self.payload: bytes | None = payload

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Document) and other.digest == self.digest


class DigestMemo(Generic[R]):
    """``function`` remembered by the digest of its one argument (the module doc); call it as the
    function. ``cache_info()`` and ``cache_clear()`` are lru_cache's."""

    def __init__(self, function: Callable[[bytes], R], maxsize: int) -> None:
        self.__wrapped__ = function
        self.__doc__ = function.__doc__

        @functools.lru_cache(maxsize=maxsize)
        def remembered(document: _Document) -> R:
            payload = document.payload
            assert payload is not None  # a miss is always a caller's own fresh key
            document.payload = None  # lru_cache keeps this key: the digest only
            return function(payload)

        self._remembered = remembered
        self.cache_info = remembered.cache_info
        self.cache_clear = remembered.cache_clear

    def __call__(self, payload: bytes) -> R:
        return self._remembered(_Document(payload))


def by_digest(maxsize: int) -> Callable[[Callable[[bytes], R]], DigestMemo[R]]:
    """A decorator: the function of one ``bytes`` argument, remembered by the argument's digest, at
    most ``maxsize`` of them."""
    return lambda function: DigestMemo(function, maxsize)
