"""The Job's status, declared once: ``Status`` is the prior status as the request carries it and the new
status as the answer writes it (ADR-105).

``StatusFields`` names every field the hooks own, with its JSON name (camelCase), its type and its zero
value; ``Status`` is those fields frozen, ``hooks.core.work.Work`` the same fields being decided by the
rows. Adding a status field is two edits: its declaration here (and in ``manifests/crd-job.yaml``,
which ``tests/contract/test_declared_crd.py`` holds it to) and the row that sets it. Fields the hooks do not
own (``observedGeneration``, Metacontroller's) are not read and not written.

"null means absent" (``hooks.core.declared.Declared``); a wrong type is a 400 naming the field; a
negative count or a time the API server would not admit as a ``date-time`` is a 400 too (the CRD has
always refused them, so no real API server sends one). A time it admits is never a 400, however
spelled (``2025-06-01t00:00:00.5z``, ``...+02:00``: ``hooks.core.apitime``), nor when it names no
instant the hooks can tell (``0000-01-01T00:00:00Z``): it is kept as it came, and whoever counts
with it finds it ``Unreadable`` (``hooks.core.claims`` holds on such a ``startTime`` or
``completionTime``).

The prior history's check (``hooks.core.historyentry.entries_of``) is remembered across calls
(``_entries``; issue 32 item 4): every sync of a Job carries the same ``status.attempts``. The memo is
bounded (``ENTRIES_MEMO_SIZE``, least recently used out), keyed by the digest of the entries' JSON
(``hooks.core.digestmemo``; orjson: key order, integer or number, boolean all tell), and a miss checks
the entries decoded from that JSON, so a hit answers only what those entries would. It keeps the
checked entries as JSON, and each call reads its own copy (a row may change its history); a history
that is refused raises every time.
Pure: msgspec, orjson and the standard library.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from hooks.core import apitime, digestmemo
from hooks.core.declared import Declared, prepare
from hooks.core.historyentry import entries_of
from hooks.core.vocab import BUDGETED

Count = Annotated[int, msgspec.Meta(ge=0)]
"""A count or a number the CRD declares ``minimum: 0``."""

OPTIONAL = ("restartsByCause", "restartsByClass", "lastFailure", "startTime", "completionTime", "replicatedJobsDigest",
            "attempts", "attemptsDropped", "checkpoint", "excludedNodes")
"""The status fields the answer carries only when set; every other field is always written."""


class Condition(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """A status condition (Kubernetes' shape). ``type`` is required (``StatusFields`` checks it); a
    field left out stays out of the answer (``UNSET``) and one sent as ``null`` is written back as
    it came, as the CRD requires only ``type`` and ``status``. ``lastTransitionTime`` moves only when
    ``status`` changes (``hooks.core.conditions``)."""

    type: str | None = None
    status: str | UnsetType | None = UNSET
    reason: str | UnsetType | None = UNSET
    message: str | UnsetType | None = UNSET
    last_transition_time: str | UnsetType | None = UNSET


def _time(name: str, text: str) -> None:
    """Raises ``ValueError`` naming field ``name`` unless ``text`` is empty or a ``date-time`` the
    API server admits (``hooks.core.apitime.admitted``), whether or not it names an instant."""
    if text and not apitime.admitted(text):
        raise ValueError(f"{name}: {text[:apitime.SHOWN]!r} is not a date-time the API server admits")


class StatusFields(Declared, rename="camel"):
    """The status fields the hooks own, in one place. Missing or null fields take their zero value."""

    phase: str | None = ""
    attempt: Count | None = 0
    restarts: Count | None = 0
    workload: str | None = ""
    active_pods: Count | None = 0
    conditions: tuple[Condition, ...] | None = ()
    message: str | None = ""
    restarts_by_cause: dict[str, Count] | None = {}
    restarts_by_class: dict[str, Count] | None = {}
    """The restarts that spent a budget, by failure class (issue 34, ``hooks.core.budget``): only the
    classes with a budget (``hooks.core.vocab.BUDGETED``) are kept, as the CRD prunes any other key."""
    last_failure: dict[str, Any] | None = {}
    start_time: str | None = ""
    completion_time: str | None = ""
    replicated_jobs_digest: str | None = ""
    """The workload the Job was created with (``hooks.core.specpin``)."""
    attempts: list[Any] | None = []
    """The last attempts, oldest first (``hooks.core.history``); typed loosely here, each entry checked
    and read by ``hooks.core.historyentry.entries_of`` (known keys only, one per attempt, sorted)."""
    attempts_dropped: Count | None = 0
    """How many older entries ``attempts`` no longer keeps."""
    checkpoint: dict[str, Any] | None = {}
    """The last checkpoint request of a teardown and its outcome (``hooks.core.checkpoint``, issue 33);
    read back by that module only, its claims checked there."""
    excluded_nodes: list[dict[str, Any]] | None = []
    """The nodes kept out of the next attempts (``hooks.core.exclusion``, issue 34): ``{node, class,
    attempt, until}``, oldest first, at most ``MAX_EXCLUDED``; derived from ``attempts`` each call and
    checked against them (``hooks.core.claims.excluded_nodes``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for index, condition in enumerate(self.conditions):
            if condition.type is None:
                raise ValueError(f"conditions[{index}].type: expected a string, got nothing")
        _time("startTime", self.start_time)
        _time("completionTime", self.completion_time)
        if self.attempts:
            msgspec.structs.force_setattr(self, "attempts", _entries(self.attempts))
        if self.checkpoint:
            msgspec.structs.force_setattr(self, "checkpoint", checkpoint_of(self.checkpoint))
        if self.restarts_by_class:
            msgspec.structs.force_setattr(self, "restarts_by_class", {
                key: count for key, count in sorted(self.restarts_by_class.items()) if key in BUDGETED})
        if self.excluded_nodes:
            msgspec.structs.force_setattr(self, "excluded_nodes", excluded_of(self.excluded_nodes))
        if len(self.restarts_by_cause) > 1:
            msgspec.structs.force_setattr(self, "restarts_by_cause", dict(sorted(self.restarts_by_cause.items())))


ENTRIES_MEMO_SIZE = 2048
"""How many checked histories a process keeps (``_entries``), each as JSON with its key's digest: about
3 KB for a history of 10 entries (``attemptsHistoryLimit``'s default), so about 6 MB at the bound.
Every worker answers every Job, so this is the number of Jobs whose syncs hit it; beyond it, resyncs
in turn miss. (Keyed by the JSON itself it held twice that: 12 MiB at 1,000 Jobs after a burst of
restarts.)"""


def _entries(value: object) -> list[dict[str, Any]]:
    """``entries_of(value)`` as a list of fresh dicts, from the memo (the module doc) when the same
    entries were checked before; raises its ``ValueError``. A value orjson cannot encode (none that
    came as JSON) is checked as it is, not remembered."""
    try:
        key = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return list(entries_of(value))
    return orjson.loads(_checked_entries(key))


@digestmemo.by_digest(ENTRIES_MEMO_SIZE)
def _checked_entries(key: bytes) -> bytes:
    """``entries_of`` of the entries ``key`` encodes, as JSON (strings, integers, booleans and lists of
    strings: read back as they were); remembered by ``key``'s digest."""
    return orjson.dumps(entries_of(orjson.loads(key)))


CHECKPOINT_STRINGS = ("version", "id", "reason", "outcome", "ignored")
CHECKPOINT_COUNTS = ("attempt", "acknowledgedStep")
CHECKPOINT_TIMES = ("requestedAt", "deadline", "acknowledgedAt", "expiredAt")


def checkpoint_of(value: dict[str, Any]) -> dict[str, Any]:
    """A prior ``status.checkpoint`` (issue 33) with its known keys only (the API server prunes the
    others), each of the CRD's type: strings, integers >= 0, times the API server admits. Raises
    ``ValueError`` naming the key (``checkpoint.attempt: expected an integer >= 0, got string``)."""
    kept: dict[str, Any] = {}
    for key in (*CHECKPOINT_STRINGS, *CHECKPOINT_COUNTS, *CHECKPOINT_TIMES):
        item = value.get(key)
        if item is None:
            continue
        if key in CHECKPOINT_COUNTS:
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise ValueError(f"checkpoint.{key}: expected an integer >= 0, got {type(item).__name__}")
        elif not isinstance(item, str):
            raise ValueError(f"checkpoint.{key}: expected a string, got {type(item).__name__}")
        elif key in CHECKPOINT_TIMES:
            _time(f"checkpoint.{key}", item)
        kept[key] = item
    return kept


MAX_EXCLUDED = 32
"""``status.excludedNodes``' ``maxItems``."""
EXCLUDED_STRINGS = {"node": 253, "class": 32}


def excluded_of(value: list[Any]) -> list[dict[str, Any]]:
    """A prior ``status.excludedNodes`` (issue 34): at most ``MAX_EXCLUDED`` objects, each with a
    ``node`` and a ``class`` (non-empty strings within ``EXCLUDED_STRINGS``' bounds), an ``attempt``
    (an integer >= 0) and an ``until`` (a time the API server admits), their known keys only.
    Raises ``ValueError`` naming the field (``excludedNodes[0].until: ...``) for what the CRD refuses."""
    if len(value) > MAX_EXCLUDED:
        raise ValueError(f"excludedNodes: {len(value)} entries, more than {MAX_EXCLUDED}")
    kept: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        where = f"excludedNodes[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object, got {type(entry).__name__}")
        for key, bound in EXCLUDED_STRINGS.items():
            item = entry.get(key)
            if not isinstance(item, str) or not item or len(item) > bound:
                raise ValueError(f"{where}.{key}: expected a string of 1 to {bound} characters")
        attempt = entry.get("attempt")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
            raise ValueError(f"{where}.attempt: expected an integer >= 0")
        until = entry.get("until")
        if not isinstance(until, str) or not until:
            raise ValueError(f"{where}.until: expected a date-time")
        _time(f"{where}.until", until)
        kept.append({"node": entry["node"], "class": entry["class"], "attempt": attempt, "until": until})
    return kept


class Status(StatusFields, frozen=True):
    """The Job's status, frozen: the prior one (``Observed.status``) and the one answered (``answer``)."""


NAMES = tuple(field.name for field in msgspec.structs.fields(StatusFields))
"""The Python names of the status fields (``active_pods``), in declaration order."""
_WRITTEN = tuple((field.name, field.encode_name) for field in msgspec.structs.fields(StatusFields))


def as_json(status: StatusFields) -> dict[str, Any]:
    """The status fields of ``status`` (a ``Status``, or the ``Work`` that decided one) as the answer
    writes them: JSON names, the ``OPTIONAL`` fields only when set, a condition's unset fields left
    out, enum members as their strings."""
    written = {encoded: getattr(status, name) for name, encoded in _WRITTEN}
    written["phase"] = str(written["phase"])
    written["conditions"] = list(msgspec.to_builtins(written["conditions"]))
    for name in OPTIONAL:
        if not written[name]:
            del written[name]
    return written


prepare(Status)  # hooks.core.work converts the decided status into it (declared.prepare)
