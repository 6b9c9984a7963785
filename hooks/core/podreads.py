"""``PodReads``: the one dependency of the decision core, named as a ``Protocol``.

The core reads pods, Nodes, batch Jobs and one permission only through an object with these methods;
production passes ``podread.Reader`` (ADR-102), which satisfies it structurally, as controller-runtime's
``client.Reader`` names what a reconciler may read. Each method's source (the cache or the API server)
and its failure (``podread.errors.PodReadError``, never "none") are the Reader's: see its docstrings.
Pure: types only (``NodeState`` is imported for type checkers alone, since ``podread.nodes`` also holds
the node reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from podread.nodes import NodeState
    from podread.selector import Counted

Pod = dict[str, Any]
"""A pod in the API server's JSON form (``podread.selector.Pod``); a cached one is slim."""


class PodReads(Protocol):
    """The reads ``hooks.core.decide.decide`` makes, and nothing else."""

    def job_pods(self, namespace: str, job: str) -> list[Pod]:
        """The Job's workload pods from the cache (``JOB_LABEL=job``)."""
        ...

    def counted_job_pods(self, namespace: str, job: str, reported: int | None) -> Counted:
        """The Job's workload pods for ``activePods`` with their active count (``Counted``): the cache
        when its active count is ``reported``, else the API server."""
        ...

    def active_job_pods(self, namespace: str, job: str) -> list[Pod]:
        """The Job's active workload pods: the cache, then the API server before answering none."""
        ...

    def workload_pods(self, namespace: str, workload: str, replicated_job: str = "") -> list[Pod]:
        """A workload's pods (JobSet's ``jobset-name`` label), live."""
        ...

    def active_launcher_pods(self, namespace: str, job: str) -> list[Pod]:
        """The Job's active MPI launcher pods of every attempt, live."""
        ...

    def active_attempt_pods(self, namespace: str, job: str, last_attempt: int) -> list[Pod]:
        """The active pods of workloads ``<job>-0`` ... ``<job>-<last_attempt>``, live."""
        ...

    def attempt_jobs(self, namespace: str, job: str, last_attempt: int) -> list[dict[str, Any]]:
        """The batch Jobs of workloads ``<job>-0`` ... ``<job>-<last_attempt>``, live, sorted by name."""
        ...

    def attempt_failure_pods(self, namespace: str, workload: str) -> list[Pod]:
        """A failed workload's pods that say why it failed, live, sorted by name."""
        ...

    def node_states(self, names: list[str]) -> dict[str, NodeState]:
        """The state of each named Node, live (a 404 reads as deleted)."""
        ...

    def pod_delete_allowed(self, namespace: str) -> bool:
        """Whether the hooks may delete pods in ``namespace`` (a live access review)."""
        ...
