"""A step-driven cluster simulator: JobSets and their pods moving through their lives.

The driver (Metacontroller's stand-in) creates and deletes JobSets; the test advances time with
``step()`` and scripts events (workers succeed, a worker fails, the launcher finishes, a node is
lost). Pods are the ground truth the invariants judge against; they are mirrored into a
``FakeKubeServer`` when one is given (so the real server's cache and live reads see them with real
staleness), and served in memory by ``ClusterLister`` for the fast in-process path.

What JobSet does, as modelled here:
- on create, one pod per replica of each replicated job (``parallelism`` 1), ``Pending``, labelled
  with the pod template's labels (JOB_LABEL or LAUNCHER_LABEL, ATTEMPT_LABEL, user labels) and
  JobSet's own (``jobset.sigs.k8s.io/jobset-name``, ``.../replicatedjob-name``); one step later
  ``Running``;
- JobSet's status counts its pods per replicated job, so a pod change is a JobSet change (which is
  what makes Metacontroller call the hooks);
- workers succeed -> ``Completed`` (with a launcher, only when the launcher succeeds: its
  ``successPolicy``); a worker fails -> ``Failed`` (the other pods keep running: nothing deletes
  them until the JobSet is deleted);
- delete (background propagation): the JobSet object is gone at once; its pods get a
  ``deletionTimestamp``, stay in their phase for a grace period of steps, then vanish; a pod on a
  lost node never goes away until ``release`` is called.

A pod belongs to the JobSet that made it whatever its labels say: ``strip_labels`` removes labels
from a live pod (as ``kubectl label pod ... nvcre.nvidia.com/job-`` would), and the ground truth
(``job_pods``, ``active_pods``, ``active_attempts``) still counts it for its Job.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from podread import (
    ATTEMPT_LABEL,
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    REPLICATED_JOB_LABEL,
    ApiError,
    PodSelector,
    is_active,
)
from tests.fakekube import FakeKubeServer, make_pod
from tests.support.uids import uid

Pod = dict[str, Any]
Key = tuple[str, str]
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class _PodLife:
    """What the simulator knows about one pod beyond its JSON: how long it has left to terminate."""

    jobset: Key
    grace_left: int | None = None
    stuck: bool = False


def timestamp(step: int) -> str:
    """The RFC 3339 time of simulated step ``step`` (one step is one second after ``EPOCH``)."""
    return (EPOCH + timedelta(seconds=step)).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(value: Any) -> Any:
    """A deep copy of a JSON value (much faster than ``copy.deepcopy`` for API objects)."""
    return orjson.loads(orjson.dumps(value))


def _suffix(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:5]


class Cluster:
    """JobSets and pods, advanced one ``step()`` at a time. Thread-safe.

    ``sink`` (optional) receives every pod change; ``grace_steps`` is how many steps a deleted pod
    keeps running, ``launcher_grace_steps`` the same for launcher pods (longer in some scenarios).
    """

    def __init__(
        self, sink: FakeKubeServer | None = None, *, grace_steps: int = 2, launcher_grace_steps: int | None = None
    ) -> None:
        self.sink = sink
        self.grace_steps = grace_steps
        self.launcher_grace_steps = grace_steps if launcher_grace_steps is None else launcher_grace_steps
        self.time = 0
        self.jobsets: dict[Key, dict[str, Any]] = {}
        self._pods: dict[Key, Pod] = {}
        self._life: dict[Key, _PodLife] = {}
        self._lock = threading.RLock()
        self._uids = 0
        self.version = 0
        """Bumped by every change (pods or JobSets)."""

    # -- JobSets (the driver's side) ---------------------------------------------------------------

    def create_jobset(self, jobset: Mapping[str, Any], owner_uid: str) -> dict[str, Any]:
        """Creates a JobSet (as Metacontroller would, owned by ``owner_uid``) and its pending pods."""
        with self._lock:
            obj = clone(dict(jobset))
            metadata = obj["metadata"]
            key = (metadata["namespace"], metadata["name"])
            if key in self.jobsets:
                raise ValueError(f"JobSet {key} already exists")
            self._uids += 1
            metadata["uid"] = uid(f"jobset/{self._uids}")
            metadata["creationTimestamp"] = timestamp(self.time)
            metadata["resourceVersion"] = "1"
            metadata["ownerReferences"] = [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                                            "uid": owner_uid, "controller": True}]
            obj["status"] = {}
            self.jobsets[key] = obj
            for replicated in obj["spec"].get("replicatedJobs") or []:
                self._create_pods(key, replicated)
            self._refresh_status(key)
            self.version += 1
            return clone(obj)

    def _create_pods(self, key: Key, replicated: Mapping[str, Any]) -> None:
        namespace, jobset = key
        template = (replicated.get("template") or {}).get("spec", {}).get("template") or {}
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        rj = replicated["name"]
        labels.update({JOBSET_NAME_LABEL: jobset, REPLICATED_JOB_LABEL: rj})
        for index in range(int(replicated.get("replicas", 1))):
            name = f"{jobset}-{rj}-{index}-0-{_suffix(namespace, jobset, rj, str(index))}"
            pod = make_pod(name, namespace, labels, "Pending", node=f"node-{jobset}-{rj}-{index}", gpus=0)
            pod["metadata"]["creationTimestamp"] = timestamp(self.time)
            self._pods[(namespace, name)] = pod
            self._life[(namespace, name)] = _PodLife(key)
            self._mirror((namespace, name))

    def delete_jobset(self, namespace: str, name: str) -> bool:
        """Deletes a JobSet with background propagation: the object goes now, its pods terminate
        over their grace period (a stuck pod never finishes). Returns whether it existed."""
        with self._lock:
            key = (namespace, name)
            if self.jobsets.pop(key, None) is None:
                return False
            for pod_key, life in self._life.items():
                if life.jobset == key and life.grace_left is None:
                    pod = self._pods[pod_key]
                    launcher = LAUNCHER_LABEL in pod["metadata"]["labels"]
                    life.grace_left = self.launcher_grace_steps if launcher else self.grace_steps
                    pod["metadata"]["deletionTimestamp"] = timestamp(self.time)
                    pod["metadata"]["deletionGracePeriodSeconds"] = 30
                    self._mirror(pod_key)
            self.version += 1
            return True

    def jobsets_of(self, owner_uid: str) -> list[dict[str, Any]]:
        """Copies of the JobSets owned by the Job with ``owner_uid`` (what Metacontroller observes)."""
        with self._lock:
            return [clone(obj) for obj in self.jobsets.values()
                    if obj["metadata"]["ownerReferences"][0]["uid"] == owner_uid]

    def jobset_versions(self, owner_uid: str) -> tuple[tuple[str, str], ...]:
        """``(name, resourceVersion)`` of the JobSets owned by ``owner_uid``: what changes trigger a sync."""
        with self._lock:
            return tuple(sorted((obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
                                for obj in self.jobsets.values()
                                if obj["metadata"]["ownerReferences"][0]["uid"] == owner_uid))

    def jobset(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of one JobSet, or ``None``."""
        with self._lock:
            obj = self.jobsets.get((namespace, name))
            return clone(obj) if obj is not None else None

    # -- time --------------------------------------------------------------------------------------

    def step(self, count: int = 1) -> None:
        """Advances ``count`` steps: pending pods start; terminating pods count down and vanish
        (finished ones at once), except stuck ones."""
        for _ in range(count):
            with self._lock:
                self.time += 1
                for pod_key in sorted(self._pods):
                    pod, life = self._pods[pod_key], self._life[pod_key]
                    if life.grace_left is not None:
                        if life.stuck:
                            continue
                        life.grace_left -= 1
                        if life.grace_left <= 0 or not is_active(pod):
                            self._remove(pod_key)
                    elif pod["status"]["phase"] == "Pending":
                        self._set_phase(pod_key, "Running")
                for key in list(self.jobsets):
                    self._refresh_status(key)
                self.version += 1

    # -- scripted events ---------------------------------------------------------------------------

    def succeed_workers(self, namespace: str, jobset: str) -> int:
        """Every active worker (JOB_LABEL) pod of ``jobset`` succeeds; returns how many."""
        return self._finish(namespace, jobset, JOB_LABEL, "Succeeded")

    def finish_launcher(self, namespace: str, jobset: str, phase: str = "Succeeded") -> int:
        """Every active launcher pod of ``jobset`` ends in ``phase``; returns how many."""
        return self._finish(namespace, jobset, LAUNCHER_LABEL, phase)

    def fail_worker(self, namespace: str, jobset: str) -> str | None:
        """The first active worker pod of ``jobset`` fails, its container ending with exit code 1 as a
        crashing trainer's does (a user failure, issue 34; the JobSet fails; the others keep running).
        Returns the pod's name, or ``None`` when there was none."""
        with self._lock:
            for pod_key in sorted(self._pods):
                pod = self._pods[pod_key]
                if (self._life[pod_key].jobset == (namespace, jobset) and JOB_LABEL in pod["metadata"]["labels"]
                        and is_active(pod) and "deletionTimestamp" not in pod["metadata"]):
                    name = ((pod["spec"].get("containers") or [{}])[0]).get("name", "worker")
                    pod["status"]["containerStatuses"] = [{"name": name, "ready": False, "state": {
                        "terminated": {"exitCode": 1, "reason": "Error"}}}]
                    self._set_phase(pod_key, "Failed")
                    self._refresh_status((namespace, jobset))
                    self.version += 1
                    return pod_key[1]
            return None

    def _finish(self, namespace: str, jobset: str, label: str, phase: str) -> int:
        with self._lock:
            count = 0
            for pod_key in sorted(self._pods):
                pod = self._pods[pod_key]
                if self._life[pod_key].jobset == (namespace, jobset) and label in pod["metadata"]["labels"] \
                        and is_active(pod):
                    self._set_phase(pod_key, phase)
                    count += 1
            self._refresh_status((namespace, jobset))
            self.version += 1
            return count

    def lose_node(self, namespace: str, pod_name: str) -> None:
        """The pod's node is lost: once deleted, the pod stays terminating until ``release``."""
        with self._lock:
            self._life[(namespace, pod_name)].stuck = True

    def release(self) -> None:
        """Every pod stuck on a lost node is let go (the node came back or was removed)."""
        with self._lock:
            for life in self._life.values():
                life.stuck = False

    def strip_labels(self, namespace: str, pod_name: str, *keys: str) -> None:
        """Removes ``keys`` from one pod's labels (a user patching the pod); the pod stays what it is."""
        with self._lock:
            labels = self._pods[(namespace, pod_name)]["metadata"]["labels"]
            for key in keys:
                labels.pop(key, None)
            self._mirror((namespace, pod_name))
            self.version += 1

    def add_pod(self, pod: Mapping[str, Any], jobset: Key) -> None:
        """Puts an extra pod in (e.g. one a stale cache does not know of), as part of ``jobset``."""
        with self._lock:
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            self._pods[key] = clone(dict(pod))
            self._life[key] = _PodLife(jobset)
            self._mirror(key)
            self.version += 1

    # -- ground truth ------------------------------------------------------------------------------

    def pods(self, namespace: str | None = None) -> list[Pod]:
        """Copies of every pod (in ``namespace``), sorted by key."""
        with self._lock:
            return [clone(self._pods[k]) for k in sorted(self._pods) if namespace in (None, k[0])]

    def job_pods(self, namespace: str, job: str, *, copy: bool = True) -> list[Pod]:
        """Every pod of a Job, by every identity it has: its workers (JOB_LABEL), its launchers
        (LAUNCHER_LABEL), and any pod JobSet made for one of the Job's JobSets (``<job>-<n>``, by
        JobSet's ``jobset-name`` label or by the JobSet that made it), whatever labels were removed
        or changed since. With ``copy=False`` the stored dicts themselves (read only, for the checks)."""
        own = re.compile(re.escape(job) + r"-(0|[1-9][0-9]*)")
        with self._lock:
            found = []
            for key, pod in sorted(self._pods.items()):
                labels = pod["metadata"]["labels"]
                if key[0] != namespace:
                    continue
                if (job in (labels.get(JOB_LABEL), labels.get(LAUNCHER_LABEL))
                        or own.fullmatch(str(labels.get(JOBSET_NAME_LABEL, "")))
                        or own.fullmatch(self._life[key].jobset[1])):
                    found.append(clone(pod) if copy else pod)
            return found

    def jobset_of(self, pod: Mapping[str, Any]) -> str:
        """The name of the JobSet that made ``pod`` (whatever its labels say now), or ``""``."""
        with self._lock:
            life = self._life.get((pod["metadata"]["namespace"], pod["metadata"]["name"]))
            return life.jobset[1] if life is not None else ""

    def active_pods(self, namespace: str, job: str) -> list[Pod]:
        """The Job's pods (workers and launchers) that have not finished: the truth the barrier guards."""
        return [pod for pod in self.job_pods(namespace, job, copy=False) if is_active(pod)]

    def active_attempts(self, namespace: str, job: str) -> set[str]:
        """The attempts of the Job's active pods: the attempt of the JobSet that made each (its
        ``<job>-<n>`` name), else its attempt label."""
        attempts = set()
        for pod in self.active_pods(namespace, job):
            jobset = self.jobset_of(pod)
            prefix = f"{job}-"
            if jobset.startswith(prefix) and jobset[len(prefix):].isdigit():
                attempts.add(jobset[len(prefix):])
            else:
                attempts.add(pod["metadata"]["labels"].get(ATTEMPT_LABEL, "?"))
        return attempts

    def pod_names(self, namespace: str, job: str, *, launcher: bool = False) -> list[str]:
        """Names of the Job's worker (or launcher) pods."""
        label = LAUNCHER_LABEL if launcher else JOB_LABEL
        return [p["metadata"]["name"] for p in self.job_pods(namespace, job) if p["metadata"]["labels"].get(label)]

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """The pods ``selector`` selects, as the API server would answer (used by ``ClusterLister``)."""
        with self._lock:
            return [self._pods[key] for key in sorted(self._pods) if selector.matches(self._pods[key])]

    # -- internals ---------------------------------------------------------------------------------

    def _set_phase(self, pod_key: Key, phase: str) -> None:
        pod = self._pods[pod_key]
        pod["status"]["phase"] = phase
        for status in pod["status"].get("containerStatuses") or []:
            status["ready"] = phase == "Running"
        self._mirror(pod_key)

    def _remove(self, pod_key: Key) -> None:
        del self._pods[pod_key]
        del self._life[pod_key]
        if self.sink is not None:
            self.sink.delete_pod(*pod_key)

    def _mirror(self, pod_key: Key) -> None:
        if self.sink is not None:
            self.sink.put_pod(self._pods[pod_key])

    def _refresh_status(self, key: Key) -> None:
        """JobSet's status: per replicated job counts, then Completed/Failed as its policies say."""
        obj = self.jobsets.get(key)
        if obj is None:
            return
        counts: dict[str, dict[str, int]] = {}
        launcher_phases: list[str] = []
        worker_phases: list[str] = []
        for pod_key, life in self._life.items():
            if life.jobset != key:
                continue
            pod = self._pods[pod_key]
            labels = pod["metadata"]["labels"]
            phase = pod["status"]["phase"]
            entry = counts.setdefault(labels[REPLICATED_JOB_LABEL], {"active": 0, "ready": 0, "succeeded": 0,
                                                                      "failed": 0})
            entry["active" if is_active(pod) else phase.lower()] += 1
            entry["ready"] += phase == "Running"
            (launcher_phases if LAUNCHER_LABEL in labels else worker_phases).append(phase)
        status = obj["status"]
        before = clone(status)
        status["replicatedJobsStatus"] = [{"name": name, **counts[name]} for name in sorted(counts)]
        if not status.get("terminalState"):
            success = obj["spec"].get("successPolicy")
            deciding = launcher_phases if success else worker_phases + launcher_phases
            if "Failed" in worker_phases + launcher_phases:
                self._terminal(status, "Failed")
            elif deciding and all(phase == "Succeeded" for phase in deciding):
                self._terminal(status, "Completed")
        if status != before:
            obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)

    def _terminal(self, status: dict[str, Any], state: str) -> None:
        status["terminalState"] = state
        status["conditions"] = [{"type": state, "status": "True", "reason": f"{state}Reason",
                                 "message": f"jobset {state.lower()}", "lastTransitionTime": timestamp(self.time)}]


class ClusterLister:
    """A ``podread.PodLister`` over a ``Cluster`` (what the API server would answer), for the fast
    in-process path. ``fail`` set to a message makes every list raise ``ApiError`` (an outage)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.fail: str | None = None
        self.calls = 0

    def list_pods(self, selector: PodSelector) -> list[Pod]:
        """The selected pods, or ``ApiError`` while ``fail`` is set."""
        self.calls += 1
        if self.fail is not None:
            raise ApiError(self.fail)
        return self.cluster.list_pods(selector)

    def list_jobs(self, selector: PodSelector) -> list[dict[str, Any]]:
        """The batch Jobs the API server would answer: none (the simulator runs pods, not the
        batch Jobs between JobSets and pods), or ``ApiError`` while ``fail`` is set."""
        self.calls += 1
        if self.fail is not None:
            raise ApiError(self.fail)
        return []


def names(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of ``pods``."""
    return [pod["metadata"]["name"] for pod in pods]
