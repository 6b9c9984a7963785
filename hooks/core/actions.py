"""Writes a decision asks for, as plain data: the decision stays pure, the writer acts.

Metacontroller writes the children and the status; these are the only other writes, and the
decision only names them. ``hooks.server.effects`` carries them out after the answer is decided; a write
that fails is logged and counted and never changes an answer (the next call decides it again).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeleteJob:
    """Delete the NVCRE Job (``ttlSecondsAfterFinished`` passed): with a UID precondition, so a
    new Job of the same name is never hit. Its finalizer then runs the normal finalize path: the
    drain barrier before ``finalized``."""

    namespace: str
    name: str
    uid: str
    reason: str


@dataclass(frozen=True)
class ForceDeletePod:
    """Force-delete (grace period 0) a pod stuck terminating on a node confirmed gone, with a UID
    precondition (``spec.drain.forceDeleteStuckPodsAfterSeconds``)."""

    namespace: str
    name: str
    uid: str
    node: str
    reason: str


Action = DeleteJob | ForceDeletePod
