"""Why an attempt ended, as the cluster's evidence tells it: the one classifier (issue 34).

Pure: reads the pods that tell a failed attempt (``Reader.attempt_failure_pods``, read by the caller:
live failing pods and, once the pod watch keeps them, the departed ones, annotated ``DEPARTED``;
both are read the same), the state of their nodes (``Reader.node_states``, read by the caller the
way the stuck-drain check reads them, only when ``nodes_to_read`` names some), and, for an attempt
a teardown ended, Kueue's eviction reason or the Job's deadline. Returns a ``Classified``: ONE
class (``hooks.core.vocab.FailureClass``), the evidence it used (words naming the pod and the
signal, at most ``MAX_EVIDENCE`` characters) and the nodes the class blames (``failedNodes``).

The default rules are ``TABLE``, in order: the first row a pod matches decides, the pods taken in
the order they failed (``first_failing`` first). Every pod row is tried on every failing pod
before the next row: a disruption explains its peers' crashes (their collective library exits
non-zero once a peer is gone), so the disruption rows come before the exit codes. A node is read
only when no pod says why (a pod failed with no exit code, no disruption, no reason): a live read
of the node is later, weaker evidence than what the kubelet or a controller wrote on the pod. A
failed node read, or no pod at all, is ``unknown``: never "the node was fine". The table is
documented in docs/failure-classes.md; tests/core/test_failureclass.py holds the two to each other.

A failure-policy rule with a ``class`` (``hooks.core.failurepolicy``) assigns that class before
this table is asked; ``rule_class`` builds its ``Classified``. This module is the only place a
class is named from evidence: the verdict, the history (``status.attempts[].class``), the
budget's charge and the Events read the ``Classified`` it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hooks.core import deadlines
from hooks.core.vocab import EndCause, FailureClass

if TYPE_CHECKING:  # a type only: podread.nodes also holds the node reads, which the core never imports
    from podread.nodes import NodeState

Pod = Mapping[str, Any]
MAX_EVIDENCE = 256
"""``status.attempts[].classEvidence``' longest value (the CRD's ``maxLength``)."""
MAX_FAILED_NODES = 8
"""``status.attempts[].failedNodes``' most names (the CRD's ``maxItems``)."""
MAX_NODES_READ = 16
"""The most nodes ``nodes_to_read`` names (``podread.nodes.MAX_NODES_PER_READ``)."""
DEPARTED = "podread.nvcre.nvidia.com/departed"
"""The annotation the pod watch puts on a pod it saw deleted (``podread``, issue 34): the time it saw
the deletion. Such a pod is read as it was last seen; the evidence says it is gone."""
BLAMES_NODES = frozenset({FailureClass.NODE, FailureClass.INFRASTRUCTURE})
"""The classes whose ``Classified.nodes`` name the nodes (``failedNodes``): kept out of the next attempt."""


@dataclass(frozen=True)
class Classified:
    """One attempt's class (``klass``), the ``evidence`` it was named from (``pod w-0-0:
    DisruptionTarget/PreemptionByScheduler``), the ``nodes`` it blames (sorted, at most
    ``MAX_FAILED_NODES``; only for ``BLAMES_NODES``) and the ``signal``: the ``TABLE`` row that
    decided (or ``RULE`` / ``UNREAD`` / ``NO_SIGNAL``)."""

    klass: FailureClass
    evidence: str
    nodes: tuple[str, ...] = ()
    signal: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "evidence", _bounded(self.evidence))
        nodes = tuple(sorted(set(self.nodes)))[:MAX_FAILED_NODES] if self.klass in BLAMES_NODES else ()
        object.__setattr__(self, "nodes", nodes)


@dataclass(frozen=True)
class Row:
    """A default rule: the ``signal`` in the docs' words, the ``klass`` it names, and ``says``, which
    returns the evidence words for one pod (``None`` when the pod does not carry the signal)."""

    signal: str
    klass: FailureClass
    says: Callable[[Pod], str | None]


RULE = "failure-policy rule"
UNREAD = "no failing pod read"
NO_SIGNAL = "no signal"
NODE_ROW = "the node of a failing pod is deleted, out of service, not Ready or unreachable (read live)"
DEADLINE_ROW = "the Job's deadline (spec.activeDeadlineSeconds) passed"
EVICTION_ROWS: tuple[tuple[str, FailureClass], ...] = (
    ("NodeFailures", FailureClass.NODE),
    ("PodsReadyTimeout", FailureClass.INFRASTRUCTURE),
)
"""Kueue's eviction reasons that name a class of their own; any other reason (``Preempted``,
``InactiveWorkload``, ...) is ``preempted``: the queue took the quota back. An eviction spends no
budget (``hooks.core.rows.kueue``); its class is recorded."""


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_EVIDENCE else text[: MAX_EVIDENCE - 3] + "..."


# ---- the pods ---------------------------------------------------------------------------------------

def disruption(pod: Pod) -> Mapping[str, Any] | None:
    """The pod's ``DisruptionTarget`` condition when it is True, else ``None``."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget" and \
                condition.get("status") == "True":
            return condition
    return None


def containers(pod: Pod) -> list[Mapping[str, Any]]:
    """The pod's container statuses, init containers first."""
    status = pod.get("status") or {}
    return [c for key in ("initContainerStatuses", "containerStatuses") for c in status.get(key) or ()
            if isinstance(c, Mapping)]


def terminated(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """The container's ``state.terminated`` (``{}`` when it has not ended)."""
    state = container.get("state") or {}
    found = state.get("terminated") if isinstance(state, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def nonzero(code: object) -> bool:
    """Whether ``code`` is an exit code (an integer) other than 0."""
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def failed_container(pod: Pod) -> tuple[int, str] | None:
    """(exit code, terminated reason) of the first container (init containers first) that ended non-zero."""
    for container in containers(pod):
        ended = terminated(container)
        if nonzero(ended.get("exitCode")):
            return int(ended["exitCode"]), str(ended.get("reason") or "")
    return None


def first_failing(pods: Sequence[Pod]) -> Pod | None:
    """The pod that failed first: the earliest end of a container that ended non-zero or of a
    ``DisruptionTarget`` condition; pods without such a time after those with one; then by name."""
    ranked = failing_order(pods)
    return ranked[0] if ranked else None


def failing_order(pods: Sequence[Pod]) -> list[Pod]:
    """``pods`` in the order they failed (``first_failing`` first), ties and untimed pods by name."""
    by_name = sorted(pods, key=_name)
    timed = {index: when for index, pod in enumerate(by_name) if (when := _failed_at(pod)) is not None}
    order = sorted(range(len(by_name)), key=lambda index: (index not in timed, timed.get(index) or datetime.min,
                                                           index))
    return [by_name[index] for index in order]


def _failed_at(pod: Pod) -> datetime | None:
    moments = [deadlines.time_or_none(terminated(c).get("finishedAt")) for c in containers(pod)
               if nonzero(terminated(c).get("exitCode"))]
    disrupted = disruption(pod)
    if disrupted is not None:
        moments.append(deadlines.time_or_none(disrupted.get("lastTransitionTime")))
    known = [moment for moment in moments if moment is not None]
    return min(known) if known else None


def _name(pod: Pod) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def node_of(pod: Pod) -> str:
    """The node the pod was bound to (``spec.nodeName``), ``""`` when none."""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _disrupted(*reasons: str, prefix: str = "") -> Callable[[Pod], str | None]:
    def says(pod: Pod) -> str | None:
        found = disruption(pod)
        reason = str((found or {}).get("reason") or "")
        if found is not None and (reason in reasons or (prefix and reason.startswith(prefix))):
            return f"DisruptionTarget/{reason}"
        return None
    return says


def _pod_reason(*reasons: str, prefix: str = "") -> Callable[[Pod], str | None]:
    def says(pod: Pod) -> str | None:
        reason = str((pod.get("status") or {}).get("reason") or "")
        if reason and (reason in reasons or (prefix and reason.startswith(prefix))):
            return f"pod reason {reason}"
        return None
    return says


def _oom(pod: Pod) -> str | None:
    for container in containers(pod):
        if terminated(container).get("reason") == "OOMKilled":
            return f"container {container.get('name')} OOMKilled"
    return None


def _exit_code(pod: Pod) -> str | None:
    for container in containers(pod):
        code = terminated(container).get("exitCode")
        if nonzero(code):
            message = str(terminated(container).get("message") or "").strip()
            said = f": {message[:80]}" if message else ""
            return f"container {container.get('name')} exited with {code}{said}"
    return None


TABLE: tuple[Row, ...] = (
    Row("DisruptionTarget/PreemptionByScheduler (any reason beginning Preemption)", FailureClass.PREEMPTED,
        _disrupted(prefix="Preemption")),
    Row("DisruptionTarget/DeletionByTaintManager", FailureClass.NODE, _disrupted("DeletionByTaintManager")),
    Row("DisruptionTarget/TerminationByKubelet", FailureClass.NODE, _disrupted("TerminationByKubelet")),
    Row("DisruptionTarget/DeletionByPodGC", FailureClass.NODE, _disrupted("DeletionByPodGC")),
    Row("pod reason NodeLost, Terminated (node shutdown) or Evicted (node pressure)", FailureClass.NODE,
        _pod_reason("NodeLost", "Terminated", "Evicted")),
    Row("DisruptionTarget/EvictionByEvictionAPI", FailureClass.PREEMPTED, _disrupted("EvictionByEvictionAPI")),
    Row("pod reason UnexpectedAdmissionError", FailureClass.INFRASTRUCTURE, _pod_reason("UnexpectedAdmissionError")),
    Row("pod reason OutOf<resource> (admission: e.g. OutOfnvidia.com/gpu)", FailureClass.INFRASTRUCTURE,
        _pod_reason(prefix="OutOf")),
    Row("container OOMKilled", FailureClass.USER, _oom),
    Row("container exit code other than 0", FailureClass.USER, _exit_code),
)
"""The default rules for a failed attempt's pods, in order (the module doc)."""

DOCUMENTED: tuple[tuple[str, FailureClass], ...] = (
    (DEADLINE_ROW, FailureClass.DEADLINE),
    *((f"Kueue evicted the Workload, reason {reason}", klass) for reason, klass in EVICTION_ROWS),
    ("Kueue evicted the Workload, any other reason (Preempted, InactiveWorkload, ...)", FailureClass.PREEMPTED),
    *((row.signal, row.klass) for row in TABLE),
    (NODE_ROW, FailureClass.NODE),
    ("no failing pod read, a failed node read, or no signal above", FailureClass.UNKNOWN),
)
"""Every default rule, signal -> class, in the order docs/failure-classes.md lists them."""


# ---- the classifier ---------------------------------------------------------------------------------

def _pod_words(pod: Pod) -> str:
    departed = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEPARTED)
    return f"pod {_name(pod)}" + (f" (deleted, seen {departed})" if departed else "")


def _row_match(pods: Sequence[Pod]) -> tuple[Row, list[tuple[Pod, str]]] | None:
    """The first ``TABLE`` row some pod of ``pods`` (in failing order) carries, with every pod that
    carries it and its words; ``None`` when no pod carries any."""
    ordered = failing_order(pods)
    for row in TABLE:
        hits = [(pod, said) for pod in ordered if (said := row.says(pod)) is not None]
        if hits:
            return row, hits
    return None


def nodes_to_read(pods: Sequence[Pod]) -> list[str]:
    """The nodes the classifier needs the state of: the failing pods' nodes (sorted, at most
    ``MAX_NODES_READ``) when no pod carries a ``TABLE`` signal, else none (``[]``)."""
    if not pods or _row_match(pods) is not None:
        return []
    return sorted({node for pod in pods if (node := node_of(pod))})[:MAX_NODES_READ]


def classify(pods: Sequence[Pod], nodes: Mapping[str, NodeState] | None = None) -> Classified:
    """The class of a failed attempt whose failing pods are ``pods`` (any order), with ``nodes``
    the states read for ``nodes_to_read(pods)`` (``None``: the read failed, or none was made).

    The first ``TABLE`` row a pod carries decides; its evidence names the first pod that carries it
    and the nodes of all that do. Else a node of a failing pod that is gone or unhealthy
    (``NodeState.unhealthy``) makes it ``node``. Else ``unknown``: no pod, a node read that failed,
    or no signal at all."""
    if not pods:
        return NOTHING
    matched = _row_match(pods)
    if matched is not None:
        row, hits = matched
        pod, said = hits[0]
        more = f" (and {len(hits) - 1} more pods)" if len(hits) > 1 else ""
        return Classified(row.klass, f"{_pod_words(pod)}: {said}{more}",
                          tuple(node for hit, _ in hits if (node := node_of(hit))), row.signal)
    wanted = nodes_to_read(pods)
    if wanted and nodes is None:
        return Classified(FailureClass.UNKNOWN, f"{_pod_words(failing_order(pods)[0])}: no signal on the pod, and "
                          "its node could not be read", signal=NO_SIGNAL)
    sick = [state for name in wanted if (state := (nodes or {}).get(name)) is not None and state.unhealthy]
    if sick:
        pod = next(p for p in failing_order(pods) if node_of(p) == sick[0].name)
        return Classified(FailureClass.NODE, f"{_pod_words(pod)}: node {sick[0].name} is {sick[0].describe()}",
                          tuple(state.name for state in sick), NODE_ROW)
    return Classified(FailureClass.UNKNOWN, f"{_pod_words(failing_order(pods)[0])}: failed with no exit code, "
                      "disruption or reason, on a node that is Ready", signal=NO_SIGNAL)


def unread(words: str) -> Classified:
    """The class of a failed attempt whose pods could not be read (``words`` say why): ``unknown``."""
    return Classified(FailureClass.UNKNOWN, f"the failing pods could not be read: {words}", signal=UNREAD)


def rule_class(klass: str, rule: str, matched: str, pods: Sequence[Pod]) -> Classified:
    """The class a failure-policy ``rule`` assigns (its ``class``), with what it ``matched`` as the
    evidence; a class that blames nodes blames the first failing pod's."""
    first = first_failing(pods)
    return Classified(FailureClass(klass), f"rule {rule}" + (f": {matched}" if matched else ""),
                      (node_of(first),) if first is not None and node_of(first) else (), RULE)


def evicted(reason: str) -> Classified:
    """The class of an attempt Kueue evicted for ``reason`` (``EVICTION_ROWS``; else ``preempted``)."""
    klass = dict(EVICTION_ROWS).get(reason, FailureClass.PREEMPTED)
    return Classified(klass, f"Workload evicted by Kueue ({reason or 'no reason'})",
                      signal=f"Kueue evicted the Workload, reason {reason}")


NOTHING = Classified(FailureClass.UNKNOWN, "no failing pod was found", signal=UNREAD)
"""The class of a failed attempt none of whose pods tells a failure: ``unknown``."""
DEADLINE = Classified(FailureClass.DEADLINE, "spec.activeDeadlineSeconds passed", signal=DEADLINE_ROW)
"""The class of an attempt the Job's deadline ended (``hooks.core.rows.deadline``): no budget."""


def outcome(klass: FailureClass) -> EndCause:
    """``status.attempts[].outcome`` of a failure of class ``klass``: ``Preempted`` for a
    preemption, else ``Failed`` (the outcome words stay what they were; the class is the budget's)."""
    return EndCause.PREEMPTED if klass == FailureClass.PREEMPTED else EndCause.FAILED
