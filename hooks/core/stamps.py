"""When an answer says something happened: the one time every transition in a status is stamped with.

Metacontroller answers from its informer cache, so one parent version is answered several times,
and an answer computed from a parent older than the last status write overwrites that write (last
writer wins). A status stamped with each call's ``now`` therefore wrote times that the cache then
replayed alternately, and the status never settled (a hot loop the cluster tier catches). Stamping
with the request's own evidence instead makes every answer to one observed state write the same
times. Decisions on time (a deadline passed, how long a pod has been stuck) still read ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from hooks.core.deadlines import parse_time
from hooks.core.observed import Observed


def evidence_time(observed: Observed, now: datetime) -> datetime:
    """The newest time the request's own evidence carries, never past ``now``: when the API server
    wrote this version of the parent (``Observed.version_times``: its managed fields' times and its
    deletionTimestamp) and the observed JobSets' and Workloads' condition times. ``now`` when the
    parent carries no such time (a request built by hand, without managed fields)."""
    stamps = [_time_or_none(text) for text in observed.version_times]
    if not any(stamps):
        return now
    for child in (*observed.jobsets, *observed.workloads):
        status = child.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        for condition in conditions if isinstance(conditions, list) else ():
            if isinstance(condition, Mapping) and isinstance(condition.get("lastTransitionTime"), str):
                stamps.append(_time_or_none(condition["lastTransitionTime"]))
    newest = max((stamp for stamp in stamps if stamp is not None), default=None)
    return now if newest is None else min(_utc(newest), _utc(now))


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _time_or_none(text: str) -> datetime | None:
    try:
        return parse_time(text)
    except ValueError:
        return None
