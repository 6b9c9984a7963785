"""The safety invariants of the controller, judged against the simulator's ground truth.

The driver calls the ``on_*`` checks as it applies each answer; ``check_step`` runs after every
step. Every breach is recorded (never raised) in ``violations`` so a randomized run can report them
all; tests assert the list is empty.

1. No two attempts' pods active at once: a JobSet is never created while any pod (worker or
   launcher) of another JobSet of the same Job is active, and after every step the active pods of
   a Job all belong to one attempt. A pod is the Job's by every identity it has (the cluster's
   ``job_pods``: the nvcre labels, JobSet's ``jobset-name`` label, the JobSet that made it), so a
   pod whose nvcre labels were removed is still judged.
2. ``finalized: true`` only when no pod of the Job is active and no JobSet of it is left.
3. A JobSet is deleted only in a teardown (phase ``Restarting``/``Suspending``/``Suspended``/
   ``Terminating`` in the answer) or when it belongs to an attempt older than the answer's.
4. ``status.attempt`` and ``status.restarts`` never go backwards.
5. A 200 answer always carries a ``status`` object and a ``children`` list (and, for v2, nothing
   Metacontroller's strict decoder would refuse).
6. Every answer arrives within the hook timeout (10 s).
7. Terminal phases stay terminal: no JobSet is created for a ``Succeeded``/``Failed`` Job, whose
   phase never changes again (except to ``Terminating`` once deleted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from podread import ATTEMPT_LABEL, JOBSET_NAME_LABEL
from tests.e2e.cluster import names

HOOK_TIMEOUT_SECONDS = 10.0
TEARDOWN_PHASES = frozenset({"Restarting", "Suspending", "Suspended", "Terminating"})
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
RESPONSE_FIELDS = frozenset({"status", "children", "resyncAfterSeconds", "finalized"})


def attempt_of(jobset: Mapping[str, Any]) -> int:
    """The attempt a JobSet belongs to, from its attempt label (-1 when missing or malformed)."""
    value = ((jobset.get("metadata") or {}).get("labels") or {}).get(ATTEMPT_LABEL, "")
    return int(value) if isinstance(value, str) and value.isdigit() else -1


class GroundTruth(Protocol):
    """What the invariants judge against: the simulator's ``Cluster``, or the cluster tier's
    ``ServerView`` of a real API server."""

    @property
    def time(self) -> int:
        """Seconds of the world so far (stamped on violations)."""
        ...

    def active_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """The Job's pods that have not finished, found by every identity they carry."""
        ...

    def active_attempts(self, namespace: str, job: str) -> set[str]:
        """The attempts of those pods."""
        ...

    def jobset_of(self, pod: Mapping[str, Any]) -> str:
        """The JobSet that made ``pod`` (whatever its labels say now), or ``""``."""
        ...

    def jobsets_of(self, owner_uid: str) -> list[dict[str, Any]]:
        """The JobSets owned by the Job with ``owner_uid``."""
        ...


class Invariants:
    """Collects invariant violations for one simulated cluster."""

    def __init__(self, cluster: GroundTruth) -> None:
        self.cluster = cluster
        self.violations: list[str] = []
        self.checks = 0

    def fail(self, message: str) -> None:
        """Records one violation, stamped with the simulated time."""
        self.violations.append(f"[t={self.cluster.time}] {message}")

    # -- per answer --------------------------------------------------------------------------------

    def on_answer(self, job: str, hook: str, version: str, code: int | None, body: object, seconds: float) -> None:
        """Checks one hook answer's timing and, for a 200, its shape (5)."""
        self.checks += 1
        if seconds > HOOK_TIMEOUT_SECONDS:
            self.fail(f"{job}: {hook} answered in {seconds:.2f}s, over the {HOOK_TIMEOUT_SECONDS:g}s hook timeout")
        if code is None:
            self.fail(f"{job}: {hook} did not answer (timeout or connection error)")
            return
        if code != 200:
            return
        if not isinstance(body, dict):
            self.fail(f"{job}: {hook} 200 body is not a JSON object: {body!r:.200}")
            return
        if not isinstance(body.get("status"), dict):
            self.fail(f"{job}: {hook} 200 answer omits the status: {sorted(body)}")
        if not isinstance(body.get("children"), list):
            self.fail(f"{job}: {hook} 200 answer has no children list")
        if version == "v2" and set(body) - RESPONSE_FIELDS:
            extra = sorted(set(body) - RESPONSE_FIELDS)
            self.fail(f"{job}: {hook} answer has fields v2's strict decoder refuses: {extra}")
        if "finalized" in body and hook != "finalize":
            self.fail(f"{job}: sync answer carries finalized")

    def on_create(self, namespace: str, job: str, jobset: Mapping[str, Any], prior_phase: str) -> None:
        """Before a JobSet is created: no pod of another JobSet of the Job is active (1), and the
        Job is not terminal (7)."""
        self.checks += 1
        name = jobset["metadata"]["name"]
        others = [pod for pod in self.cluster.active_pods(namespace, job)
                  if pod["metadata"]["labels"].get(JOBSET_NAME_LABEL) != name or self.cluster.jobset_of(pod) != name]
        if others:
            self.fail(f"{job}: JobSet {name} created while pods of another attempt are active: {names(others)}")
        if prior_phase in TERMINAL_PHASES:
            self.fail(f"{job}: JobSet {name} created for a {prior_phase} Job")

    def on_delete(self, job: str, jobset: Mapping[str, Any], answer_status: Mapping[str, Any]) -> None:
        """Before a JobSet is deleted because the answer omitted it: only in a teardown or when it
        belongs to an older attempt (3)."""
        self.checks += 1
        phase = answer_status.get("phase")
        attempt = answer_status.get("attempt")
        if phase in TEARDOWN_PHASES:
            return
        if isinstance(attempt, int) and attempt_of(jobset) < attempt:
            return
        self.fail(f"{job}: JobSet {jobset['metadata']['name']} deleted outside a teardown "
                  f"(answer phase {phase!r}, attempt {attempt!r})")

    def on_finalized(self, namespace: str, job: str, owner_uid: str) -> None:
        """When an answer says ``finalized: true``: nothing of the Job is active or left (2)."""
        self.checks += 1
        active = self.cluster.active_pods(namespace, job)
        if active:
            self.fail(f"{job}: finalized while pods are active: {names(active)}")
        left = [js["metadata"]["name"] for js in self.cluster.jobsets_of(owner_uid)]
        if left:
            self.fail(f"{job}: finalized while JobSets remain: {left}")

    def on_status(self, job: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        """When a status is written: attempt and restarts never go backwards (4); terminal stays
        terminal (7)."""
        self.checks += 1
        for field in ("attempt", "restarts"):
            old, new = before.get(field, 0), after.get(field, 0)
            if isinstance(old, int) and (not isinstance(new, int) or new < old):
                self.fail(f"{job}: status.{field} went from {old!r} to {new!r}")
        old_phase, new_phase = before.get("phase"), after.get("phase")
        if old_phase in TERMINAL_PHASES and new_phase not in (old_phase, "Terminating"):
            self.fail(f"{job}: terminal phase {old_phase} changed to {new_phase!r}")

    # -- per step ----------------------------------------------------------------------------------

    def check_step(self, jobs: Mapping[str, tuple[str, str]]) -> None:
        """After every step: each Job's active pods belong to one attempt (1). ``jobs`` maps a Job
        name to ``(namespace, uid)``."""
        self.checks += 1
        for job, (namespace, _uid) in jobs.items():
            attempts = self.cluster.active_attempts(namespace, job)
            if len(attempts) > 1:
                self.fail(f"{job}: pods of attempts {sorted(attempts)} are active at once")
