"""hooks.core.digestmemo: a memo of a function of one document that keeps the document's digest,
not the document: what it answers, what it keeps, its bound, and that a failure is not kept."""

from __future__ import annotations

import threading
import tracemalloc

import pytest

from hooks.core import digestmemo


def test_a_hit_answers_what_the_same_document_gave_and_another_document_is_computed() -> None:
    seen: list[bytes] = []

    @digestmemo.by_digest(8)
    def length(document: bytes) -> int:
        seen.append(document)
        return len(document)

    assert [length(b"abc"), length(b"abc"), length(b"abcd"), length(b"abd")] == [3, 3, 4, 3]
    assert seen == [b"abc", b"abcd", b"abd"], "each document computed once, on its miss, from its own bytes"
    assert length.cache_info().hits == 1 and length.cache_info().misses == 3


def test_the_memo_keeps_digests_not_documents() -> None:
    """1,000 documents of 10 KB remembered: what stays allocated is about their digests and the
    answers, not 10 MB of documents (functools.lru_cache over the bytes keeps them all)."""

    @digestmemo.by_digest(2000)
    def first(document: bytes) -> int:
        return document[0]

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(1000):
            first(bytes([n % 256]) + n.to_bytes(4, "big") * 2560)  # each document dropped after its call
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert first.cache_info().currsize == 1000
    assert kept < 1_000_000, f"{kept} bytes kept for 1,000 documents of 10 KB"


def test_the_bound_and_a_failure_that_is_not_kept() -> None:
    calls: list[bytes] = []

    @digestmemo.by_digest(2)
    def parsed(document: bytes) -> int:
        calls.append(document)
        if not document.isdigit():
            raise ValueError(document)
        return int(document)

    for document in (b"1", b"2", b"3", b"1"):
        parsed(document)
    assert parsed.cache_info().currsize == 2 and calls == [b"1", b"2", b"3", b"1"], "the least recently used out"
    for _ in range(2):
        with pytest.raises(ValueError):
            parsed(b"x")
    assert calls[-2:] == [b"x", b"x"], "a failure is computed again every time"


def test_threads_asking_for_one_document_get_one_answer() -> None:
    @digestmemo.by_digest(4)
    def upper(document: bytes) -> bytes:
        return document.upper()

    answers: list[bytes] = []

    def ask() -> None:
        answers.extend(upper(b"same") for _ in range(500))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(answers) == {b"SAME"} and len(answers) == 4000
