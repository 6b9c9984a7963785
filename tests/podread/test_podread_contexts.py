"""``podread.deadline`` and ``podread.recording`` (classes since issue 32 item 4, generator
``contextmanager``s before): what they yield, how they nest, and that each leaves the context as it
found it, also when the block raises."""

from __future__ import annotations

import time

import pytest

import podread
from podread import calldeadline, trace


def test_deadline_yields_its_moment_nests_the_earlier_and_resets() -> None:
    assert calldeadline.current() is None
    with podread.deadline(5.0) as outer:
        assert outer == calldeadline.current()
        assert 4.0 < outer - time.monotonic() <= 5.0
        with podread.deadline(10.0) as later:
            assert later == outer, "an enclosing deadline that is earlier wins"
        with podread.deadline(1.0) as earlier:
            assert earlier < outer and calldeadline.current() == earlier
        assert calldeadline.current() == outer
    assert calldeadline.current() is None


def test_deadline_refuses_no_time_on_entering_and_resets_on_an_error() -> None:
    made = podread.deadline(0)  # made, not entered: as the generator form, nothing is checked yet
    with pytest.raises(ValueError, match="seconds must be > 0"), made:
        pass
    with pytest.raises(KeyError), podread.deadline(2.0):
        assert calldeadline.current() is not None
        raise KeyError("boom")
    assert calldeadline.current() is None


def test_recording_collects_its_own_reads_nests_and_resets() -> None:
    record = trace.ReadRecord(method="job_pods", source="cache", query="q", outcome="ok", pods=1, seconds=0.0)
    assert not trace.recording_open()
    with podread.recording(keep_pods=True) as outer:
        assert trace.recording_open() and trace.keeping_pods()
        trace.note(record)
        with podread.recording() as inner:
            assert not trace.keeping_pods()
            trace.note(record)
        assert inner == [record] and trace.keeping_pods()
    assert outer == [record]
    assert not trace.recording_open()
    with pytest.raises(KeyError), podread.recording():
        raise KeyError("boom")
    assert not trace.recording_open()
