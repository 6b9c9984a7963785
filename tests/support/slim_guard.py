"""Slim pods that refuse to hand out a dropped field: a caller reading one fails its test.

``guarded(pod)`` is ``podread.slim.slim(pod)`` whose ``metadata``, ``spec``, ``status`` and the pod
itself raise ``DroppedField`` when a key that ``podread.slim.KEPT`` does not keep is read (``[]``,
``get`` or ``in``), instead of answering ``None`` as a plain slim pod would; so do its
``metadata.labels`` for a label outside ``podread.slim.KEPT_LABELS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from podread.slim import KEPT, KEPT_LABELS, slim


class DroppedField(AssertionError):
    """A reader of cached pods read a field the slim projection drops."""


class Guarded(dict):
    """A dict that raises ``DroppedField`` on reading a key outside ``allowed``."""

    def __init__(self, data: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
        super().__init__(data)
        self._allowed = allowed
        self._path = path

    def _check(self, key: object) -> None:
        if key not in self._allowed:
            raise DroppedField(f"{self._path}{key} is read from a cached pod, but podread.slim drops it "
                               "(add it to podread.slim.KEPT or KEPT_LABELS, and say where it is used)")

    def __getitem__(self, key: str) -> Any:
        self._check(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._check(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._check(key)
        return super().__contains__(key)


def guarded(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The slim projection of ``pod``, guarded."""
    kept = slim(pod)
    parts = {name: Guarded(kept[name], KEPT[name], f"{name}.") for name in KEPT}
    if "labels" in kept["metadata"]:
        dict.__setitem__(parts["metadata"], "labels",
                         Guarded(kept["metadata"]["labels"], KEPT_LABELS, "metadata.labels."))
    return Guarded(parts, frozenset(KEPT), "")
