"""When an answer says something happened: the times every transition in a status is stamped with.

Metacontroller answers from its informer cache, so one parent version is answered several times,
and an answer computed from a parent older than the last status write overwrites that write (last
writer wins). A status stamped with each call's ``now`` wrote times that the cache then replayed
alternately, and the status never settled (a hot loop the cluster tier catches). Worse, two
versions that differ only by a status the hooks wrote (each lacking the newest transition) each
justify their own time, and their answers overwrite each other in turn. So a transition is
stamped with the world's evidence (``evidence_time``): when the Job's spec or metadata last
changed, its deletionTimestamp, and the observed children's condition times, the same in every
version that differs only by the hooks' own status writes. The price: a transition the cluster
leaves no dated trace of (a drain passing: its pods are gone) is dated by the newest evidence
there is, earlier than it happened (the ``Drained`` condition's time); how long a drain took is
therefore read one call later, from the API server's time of the write that said it passed
(``hooks.core.history._drained``). Decisions on time (a deadline passed, how long a pod has been
stuck) still read ``now``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from hooks.core.claims import utc
from hooks.core.deadlines import time_or_none
from hooks.core.declared import MAPPING
from hooks.core.observed import Observed


def evidence_time(observed: Observed, now: datetime) -> datetime:
    """The newest time the world's evidence in the request carries, never past ``now``: when the
    Job's spec or metadata last changed and its deletionTimestamp (``Observed.world_times``), and
    the observed JobSets' and Workloads' condition times (the status writes' times when the parent
    carries no other). ``now`` when the parent carries no managed fields (a request built by hand)."""
    if not observed.version_times:
        return now
    own = observed.world_times or observed.version_times  # only status writes recorded: those, not now
    return _newest((*own, *_child_times(observed)), now)


def _child_times(observed: Observed) -> Iterable[str]:
    for child in (*observed.jobsets, *observed.workloads):
        status = child.get("status")
        conditions = status.get("conditions") if isinstance(status, MAPPING) else None
        for condition in conditions if isinstance(conditions, list) else ():
            if isinstance(condition, MAPPING) and isinstance(condition.get("lastTransitionTime"), str):
                yield condition["lastTransitionTime"]


def _newest(texts: Iterable[str], now: datetime) -> datetime:
    moments = [moment for moment in (time_or_none(text) for text in texts) if moment is not None]
    return min(max(moments), utc(now)) if moments else now
