"""Bad nodes kept out (issue 34 item 3): the nodes an attempt's ``node`` or ``infrastructure`` class
blames are excluded from the Job's next attempts for ``spec.failurePolicy.excludeNodesSeconds``.

Pure. The one home of the rule:

- **What is excluded** (``derived``): every node of ``status.attempts[].failedNodes`` whose entry's
  ``class`` is one of ``CLASSES``, until the entry's ``ended`` plus ``excludeNodesSeconds`` (the time
  comes from the evidence the history recorded, never from ``now``: every answer to one state writes
  the same ``until``). A node blamed twice keeps its latest attempt. An attempt the history no longer
  keeps (``spec.attemptsHistoryLimit``, counted in ``status.attemptsDropped``) has left its exclusions
  in the prior ``status.excludedNodes``: they are carried (``carried``), with their ``until`` no later
  than the oldest kept attempt's ``created`` plus ``excludeNodesSeconds`` (the attempt ended before
  the next one was created; until that JobSet is observed, as they came), so a carried entry expires
  by itself. Oldest first, at most
  ``MAX_EXCLUDED`` (the oldest dropped first). ``0`` turns exclusions off.
- **Expiry** (``current``, ``wake_in``): an exclusion whose ``until`` is at or before ``now`` is
  dropped, and the Job is woken at the earliest ``until`` still ahead, the way the active deadline
  wakes it (``hooks.core.deadlines.wake_in``).
- **The affinity** (``exclude``, ``excluded_by``): a new attempt's JobSet gets, on every pod template,
  a required node affinity ``kubernetes.io/hostname NotIn [nodes]``, added to every
  ``nodeSelectorTerm`` the user's template has (terms are ORed: an expression added to one term only
  would let the others place pods on an excluded node), and the annotation ``ANNOTATION`` naming them.
  An observed JobSet keeps the exclusions it was created with (``excluded_by`` reads them back from
  its templates), since a JobSet's pod templates cannot change.
- **The claim** (``unsupported``): an entry of a prior ``status.excludedNodes`` that no kept
  attempt's ``failedNodes`` names (or of an attempt the history keeps that blames no node) is a status
  someone else wrote (``hooks.core.claims.excluded_nodes``). A dropped entry needs no claim: it is
  derived again from the attempts.
- **A gang that cannot fit** (``gang_words``): what ``hooks.core.gang`` adds to its words while the
  scheduler does not place an attempt that excludes nodes, and, when the scheduler's own count of
  nodes (``0/N nodes are available``) is no more than the nodes excluded, that the exclusions may
  cover every node it knows (the hooks cannot list the cluster's nodes: the scheduler's count is the
  one they have).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from hooks.core import deadlines
from hooks.core.declared import MAPPING
from hooks.core.historyentry import MAX_FAILED_NODES, NODE_NAME_LIMIT
from hooks.core.jobset import InvalidSpec
from hooks.core.request import DEFAULT_EXCLUDE_SECONDS, FailurePolicy, Spec, kept, range_of
from hooks.core.status import MAX_EXCLUDED, StatusFields
from hooks.core.vocab import TERMINAL, AttemptField, members

F = members(AttemptField)
"""``AttemptField``'s members, read on every call (``hooks.core.vocab.members``)."""

if TYPE_CHECKING:  # hooks.core.claims imports this module, and hooks.core.work imports the claims
    from hooks.core.work import Context, Work

CLASSES = ("node", "infrastructure")
"""The failure classes whose blamed nodes are kept out of the next attempts."""
HOSTNAME = "kubernetes.io/hostname"
ANNOTATION = "nvcre.nvidia.com/excluded-nodes"
"""On a JobSet the hooks built with exclusions: the nodes its pod templates keep out, comma-separated."""
INVALID = "InvalidExclusion"
"""The ``InvalidSpec`` reason of an ``excludeNodesSeconds`` out of its range."""
_SCHEDULER_COUNT = re.compile(r"\b0/(\d+) nodes are available")


@dataclass(frozen=True, order=True)
class Exclusion:
    """One node kept out: by ``attempt``'s end of class ``class_``, until ``until``."""

    attempt: int
    node: str
    class_: str
    until: datetime

    def as_json(self) -> dict[str, Any]:
        """The ``status.excludedNodes`` entry."""
        return {"node": self.node, "class": self.class_, "attempt": self.attempt, "until": deadlines.stamp(self.until)}


def seconds(spec: Spec) -> int:
    """``spec.failurePolicy.excludeNodesSeconds``: its declared default when unset, or out of its
    range (``check`` reports that; a running Job goes on with the default)."""
    policy = spec.failure_policy
    return DEFAULT_EXCLUDE_SECONDS if policy is None else int(kept(policy, "exclude_nodes_seconds"))


def check(spec: Spec) -> None:
    """Raises ``InvalidSpec`` (``InvalidExclusion``) when ``excludeNodesSeconds`` is out of its declared
    ``Range`` (0 to a week, ``hooks.core.request.FailurePolicy``)."""
    policy = spec.failure_policy
    value = policy.exclude_nodes_seconds if policy is not None else None
    bounds = range_of(FailurePolicy, "exclude_nodes_seconds")
    if value is not None and not bounds.admits(value):
        raise InvalidSpec(f"spec.failurePolicy.excludeNodesSeconds must be an integer from {bounds.low} to "
                          f"{bounds.high}, got {value!r}", INVALID)


def _blamed(entry: Mapping[str, Any]) -> list[str]:
    """The nodes ``entry`` (a ``status.attempts`` entry) blames: its ``failedNodes`` when its class is
    one of ``CLASSES`` (at most ``MAX_FAILED_NODES``, names of any other shape left out)."""
    if entry.get(F.CLASS) not in CLASSES:
        return []
    names = entry.get(F.FAILED_NODES)
    if not isinstance(names, list):
        return []
    return [name for name in names[:MAX_FAILED_NODES]
            if isinstance(name, str) and 0 < len(name) <= NODE_NAME_LIMIT]


def derived(spec: Spec, status: StatusFields) -> tuple[Exclusion, ...]:
    """The exclusions ``status.attempts`` (checked) say, and the entries of ``status.excluded_nodes``
    (the prior ones, checked) of attempts the history let go (``carried``), expired or not (the
    module doc): one per node (its latest attempt), oldest first, at most ``MAX_EXCLUDED``."""
    span, attempts = seconds(spec), status.attempts
    if span <= 0 or not attempts:
        return ()
    found: dict[str, Exclusion] = {}
    oldest = min(attempts, key=lambda entry: int(entry[F.ATTEMPT]))
    bound = _after(oldest.get(F.CREATED), span)
    for entry in carried(status):
        until = deadlines.time_or_none(entry.get("until"))
        attempt = entry.get("attempt")
        if isinstance(attempt, int) and entry.get("class") in CLASSES and until is not None:
            kept_until = until if bound is None else min(until, bound)  # no created yet: bounded once it is
            _keep(found, Exclusion(attempt, str(entry["node"]), str(entry["class"]), kept_until))
    for entry in sorted(attempts, key=lambda e: int(e[F.ATTEMPT])):
        until = _after(entry.get(F.ENDED), span)
        if until is None:
            continue
        for node in _blamed(entry):
            _keep(found, Exclusion(int(entry[F.ATTEMPT]), node, str(entry[F.CLASS]), until))
    return tuple(sorted(found.values()))[-MAX_EXCLUDED:]


def carried(status: StatusFields) -> list[Mapping[str, Any]]:
    """The entries of ``status.excluded_nodes`` of attempts the history let go (``let_go``)."""
    return [entry for entry in status.excluded_nodes if let_go(status, entry)]


def let_go(status: StatusFields, entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` (of ``status.excluded_nodes``) is of an attempt older than every entry of
    ``status.attempts`` while the history let some go (``attempts_dropped``): no attempt can have
    left an exclusion there otherwise."""
    attempt = entry.get("attempt")
    return (bool(status.attempts) and bool(status.attempts_dropped) and isinstance(attempt, int)
            and attempt < min(int(kept[F.ATTEMPT]) for kept in status.attempts))


def _keep(found: dict[str, Exclusion], exclusion: Exclusion) -> None:
    """Records ``exclusion`` unless ``found`` has its node from a later attempt (or the same, later)."""
    held = found.get(exclusion.node)
    if held is None or (held.attempt, held.until) <= (exclusion.attempt, exclusion.until):
        found[exclusion.node] = exclusion


def _after(text: object, span: int) -> datetime | None:
    """The status time ``text`` plus ``span`` seconds; ``None`` when it is no time or past datetime's range."""
    moment = deadlines.time_or_none(text)
    try:
        return None if moment is None else moment + timedelta(seconds=span)
    except OverflowError:
        return None


def current(spec: Spec, status: StatusFields, now: datetime) -> tuple[Exclusion, ...]:
    """``derived`` less the exclusions whose ``until`` is at or before ``now``."""
    return tuple(found for found in derived(spec, status) if not deadlines.passed(found.until, now))


def wake_in(exclusions: Sequence[Exclusion], now: datetime) -> float | None:
    """Seconds until the earliest ``until`` of ``exclusions`` (``hooks.core.deadlines.wake_in``), or ``None``."""
    return deadlines.wake_in(min(found.until for found in exclusions), now) if exclusions else None


def record(ctx: Context, work: Work) -> None:
    """``status.excludedNodes`` after the history (a pass, ``hooks.core.decide.PASSES``): the exclusions
    ``work``'s attempts say at ``ctx.now`` (``current``), with those of the attempts the history let
    go: the prior ``status.excludedNodes`` (``work.excluded_nodes``, as it came) and what the prior
    ``status.attempts`` say (an entry let go in this very call); and, unless the Job is terminal (no
    next attempt to keep them from), a wake-up at the earliest ``until`` (the sooner of it and
    ``work.wake``). Writes ``work.excluded_nodes`` and ``work.wake``."""
    spec = ctx.observed.spec
    named = [found.as_json() for found in derived(spec, ctx.observed.status)]  # carried if let go in this call
    if not named and not work.excluded_nodes and not any(entry.get(F.FAILED_NODES) for entry in work.attempts):
        return  # nothing blamed, nothing carried: no copy of the work on every sync of a healthy Job
    found = current(spec, msgspec.structs.replace(work, excluded_nodes=[*work.excluded_nodes, *named]), ctx.now)
    work.excluded_nodes = [exclusion.as_json() for exclusion in found]
    wake = None if work.phase in TERMINAL else wake_in(found, ctx.now)
    if wake is not None:
        work.wake = wake if work.wake is None else min(work.wake, wake)


def nodes(exclusions: Sequence[Exclusion]) -> tuple[str, ...]:
    """The excluded node names, sorted."""
    return tuple(sorted({found.node for found in exclusions}))


def unsupported(status: StatusFields) -> str:
    """The first entry of ``status.excluded_nodes`` (checked) that ``status.attempts`` does not
    support, in words (``""``: none): of an attempt the history keeps, a node its entry does not blame
    (not in its ``failedNodes``, or its class is not one of ``CLASSES``) or an ``until`` more than the
    longest ``excludeNodesSeconds`` after its ``ended``; of an attempt the history let go
    (``carried``), a class not one of ``CLASSES``; any other (an attempt older than the history when it
    let none go, or one it has not reached)."""
    kept_entries = {int(entry[F.ATTEMPT]): entry for entry in status.attempts}
    longest = range_of(FailurePolicy, "exclude_nodes_seconds").high or 0
    for entry in status.excluded_nodes:
        attempt, node = entry.get("attempt"), entry.get("node")
        said = f"node {str(node)[:63]} by attempt {attempt}"
        if let_go(status, entry):
            if entry.get("class") not in CLASSES:
                return f"{said}: class {str(entry.get('class'))[:32]} excludes no node"
            continue
        blamed = kept_entries.get(attempt)
        if blamed is None or node not in _blamed(blamed):
            return f"{said}: status.attempts does not name it in that attempt's failedNodes"
        until, latest = deadlines.time_or_none(entry.get("until")), _after(blamed.get(F.ENDED), longest)
        if until is None or latest is None or until > latest:
            return f"{said}: until {str(entry.get('until'))[:40]} is past the longest exclusion after the attempt ended"
    return ""


def exclude(jobset: dict[str, Any], excluded: Sequence[str]) -> dict[str, Any]:
    """``jobset`` (a built one, not shared) with ``excluded`` kept out: every pod template's required
    node affinity gets ``kubernetes.io/hostname NotIn excluded`` in each of its ``nodeSelectorTerms``
    (one term of that expression when it has none), and the JobSet the annotation ``ANNOTATION``.
    Returns it (unchanged when ``excluded`` is empty). Raises ``InvalidSpec`` (``InvalidExclusion``)
    when a part of the affinity it adds to is not of its API type (nothing to add to)."""
    if not excluded:
        return jobset
    names = list(excluded)
    annotations = jobset["metadata"].setdefault("annotations", {})
    annotations[ANNOTATION] = ",".join(names)
    for replicated in jobset["spec"]["replicatedJobs"]:
        where = f"replicated job {str(replicated.get('name'))[:63]}"
        pod_spec = replicated["template"]["spec"]["template"].setdefault("spec", {})
        required = _object(_object(_object(pod_spec, "affinity", where), "nodeAffinity", where),
                           "requiredDuringSchedulingIgnoredDuringExecution", where)
        terms = required.get("nodeSelectorTerms") or [{}]
        if not isinstance(terms, list) or not all(isinstance(term, dict) for term in terms):
            raise InvalidSpec(f"{where}: affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                              "nodeSelectorTerms must be an array of objects to exclude nodes", INVALID)
        for term in terms:
            expressions = term.get("matchExpressions") or []
            if not isinstance(expressions, list):
                raise InvalidSpec(f"{where}: a nodeSelectorTerm's matchExpressions must be an array to exclude nodes",
                                  INVALID)
            term["matchExpressions"] = [*expressions, {"key": HOSTNAME, "operator": "NotIn", "values": list(names)}]
        required["nodeSelectorTerms"] = terms
    return jobset


def _object(node: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """``node[key]``, set to ``{}`` when unset or null; ``InvalidSpec`` when it is not an object."""
    if node.get(key) is None:
        node[key] = {}
    if not isinstance(node[key], dict):
        raise InvalidSpec(f"{where}: {key} must be an object to exclude nodes", INVALID)
    result: dict[str, Any] = node[key]
    return result


def excluded_by(jobset: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The nodes ``jobset`` (observed or built: any shape) keeps out: when it carries ``ANNOTATION``,
    the values of the last expression of the first ``nodeSelectorTerm`` of its first pod template,
    when that is ``kubernetes.io/hostname NotIn`` (``exclude`` adds it last); else ``()``."""
    metadata = jobset.get("metadata") if isinstance(jobset, MAPPING) else None
    annotations = metadata.get("annotations") if isinstance(metadata, MAPPING) else None
    if not isinstance(annotations, MAPPING) or ANNOTATION not in annotations:
        return ()
    try:
        replicated = jobset["spec"]["replicatedJobs"][0]  # type: ignore[index]
        terms = replicated["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        last = terms[0]["matchExpressions"][-1]
    except (KeyError, IndexError, TypeError):
        return ()
    values = last.get("values") if isinstance(last, Mapping) else None
    if last.get("key") != HOSTNAME or last.get("operator") != "NotIn" or not isinstance(values, list):
        return ()
    return tuple(str(value) for value in values)


def gang_words(excluded: Sequence[str], scheduler_message: str) -> str:
    """What a gang that is not placed adds to its words while its attempt excludes ``excluded`` (``""``
    when it excludes nothing): the nodes, and, when the scheduler's count of nodes in
    ``scheduler_message`` (``0/N nodes are available``) is no more than them, that the exclusions may
    cover every node it knows, and what to do."""
    if not excluded:
        return ""
    shown = ", ".join(excluded[:4]) + (f" and {len(excluded) - 4} more" if len(excluded) > 4 else "")
    counted = _SCHEDULER_COUNT.search(scheduler_message)
    if counted is not None and int(counted.group(1)) <= len(excluded):
        return (f"; the scheduler knows {counted.group(1)} nodes and this attempt excludes {len(excluded)} that failed "
                f"earlier attempts ({shown}): the exclusions may cover every node, so the gang may never fit; to run "
                "without them set spec.failurePolicy.excludeNodesSeconds to 0 and suspend and resume the Job (a new "
                "attempt is built without them)")
    return (f"; this attempt excludes {len(excluded)} node(s) that failed earlier attempts ({shown}; "
            "status.excludedNodes): the gang may not fit without them")
