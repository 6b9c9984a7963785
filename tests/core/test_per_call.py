"""``hooks.core.once.per_call``: ``functools.cached_property`` without its lock (issue 32 item 4), as
``hooks.core.work.Context`` uses it: computed on the first read, kept, never computed again; an
error is not kept; a frozen dataclass takes it; the class attribute is the descriptor."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field
from datetime import UTC, datetime

import pytest

from hooks.core.once import per_call
from hooks.core.work import Context
from tests.support import FakeReader, job_request, jobset_child


@dataclass(frozen=True)
class _Frozen:
    base: int
    calls: list[int] = field(default_factory=list)

    @per_call
    def doubled(self) -> int:
        """Twice the base."""
        self.calls.append(self.base)
        if self.base < 0:
            raise ValueError("negative")
        return 2 * self.base


def test_computed_once_and_kept_on_a_frozen_instance() -> None:
    one = _Frozen(3)
    assert (one.doubled, one.doubled, one.calls) == (6, 6, [3])
    assert one.__dict__["doubled"] == 6 and _Frozen(4).doubled == 8
    with pytest.raises(FrozenInstanceError):
        one.base = 5  # type: ignore[misc]


def test_an_error_is_not_kept_and_the_class_attribute_is_the_descriptor() -> None:
    failing = _Frozen(-1)
    for _ in range(2):
        with pytest.raises(ValueError, match="negative"):
            _ = failing.doubled
    assert failing.calls == [-1, -1] and "doubled" not in failing.__dict__
    assert isinstance(_Frozen.__dict__["doubled"], per_call) and _Frozen.doubled.__doc__ == "Twice the base."


def test_a_context_reads_each_of_its_per_call_values_once() -> None:
    from hooks.core.observed import parse_request

    observed = parse_request(job_request(jobsets=[jobset_child("train", 0)]), "sync")
    ctx = Context(observed, FakeReader(), datetime(2026, 1, 1, tzinfo=UTC))
    assert ctx.jobset(0) is ctx.jobset(0) is observed.jobsets[0]
    assert {"_jobsets_by_name", "queue", "stamp"} - set(vars(ctx)) == {"queue", "stamp"}
    assert ctx.queue == "" and ctx.stamp is ctx.stamp
    assert {"_jobsets_by_name", "queue", "stamp"} <= set(vars(ctx))
