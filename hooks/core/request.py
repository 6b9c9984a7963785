"""The part of a Metacontroller request the decision reads, declared (ADR-105).

The parent's metadata, spec and status; of each observed child (JobSets, Workloads) and related
object (ResourceFlavors, WorkloadPriorityClasses) the fields the decision reads. Everything else is
left raw (``Any``) or not read at all: the JobSet templates (``spec.replicatedJobs``, whose meaning
``hooks.core.spec.check_spec`` judges as ``InvalidSpec``), a child's spec, the Workload's admission
placement (``hooks.core.queueing`` reads it, holding on a shape Kueue does not write). A wrong JSON
type in a declared field, a name that could not go into a label selector, a UID that is not a UUID
and a time the API server would refuse as a ``date-time`` (``hooks.core.apitime``) are a 400 naming
the field (``hooks.core.declared.decode``).
Pure: msgspec and the standard library.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from hooks.core.declared import Declared, prepare
from hooks.core.status import Condition, Count, Status, _time

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


class DrainSpec(Checked, frozen=True, rename="camel"):
    """``spec.drain``: when a drain counts as stuck, and when stuck pods may be force-deleted."""

    stuck_after_seconds: int | None = None
    force_delete_stuck_pods_after_seconds: int | None = None


class FailurePolicyRule(Checked, frozen=True, rename="camel"):
    """One ``spec.failurePolicy.rules`` entry; what its matchers mean is ``hooks.core.failurepolicy``'s."""

    on_job_set_failure: dict[str, Any] | None = None
    on_exit_codes: dict[str, Any] | None = None


class FailurePolicy(Checked, frozen=True):
    rules: tuple[FailurePolicyRule, ...] | None = None


class GangSpec(Checked, frozen=True, rename="camel"):
    """``spec.gang``: whether each attempt's pods are placed all together (``hooks.core.gang``); the
    values are ``InvalidSpec``'s to judge, never a 400."""

    policy: str | None = None
    when_unavailable: str | None = None


class Spec(Checked, frozen=True, rename="camel"):
    """``parent.spec``: the fields the decision reads; the replicated jobs are raw (``check_spec``
    judges them). Whether a value is in range is ``InvalidSpec``'s to say, never a 400."""

    replicated_jobs: list[Any] | None = None
    launcher: str | None = None
    max_restarts: int | None = None
    attempts_history_limit: int | None = None
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    drain: DrainSpec | None = None
    failure_policy: FailurePolicy | None = None
    gang: GangSpec | None = None

    def __post_init__(self) -> None:
        launcher = self.launcher
        if launcher and (len(launcher) > MAX_LABEL_VALUE or not _DNS1123_LABEL.fullmatch(launcher)):
            # It goes into the label selector of the launcher read (jobset.sigs.k8s.io/replicatedjob-name).
            raise ValueError(f"launcher: {launcher[:80]!r} is not a replicated job name (a DNS-1123 label of at "
                             f"most {MAX_LABEL_VALUE} characters), so it cannot be put in a selector")


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
prepare(Request, JobSetChild, PodGroupChild, WorkloadChild, Flavor, PriorityClass)

__all__ = ["Condition", "Request", "Status"]
