"""Writes the scenario inputs under tests/payloads/<scenario>/: request.json, pods.json, meta.json.

    .venv/bin/python -m tests.payloads._build          # (re)write every scenario's inputs
    .venv/bin/python -m tests.record_payloads          # then (re)record every response.json

This script never writes response.json: only ``tests.record_payloads`` does, by running each request
through the real app. Edit a scenario here, rebuild, re-record, and review the diff of response.json.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

from hooks.core import gang
from hooks.core.jobset import build_jobset
from tests.support import (
    job_request,
    job_spec,
    jobset_child,
    make_batch_job,
    make_pod,
    podgroup_child,
    workload_child,
)
from tests.support.uids import uid

HERE = pathlib.Path(__file__).resolve().parent
NOW = "2026-01-01T00:00:00Z"
NS = "team-a"
JOB = "llama"
SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {}


def scenario(name: str) -> Callable[[Callable[[], dict[str, Any]]], Callable[[], dict[str, Any]]]:
    def register(build: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        SCENARIOS[name] = build
        return build
    return register


def workers(attempt: int, n: int = 2, phase: str = "Running", deleting: str = "") -> list[dict[str, Any]]:
    return [make_pod(f"{JOB}-{attempt}-worker-{i}-0", job=JOB, namespace=NS, phase=phase, deleting=deleting,
                     workload=f"{JOB}-{attempt}", replicated_job="worker", node=f"gpu-{i}") for i in range(n)]


def launcher(attempt: int, phase: str = "Running") -> dict[str, Any]:
    return make_pod(f"{JOB}-{attempt}-launcher-0-0", launcher=JOB, namespace=NS, phase=phase,
                    workload=f"{JOB}-{attempt}", replicated_job="launcher", node="cpu-0")


def case(description: str, *, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
         jobsets: tuple[tuple[int, str], ...] = (), keying: str = "v1", finalizing: bool = False,
         cache: list[dict[str, Any]] | str = (), live: list[dict[str, Any]] | str | None = None,
         launchers: list[dict[str, Any]] = (), name: str = JOB, live_code: str = "",
         nodes: list[dict[str, Any]] | None = None, now: str = NOW,
         labels: dict[str, str] | None = None, workloads: list[dict[str, Any]] | None = None,
         priority_classes: dict[str, int] | None = None,
         flavors: dict[str, dict[str, Any]] | None = None,
         access: dict[str, bool] | None = None,
         batch_jobs: list[dict[str, Any]] | str = (), jobs_code: str = "",
         podgroups: list[dict[str, Any]] | None = None, grouped: bool = False) -> dict[str, Any]:
    """One scenario. ``cache``/``live`` are pod lists or an error text (``live_code`` the error's
    class, see podread.errors.CAUSES); ``live`` defaults to the cache's pods; ``launchers`` are
    live-only (the cache never holds launcher pods). ``batch_jobs`` are the batch Jobs the API
    server holds (none by default: a scenario says so explicitly, since a snapshot without
    ``jobs`` fails every batch Job read), or an error text (``jobs_code`` its class). ``labels``, ``workloads`` and
    ``priority_classes`` make a queue-managed Job's request. ``podgroups`` not ``None`` lists the
    PodGroup children (the manifests-gang overlay, issue 22); ``grouped``: the observed JobSets were
    built with their gang (their templates name their PodGroup)."""
    children = [jobset_child(name, attempt, namespace=NS, state=state) for attempt, state in jobsets]
    if grouped:
        job = {"metadata": {"name": name, "namespace": NS}, "spec": spec}
        for child in children:
            attempt = int(child["metadata"]["labels"]["nvcre.nvidia.com/attempt"])
            child["spec"] = gang.with_group(build_jobset(job, attempt))["spec"]
    request = job_request(name=name, namespace=NS, spec=spec if spec is not None else job_spec(max_restarts=1),
                          status=status, jobsets=children, keying=keying, finalizing=finalizing,
                          deleting="2025-12-31T23:58:00Z" if finalizing else "", labels=labels,
                          workloads=workloads, priority_classes=priority_classes, flavors=flavors,
                          podgroups=podgroups)
    if isinstance(cache, str):
        cache_doc: dict[str, Any] = {"error": cache}
    else:
        cache_doc = {"pods": list(cache)}
    live_source = cache if live is None else live
    live_doc: dict[str, Any] = {"error": live_source} if isinstance(live_source, str) else {
        "pods": [*live_source, *launchers]}
    if live_code:
        live_doc["code"] = live_code
    meta = {"hook": "finalize" if finalizing else "sync", "description": description, "now": now}
    pods: dict[str, Any] = {"cache": cache_doc, "live": live_doc}
    if nodes is not None:
        pods["nodes"] = {"items": nodes}
    if access is not None:  # may the hooks delete pods, per namespace
        pods["access"] = {"allowed": access}
    if isinstance(batch_jobs, str):
        pods["jobs"] = {"error": batch_jobs, **({"code": jobs_code} if jobs_code else {})}
    else:
        pods["jobs"] = {"items": list(batch_jobs)}
    return {"request": request, "pods": pods, "meta": meta}


def stripped(attempt: int, n: int = 1) -> list[dict[str, Any]]:
    """Workers of ``attempt`` whose nvcre labels were removed: only JobSet's labels are left."""
    return [make_pod(f"{JOB}-{attempt}-worker-{i + 2}-0", namespace=NS, workload=f"{JOB}-{attempt}",
                     replicated_job="worker", node=f"gpu-{i}") for i in range(n)]


def running_status(attempt: int = 0, restarts: int = 0, phase: str = "Running", active: int = 2) -> dict[str, Any]:
    return {"phase": phase, "attempt": attempt, "restarts": restarts, "workload": f"{JOB}-{attempt}",
            "activePods": active, "conditions": [], "message": "", "observedGeneration": 1}


MPI = job_spec(launcher="launcher", max_restarts=2)
UNAVAILABLE = "Get \"https://10.0.0.1:443/api/v1/namespaces/team-a/pods\": context deadline exceeded"

for keying in ("v1", "v2"):
    k = keying

    @scenario(f"{k}-new-job-created")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 10: a new Job, no pods anywhere: JobSet llama-0 is created, Pending", keying=k)

    @scenario(f"{k}-running-kept")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 10: JobSet observed, workers running in the cache: kept, Running, 2 active pods",
                    keying=k, status=running_status(phase="Pending", active=0), jobsets=((0, ""),),
                    cache=workers(0))

    @scenario(f"{k}-finalize-waits-for-jobset")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 1: deleting while the JobSet is still observed: no children, Terminating, "
                    "finalized false", keying=k, finalizing=True, status=running_status(),
                    jobsets=((0, ""),), cache=workers(0))

    @scenario(f"{k}-finalize-drained")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 1: JobSet gone, cache and API server show only finished pods: finalized true",
                    keying=k, finalizing=True, status={**running_status(phase="Terminating"), "workload": ""},
                    cache=workers(0, phase="Succeeded"))

    @scenario(f"{k}-terminal-succeeded-kept" if k == "v1" else f"{k}-terminal-failed-not-recreated")
    def _(k: str = k) -> dict[str, Any]:
        if k == "v1":
            return case("row 2: Succeeded stays Succeeded; the observed JobSet is kept", keying=k,
                        status=running_status(phase="Succeeded", active=0), jobsets=((0, "Completed"),))
        return case("row 2: Failed stays Failed; its JobSet was deleted by someone: nothing is recreated",
                    keying=k, status=running_status(attempt=1, restarts=1, phase="Failed", active=0))

    @scenario(f"{k}-suspend-tearing-down")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 3: suspend set while running: JobSet left out, Suspending, waiting", keying=k,
                    spec=job_spec(max_restarts=1, suspend=True), status=running_status(), jobsets=((0, ""),),
                    cache=workers(0))

    @scenario(f"{k}-suspend-suspended")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 3: suspended, JobSet gone and no active pod confirmed live: Suspended", keying=k,
                    spec=job_spec(max_restarts=1, suspend=True), status={**running_status(phase="Suspending"),
                                                                         "workload": ""},
                    cache=workers(0, phase="Failed"))

    @scenario(f"{k}-resume-after-suspended")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 4: a Job created suspended, unsuspended: its first JobSet is attempt 0 (no attempt "
                    "started before: no history, no startTime)",
                    keying=k, status={**running_status(phase="Suspended", active=0), "workload": ""})

    @scenario(f"{k}-resume-after-a-run")
    def _(k: str = k) -> dict[str, Any]:
        ran = [{"attempt": 0, "jobSet": f"{JOB}-0", "created": "2025-12-31T22:00:00Z",
                "started": "2025-12-31T22:00:05Z", "ended": "2025-12-31T23:00:00Z", "outcome": "Suspended",
                "drainSeconds": 30, "drainStuck": False}]
        return case("row 4: unsuspended after a run was suspended: attempt 1 is created (a resume, restarts "
                    "unchanged)", keying=k,
                    status={**running_status(phase="Suspended", active=0), "workload": "",
                            "startTime": "2025-12-31T22:00:00Z", "attempts": ran})

    @scenario(f"{k}-restarting-held" if k == "v1" else f"{k}-restarting-proceeds")
    def _(k: str = k) -> dict[str, Any]:
        if k == "v1":
            return case("row 5: Restarting while a worker of attempt 0 still runs: hold, no JobSet", keying=k,
                        status={**running_status(restarts=1, phase="Restarting"), "workload": ""},
                        cache=workers(0, n=1))
        return case("row 5: Restarting and drained (confirmed live): attempt 1 is created, Pending", keying=k,
                    status={**running_status(restarts=1, phase="Restarting", active=0), "workload": ""},
                    cache=workers(0, phase="Failed"))

    @scenario(f"{k}-jobset-failed-restart")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 7: the JobSet failed with a restart left: Restarting, restarts 1 recorded while the "
                    "failed JobSet is still kept (the next call, row 5, tears it down)",
                    keying=k, status=running_status(), jobsets=((0, "Failed"),), cache=workers(0))

    @scenario(f"{k}-restarts-exhausted")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 8: attempt 1 failed and maxRestarts 1 is used up: kept, Failed (terminal)", keying=k,
                    status=running_status(attempt=1, restarts=1), jobsets=((1, "Failed"),),
                    cache=workers(1, phase="Failed"))

    @scenario(f"{k}-jobset-completed")
    def _(k: str = k) -> dict[str, Any]:
        return case("row 9: the JobSet completed: kept, Succeeded", keying=k, status=running_status(),
                    jobsets=((0, "Completed"),), cache=workers(0, phase="Succeeded"))

    @scenario(f"{k}-adopt-newer-attempt")
    def _(k: str = k) -> dict[str, Any]:
        return case("adoption: status still says Restarting attempt 0 (its write was lost) but JobSet "
                    "llama-1 exists: attempt 1 is adopted and kept, never deleted", keying=k,
                    status={**running_status(restarts=1, phase="Restarting"), "workload": ""},
                    jobsets=((1, ""),), cache=workers(1))


@scenario("v2-invalid-spec-unknown-launcher")
def _() -> dict[str, Any]:
    return case("row 6: spec.launcher names no replicated job: InvalidSpec, nothing created", keying="v2",
                spec={**job_spec(), "launcher": "mpirun"})


@scenario("v1-invalid-spec-no-replicated-jobs")
def _() -> dict[str, Any]:
    return case("row 6: spec.replicatedJobs is empty: InvalidSpec, nothing created (a 200, not a 4xx)",
                spec={"replicatedJobs": []})


@scenario("v1-invalid-spec-name-too-long")
def _() -> dict[str, Any]:
    return case("row 6: llama...-0-worker-1 exceeds 63 characters: InvalidSpec NameTooLong",
                name="llama-" + "x" * 50)


@scenario("v2-invalid-spec-keeps-observed-jobset")
def _() -> dict[str, Any]:
    return case("row 6: the spec became invalid (maxRestarts -1) while JobSet llama-0 runs: it is kept as "
                "observed, phase stays Running", keying="v2", spec={**job_spec(), "maxRestarts": -1},
                status=running_status(), jobsets=((0, ""),), cache=workers(0))


@scenario("v1-cache-read-fails")
def _() -> dict[str, Any]:
    return case("row 10: the cached read fails: JobSet kept, phase and activePods kept, resync soon",
                status=running_status(active=3), jobsets=((0, ""),), cache=UNAVAILABLE)


@scenario("v1-finalize-live-read-fails")
def _() -> dict[str, Any]:
    return case("barrier: cache shows only finished pods and the live read fails: hold, Drained Unknown "
                "ReadFailed, never finalized", finalizing=True,
                status={**running_status(phase="Terminating"), "workload": ""},
                cache=workers(0, phase="Succeeded"), live=UNAVAILABLE)


@scenario("v2-finalize-stale-cache")
def _() -> dict[str, Any]:
    return case("barrier: the cache shows finished pods but the API server still has one running: hold",
                keying="v2", finalizing=True, status={**running_status(phase="Terminating"), "workload": ""},
                cache=workers(0, phase="Succeeded"), live=[*workers(0, n=1, phase="Succeeded"),
                                                           *workers(0, phase="Running")[1:]])


@scenario("v2-finalize-pod-terminating")
def _() -> dict[str, Any]:
    return case("barrier: a pod on a lost node keeps its deletionTimestamp: still active, named as terminating",
                keying="v2", finalizing=True, status={**running_status(phase="Terminating"), "workload": ""},
                cache=workers(0, n=1, deleting="2025-12-31T23:50:00Z"))


@scenario("v1-mpi-launcher-active")
def _() -> dict[str, Any]:
    return case("MPI: restarting, workers gone but the launcher of attempt 0 still runs (read live): hold",
                spec=MPI, status={**running_status(restarts=1, phase="Restarting"), "workload": ""},
                cache=workers(0, phase="Failed"), launchers=[launcher(0)])


@scenario("v2-mpi-drained")
def _() -> dict[str, Any]:
    return case("MPI: restarting, workers and launcher finished (confirmed live): attempt 1 is created",
                keying="v2", spec=MPI, status={**running_status(restarts=1, phase="Restarting"), "workload": ""},
                cache=workers(0, phase="Failed"), launchers=[launcher(0, phase="Failed")])


@scenario("v1-unsuspended-while-suspending")
def _() -> dict[str, Any]:
    return case("row 4: unsuspended before the drain finished: keeps draining (Suspending), no JobSet yet",
                status={**running_status(phase="Suspending"), "workload": ""}, cache=workers(0, n=1))


@scenario("v2-mpi-completed")
def _() -> dict[str, Any]:
    return case("row 9, MPI: the launcher succeeded so the JobSet completed: kept, Succeeded", keying="v2",
                spec=MPI, status=running_status(), jobsets=((0, "Completed"),),
                cache=workers(0), launchers=[launcher(0, phase="Succeeded")])


@scenario("v1-mpi-workers-done-launcher-running")
def _() -> dict[str, Any]:
    return case("row 10, MPI: the workers finished, the launcher still runs (read live): Running, not Pending",
                spec=MPI, status=running_status(), jobsets=((0, ""),),
                cache=workers(0, phase="Succeeded"), launchers=[launcher(0)])


@scenario("v2-launcher-left-by-a-deleted-jobset")
def _() -> dict[str, Any]:
    return case("row 10, MPI: the current JobSet is not observed but its launcher still runs: no JobSet is "
                "created next to it (hold)", keying="v2", spec=MPI, status=running_status(active=0),
                cache=[], launchers=[launcher(0)])


TIMEOUT = ("HTTPSConnectionPool(host='10.0.0.1', port=443): Read timed out. (read timeout=2.7436181)")


@scenario("v2-finalize-launcher-of-an-earlier-attempt")
def _() -> dict[str, Any]:
    return case("issue 12: status.attempt says 1 (written by hand or restored) while attempt 0's launcher runs: "
                "found by its launcher label, not by the status' workload name: hold", keying="v2", spec=MPI,
                finalizing=True, status={**running_status(attempt=1, phase="Terminating"), "workload": ""},
                cache=[], launchers=[launcher(0)])


@scenario("v1-finalize-launcher-without-spec-launcher")
def _() -> dict[str, Any]:
    return case("issue 12: spec.launcher removed while a launcher runs: the launcher label still holds the "
                "finalizer", finalizing=True, status={**running_status(phase="Terminating"), "workload": ""},
                cache=[], launchers=[launcher(0)])


@scenario("v2-finalize-worker-without-job-label")
def _() -> dict[str, Any]:
    return case("issue 12: a worker whose nvcre labels were removed still carries JobSet's jobset-name label: "
                "it holds the finalizer", keying="v2", finalizing=True,
                status={**running_status(phase="Terminating"), "workload": ""},
                cache=workers(0, phase="Succeeded"), live=[*workers(0, phase="Succeeded"), *stripped(0)])


@scenario("v1-restart-waits-for-a-relabelled-worker")
def _() -> dict[str, Any]:
    return case("issue 12: Restarting, the job label of a worker of attempt 0 was removed: attempt 1 waits for it",
                status={**running_status(restarts=1, phase="Restarting"), "workload": ""},
                cache=workers(0, phase="Failed"), live=[*workers(0, phase="Failed"), *stripped(0)])


@scenario("v1-status-attempt-ahead-keeps-running-jobset")
def _() -> dict[str, Any]:
    return case("issue 12: status.attempt is 1 while JobSet llama-0 runs: llama-0 is kept as observed, nothing "
                "is created, StatusMismatch WorkloadNotCurrent, hold", status=running_status(attempt=1),
                jobsets=((0, ""),), cache=workers(0))


@scenario("v2-suspended-status-while-running-is-held")
def _() -> dict[str, Any]:
    return case("issue 12: phase Suspended (spec.suspend unset) while JobSet llama-0 runs: kept, never dropped; "
                "StatusMismatch PhaseDisagrees", keying="v2", status=running_status(phase="Suspended"),
                jobsets=((0, ""),), cache=workers(0))


@scenario("v1-restarting-status-while-running-is-held")
def _() -> dict[str, Any]:
    return case("issue 12: phase Restarting while JobSet llama-0 runs and has not failed: kept, hold",
                status=running_status(phase="Restarting", restarts=1), jobsets=((0, ""),), cache=workers(0))


@scenario("v2-extra-child-not-adopted")
def _() -> dict[str, Any]:
    return case("issue 12: an extra child llama-1 with the attempt label next to the running llama-0: neither "
                "is dropped nor adopted; StatusMismatch SeveralWorkloads", keying="v2", status=running_status(),
                jobsets=((0, ""), (1, "")), cache=workers(0))


@scenario("v1-finalize-read-timed-out")
def _() -> dict[str, Any]:
    return case("issue 12: the live read timed out: the status says so in fixed words (no timeout value), so "
                "the next call writes the same status", finalizing=True,
                status={**running_status(phase="Terminating"), "workload": ""},
                cache=workers(0, phase="Succeeded"), live=f"list pods (namespace=team-a): timed out ({TIMEOUT})",
                live_code="timeout")


@scenario("v1-invalid-spec-job-name-with-a-dot")
def _() -> dict[str, Any]:
    return case("issue 12: my.job is a valid object name but no DNS-1035 label: InvalidName, not NameTooLong",
                name="my.job")


@scenario("v2-invalid-spec-name-too-long-for-a-later-attempt")
def _() -> dict[str, Any]:
    return case("issue 12: a 52-character name fits attempt 9, not 10: refused before attempt 0 (NameTooLong)",
                keying="v2", name="l" * 52)


@scenario("v2-restart-past-the-last-attempt-fails")
def _() -> dict[str, Any]:
    return case("issue 12: Restarting at attempt 9999, the last: the Job ends Failed (AttemptLimitReached) "
                "instead of sitting in Pending", keying="v2", spec=job_spec(max_restarts=5),
                status={**running_status(attempt=9999, restarts=2, phase="Restarting", active=0), "workload": ""})


@scenario("v2-invalid-spec-managed-by-multikueue")
def _() -> dict[str, Any]:
    spec = job_spec()
    spec["replicatedJobs"][0]["template"]["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    return case("issue 12: a replicated job managed by MultiKueue would run where the barrier reads nothing: "
                "InvalidSpec ManagedElsewhere", keying="v2", spec=spec)


@scenario("v1-invalid-spec-too-many-pods")
def _() -> dict[str, Any]:
    spec = job_spec(workers=3)
    spec["replicatedJobs"][0]["template"]["spec"]["parallelism"] = 2**30
    return case("issue 12: replicas x parallelism over JobSet's 2^31-1: InvalidSpec TooManyPods", spec=spec)


# ---- failure policy, deadlines, TTL, stuck pods ----------------------------------------------------

FAIL_ON_42 = {"name": "bad-config", "action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
PREEMPTED = {"name": "preempted", "action": "RestartJobIgnoreMaxRestarts",
             "onPodConditions": [{"type": "DisruptionTarget"}]}


def policy_spec(max_restarts: int = 1, **extra: Any) -> dict[str, Any]:
    return {**job_spec(max_restarts=max_restarts), "failurePolicy": {"rules": [FAIL_ON_42, PREEMPTED]}, **extra}


def ended(attempt: int, exit_code: int, disrupted: str = "", phase: str = "Failed") -> list[dict[str, Any]]:
    """Worker pods of ``attempt``: the first ended with ``exit_code`` (and, when given, the
    DisruptionTarget reason), the second was killed by its Job (143)."""
    pods = workers(attempt, phase=phase)
    for pod, code in zip(pods, (exit_code, 143), strict=True):
        pod["status"]["containerStatuses"] = [{"name": "worker", "state": {"terminated": {"exitCode": code}}}]
    if disrupted:
        pods[0]["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": disrupted,
                                            "lastTransitionTime": "2025-12-31T23:59:00Z"}]
    return pods


def drained_false(since: str) -> dict[str, Any]:
    return {"type": "Drained", "status": "False", "reason": "PodsActive", "message": "waiting for 1 active pod",
            "lastTransitionTime": since}


def node(name: str, ready: str, taints: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": [{"key": t, "effect": "NoExecute"} for t in taints]},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "NodeStatusUnknown",
                                       "lastTransitionTime": "2025-12-31T23:00:00Z"}]}}


@scenario("v1-failure-policy-exit-code-42-fails-the-job")
def _() -> dict[str, Any]:
    return case("row 8a: a worker exited with 42 and rule bad-config says FailJob: Failed now (reason "
                "FailurePolicy), the JobSet kept, though a restart was left", spec=policy_spec(3),
                status=running_status(), jobsets=((0, "Failed"),), cache=ended(0, 42))


@scenario("v2-failure-policy-preemption-is-not-counted")
def _() -> dict[str, Any]:
    return case("row 8a: a worker was preempted (DisruptionTarget) and rule preempted says "
                "RestartJobIgnoreMaxRestarts: Restarting with maxRestarts 0 used up, restarts stays 0, "
                "restartsByCause preempted 1", keying="v2", spec=policy_spec(0), status=running_status(),
                jobsets=((0, "Failed"),), cache=ended(0, 143, disrupted="PreemptionByScheduler"))


@scenario("v1-failure-policy-no-rule-matches-counts")
def _() -> dict[str, Any]:
    return case("row 8: exit code 1 matches no rule: RestartJob, counted (restarts 1, restartsByCause default 1)",
                spec=policy_spec(1), status=running_status(), jobsets=((0, "Failed"),), cache=ended(0, 1))


@scenario("v2-failure-policy-evidence-read-fails")
def _() -> dict[str, Any]:
    return case("row 8a: the live read of the failed attempt's pods fails: hold, JobSet kept, nothing decided "
                "(FailJob is final, never decided on a guess)", keying="v2", spec=policy_spec(1),
                status=running_status(), jobsets=((0, "Failed"),), cache=ended(0, 42), live=UNAVAILABLE)


@scenario("v1-uncounted-restart-proceeds")
def _() -> dict[str, Any]:
    last = {"attempt": 0, "cause": "preempted", "action": "RestartJobIgnoreMaxRestarts",
            "message": "rule preempted matched"}
    return case("row 6 after 8a: Restarting with restarts 0 (an uncounted restart) and drained: attempt 1 is "
                "created, no StatusMismatch", spec=policy_spec(0),
                status={**running_status(phase="Restarting", active=0), "workload": "",
                        "restartsByCause": {"preempted": 1}, "lastFailure": last},
                cache=ended(0, 143, disrupted="PreemptionByScheduler"))


@scenario("v2-deadline-wakes-the-job-when-it-passes")
def _() -> dict[str, Any]:
    return case("issue 15: running with activeDeadlineSeconds 7200 from startTime 23:00: kept, "
                "resyncAfterSeconds 3600 wakes it when the deadline passes", keying="v2",
                spec={**job_spec(), "activeDeadlineSeconds": 7200},
                status={**running_status(), "startTime": "2025-12-31T23:00:00Z"}, jobsets=((0, ""),),
                cache=workers(0))


@scenario("v1-deadline-exceeded-tears-down")
def _() -> dict[str, Any]:
    return case("row 1a: past activeDeadlineSeconds: the JobSet is left out, Terminating, DeadlineExceeded True, "
                "waiting for the pods", spec={**job_spec(max_restarts=2), "activeDeadlineSeconds": 3600},
                status={**running_status(), "startTime": "2025-12-31T22:00:00Z"}, jobsets=((0, ""),),
                cache=workers(0))


@scenario("v2-deadline-exceeded-drained-fails")
def _() -> dict[str, Any]:
    marked = {"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds",
              "message": "spec.activeDeadlineSeconds passed at 2025-12-31T23:00:00Z (counted from status.startTime "
                         "2025-12-31T22:00:00Z)", "lastTransitionTime": "2025-12-31T23:00:00Z"}
    return case("row 1a: past the deadline, JobSet gone and no pod active (confirmed live): Failed, reason "
                "DeadlineExceeded", keying="v2", spec={**job_spec(), "activeDeadlineSeconds": 3600},
                status={**running_status(phase="Terminating"), "workload": "", "startTime": "2025-12-31T22:00:00Z",
                        "conditions": [marked, drained_false("2025-12-31T23:00:00Z")]},
                cache=workers(0, phase="Failed"))


@scenario("v2-ttl-deletes-the-finished-job")
def _() -> dict[str, Any]:
    return case("issue 15: Succeeded at 23:00 (when JobSet llama-0 completed) with ttlSecondsAfterFinished 1800: "
                "the hooks delete the Job (with its UID); the finalize row then drains it", keying="v2",
                spec={**job_spec(), "ttlSecondsAfterFinished": 1800},
                status={**running_status(phase="Succeeded", active=0), "completionTime": "2025-12-31T23:00:00Z"},
                jobsets=((0, "Completed"),), cache=workers(0, phase="Succeeded"))


@scenario("v1-ttl-not-yet-wakes-the-job")
def _() -> dict[str, Any]:
    return case("issue 15: the JobSet just completed with ttlSecondsAfterFinished 600: Succeeded, completionTime "
                "recorded, resyncAfterSeconds 600", spec={**job_spec(), "ttlSecondsAfterFinished": 600},
                status=running_status(), jobsets=((0, "Completed"),), cache=workers(0, phase="Succeeded"))


@scenario("v2-drain-stuck-on-a-deleted-node")
def _() -> dict[str, Any]:
    return case("issue 15: deleting, a worker stuck terminating for an hour on node gpu-0, which is deleted: "
                "DrainStuck names pod and node, the wait holds, no force delete (not opted in)", keying="v2",
                finalizing=True, status={**running_status(phase="Terminating"), "workload": "",
                                         "conditions": [drained_false("2025-12-31T23:00:00Z")]},
                cache=workers(0, n=1, deleting="2025-12-31T23:00:30Z"), nodes=[])


@scenario("v1-drain-stuck-force-delete-out-of-service")
def _() -> dict[str, Any]:
    pods = workers(0, deleting="2025-12-31T23:00:30Z")
    for pod in pods:
        pod["metadata"]["uid"] = uid(f"pod/{pod['metadata']['name']}")
        index = pod["metadata"]["name"].split("-")[-2]  # the Job controller's pods of <jobset>-worker-<index>
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "controller": True,
                                               "name": f"{JOB}-0-worker-{index}", "uid": uid(f"job/worker-{index}"),
                                               "blockOwnerDeletion": True}]
    return case("issue 15: forceDeleteStuckPodsAfterSeconds 1800, both workers stuck an hour: gpu-0 is tainted "
                "out-of-service (confirmed gone): its pod (JobSet's label, owned by its batch Job, issue 20) is "
                "force-deleted, the hooks may delete pods there (ForceDeleteAllowed); gpu-1 is only unreachable: "
                "its pod is named, never deleted", finalizing=True, access={NS: True},
                spec={**job_spec(), "drain": {"forceDeleteStuckPodsAfterSeconds": 1800}},
                status={**running_status(phase="Terminating"), "workload": "",
                        "conditions": [drained_false("2025-12-31T23:00:00Z")]}, cache=pods,
                nodes=[node("gpu-0", "Unknown", ("node.kubernetes.io/out-of-service",)),
                       node("gpu-1", "Unknown", ("node.kubernetes.io/unreachable",))])


# ---- queue-managed Jobs behind Kueue (hooks.core.queueing, docs/adr/0103) --------------------------------

QUEUE = {"kueue.x-k8s.io/queue-name": "team-a-gpus"}
PRIORITIES = {"training-low": 100, "training-high": 1000}


def kueue_case(description: str, *, workload: str | None = "", reason: str = "", **kwargs: Any) -> dict[str, Any]:
    """A v2 scenario of a queue-managed Job whose Workload is in ``workload`` state (``None``: no
    Workload observed; see ``workload_child``)."""
    workloads = [] if workload is None else [workload_child(JOB, namespace=NS, state=workload, reason=reason,
                                                            cluster_queue="gpus", queue="team-a-gpus")]
    return case(description, keying="v2", labels={**QUEUE, **kwargs.pop("labels", {})}, workloads=workloads,
                priority_classes=PRIORITIES, **kwargs)


@scenario("v2-queued-new-job-emits-its-workload")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: a new queue-managed Job: only its Workload (priority from the related class), "
                      "Queued, no JobSet", workload=None, labels={"kueue.x-k8s.io/priority-class": "training-high"})


@scenario("v2-queued-pending-with-kueues-reason")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: Kueue has no quota for it yet: Queued, Admitted False with Kueue's reason and "
                      "message, the Workload kept", workload="pending",
                      status={"phase": "Queued", "attempt": 0, "restarts": 0, "conditions": []})


@scenario("v2-queued-priority-class-unknown")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: the named WorkloadPriorityClass is not known: Queued without a Workload, "
                      "PriorityClassNotFound", workload=None, labels={"kueue.x-k8s.io/priority-class": "urgent"})


@scenario("v2-queued-admitted-creates-the-jobset")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: admitted by Kueue: JobSet llama-0 is created, Pending, the Workload kept",
                      workload="admitted", status={"phase": "Queued", "attempt": 0, "restarts": 0})


@scenario("v2-queued-admitted-on-a-flavor-with-node-labels")
def _() -> dict[str, Any]:
    a100 = {"nodeLabels": {"nvidia.com/gpu.product": "A100-SXM4-80GB"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    return kueue_case("issue 14: admitted on a flavor with node labels and a toleration: the JobSet's pod templates "
                      "carry them, as Kueue's own integrations do", workload="admitted",
                      status={"phase": "Queued", "attempt": 0, "restarts": 0}, flavors={"default-flavor": a100})


@scenario("v2-queued-evicted-holds-the-quota-while-pods-run")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: preempted by Kueue: the JobSet is left out, Suspending, the Workload (the "
                      "quota) kept while workers run", workload="evicted", status=running_status(),
                      jobsets=((0, ""),), cache=workers(0))


@scenario("v2-queued-evicted-drained-releases-the-quota")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: preempted, JobSet and pods gone (live): the Workload is left out (quota "
                      "released), Queued, attempt 1, restarts unchanged", workload="evicted",
                      status={**running_status(phase="Suspending", active=0), "workload": ""},
                      cache=workers(0, phase="Failed"))


@scenario("v2-queued-restart-keeps-the-workload")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: the attempt failed with restarts left: Restarting, the failed JobSet and the "
                      "admitted Workload kept", workload="admitted", status=running_status(),
                      jobsets=((0, "Failed"),), cache=workers(0, n=1))


@scenario("v2-queued-finalize-keeps-the-workload-while-pods-run")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: deleting a queue-managed Job with a worker terminating: Terminating, the "
                      "Workload kept, finalized false", workload="admitted", finalizing=True,
                      status={**running_status(phase="Terminating"), "workload": ""},
                      cache=workers(0, n=1, deleting="2025-12-31T23:59:00Z"))


@scenario("v2-queued-succeeded-releases-the-quota-when-no-pod-is-left")
def _() -> dict[str, Any]:
    return kueue_case("issue 14: Succeeded and no pod active (live): the JobSet kept, the Workload left out, "
                      "QuotaReleased", workload="admitted", status=running_status(phase="Succeeded", active=0),
                      jobsets=((0, "Completed"),), cache=workers(0, phase="Succeeded"))


@scenario("v2-invalid-spec-queueing-unavailable")
def _() -> dict[str, Any]:
    return case("issue 14: a queue-managed Job under a CompositeController without Workload children: "
                "InvalidSpec QueueingUnavailable, nothing created", keying="v2", labels=QUEUE)


@scenario("v2-invalid-spec-replicated-jobs-changed")
def _() -> dict[str, Any]:
    return case("issue 11 (found on the real server): spec.replicatedJobs is not what the status pinned "
                "(an edit the CRD's self == oldSelf let through): InvalidSpec ReplicatedJobsChanged, the running "
                "JobSet kept as observed, nothing new, the pin kept", keying="v2",
                status={**running_status(), "replicatedJobsDigest": "sha256:" + "0" * 32},
                jobsets=((0, ""),), cache=workers(0))


@scenario("v1-restart-after-replicated-jobs-changed-holds")
def _() -> dict[str, Any]:
    return case("issue 11: Restarting and drained, but spec.replicatedJobs changed since the Job was created: "
                "the next attempt is not built from the edited spec (InvalidSpec ReplicatedJobsChanged, Pending "
                "with no JobSet)",
                status={**running_status(phase="Restarting", restarts=1, active=0),
                        "replicatedJobsDigest": "sha256:" + "0" * 32})


@scenario("v2-invalid-spec-jobset-managed-elsewhere")
def _() -> dict[str, Any]:
    built = case("issue 14: an observed JobSet whose spec.managedBy was set by another controller: InvalidSpec "
                 "ManagedElsewhere, the JobSet kept as observed, nothing new", keying="v2",
                 status=running_status(), jobsets=((0, ""),), cache=workers(0))
    for child in built["request"]["children"]["JobSet.jobset.x-k8s.io/v1alpha2"].values():
        child["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    return built


@scenario("v2-restart-holds-while-a-batch-job-is-left")
def _() -> dict[str, Any]:
    return case("issue 20: Restarting, no pod of attempt 0 active and its JobSet gone, but its batch Job is left "
                "(not finished, not yet deleted by the garbage collector: until then it may create a pod, a retry "
                "under backoffLimit): the barrier holds, Drained False BatchJobsPresent naming the Job, no JobSet "
                "created (issue 31: a finished one, or one being deleted, creates no pod and holds nothing)",
                keying="v2", status=running_status(phase="Restarting", restarts=1, active=0),
                cache=workers(0, phase="Failed"),
                batch_jobs=[make_batch_job(f"{JOB}-0", namespace=NS, job=JOB)])


@scenario("v2-recreated-job-waits-for-a-later-attempts-batch-job")
def _() -> dict[str, Any]:
    return case("issue 31: a Job deleted with its finalizer removed by hand and created again under the same name "
                "(no status: attempt 0) while batch Job llama-3-worker-0 of the old Job's attempt 3 is between pods "
                "and no pod is active: it is found by the Job's own label, whatever the status says; Drained False "
                "BatchJobsPresent naming it, JobSet llama-0 not created",
                keying="v2", status={},
                batch_jobs=[make_batch_job(f"{JOB}-3", namespace=NS, job=JOB)])


@scenario("v2-orphan-delete-finalizes-once-the-batch-jobs-finished")
def _() -> dict[str, Any]:
    return case("issue 31: kubectl delete --cascade=orphan: the garbage collector took the owner reference off "
                "JobSet llama-0 (no child any more), its pods ended and its batch Jobs are Complete; nobody deletes "
                "them, and they can create no pod: the Job is finalized",
                keying="v2", finalizing=True, status={**running_status(phase="Terminating", active=0), "workload": ""},
                cache=workers(0, phase="Succeeded"),
                batch_jobs=[make_batch_job(f"{JOB}-0", name=f"{JOB}-0-worker-{i}", namespace=NS, job=JOB,
                                           finished="Complete") for i in (0, 1)])


@scenario("v2-restart-holds-when-the-batch-job-read-fails")
def _() -> dict[str, Any]:
    return case("issue 20: Restarting, no pod active, but the batch Job read fails (the API server answers 503): "
                "a failed read is never \"no Jobs\": the barrier holds, Drained Unknown ReadFailed, no JobSet",
                keying="v2", status=running_status(phase="Restarting", restarts=1, active=0),
                batch_jobs="the API server answered 503 (ServiceUnavailable)", jobs_code="http-503")


def write(name: str, built: dict[str, Any]) -> None:
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    for part in ("request", "pods", "meta"):
        (folder / f"{part}.json").write_text(json.dumps(built[part], indent=2, sort_keys=True) + "\n")


def main() -> None:
    for name, build in sorted(SCENARIOS.items()):
        write(name, build())
    print(f"wrote {len(SCENARIOS)} scenarios under {HERE}")


# ---- a status claim never ends a run; a stray newer JobSet is never adopted -----------------------------

def created_at(built: dict[str, Any], job: str = "", jobsets: dict[str, str] | None = None) -> dict[str, Any]:
    """Sets the Job's ``creationTimestamp`` (``job``) and its JobSets' (name -> time) in a built case."""
    if job:
        built["request"]["parent"]["metadata"]["creationTimestamp"] = job
    for child in built["request"]["children"]["JobSet.jobset.x-k8s.io/v1alpha2"].values():
        if child["metadata"]["name"] in (jobsets or {}):
            child["metadata"]["creationTimestamp"] = (jobsets or {})[child["metadata"]["name"]]
    return built


@scenario("v1-claim-deadline-exceeded-forged-keeps-running")
def _() -> dict[str, Any]:
    forged = {"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds",
              "lastTransitionTime": "2025-12-31T23:50:00Z"}
    return case("issue 20: DeadlineExceeded=True written into the status (no message) of a Job without "
                "spec.activeDeadlineSeconds: held, JobSet llama-0 kept, StatusMismatch DeadlineExceededDisagrees "
                "names status.conditions[DeadlineExceeded]",
                status={**running_status(), "startTime": "2025-12-31T23:00:00Z", "conditions": [forged]},
                jobsets=((0, ""),), cache=workers(0))


@scenario("v2-claim-start-time-before-the-job-keeps-running")
def _() -> dict[str, Any]:
    return created_at(case(
        "issue 20: status.startTime moved to 1999, before the Job was created (23:00), with activeDeadlineSeconds "
        "3600: held, JobSet llama-0 kept, StatusMismatch StartTimeDisagrees names both times", keying="v2",
        spec={**job_spec(max_restarts=1), "activeDeadlineSeconds": 3600},
        status={**running_status(), "startTime": "1999-01-01T00:00:00Z"}, jobsets=((0, ""),), cache=workers(0)),
        job="2025-12-31T23:00:00Z", jobsets={"llama-0": "2025-12-31T23:00:05Z"})


@scenario("v1-claim-succeeded-over-a-running-jobset-deletes-nothing")
def _() -> dict[str, Any]:
    return case("issue 20: status.phase Succeeded written while JobSet llama-0 runs, ttlSecondsAfterFinished 0: "
                "no DeleteJob, no completionTime, llama-0 kept, StatusMismatch PhaseDisagrees",
                spec={**job_spec(max_restarts=1), "ttlSecondsAfterFinished": 0},
                status={**running_status(phase="Succeeded"), "startTime": "2025-12-31T23:00:00Z"},
                jobsets=((0, ""),), cache=workers(0))


@scenario("v2-claim-start-time-removed-at-attempt-2-holds")
def _() -> dict[str, Any]:
    status = {**running_status(attempt=2, restarts=2), "restartsByCause": {"default": 2}}
    return created_at(case(
        "issue 20: status.startTime removed at attempt 2 (Running, restarts 2) with activeDeadlineSeconds 3600: "
        "held, the deadline is not restarted from JobSet llama-2's creation, StatusMismatch StartTimeDisagrees",
        keying="v2", spec={**job_spec(max_restarts=3), "activeDeadlineSeconds": 3600}, status=status,
        jobsets=((2, ""),), cache=workers(2)), jobsets={"llama-2": "2025-12-31T23:55:00Z"})


@scenario("v1-stray-next-jobset-while-restarting-is-not-adopted")
def _() -> dict[str, Any]:
    return case("issue 20: Restarting at attempt 1 while a worker of llama-1 still runs, and a stray llama-2 "
                "appears: not adopted (no Pending), llama-1 and llama-2 kept as observed, nothing created, "
                "StatusMismatch UnknownAttempt names llama-2 and status.attempt 1",
                spec=job_spec(max_restarts=3),
                status={**running_status(attempt=1, restarts=1, phase="Restarting"), "workload": "",
                        "startTime": "2025-12-31T23:00:00Z"},
                jobsets=((1, "Failed"), (2, "")), cache=[*workers(1, n=1), *workers(2)])


@scenario("v2-stray-next-jobset-adopted-after-a-drained-restart")
def _() -> dict[str, Any]:
    return case("issue 20: the lost status write: Restarting at attempt 1, llama-1 and its pods gone (confirmed "
                "live), llama-2 and only its own pods observed: attempt 2 is adopted, Running", keying="v2",
                spec=job_spec(max_restarts=3),
                status={**running_status(attempt=1, restarts=1, phase="Restarting"), "workload": "",
                        "startTime": "2025-12-31T23:00:00Z"},
                jobsets=((2, ""),), cache=[*workers(1, phase="Failed"), *workers(2)])


@scenario("v1-claim-start-time-out-of-range-holds")
def _() -> dict[str, Any]:
    return case("issue 20: status.startTime 0001-01-01T00:00:00+23:59 (out of range once in UTC) with "
                "activeDeadlineSeconds: a 200 that holds, StatusMismatch StartTimeDisagrees, never a 5xx",
                spec={**job_spec(max_restarts=1), "activeDeadlineSeconds": 3600},
                status={**running_status(), "startTime": "0001-01-01T00:00:00+23:59"}, jobsets=((0, ""),),
                cache=workers(0))


@scenario("v2-running-pods-all-succeeded-before-jobset-completed")
def _() -> dict[str, Any]:
    return case("issue 23: Running at attempt 0, every worker of llama-0 Succeeded, the JobSet not yet Completed "
                "(seen with real Metacontroller): kept, still Running (never back to Pending), 0 active, the "
                "message says the JobSet has yet to report how it ended", keying="v2",
                status={**running_status(), "startTime": "2025-12-31T23:00:00Z"}, jobsets=((0, ""),),
                cache=workers(0, phase="Succeeded"))


# ---- gang scheduling (issue 22) -----------------------------------------------------------------------

GANG_MPI = {**job_spec(launcher="launcher", max_restarts=2), "gang": {"policy": "Gang"}}


def gang_group(attempt: int, state: str = "") -> dict[str, Any]:
    return podgroup_child(JOB, attempt, namespace=NS, min_count=3, state=state)


@scenario("v2-gang-new-job-creates-its-podgroup-first")
def _() -> dict[str, Any]:
    return case("issues 22, 31: a new MPI Job with spec.gang.policy Gang, the PodGroup child type listed: PodGroup "
                "llama-0 (gang minCount 3: two workers and the launcher) alone; its JobSet comes once the PodGroup "
                "is among the Job's children (a squatter of that name would otherwise get its pods); Pending, "
                "GangScheduled False WaitingForPodGroup", keying="v2", spec=GANG_MPI, podgroups=[])


@scenario("v2-gang-podgroup-observed-creates-the-jobset")
def _() -> dict[str, Any]:
    return case("issue 31: the Job's own PodGroup llama-0 is observed and is the gang the hooks build: JobSet "
                "llama-0, whose every pod template names it, is created beside it", keying="v2", spec=GANG_MPI,
                podgroups=[podgroup_child(JOB, 0, namespace=NS, min_count=3)],
                status={"phase": "Pending", "attempt": 0, "restarts": 0})


@scenario("v2-gang-mismatched-podgroup-holds-the-jobset")
def _() -> dict[str, Any]:
    return case("issue 31: PodGroup llama-0 is observed with gang minCount 1 for an attempt of 3 pods (adopted or "
                "edited): the scheduler could place the pods one by one, so the gang is never claimed and no JobSet "
                "is created over it; GangScheduled False GangMismatch names the field", keying="v2", spec=GANG_MPI,
                podgroups=[podgroup_child(JOB, 0, namespace=NS, min_count=1)],
                status={"phase": "Pending", "attempt": 0, "restarts": 0})


@scenario("v2-gang-unschedulable-stays-pending")
def _() -> dict[str, Any]:
    return case("issue 22: the scheduler cannot place gang llama-0 (PodGroupInitiallyScheduled False "
                "Unschedulable): JobSet and PodGroup kept, Pending, GangScheduled False with the scheduler's "
                "reason and message", keying="v2", spec=GANG_MPI, grouped=True, jobsets=((0, ""),),
                podgroups=[gang_group(0, "unschedulable")],
                status={**running_status(phase="Pending", active=0), "startTime": "2025-12-31T23:00:00Z"})


@scenario("v2-gang-scheduled-runs")
def _() -> dict[str, Any]:
    return case("issue 22: gang llama-0 placed (PodGroupInitiallyScheduled True), its pods run: Running, "
                "GangScheduled True", keying="v2", spec=GANG_MPI, grouped=True, jobsets=((0, ""),),
                podgroups=[gang_group(0, "scheduled")], cache=workers(0), launchers=[launcher(0)],
                status={**running_status(phase="Pending", active=0), "startTime": "2025-12-31T23:00:00Z"})


@scenario("v2-gang-restart-holds-without-any-podgroup")
def _() -> dict[str, Any]:
    return case("issue 22: Restarting after llama-0 failed, a worker of attempt 0 still active: held, neither "
                "JobSet llama-0 nor its PodGroup is answered (they go together), no PodGroup llama-1 yet",
                keying="v2", spec=GANG_MPI, grouped=True, jobsets=((0, "Failed"),),
                podgroups=[gang_group(0, "scheduled")], cache=workers(0, phase="Running"),
                status={**running_status(phase="Restarting", restarts=1), "startTime": "2025-12-31T23:00:00Z"})


@scenario("v2-gang-restart-drained-creates-the-next-podgroup")
def _() -> dict[str, Any]:
    return case("issues 22, 31: Restarting, attempt 0 drained (its JobSet and PodGroup gone, no pod left): "
                "attempt 1, PodGroup llama-1 first; JobSet llama-1 comes once that PodGroup is observed",
                keying="v2", spec=GANG_MPI, podgroups=[],
                cache=workers(0, phase="Failed"),
                status={**running_status(phase="Restarting", restarts=1, active=0), "workload": "",
                        "startTime": "2025-12-31T23:00:00Z"})


@scenario("v2-gang-unavailable-waits")
def _() -> dict[str, Any]:
    return case("issue 22: a Job asking for a gang where the CompositeController lists no PodGroups (the base "
                "manifests): nothing created, Pending, GangScheduled False GangUnavailable saying why",
                keying="v2", spec=GANG_MPI)


@scenario("v1-gang-unavailable-starts-without-gang")
def _() -> dict[str, Any]:
    return case("issue 22: as v2-gang-unavailable-waits with whenUnavailable StartWithoutGang: JobSet llama-0 "
                "without a scheduling group, GangScheduled False StartedWithoutGang",
                spec={**GANG_MPI, "gang": {"policy": "Gang", "whenUnavailable": "StartWithoutGang"}})


if __name__ == "__main__":
    main()
