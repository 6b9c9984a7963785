"""The workload a Job was created with, pinned in its status (``status.replicatedJobsDigest``).

Pure. ``spec.replicatedJobs`` is immutable: a different workload is a new Job. The CRD says so
with ``self == oldSelf``, but the real API server lets one kind of edit through (found on the
cluster tier, kube-apiserver v1.37): at a level of the template that declares some of its fields
and keeps the rest (``x-kubernetes-preserve-unknown-fields``: ``template``, ``template.spec``),
CEL finds two objects equal when they have as many fields and every field only the new one has
is undeclared. Replacing one field by another (``backoffLimit`` by ``activeDeadlineSeconds``,
say) is accepted, while changing a value, adding or removing a field is refused. The hooks
therefore keep their own record: the digest of ``spec.replicatedJobs`` as first seen, fed back
by Metacontroller like the rest of the status, and refuse to build a JobSet from a spec whose
digest differs (``InvalidSpec`` reason ``ReplicatedJobsChanged``: the current JobSet is kept,
nothing new is created, until the spec is restored or the Job is recreated).
"""

from __future__ import annotations

import hashlib

import orjson

from hooks.core.jobset import InvalidSpec
from hooks.core.request import Spec
from hooks.core.vocab import Reason

PREFIX = "sha256:"
HEX_DIGITS = 32
"""The digest's length in hex digits (128 bits of SHA-256: a status field, not a signature)."""
CHANGED = Reason.REPLICATED_JOBS_CHANGED


def digest(spec: Spec) -> str:
    """``sha256:<32 hex>`` of ``spec.replicatedJobs`` (raw, as the user wrote it) in canonical JSON
    (keys sorted): the same for the same content however it was serialized."""
    canonical = orjson.dumps(spec.replicated_jobs, option=orjson.OPT_SORT_KEYS)
    return PREFIX + hashlib.sha256(canonical).hexdigest()[:HEX_DIGITS]


def pinned(spec: Spec, recorded: str, *, answers_jobset: bool) -> str:
    """The digest the status keeps: ``recorded`` once there is one; else, from the first answer
    that holds a JobSet (the workload has begun: a Job new, or one whose status predates the
    field), the spec's own; else none (a spec no JobSet was ever built from may still change)."""
    if recorded or not answers_jobset:
        return recorded
    return digest(spec)


def check(spec: Spec, recorded: str) -> None:
    """Raises ``InvalidSpec`` (code ``ReplicatedJobsChanged``) when ``recorded`` is set and is not
    the digest of ``spec.replicatedJobs``; returns None otherwise."""
    if not recorded:
        return
    now = digest(spec)
    if now != recorded:
        raise InvalidSpec(
            f"spec.replicatedJobs changed after the Job was created (status.replicatedJobsDigest is {recorded}, "
            f"the spec's is {now}); a running Job keeps the workload it was created with: restore the spec, or "
            "create a new Job", code=CHANGED)
