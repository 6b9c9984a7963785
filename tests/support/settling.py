"""The one step a status fed back may still take (issue 35): a drain dated once its pass is written.

The call in which the drain barrier passes cannot date the pass (the pods leave no dated trace, and
the call's clock would move with every answer); the next call, whose request carries the API
server's write of that pass, writes ``drainSeconds`` (``hooks.core.history._drained``). So a status
fed back is the same, except that once, an entry of ``status.attempts`` gains ``drainSeconds`` and
``drainStuck``; fed back again, nothing moves. The property tests allow exactly that step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DATED = ("drainSeconds", "drainStuck")


def drain_dated(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether ``after`` is ``before`` with one or more drains dated: the same status but for entries
    of ``attempts`` that gained ``drainSeconds`` (with ``drainStuck``) and had none."""
    rest = ("attempts",)
    if {k: v for k, v in before.items() if k not in rest} != {k: v for k, v in after.items() if k not in rest}:
        return False
    old, new = list(before.get("attempts") or []), list(after.get("attempts") or [])
    if len(old) != len(new) or old == new:
        return False
    for was, now in zip(old, new, strict=True):
        if was == now:
            continue
        if "drainSeconds" in was or "drainSeconds" not in now:
            return False
        if {k: v for k, v in was.items() if k not in DATED} != {k: v for k, v in now.items() if k not in DATED}:
            return False
    return True
