"""The part of a Metacontroller request the decision reads, declared (ADR-105).

The parent's metadata, spec and status; of each observed child (JobSets, Workloads) and related
object (ResourceFlavors, WorkloadPriorityClasses) the fields the decision reads. The Job's spec is
declared here once, typed (``Spec``: each field's JSON type, range and default), and every core module
reads that value (``Observed.spec``), never the raw mapping. Everything else is left raw (``Any``) or
not read at all: the JobSet templates (``spec.replicatedJobs``, passed through to the JobSet, whose
meaning ``hooks.core.spec.check_spec`` judges as ``InvalidSpec``), the failure-policy rules, a
child's spec, the Workload's admission placement (``hooks.core.queueing`` reads it, holding on a
shape Kueue does not write). A wrong JSON type in a declared field, a name that could not go into a
label selector, a UID that is not a UUID and a time the API server would refuse as a ``date-time``
(``hooks.core.apitime``) are a 400 naming the field (``hooks.core.declared.decode``).
Pure: msgspec and the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

import msgspec

from hooks.core.declared import Declared, InvalidRequest, decode, json_type, prepare
from hooks.core.historyentry import MAX_ENTRIES
from hooks.core.status import Condition, Count, Status, _time
from hooks.core.vocab import GangPolicy, WhenUnavailable

MAX_LABEL_VALUE = 63
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_UID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _required(name: str, value: str | None) -> str:
    if value is None:
        raise ValueError(f"{name}: expected a string, got nothing")
    if not value:
        raise ValueError(f"{name}: must not be empty")
    return value


class ParentMetadata(Declared, frozen=True, rename="camel"):
    """``parent.metadata``: the Job's name and namespace (they go into label selectors), its UID (the
    hooks' writes are bound to it), generation, times and labels."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    generation: Count | None = None
    creation_timestamp: str | None = ""
    """Set by the API server: evidence for the status' times."""
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = {}
    annotations: dict[str, str] | None = {}
    """Read for the workload's checkpoint acknowledgement (``hooks.core.checkpoint``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        name, namespace = _required("name", self.name), _required("namespace", self.namespace)
        if len(name) > MAX_LABEL_VALUE or not _DNS1123_SUBDOMAIN.fullmatch(name):
            raise ValueError(f"name: {name!r} is not a valid Job name: it must be a DNS-1123 subdomain of at most "
                             f"{MAX_LABEL_VALUE} characters, since it is used as a label value")
        if len(namespace) > MAX_LABEL_VALUE or not _DNS1123_LABEL.fullmatch(namespace):
            raise ValueError(f"namespace: {namespace!r} is not a valid namespace (a DNS-1123 label of at most "
                             f"{MAX_LABEL_VALUE} characters)")
        uid = _required("uid", self.uid)
        if not _UID.fullmatch(uid):
            raise ValueError(f"uid: {uid[:40]!r} is not a UID (a UUID: 8-4-4-4-12 hex digits)")
        _time("creationTimestamp", self.creation_timestamp)
        _time("deletionTimestamp", self.deletion_timestamp or "")


class Checked(msgspec.Struct, frozen=True, kw_only=True):
    """The base of the types only checked, not read: every field defaults to ``None`` (absent or null),
    so nothing runs after decoding. The decision reads the raw object they were checked on."""


# ---- the Job's spec: the one home of each field's type, range and default ----------------------------

MAX_SECONDS = 10 * 365 * 24 * 3600
"""The largest time limit accepted (ten years): enough for any job, and far from datetime's range."""
STUCK_AFTER_DEFAULT = 300
"""``spec.drain.stuckAfterSeconds`` when it is unset (the CRD's default, and its CEL rule's)."""
DEFAULT_HISTORY_LIMIT = 10
"""``spec.attemptsHistoryLimit`` when it is unset (the CRD's default)."""


@dataclass(frozen=True)
class Range:
    """The values a spec field admits, declared with the field (``Annotated[int | None, Range(1, 9)]``):
    integers from ``low`` to ``high`` (``None``: no bound that side), or, with ``values``, one of
    them. The JSON type is msgspec's to check (a 400); a value of the right type outside its range is
    not: ``hooks.core.spec`` reports it as ``InvalidSpec`` in the words of the module that owns the
    field, and a reader that must go on (the decision runs on a spec it refuses too: a running Job
    keeps its JobSet, a deleted one is still torn down) reads the field's default instead (``kept``)."""

    low: int | None = None
    high: int | None = None
    values: tuple[str, ...] = ()

    def admits(self, value: object) -> bool:
        """Whether ``value`` (of the field's declared type, not ``None``) is in the range."""
        if self.values:
            return value in self.values
        if self.low is None and self.high is None:
            return True
        return isinstance(value, int) and (self.low is None or value >= self.low) and (
            self.high is None or value <= self.high)

    def clamp(self, value: int) -> int:
        """``value`` moved into the range (for a field read as the nearest value it admits)."""
        low = value if self.low is None else max(self.low, value)
        return low if self.high is None else min(self.high, low)


class DrainSpec(Declared, frozen=True, rename="camel"):
    """``spec.drain``: when a drain counts as stuck (``hooks.core.stuck``), and when stuck pods may
    be force-deleted (opt-in: ``None`` when unset)."""

    stuck_after_seconds: Annotated[int | None, Range(1, MAX_SECONDS)] = STUCK_AFTER_DEFAULT
    force_delete_stuck_pods_after_seconds: Annotated[int | None, Range(0, MAX_SECONDS)] = None


_MATCHERS = ("onJobSetFailure", "onExitCodes", "onTerminationMessage")
"""The matchers of a failure-policy rule whose JSON type is a 400 (an object, or absent)."""
MAX_BUDGET = 9999
"""The largest budget of a failure class: as many restarts as a Job can have attempts."""
NODE_BUDGET_DEFAULT = 10
"""``spec.failurePolicy.budgets.node`` and ``.infrastructure`` when unset."""


class FailureBudgets(Declared, frozen=True):
    """``spec.failurePolicy.budgets`` (issue 34): how many restarts each failure class
    (``hooks.core.vocab.FailureClass``) may spend. ``None`` is the class's default as
    ``hooks.core.budget.budget_of`` reads it: ``user`` and ``unknown`` take ``spec.maxRestarts``
    (so a Job that sets no budget restarts as before), ``preempted`` is unlimited; ``node`` and
    ``infrastructure`` default to ``NODE_BUDGET_DEFAULT``. A negative or larger value is
    ``InvalidSpec`` (``InvalidFailurePolicy``, ``hooks.core.failurepolicy.rules_of``)."""

    user: Annotated[int | None, Range(0, MAX_BUDGET)] = None
    preempted: Annotated[int | None, Range(0, MAX_BUDGET)] = None
    node: Annotated[int | None, Range(0, MAX_BUDGET)] = NODE_BUDGET_DEFAULT
    infrastructure: Annotated[int | None, Range(0, MAX_BUDGET)] = NODE_BUDGET_DEFAULT
    unknown: Annotated[int | None, Range(0, MAX_BUDGET)] = None


MAX_EXCLUDE_SECONDS = 7 * 24 * 3600
"""The longest ``spec.failurePolicy.excludeNodesSeconds``: a week (a bad node is repaired or replaced by then)."""
DEFAULT_EXCLUDE_SECONDS = 3600
"""``spec.failurePolicy.excludeNodesSeconds`` when it is unset (the CRD's default)."""


class FailurePolicy(Declared, frozen=True, rename="camel"):
    """``spec.failurePolicy``: its rules are kept as the user wrote them (raw objects): what a rule
    means (its name, action, class and matchers) is ``hooks.core.failurepolicy.rules_of``'s to
    judge, as ``InvalidSpec``. Only the JSON type of each rule and of its ``onJobSetFailure``,
    ``onExitCodes`` and ``onTerminationMessage`` is a 400 here. ``budgets`` is typed
    (``FailureBudgets``). ``exclude_nodes_seconds``: how long the nodes an attempt's ``node`` or
    ``infrastructure`` class blames are kept out of the next attempts (``hooks.core.exclusion``; 0
    turns exclusions off)."""

    rules: list[dict[str, Any]] | None = None
    budgets: FailureBudgets | None = None
    exclude_nodes_seconds: Annotated[int | None, Range(0, MAX_EXCLUDE_SECONDS)] = DEFAULT_EXCLUDE_SECONDS

    def __post_init__(self) -> None:
        super().__post_init__()
        for index, rule in enumerate(self.rules or ()):
            for key in _MATCHERS:
                value = rule.get(key)
                if value is not None and not isinstance(value, dict):
                    raise ValueError(f"rules[{index}].{key}: expected an object, got {json_type(value)}")


class GangSpec(Declared, frozen=True, rename="camel"):
    """``spec.gang``: whether each attempt's pods are placed all together (``hooks.core.gang``).
    ``policy`` unset is the cluster's default (``GangCluster.default_policy``); the words of both are
    the vocabulary's (``hooks.core.vocab.GangPolicy``, ``WhenUnavailable``)."""

    policy: Annotated[str | None, Range(values=tuple(word.value for word in GangPolicy))] = None
    when_unavailable: Annotated[str | None, Range(values=tuple(word.value for word in WhenUnavailable))] = (
        WhenUnavailable.WAIT.value)


class Spec(Declared, frozen=True, rename="camel"):
    """``parent.spec``, typed: the value every core module reads (``Observed.spec``), produced once
    when the request is parsed (``hooks.core.observed.parse_request``; ``read_spec`` for a Job built
    by hand). Each field's JSON type, range (``Range``) and default are declared here and nowhere
    else; a field sent as ``null`` reads as its default (``Declared``). A wrong JSON type is a 400
    naming the field; a value outside its range is ``InvalidSpec``'s to say (``hooks.core.spec``),
    never a 400.

    Left raw, as the user wrote them: ``replicated_jobs`` (the JobSet templates, passed through to the
    JobSet child; ``hooks.core.jobset.build_jobset`` judges them, ``hooks.core.specpin`` digests
    them), ``managed_by`` (any JSON value: ``build_jobset`` refuses all but JobSet's own controller;
    the CRD prunes it, so only a request built by hand carries it), the failure-policy rules
    (``FailurePolicy``) and ``checkpoint`` (``hooks.core.checkpoint.policy`` is its one reader: a
    wrong value there is ``InvalidSpec`` reason ``InvalidCheckpoint``, as the CRD refuses it)."""

    replicated_jobs: list[Any] | None = None
    launcher: str | None = None
    max_restarts: Annotated[int | None, Range(0)] = 0
    attempts_history_limit: Annotated[int | None, Range(1, MAX_ENTRIES)] = DEFAULT_HISTORY_LIMIT
    suspend: bool | None = False
    active_deadline_seconds: Annotated[int | None, Range(1, MAX_SECONDS)] = None
    ttl_seconds_after_finished: Annotated[int | None, Range(0, MAX_SECONDS)] = None
    managed_by: Any = None
    drain: DrainSpec | None = DrainSpec()
    failure_policy: FailurePolicy | None = None
    gang: GangSpec | None = GangSpec()
    checkpoint: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        launcher = self.launcher
        if launcher and (len(launcher) > MAX_LABEL_VALUE or not _DNS1123_LABEL.fullmatch(launcher)):
            # It goes into the label selector of the launcher read (jobset.sigs.k8s.io/replicatedjob-name).
            raise ValueError(f"launcher: {launcher[:80]!r} is not a replicated job name (a DNS-1123 label of at "
                             f"most {MAX_LABEL_VALUE} characters), so it cannot be put in a selector")

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The failure-policy rules as written (``[]`` when unset); ``failurepolicy.rules_of`` checks them."""
        policy = self.failure_policy
        return list(policy.rules or ()) if policy is not None else []

    @property
    def budgets(self) -> FailureBudgets:
        """``spec.failurePolicy.budgets`` (every key its default when unset); ``hooks.core.budget`` reads it."""
        policy = self.failure_policy
        return policy.budgets if policy is not None and policy.budgets is not None else _UNSET_BUDGETS


def range_of(declared: type, name: str) -> Range:
    """The ``Range`` field ``name`` of the spec type ``declared`` (``Spec``, ``DrainSpec``, ``GangSpec``,
    ``FailurePolicy``)
    is declared with (``Range()``, which admits every value, when none). Raises ``KeyError`` for a name
    that is no field."""
    return _RANGES[declared][name]


def _ranges(declared: type) -> dict[str, Range]:
    """Each field of ``declared`` -> the ``Range`` in its ``Annotated`` type (``Range()`` when none)."""
    hints = get_type_hints(declared, include_extras=True)
    return {field.name: next((extra for extra in getattr(hints[field.name], "__metadata__", ())
                              if isinstance(extra, Range)), Range())
            for field in msgspec.structs.fields(declared)}


def default_of(declared: type, name: str) -> Any:
    """The default field ``name`` of ``declared`` is declared with (what unset and ``null`` read as)."""
    (found,) = [field for field in msgspec.structs.fields(declared) if field.name == name]
    return found.default


def kept(holder: msgspec.Struct, name: str) -> Any:
    """Field ``name`` of ``holder`` (a ``Spec``, ``DrainSpec`` or ``GangSpec``) as a reader that must
    go on takes it: its value when its ``Range`` admits it, else its declared default (a value out of
    range is reported as ``InvalidSpec`` by ``hooks.core.spec``, never acted on)."""
    value = getattr(holder, name)
    declared = type(holder)
    if value is None or range_of(declared, name).admits(value):
        return value
    return default_of(declared, name)


def read_spec(value: object, path: str = "spec") -> Spec:
    """The typed ``Spec`` of ``value``: itself when it is one already, the defaults for ``None``, else
    ``value`` (a raw spec mapping, as a Job built by hand carries: the CRD cross-check, the tests)
    decoded as a request's spec is. Raises ``InvalidRequest`` (400) naming the field at ``path`` when
    a field has the wrong JSON type or ``value`` is not an object."""
    if isinstance(value, Spec):
        return value
    if value is None:
        return _UNSET_SPEC
    if not isinstance(value, Mapping):
        raise InvalidRequest(400, f"{path}: expected an object, got {json_type(value)}")
    return decode(value, Spec, path)


class Parent(Checked, frozen=True, rename="camel"):
    """``parent``: the NVCRE Job."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ParentMetadata | None = None
    spec: Spec | None = None
    status: Status | None = None


class Request(Checked, frozen=True):
    """The request body: the parent, the observed children and related objects by group (the
    groups the decision reads are read one object at a time, by the types below; others are not
    read), and whether the finalize hook is asking."""

    parent: Parent | None = None
    children: dict[str, Any] | None = None
    related: dict[str, Any] | None = None
    finalizing: bool | None = None


class ChildMetadata(Checked, frozen=True, rename="camel"):
    """An observed child's metadata: its name and namespace default from its key in the request."""

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    deletion_timestamp: str | None = None

    def __post_init__(self) -> None:
        """A ``deletionTimestamp`` the API server would not have stored is bad input (a 400 naming
        it), never "being deleted": a child read as going is left out of the answer."""
        _time("deletionTimestamp", self.deletion_timestamp or "")


class ChildCondition(Checked, frozen=True):
    """A condition of an observed child, as its controller wrote it."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None


class JobSetStatus(Checked, frozen=True, rename="camel"):
    terminal_state: str | None = None
    conditions: tuple[ChildCondition, ...] | None = None


class JobSetChild(Checked, frozen=True, rename="camel"):
    """An observed JobSet: its identity, labels and state; its spec is raw."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ChildMetadata | None = None
    spec: dict[str, Any] | None = None
    status: JobSetStatus | None = None


class PodGroupStatus(Checked, frozen=True):
    conditions: tuple[ChildCondition, ...] | None = None


class PodGroupChild(Checked, frozen=True):
    """An observed PodGroup (scheduling.k8s.io/v1beta1, issue 22): its identity and the conditions
    the scheduler writes; its spec is raw."""

    metadata: ChildMetadata | None = None
    spec: dict[str, Any] | None = None
    status: PodGroupStatus | None = None


class Admission(Checked, frozen=True, rename="camel"):
    """A Workload's ``status.admission``: the placement it carries is raw (``hooks.core.queueing``)."""

    cluster_queue: str | None = None


class WorkloadStatus(Checked, frozen=True, rename="camel"):
    cluster_name: str | None = None
    admission: Admission | None = None
    conditions: tuple[ChildCondition, ...] | None = None


class WorkloadChild(Checked, frozen=True):
    """An observed Kueue Workload: where Kueue stands (metadata, conditions, the ClusterQueue)."""

    metadata: ChildMetadata | None = None
    spec: dict[str, Any] | None = None
    status: WorkloadStatus | None = None


class Named(Checked, frozen=True):
    name: str | None = None


class FlavorSpec(Checked, frozen=True, rename="camel"):
    node_labels: dict[str, str] | None = None
    tolerations: tuple[dict[str, Any], ...] | None = None


class Flavor(Checked, frozen=True):
    """A related ResourceFlavor (cluster-scoped, keyed by name)."""

    metadata: Named | None = None
    spec: FlavorSpec | None = None


class PriorityClass(Checked, frozen=True):
    """A related WorkloadPriorityClass (cluster-scoped, keyed by name)."""

    metadata: Named | None = None
    value: int | None = None


# the types hooks.core.observed decodes into, built before any thread converts (declared.prepare)
prepare(Request, Spec, FailureBudgets, JobSetChild, PodGroupChild, WorkloadChild, Flavor, PriorityClass)
_UNSET_SPEC = Spec()
_UNSET_BUDGETS = FailureBudgets()
"""The spec of a Job that sends none (every field its default)."""
_RANGES = {declared: _ranges(declared) for declared in (Spec, DrainSpec, GangSpec, FailurePolicy, FailureBudgets)}
"""The declared ranges, read once at import (``range_of``)."""

__all__ = ["Condition", "DrainSpec", "FailureBudgets", "FailurePolicy", "GangSpec", "Range", "Request", "Spec",
           "Status", "default_of", "kept", "range_of", "read_spec"]
