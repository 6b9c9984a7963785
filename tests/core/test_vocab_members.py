"""``hooks.core.vocab.members``: an enum's members read off a plain object (issue 32 item 4: Python
3.11's ``EnumType.__getattr__`` makes every read off the class a Python-level call) are the members
themselves, every one of every vocabulary, and the history's ``F`` is ``AttemptField``'s."""

from __future__ import annotations

from enum import StrEnum

import pytest

from hooks.core import exclusion, history, historyentry, vocab

ENUMS = [value for value in vars(vocab).values()
         if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum]


@pytest.mark.parametrize("enum", ENUMS, ids=[enum.__name__ for enum in ENUMS])
def test_members_are_the_enum_s_own(enum: type[StrEnum]) -> None:
    read = vocab.members(enum)
    assert vars(read).keys() == enum.__members__.keys()
    assert all(getattr(read, name) is member for name, member in enum.__members__.items())


def test_the_history_s_field_names_are_attempt_field_s_members() -> None:
    for module in (history, historyentry, exclusion):
        assert all(getattr(module.F, name) is member for name, member in vocab.AttemptField.__members__.items())
    assert tuple(field.value for field in vocab.AttemptField) == historyentry.ENTRY_KEYS
