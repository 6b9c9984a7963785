"""``hooks.core.declared.MAPPING``: ``isinstance(value, MAPPING)`` answers exactly what
``isinstance(value, Mapping)`` answers (issue 32 item 4: the hot path's checks use it because a
``dict`` is then told by a type check, not the ABC's registry)."""

from __future__ import annotations

import types
from collections import OrderedDict, UserDict, defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from hooks.core.declared import MAPPING


class _Plain(Mapping[str, int]):
    """A Mapping that is no dict."""

    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class _DictChild(dict):  # type: ignore[type-arg]
    pass


class _Registered:
    """A class registered as a Mapping without deriving from it."""


Mapping.register(_Registered)

VALUES: list[Any] = [
    {}, {"a": 1}, _DictChild(), OrderedDict(), defaultdict(list), UserDict(), types.MappingProxyType({}),
    _Plain(), _Registered(), [], (), "text", b"bytes", 0, 1.5, True, None, set(), frozenset(), object(),
    dict, Mapping,
]


@pytest.mark.parametrize("value", VALUES, ids=lambda value: type(value).__name__)
def test_mapping_is_the_abc_check(value: object) -> None:
    assert isinstance(value, MAPPING) == isinstance(value, Mapping)
