"""The core's named dependency and vocabulary: ``PodReads`` is what podread's Reader offers, and the
words the hooks write are the vocabulary's members."""

from __future__ import annotations

import inspect

from hooks.core import work
from hooks.core.podreads import PodReads
from hooks.core.vocab import TERMINAL, ConditionStatus, Outcome, Phase
from podread.reader import Reader


def _methods(cls: type) -> list[str]:
    return sorted(name for name, value in vars(cls).items() if not name.startswith("_") and callable(value))


def test_the_reader_offers_every_read_the_core_names_with_the_same_parameters() -> None:
    for name in _methods(PodReads):
        wanted = list(inspect.signature(getattr(PodReads, name)).parameters)
        assert list(inspect.signature(getattr(Reader, name)).parameters) == wanted, name


def test_the_vocabulary_is_the_strings_the_answer_carries() -> None:
    assert Phase.PENDING == "Pending" and f"{Phase.RESTARTING}" == "Restarting"
    assert {"Succeeded", "Failed"} == TERMINAL
    assert {"created", "kept", "held", "proceeded", "terminal", "invalid-spec"} == work.KINDS
    assert {Outcome.HELD: 1}["held"] == 1  # a member hashes as its string (metric labels, dict keys)
    assert [str(s) for s in ConditionStatus] == ["True", "False", "Unknown"]
