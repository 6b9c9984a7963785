"""PodSelector: what one pod list asks for, in a form both the cache and the API server understand."""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from podread.constants import FINISHED_PHASES, JOB_LABEL

Pod = dict[str, Any]
"""A Pod in the API server's JSON form (``metadata``, ``spec``, ``status``), as a plain dict."""


@dataclass(frozen=True)
class PodSelector:
    """One pod list: a namespace (``None`` for all), label terms and an optional node.

    ``labels`` are equality terms (``key=value``), ``label_in`` set terms (``key in (a,b)``, values
    kept sorted), ``has_labels`` existence terms (``key``), and ``node_name`` the field term
    ``spec.nodeName=<node>``. Only these forms exist because they are all the Reader's methods
    need; each has an exact server-side meaning.
    """

    namespace: str | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    has_labels: tuple[str, ...] = ()
    node_name: str | None = None
    label_in: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "has_labels", tuple(self.has_labels))
        sets = {key: tuple(sorted(set(values))) for key, values in self.label_in.items()}
        if any(not values for values in sets.values()):
            raise ValueError("a label set term needs at least one value")
        object.__setattr__(self, "label_in", MappingProxyType(sets))

    def __hash__(self) -> int:
        return hash((self.namespace, tuple(sorted(self.labels.items())), self.has_labels, self.node_name,
                     tuple(sorted(self.label_in.items()))))

    def label_selector(self) -> str:
        """The ``labelSelector`` query value, or ``""`` when the list selects on no label."""
        terms = [f"{key}={value}" for key, value in sorted(self.labels.items())]
        terms += [f"{key} in ({','.join(values)})" for key, values in sorted(self.label_in.items())]
        terms += [key for key in self.has_labels if key not in self.labels and key not in self.label_in]
        return ",".join(terms)

    def field_selector(self) -> str:
        """The ``fieldSelector`` query value, or ``""``."""
        return f"spec.nodeName={self.node_name}" if self.node_name is not None else ""

    def describe(self) -> str:
        """A short human form for logs and errors: ``ns=a labels=k=v fields=spec.nodeName=n``."""
        parts = [f"namespace={self.namespace}" if self.namespace is not None else "all namespaces"]
        if self.label_selector():
            parts.append(f"labels={self.label_selector()}")
        if self.field_selector():
            parts.append(f"fields={self.field_selector()}")
        return " ".join(parts)

    def matches(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` is selected, judged exactly as the API server would."""
        metadata = pod.get("metadata") or {}
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        labels = metadata.get("labels") or {}
        if any(labels.get(key) != value for key, value in self.labels.items()):
            return False
        if any(labels.get(key) not in values for key, values in self.label_in.items()):
            return False
        if any(key not in labels for key in self.has_labels):
            return False
        return self.node_name is None or (pod.get("spec") or {}).get("nodeName", "") == self.node_name


JOB_SELECTORS_MEMO = 4096
"""How many Jobs' selectors ``job_selector`` keeps (least recently used out)."""


@functools.lru_cache(maxsize=JOB_SELECTORS_MEMO)
def job_selector(namespace: str, job: str) -> PodSelector:
    """``PodSelector(namespace=namespace, labels={JOB_LABEL: job})``: a Job's pods, what every
    ``/sync`` lists. Built once per Job and kept (bounded, ``functools.lru_cache``, thread-safe): a
    selector is immutable (frozen, its mappings read-only), keyed here on all it holds, and building
    one costs about 4 us (issue 32 item 4)."""
    return PodSelector(namespace=namespace, labels={JOB_LABEL: job})


class PodLister(Protocol):
    """Anything that lists pods: the cache, the live client, a snapshot, a test fake.

    ``list_pods`` returns every pod ``selector`` selects, or raises ``PodReadError``; it never
    returns a partial list. Callers must not mutate the returned dicts.
    """

    def list_pods(self, selector: PodSelector) -> list[Pod]: ...


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of a pod, for messages and sorting."""
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def is_active(pod: Mapping[str, Any]) -> bool:
    """Whether a pod may still hold its node: its phase is neither Succeeded nor Failed.

    A pod being deleted (``metadata.deletionTimestamp`` set) keeps its phase until its containers
    stop, so it stays active; so does a pod in phase ``Unknown`` or with no status yet.
    """
    return (pod.get("status") or {}).get("phase") not in FINISHED_PHASES


def count_active(pods: Collection[Mapping[str, Any]]) -> int:
    """How many of ``pods`` are active (``is_active``), counted in one pass without a call per pod:
    the count of every ``/sync`` (``activePods``, ``Reader.counted_job_pods``) over all of a Job's pods."""
    finished = FINISHED_PHASES
    return len(pods) - sum([(pod.get("status") or {}).get("phase") in finished for pod in pods])


class Counted(NamedTuple):
    """A list of pods and how many of them are active (``count_active``), counted once where they
    were read: what ``Reader.counted_job_pods`` answers, so that the count it checked against the
    status is the count the status is given (one pass over a Job's pods per ``/sync``)."""

    pods: list[Pod]
    active: int


def counted(pods: list[Pod]) -> Counted:
    """``pods`` with their active count (``count_active``)."""
    return Counted(pods, count_active(pods))


def tells_a_failure(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` says why a workload failed: phase Failed, a ``DisruptionTarget`` condition,
    or a container (or init container) that ended with a non-zero exit code."""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return True
    if any(isinstance(c, Mapping) and c.get("type") == "DisruptionTarget" for c in status.get("conditions") or ()):
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for container in status.get(key) or ():
            terminated = ((container or {}).get("state") or {}).get("terminated") or {}
            if terminated.get("exitCode") not in (None, 0):
                return True
    return False
