"""``kubectl nvjob`` (hooks.tools.nvjob) over objects as the API server holds them.

The commands run end to end (``commands.run``: flags, output, errors, exit codes) against a
``Recorded`` cluster: Jobs, JobSets and Events in memory, and pods, batch Jobs and nodes through a
real podread ``Reader`` over a snapshot (``podread.reader_from_snapshot``), so the drain barrier's
own code (``hooks.core.barrier``) judges them as it would live.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

import podread
from hooks.core import historyentry
from hooks.tools.nvjob import client, commands, view
from hooks.tools.nvjob.commands import Options
from tests.fakekube.selectors import SelectorError, parse_label_selector
from tests.support import job_request as request
from tests.support import job_spec, jobset_child, make_batch_job, make_pod
from tests.support.uids import uid

NS = "team-a"
LONG_AGO = "2020-01-01T00:00:00Z"


class Recorded:
    """A cluster of recorded objects: what ``client.Cluster`` reads, with the pods, batch Jobs and
    nodes behind a real podread Reader. ``changes``: what a watch of the Jobs reports, in order
    (``watches`` records each watch asked for: its namespace, selector, name, resourceVersion, timeout)."""

    def __init__(self, jobs: Sequence[Mapping[str, Any]] = (), *, jobsets: Sequence[Mapping[str, Any]] = (),
                 events: Sequence[Mapping[str, Any]] = (), pods: Sequence[Mapping[str, Any]] = (),
                 batch_jobs: Sequence[Mapping[str, Any]] = (), nodes: Sequence[Mapping[str, Any]] = (),
                 pods_fail: str = "", jobsets_fail: str = "",
                 changes: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        self.jobs = [dict(job) for job in jobs]
        self.changes = [(kind, dict(job)) for kind, job in changes]
        self.watches: list[tuple[str | None, str, str, str, int | None]] = []
        self.jobsets = list(jobsets)
        self.events = list(events)
        self.jobsets_fail = jobsets_fail
        live: dict[str, Any] = {"error": pods_fail, "code": "timeout"} if pods_fail else {"pods": list(pods)}
        self._reader = podread.reader_from_snapshot({"cache": live, "live": live, "jobs": {"items": list(batch_jobs)},
                                                     "nodes": {"items": list(nodes)}})

    @property
    def reader(self) -> podread.Reader:
        return self._reader

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        for job in self.jobs:
            if job["metadata"]["namespace"] == namespace and job["metadata"]["name"] == name:
                return job
        raise client.CommandError(f'Error from server (NotFound): jobs.nvcre.nvidia.com "{name}" not found')

    def list_jobs(self, namespace: str | None, selector: str = "") -> client.Listed:
        """The Jobs of ``namespace`` whose labels match ``selector`` (judged as the API server judges
        it: a selector that does not parse is its BadRequest), at resourceVersion 7."""
        try:
            matches = parse_label_selector(selector).matches
        except SelectorError as exc:
            raise client.CommandError(f"Error from server (BadRequest): unable to parse requirement: {exc}") from exc
        return client.Listed([job for job in self.jobs
                              if (namespace is None or job["metadata"]["namespace"] == namespace)
                              and matches(job["metadata"].get("labels") or {})], "7")

    def watch_jobs(self, namespace: str | None, *, selector: str = "", name: str = "", resource_version: str = "",
                   timeout_seconds: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        self.watches.append((namespace, selector, name, resource_version, timeout_seconds))
        matches = parse_label_selector(selector).matches
        for kind, job in self.changes:
            metadata = job["metadata"]
            if (namespace is None or metadata["namespace"] == namespace) and (not name or metadata["name"] == name) \
                    and matches(metadata.get("labels") or {}):
                yield kind, job

    def list_jobsets(self, namespace: str) -> list[dict[str, Any]]:
        if self.jobsets_fail:
            raise client.CommandError(self.jobsets_fail)
        return [js for js in self.jobsets if js["metadata"]["namespace"] == namespace]

    def list_events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["regarding"]["name"] == name]


def nvjob(name: str, *, namespace: str = NS, status: Mapping[str, Any] | None = None, deleting: str = "",
          **spec: Any) -> dict[str, Any]:
    """An NVCRE Job as the API server holds it (the parent of a hook request, built by the tests' builder)."""
    parent = request(name=name, namespace=namespace, status=status, deleting=deleting,
                     spec={**job_spec(launcher=spec.pop("launcher", ""), max_restarts=spec.pop("max_restarts", 2)),
                           **spec})["parent"]
    return parent


def owned(jobset: dict[str, Any], job: str) -> dict[str, Any]:
    """``jobset`` with the controller ownerReference Metacontroller puts on a child."""
    jobset["metadata"]["ownerReferences"] = [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job,
                                              "uid": uid(f"job/{job}"), "controller": True}]
    return jobset


def event(job: str, reason: str, note: str, when: str, *, type_: str = "Normal") -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": f"{job}.{reason}", "namespace": NS},
            "regarding": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job, "namespace": NS,
                          "uid": uid(f"job/{job}")},
            "reason": reason, "note": note, "type": type_, "eventTime": when, "reportingController": "nvcre-hooks",
            "action": reason}


def node(name: str, ready: str, since: str = LONG_AGO) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]}}


def run(cluster: Recorded, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    seen: list[Options] = []

    def connect(options: Options) -> tuple[Recorded, str]:
        seen.append(options)
        return cluster, options.namespace or NS

    code = commands.run(list(args), connector=connect)
    out, err = capsys.readouterr()
    return code, out, err


def ok(cluster: Recorded, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The output of a command that must succeed and print nothing on stderr."""
    code, out, err = run(cluster, *args, capsys=capsys)
    assert (code, err) == (0, "")
    return out


RUNNING = {"phase": "Running", "attempt": 0, "restarts": 0, "workload": "llama-0", "activePods": 2,
           "conditions": []}


def restarting_cluster(**extra: Any) -> Recorded:
    """Job ``llama`` Restarting after attempt 1 failed: its JobSet is gone, a worker is terminating,
    the launcher still runs, and a batch Job of attempt 1 is left."""
    status = {"phase": "Restarting", "attempt": 1, "restarts": 2, "workload": "", "activePods": 1,
              "message": "waiting for 1 active pod: llama-1-worker-0-0",
              "lastFailure": {"attempt": 1, "cause": "default", "action": "RestartJob",
                              "message": "JobSet llama-1 failed: worker exited 137"},
              "conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive",
                              "message": "waiting for 1 active pod: llama-1-worker-0-0",
                              "lastTransitionTime": extra.pop("drained_since", LONG_AGO)}]}
    pods = [make_pod("llama-1-worker-0-0", job="llama", namespace=NS, workload="llama-1", replicated_job="worker",
                     node="gpu-7", deleting="2026-01-01T00:00:30Z"),
            make_pod("llama-1-launcher-0-0", launcher="llama", namespace=NS, workload="llama-1",
                     replicated_job="launcher", node="gpu-2"),
            make_pod("llama-1-worker-1-0", job="llama", namespace=NS, workload="llama-1", replicated_job="worker",
                     node="gpu-8", phase="Failed")]
    pods[2]["status"]["containerStatuses"] = [{"name": "worker", "restartCount": 3}]
    extra.setdefault("nodes", [node(name, "True") for name in ("gpu-2", "gpu-7", "gpu-8")])
    return Recorded([nvjob("llama", status=status, launcher="launcher", max_restarts=3)], pods=pods,
                    batch_jobs=[make_batch_job("llama-1", namespace=NS)],
                    events=[event("llama", "Restarting", "attempt 1 failed, restarting", "2026-01-01T00:00:10Z",
                                  type_="Warning"),
                            event("other", "Created", "not ours", "2026-01-01T00:00:11Z")],
                    **extra)


# -- get ---------------------------------------------------------------------------------------------


def test_get_lists_phase_attempt_restarts_active_and_what_each_waits_for(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = restarting_cluster()
    cluster.jobs.append(nvjob("bert", status=RUNNING))
    cluster.jobs.append(nvjob("elsewhere", namespace="team-b", status=RUNNING))
    code, out, err = run(cluster, "get", capsys=capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "ATTEMPT", "RESTARTS", "ACTIVE", "WAITING", "FOR", "AGE"]
    assert [line.split()[:5] for line in lines[1:]] == [["llama", "Restarting", "1", "2", "1"],
                                                         ["bert", "Running", "0", "0", "2"]]
    assert "waiting for 1 active pod: llama-1-worker-0-0" in lines[1]
    assert "<none>" in lines[2]  # bert waits for nothing


def test_get_all_namespaces_and_the_summary_rows(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Recorded([nvjob("bert", status=RUNNING), nvjob("gpt", namespace="team-b", status={})])
    code, out, _ = run(cluster, "get", "-A", capsys=capsys)
    assert code == 0
    assert [line.split()[:3] for line in out.splitlines()] == [["NAMESPACE", "NAME", "PHASE"],
                                                              [NS, "bert", "Running"], ["team-b", "gpt", "<none>"]]
    code, out, _ = run(cluster, "summary", "-A", capsys=capsys)
    document = json.loads(out)
    assert document["kind"] == "List"
    assert [(i["namespace"], i["name"], i["phase"], i["attempt"]) for i in document["items"]] == [
        (NS, "bert", "Running", 0), ("team-b", "gpt", "", None)]
    code, out, _ = run(cluster, "-o", "yaml", "summary", "bert", capsys=capsys)
    assert code == 0 and yaml.safe_load(out)["items"][0]["activePods"] == 2


def test_get_with_no_job_says_so_on_stderr_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(Recorded(), "get", capsys=capsys)
    assert (code, out, err) == (0, "", f"No resources found in {NS} namespace.\n")
    code, out, err = run(Recorded(), "get", "-A", capsys=capsys)
    assert (code, err) == (0, "No resources found.\n")


def test_a_missing_job_is_kubectls_not_found_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("get", "describe", "why"):
        code, out, err = run(Recorded(), command, "x", capsys=capsys)
        assert (code, out, err) == (1, "", 'Error from server (NotFound): jobs.nvcre.nvidia.com "x" not found\n')
    code, out, err = run(Recorded([nvjob("bert", status=RUNNING)]), "get", "bert", "x", capsys=capsys)
    assert code == 1 and out.splitlines()[1].split()[0] == "bert" and "not found" in err


@pytest.mark.parametrize("args", [["get", "--bogus"], ["describe"], ["why", "a", "b"], ["describe", "x", "-o", "wide"],
                                  ["frobnicate"], ["get", "-A", "x"], ["history"], ["get", "-Z"]])
def test_bad_flags_and_arguments_exit_1_with_the_error_and_usage(args: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(Recorded(), *args, capsys=capsys)
    assert (code, out) == (1, "")
    assert err.startswith("error: ")
    if args not in (["get", "-A", "x"], ["describe", "x", "-o", "wide"]):
        assert "Usage: kubectl nvjob" in err and "--help' for usage." in err


def test_the_flags_reach_the_connector_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[Options] = []

    def connect(options: Options) -> tuple[Recorded, str]:
        seen.append(options)
        return Recorded(), options.namespace or "default"

    assert commands.run(["--context", "c1", "get", "-n", "ns1", "--kubeconfig", "/k"], connector=connect) == 0
    assert (seen[0].context, seen[0].namespace, seen[0].kubeconfig) == ("c1", "ns1", "/k")
    assert "No resources found in ns1 namespace." in capsys.readouterr().err


# -- describe ------------------------------------------------------------------------------------------


def test_describe_shows_what_the_barrier_waits_for_now(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(restarting_cluster(), "describe", "llama", capsys=capsys)
    assert (code, err) == (0, "")
    section = out.split("Drain barrier:")[1].split("Conditions:")[0]
    assert "waiting (PodsActive)" in section
    assert "llama-1-worker-0-0 on gpu-7 (terminating, grace period ends 2026-01-01T00:00:30Z)" in section
    assert "llama-1-launcher-0-0 on gpu-2" in section
    assert "llama-1-worker-1-0" not in section  # finished: not waited for
    assert "llama-1-worker-0" in section.split("Batch Jobs:")[1]
    assert "Stuck:" in section and section.split("Stuck:")[1].split()[0] == "<none>"  # its nodes are Ready: not stuck
    assert "no attempt history recorded" in out
    assert "Restarts:             2 of 3" in out
    events = out.split("Events:")[1]
    assert "Restarting" in events and "not ours" not in events


def test_describe_lists_the_current_attempts_pods_with_node_and_restarts(
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = restarting_cluster()
    job = cluster.jobs[0]
    job["status"]["workload"] = "llama-1"
    code, out, _ = run(cluster, "describe", "llama", capsys=capsys)
    assert code == 0
    pods = out.split("Pods (JobSet llama-1):")[1].split("Drain barrier:")[0].splitlines()[1:]
    rows = [line.split() for line in pods if line.strip()]
    assert [row[:5] for row in rows[1:]] == [["llama-1-launcher-0-0", "launcher", "Running", "gpu-2", "0"],
                                             ["llama-1-worker-0-0", "worker", "Terminating", "gpu-7", "0"],
                                             ["llama-1-worker-1-0", "worker", "Failed", "gpu-8", "3"]]


def test_describe_names_pods_stuck_on_lost_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    cluster = restarting_cluster(nodes=[node("gpu-7", "Unknown"), node("gpu-2", "True")])
    code, out, _ = run(cluster, "describe", "llama", "-o", "json", capsys=capsys)
    assert code == 0
    drain = json.loads(out)["drain"]
    assert drain["stuck"] and "llama-1-worker-0-0" in drain["stuck"] and "gpu-7" in drain["stuck"]
    assert "gpu-2" not in drain["stuck"]
    assert (drain["draining"], drain["passed"], drain["reason"]) == (True, False, "PodsActive")
    assert [p["name"] for p in drain["pods"]] == ["llama-1-worker-0-0"]
    assert [p["name"] for p in drain["launchers"]] == ["llama-1-launcher-0-0"]
    assert drain["batchJobs"] == ["llama-1-worker-0"]


def test_a_failed_pod_read_is_unknown_never_none(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(restarting_cluster(pods_fail="the API server did not answer in time"), "describe", "llama",
                       capsys=capsys)
    assert code == 0
    assert "unknown: the pod read failed" in out.split("Pods (")[1].split("Drain barrier:")[0]
    section = out.split("Drain barrier:")[1].split("Conditions:")[0]
    assert "unknown:" in section and "nothing left" not in section
    code, out, _ = run(restarting_cluster(jobsets_fail="Error from server (Forbidden): no"), "why", "llama",
                       capsys=capsys)
    assert "cannot tell what is left" in out and "Forbidden" in out


def test_a_running_job_is_not_draining_and_a_teardown_would_wait_for_its_jobset(
        capsys: pytest.CaptureFixture[str]) -> None:
    pods = [make_pod(f"bert-0-worker-{i}-0", job="bert", namespace=NS, workload="bert-0", replicated_job="worker")
            for i in range(2)]
    jobsets = [owned(jobset_child("bert", 0, namespace=NS), "bert"), jobset_child("stranger", 0, namespace=NS)]
    cluster = Recorded([nvjob("bert", status={**RUNNING, "workload": "bert-0"})], jobsets=jobsets, pods=pods,
                       batch_jobs=[make_batch_job("bert-0", namespace=NS)])
    out = ok(cluster, "describe", "bert", "-o", "yaml", capsys=capsys)
    document = yaml.safe_load(out)
    assert (document["drain"]["draining"], document["drain"]["reason"]) == (False, "WorkloadPresent")
    assert document["drain"]["jobsets"] == ["bert-0"]  # owned by the Job's UID only
    assert len(document["pods"]) == 2 and document["attempts"] is None
    out = ok(cluster, "describe", "bert", capsys=capsys)
    assert "not draining (phase Running); a teardown now would wait (WorkloadPresent)" in out


def test_a_drained_job_shows_nothing_left(capsys: pytest.CaptureFixture[str]) -> None:
    status = {"phase": "Suspended", "attempt": 0, "restarts": 0, "conditions": [
        {"type": "Drained", "status": "True", "reason": "NoActivePods", "message": "no active pod",
         "lastTransitionTime": LONG_AGO}]}
    cluster = Recorded([nvjob("idle", status=status, suspend=True)])
    out = ok(cluster, "describe", "idle", "-o", "json", capsys=capsys)
    drain = json.loads(out)["drain"]
    assert (drain["passed"], drain["reason"], drain["pods"], drain["batchJobs"]) == (True, "NoActivePods", [], [])


ATTEMPTS = [
    {"attempt": 0, "jobSet": "llama-0", "created": "2026-01-01T00:00:00Z", "started": "2026-01-01T00:01:00Z",
     "ended": "2026-01-01T03:00:00Z", "outcome": "Failed", "failedReplicatedJob": "worker",
     "failedPod": "llama-0-worker-3-0", "node": "gpu-11", "exitCode": 137, "reason": "OOMKilled", "cause": "oom",
     "class": "user", "classEvidence": "pod llama-0-worker-3-0: exit code 137 (OOMKilled)",
     "drainSeconds": 42, "drainStuck": False, "failedPodDeletionStarted": "2026-01-01T03:00:00Z",
     "failedPodGracePeriodEnds": "2026-01-01T03:00:30Z"},
    {"attempt": 1, "jobSet": "llama-1", "created": "2026-01-01T03:01:00Z", "started": "2026-01-01T03:02:00Z",
     "ended": "2026-01-01T05:00:00Z", "outcome": "Evicted", "reason": "Preempted", "drainSeconds": 700,
     "drainStuck": True},
    {"attempt": 2, "jobSet": "llama-2", "created": "2026-01-01T05:30:00Z"},
]


def test_describe_renders_the_attempts_from_status_attempts(capsys: pytest.CaptureFixture[str]) -> None:
    status = {**RUNNING, "attempt": 2, "workload": "llama-2", "attempts": ATTEMPTS, "attemptsDropped": 5}
    out = ok(Recorded([nvjob("llama", status=status)]), "describe", "llama", capsys=capsys)
    table = out.split("Attempts:")[1].split("Pods (")[0]
    rows = [line.split() for line in table.strip().splitlines()]
    assert rows[0][:3] == ["#", "JOBSET", "CREATED"]
    assert rows[1][0:2] == ["0", "llama-0"]
    assert {"Failed", "worker", "llama-0-worker-3-0", "gpu-11", "137", "oom", "42s"} <= set(rows[1])
    assert {"Evicted", "Preempted", "11m", "(stuck)"} <= set(rows[2])
    assert rows[3][:2] == ["2", "llama-2"] and rows[3].count("<none>") >= 6
    assert "5 earlier attempts counted, not kept" in table
    fresh = {**status, "attempts": [{"attempt": 0, "jobSet": "llama-0"}]}  # its JobSet not seen yet: not dated
    row = ok(Recorded([nvjob("llama", status=fresh)]), "describe", "llama", capsys=capsys).split("Attempts:")[1]
    assert row.splitlines()[2].split()[:5] == ["0", "llama-0", "<none>", "<none>", "<none>"]
    out = ok(Recorded([nvjob("llama", status=status)]), "describe", "llama", "-o", "json", capsys=capsys)
    document = json.loads(out)
    assert document["attempts"] == [{key: entry.get(key) for key in historyentry.ENTRY_KEYS} for entry in ATTEMPTS], \
        "the keys of status.attempts, every one in each row"
    assert document["attemptsDropped"] == 5


def test_the_readmes_attempts_sample_is_what_history_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's attempts table (``kubectl nvjob history timed``, printed by the tier's
    ``test_drain_seconds_time_a_drain_held_by_a_pod_and_one_stuck_on_a_lost_node`` on 2026-12-06) is
    exactly ``history``'s output for the entries that run wrote, 17 s after attempt 0 was created."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    shown = readme.split("# 17 s after attempt 0 was created\n", 1)[1].split("```", 1)[0]
    entries = [{"attempt": 0, "jobSet": "timed-0", "created": "2026-12-06T13:06:03Z", "ended": "2026-12-06T13:06:04Z",
                "outcome": "Suspended", "drainSeconds": 6, "drainStuck": False},
               {"attempt": 1, "jobSet": "timed-1", "created": "2026-12-06T13:06:12Z", "ended": "2026-12-06T13:06:12Z",
                "outcome": "Suspended", "drainSeconds": 7, "drainStuck": True}]
    status = {"phase": "Suspended", "attempt": 1, "restarts": 0, "attempts": entries}
    timed = nvjob("timed", status=status, max_restarts=0, drain={"stuckAfterSeconds": 1})  # the tier's spec
    code = commands.run(["history", "timed"], connector=lambda _: (Recorded([timed]), NS),
                        clock=lambda: datetime(2026, 12, 6, 13, 6, 20, tzinfo=UTC))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out == shown


# -- why ---------------------------------------------------------------------------------------------


def why(job: dict[str, Any], capsys: pytest.CaptureFixture[str], cluster: Recorded | None = None) -> str:
    cluster = cluster or Recorded([job])
    code, out, err = run(cluster, "why", job["metadata"]["name"], "-o", "json", capsys=capsys)
    assert (code, err) == (0, "")
    return str(json.loads(out)["why"])


def test_why_restarting_names_the_failure_and_what_the_barrier_waits_for_now(
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = restarting_cluster()
    text = why(cluster.jobs[0], capsys, cluster)
    assert text.startswith("Job llama is Restarting: attempt 1 failed (JobSet llama-1 failed: worker exited 137)")
    assert "restarts 2 of 3" in text
    assert "waiting for 1 active pod: llama-1-worker-0-0 (terminating, grace period ends" in text
    assert "launcher pod llama-1-launcher-0-0 to finish" in text and "batch Job llama-1-worker-0" in text
    assert "From Restarting it moves to Pending when drain barrier passed, JobSet llama-2; to Failed when " in text
    code, out, _ = run(cluster, "why", "llama", capsys=capsys)
    assert code == 0 and all(len(line) <= 100 for line in out.splitlines()) and "\n\n" not in out


@pytest.mark.parametrize(("status", "spec", "deleting", "expected"), [
    ({}, {}, "", "has no status yet"),
    (RUNNING, {}, "", "is Running at attempt 0 with 2 active pods of JobSet llama-0 (restarts 0 of 2). From Running "
                      "it moves to Succeeded when JobSet Completed; to Restarting when JobSet Failed, restarts left; "
                      "to Failed when JobSet Failed, no restarts left or a FailJob rule; to Suspending when "
                      "spec.suspend or when evicted by Kueue; to Terminating when activeDeadlineSeconds passed or "
                      "when deleted."),
    ({**RUNNING, "activePods": 0, "message": "no pod of JobSet llama-0 is active: waiting for the JobSet to report "
                                             "how it ended"}, {}, "", "with 0 active pods: no pod of JobSet llama-0"),
    ({"phase": "Pending", "attempt": 0, "workload": "llama-0", "message": "waiting for the pods of JobSet llama-0 to "
      "start"}, {}, "", "JobSet llama-0 exists and no worker pod is active yet"),
    ({"phase": "Suspended", "attempt": 3}, {"suspend": True}, "",
     "Resume it with kubectl patch nvjob llama --type merge -p '{\"spec\":{\"suspend\":false}}': attempt 4"),
    ({"phase": "Failed", "attempt": 2, "restarts": 2, "conditions": [{"type": "Failed", "status": "True", "reason":
      "MaxRestartsReached", "message": "JobSet llama-2 failed; no restart left"}]}, {}, "",
     "Failed (MaxRestartsReached) at attempt 2 after 2 restarts: JobSet llama-2 failed; no restart left. The phase "
     "is final (terminal in hooks/core/lifecycle.py): create a new Job to run again. From Failed it moves to "
     "Terminating when deleted (by you, or ttlSecondsAfterFinished)."),
    ({"phase": "Succeeded", "attempt": 0, "workload": "llama-0"}, {"ttlSecondsAfterFinished": 600}, "",
     "deleted 600s after it finished"),
    ({**RUNNING, "activePods": 0, "conditions": [{"type": "InvalidSpec", "status": "True", "reason":
      "ReplicatedJobsChanged", "message": "spec.replicatedJobs changed"}]}, {}, "",
     "creates nothing: its spec cannot become a JobSet (ReplicatedJobsChanged: spec.replicatedJobs changed). "
     "spec.replicatedJobs no longer matches"),
    ({**RUNNING, "conditions": [{"type": "StatusMismatch", "status": "True", "reason": "RestartsDisagree",
                                 "message": "status.restarts 5 but 1 attempt"}]}, {}, "",
     "holds: its status disagrees with what the API server shows (RestartsDisagree: status.restarts 5"),
    ({"phase": "Queued", "attempt": 0, "conditions": [{"type": "Admitted", "status": "False", "reason": "Pending",
                                                        "message": "insufficient quota"}]}, {}, "",
     "Kueue has not admitted its Workload (insufficient quota)"),
    ({"phase": "Terminating", "attempt": 0, "conditions": [
        {"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds", "message": "past 60s"}]},
     {}, "", "spec.activeDeadlineSeconds passed (past 60s)"),
    ({**RUNNING, "phase": "Terminating"}, {}, "2026-01-01T00:00:00Z",
     "it was deleted, and its finalizer keeps it until no pod of any attempt is left"),
])
def test_why_says_why_each_phase_and_what_moves_it_on(status: dict[str, Any], spec: dict[str, Any], deleting: str,
                                                      expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert expected in why(nvjob("llama", status=status, deleting=deleting, **spec), capsys)


def test_why_of_a_deleted_job_reads_the_barrier_live(capsys: pytest.CaptureFixture[str]) -> None:
    pod = make_pod("llama-0-worker-0-0", job="llama", namespace=NS, workload="llama-0", node="gpu-1")
    job = nvjob("llama", status={**RUNNING, "phase": "Terminating"}, deleting="2026-01-01T00:00:00Z")
    text = why(job, capsys, Recorded([job], pods=[pod], batch_jobs=[]))
    assert "The drain barrier is waiting for 1 active pod: llama-0-worker-0-0." in text
    text = why(job, capsys, Recorded([job], pods=[], batch_jobs=[]))
    assert "finds nothing left now" in text


def test_why_of_a_job_created_suspended_says_its_first_attempt_is_attempt_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    created = {"phase": "Suspended", "attempt": 0, "restarts": 0, "workload": "", "conditions": []}
    text = why(nvjob("llama", status=created, suspend=True), capsys)
    assert "attempt 0 starts once the drain barrier passes" in text, text
    ran = {**created, "workload": "llama-0", "startTime": "2026-01-01T00:00:00Z",
           "attempts": [{"attempt": 0, "jobSet": "llama-0", "outcome": "Suspended"}]}
    assert "attempt 1 starts" in why(nvjob("llama", status=ran, suspend=True), capsys), "suspended after a run"


GANG_HELD = {"phase": "Pending", "attempt": 1, "restarts": 1, "workload": "", "activePods": 0}


@pytest.mark.parametrize(("reason", "said", "next_step"), [
    ("WaitingForPodGroup", "creating PodGroup llama-1 (gang of 3 pods) before JobSet llama-1",
     "created on the hooks' next call once PodGroup llama-1 is among the Job's children"),
    ("GangMismatch", "not creating JobSet llama-1: PodGroup llama-1 is not the gang of 3 pods the hooks build "
     "(spec.schedulingPolicy.gang.minCount is 1, want 3)", "kubectl delete podgroup llama-1"),
    ("GangUnavailable", "not creating JobSet llama-1: the Job asks for a gang and the CompositeController lists no "
     "PodGroup children", "spec.gang.whenUnavailable to StartWithoutGang"),
])
def test_why_of_a_gang_job_held_for_its_podgroup_says_the_jobset_does_not_exist(
        reason: str, said: str, next_step: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = {**GANG_HELD, "message": f"waiting: {said}", "conditions": [
        {"type": "GangScheduled", "status": "False", "reason": reason, "message": said,
         "lastTransitionTime": LONG_AGO}]}
    text = why(nvjob("llama", status=status), capsys)
    assert "exists" not in text, text
    assert text.startswith(f"Job llama is Pending at attempt 1: JobSet llama-1 is not created yet, because its gang "
                           f"holds it (GangScheduled {reason}: {said})"), text
    assert next_step in text
    running = {**GANG_HELD, "workload": "llama-1", "conditions": [
        {"type": "GangScheduled", "status": "False", "reason": "GangMismatch", "message": said}]}
    assert "JobSet llama-1 exists" in why(nvjob("llama", status=running), capsys), "a JobSet running beside a mismatch"


def stuck_cluster(**status: Any) -> Recorded:
    """``restarting_cluster`` with its worker's node gpu-7 Unknown since 00:00 and the wait begun long
    ago, the status saying so as the hooks write it (``DrainStuck=True`` since 00:05, the message
    with the stuck pods appended)."""
    cluster = restarting_cluster(nodes=[node("gpu-7", "Unknown", "2026-01-01T00:00:00Z"), node("gpu-2", "True")])
    stuck = "1 pod waits on a node that is gone or not ready: llama-1-worker-0-0 (node gpu-7 unreachable)"
    job = cluster.jobs[0]
    job["status"]["message"] = f"waiting for 1 active pod: llama-1-worker-0-0; {stuck}"
    job["status"]["conditions"].append({"type": "DrainStuck", "status": "True", "reason": "PodsOnLostNodes",
                                        "message": stuck, "lastTransitionTime": "2026-01-01T00:05:00Z"})
    job["status"].update(status)
    return cluster


@pytest.mark.parametrize("status", [{}, {"phase": "Pending", "attempt": 2, "workload": "",
                                         "message": "waiting for 1 active pod: llama-1-worker-0-0; 1 pod waits on a "
                                         "node that is gone or not ready: llama-1-worker-0-0 (node gpu-7 "
                                         "unreachable) (before creating JobSet llama-2)"}],
                         ids=["restarting-read-live", "resumed-from-the-status"])
def test_why_says_the_stuck_drain_once_for_how_long_and_what_to_do(
        status: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster = stuck_cluster(**status)
    code = commands.run(["why", "llama", "-o", "json"], connector=lambda options: (cluster, NS),
                        clock=lambda: datetime(2026, 1, 1, 0, 17, tzinfo=UTC))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    text = json.loads(out)["why"]
    assert text.count("llama-1-worker-0-0 (node gpu-7 unreachable)") == 1, text
    assert text.count("gone or not ready") == 1, text
    live = not status
    assert ("(stuck for 17m, since 2026-01-01T00:00:00Z)" if live else "(stuck for 12m, since 2026-01-01T00:05:00Z)") \
        in text, text
    assert "First confirm that the node is really down" in text and ".." not in text
    assert "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute" in text
    assert "manifests/overlays/force-delete" in text and "--grace-period=0 --force" in text


def test_why_of_queueing_unavailable_names_the_queue_label_and_the_kueue_install(
        capsys: pytest.CaptureFixture[str]) -> None:
    status = {"phase": "Pending", "attempt": 0, "workload": "", "conditions": [
        {"type": "InvalidSpec", "status": "True", "reason": "QueueingUnavailable",
         "message": "the Job names LocalQueue 'team-a-queue' (kueue.x-k8s.io/queue-name), but the CompositeController "
                    "has no Workload child: apply manifests-kueue/ to run Jobs behind Kueue"}]}
    job = nvjob("llama", status=status)
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "team-a-queue"
    text = why(job, capsys)
    assert "Fix the spec" not in text and "kubectl edit" not in text, text
    assert "kubectl apply -k manifests-kueue/" in text
    assert "kubectl label nvjob llama kueue.x-k8s.io/queue-name-" in text


# -- pieces ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "<unknown>"), (-5, "<invalid>"), (0, "0s"), (119, "119s"), (120, "2m"), (200, "3m20s"), (600, "10m"),
    (179 * 60, "179m"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"), (47 * 3600, "47h"), (50 * 3600, "2d2h"),
    (8 * 86400, "8d"), (800 * 86400, "2y70d"), (9 * 365 * 86400, "9y")])
def test_ages_read_as_kubectls(seconds: int | None, shown: str) -> None:
    assert view.human_duration(seconds) == shown


def test_api_errors_read_as_kubectls() -> None:
    from kubernetes.client.exceptions import ApiException

    def exc(status: int, body: Mapping[str, Any] | str) -> ApiException:
        error = ApiException(status=status, reason="reason")
        error.body = body if isinstance(body, str) else json.dumps(body)
        return error

    found = exc(404, {"kind": "Status", "reason": "NotFound", "details": {"name": "x", "kind": "jobs"},
                      "message": 'jobs.nvcre.nvidia.com "x" not found'})
    assert client.api_error(found, client.JOB_RESOURCE, "x").message == \
        'Error from server (NotFound): jobs.nvcre.nvidia.com "x" not found'
    assert client.api_error(exc(404, "404 page not found"), client.JOB_RESOURCE, "x").message == \
        'error: the server doesn\'t have a resource type "jobs.nvcre.nvidia.com"'
    forbidden = exc(403, {"reason": "Forbidden", "message": 'jobs.nvcre.nvidia.com is forbidden: User "u" cannot'})
    assert client.api_error(forbidden, client.JOB_RESOURCE).message == \
        'Error from server (Forbidden): jobs.nvcre.nvidia.com is forbidden: User "u" cannot'
    assert client.connection_error("https://127.0.0.1:6443", OSError("Connection refused")).message == \
        "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"


def kubeconfig(tmp_path: Any, contexts: Mapping[str, str | None], current: str) -> str:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": current,
              "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": name, "context": {"cluster": "c", "user": "u",
                                                      **({"namespace": ns} if ns else {})}}
                           for name, ns in contexts.items()]}
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_the_namespace_is_the_flag_else_the_contexts_else_default(tmp_path: Any) -> None:
    path = kubeconfig(tmp_path, {"a": "team-a", "b": None}, "a")
    env = {"KUBECONFIG": path}
    assert client.connect(env=env).namespace == "team-a"
    assert client.connect(env=env, context="b").namespace == "default"
    assert client.connect(env=env, namespace="x").namespace == "x"
    assert client.connect(env={}, kubeconfig=path, context="b").server == "https://127.0.0.1:1"
    assert client.connect(env={"HOME": str(tmp_path / "nohome"), "KUBECONFIG": path}).namespace == "team-a"


def test_configuration_errors_read_as_kubectls(tmp_path: Any) -> None:
    path = kubeconfig(tmp_path, {"a": None}, "a")
    with pytest.raises(client.CommandError, match=r'^error: context "zz" does not exist$'):
        client.connect(env={"KUBECONFIG": path}, context="zz")
    with pytest.raises(client.CommandError, match="no such file"):
        client.connect(env={}, kubeconfig=str(tmp_path / "missing"))
    with pytest.raises(client.CommandError, match=r"^error: no configuration"):
        client.connect(env={})  # HOME unset, no KUBECONFIG, not in a cluster


def test_a_server_that_refuses_is_exit_1_with_kubectls_line(tmp_path: Any, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, {"a": None}, "a"))
    assert commands.run(["get"]) == 1
    assert capsys.readouterr().err == ("The connection to the server 127.0.0.1:1 was refused - did you specify "
                                       "the right host or port?\n")


def test_the_entry_point_is_declared() -> None:
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-nvjob"] == "hooks.tools.nvjob.commands:main"


class Counting:
    """A Reader that counts every call of each method with its arguments."""

    def __init__(self, reader: podread.Reader) -> None:
        self.reader, self.calls = reader, []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.reader, name)

        def call(*args: Any) -> Any:
            self.calls.append((name, repr(args)))
            return target(*args)

        return call


def test_the_barriers_view_sends_each_read_once() -> None:
    from datetime import UTC, datetime

    from hooks.tools.nvjob import drain

    cluster = restarting_cluster(nodes=[node("gpu-7", "Unknown"), node("gpu-2", "True")])
    counting = Counting(cluster.reader)
    seen = drain.drain_view(cluster.jobs[0], [], counting, datetime.now(UTC))
    assert seen.reason == "PodsActive" and seen.stuck
    assert {name for name, _ in counting.calls} >= {"active_job_pods", "active_launcher_pods", "attempt_jobs",
                                                   "active_attempt_pods", "node_states"}
    assert len(counting.calls) == len(set(counting.calls)), counting.calls


def test_why_names_the_first_failing_pod_its_node_and_exit_code_from_status_attempts(
        capsys: pytest.CaptureFixture[str]) -> None:
    restarting = {"phase": "Restarting", "attempt": 0, "restarts": 1, "workload": "", "conditions": [],
                  "lastFailure": {"attempt": 0, "cause": "oom", "message": "JobSet llama-0 failed"},
                  "attempts": ATTEMPTS[:1]}
    text = why(nvjob("llama", status=restarting, max_restarts=3), capsys)
    assert ("Its first failing pod was llama-0-worker-3-0 (replicated job worker) on node gpu-11: exit code 137, "
            "OOMKilled.") in text
    running = {**RUNNING, "attempt": 1, "restarts": 1, "workload": "llama-1", "attempts": ATTEMPTS[:2]}
    text = why(nvjob("llama", status=running, max_restarts=3), capsys)
    assert text.endswith("Attempt 0 failed: its first failing pod was llama-0-worker-3-0 (replicated job worker) on "
                         "node gpu-11: exit code 137, OOMKilled. Attempt 0 ended in failure class user (pod "
                         "llama-0-worker-3-0: exit code 137 (OOMKilled)); the user budget has 2 of 3 restarts left "
                         "(spec.failurePolicy.budgets).")
    failed = {"phase": "Failed", "attempt": 1, "restarts": 1, "workload": "llama-1", "conditions": [],
              "attempts": [ATTEMPTS[0],
                           {"attempt": 1, "jobSet": "llama-1", "outcome": "Failed", "reason": "FailedJobs"}]}
    text = why(nvjob("llama", status=failed, max_restarts=1), capsys)
    assert "first failing pod" not in text, "the history names no pod of attempt 1: nothing is made up"


# -- failure classes, budgets and excluded nodes (issue 34) ------------------------------------------


def node_class_job() -> dict[str, Any]:
    """Job ``llama`` Running attempt 1 after attempt 0 ended in class ``node`` on gpu-3 and gpu-4."""
    status = {**RUNNING, "attempt": 1, "restarts": 1, "workload": "llama-1", "restartsByClass": {"node": 1},
              "attempts": [{"attempt": 0, "jobSet": "llama-0", "ended": "2026-01-01T00:10:00Z", "outcome": "Failed",
                            "class": "node", "classEvidence": "node gpu-3: NotReady, then deleted",
                            "failedNodes": ["gpu-3", "gpu-4"]},
                           {"attempt": 1, "jobSet": "llama-1", "created": "2026-01-01T00:11:00Z"}],
              "excludedNodes": [{"node": "gpu-3", "class": "node", "attempt": 0, "until": "2026-01-01T01:10:00Z"},
                                {"node": "gpu-4", "class": "node", "attempt": 0, "until": "2026-01-01T01:10:00Z"}]}
    return nvjob("llama", status=status, failurePolicy={"budgets": {"node": 3}})


def test_describe_shows_the_class_of_each_attempt_the_budgets_left_and_the_excluded_nodes(
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Recorded([node_class_job()])
    code = commands.run(["describe", "llama"], connector=lambda _: (cluster, NS),
                        clock=lambda: datetime(2026, 1, 1, 0, 40, tzinfo=UTC))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "attempt 0: class node: node gpu-3: NotReady, then deleted (failed nodes: gpu-3, gpu-4)" in out
    budgets = out.split("Budgets (spec.failurePolicy.budgets):\n")[1].split("Excluded nodes")[0].splitlines()
    assert [line.split() for line in budgets[1:4]] == [["user", "2", "0", "2"], ["preempted", "unlimited", "0",
                                                                                  "unlimited"], ["node", "3", "1", "2"]]
    excluded = out.split("Excluded nodes (status.excludedNodes):\n")[1].split("Pods (")[0].splitlines()
    assert [line.split() for line in excluded[1:]] == [["gpu-3", "node", "0", "2026-01-01T01:10:00Z", "30m"],
                                                       ["gpu-4", "node", "0", "2026-01-01T01:10:00Z", "30m"]]
    document = json.loads(ok(cluster, "describe", "llama", "-o", "json", capsys=capsys))
    assert document["attempts"][0]["failedNodes"] == ["gpu-3", "gpu-4"] and document["attempts"][0]["class"] == "node"
    assert [row["node"] for row in document["excludedNodes"]] == ["gpu-3", "gpu-4"]


def test_why_names_the_last_class_its_budget_left_and_the_nodes_kept_out(capsys: pytest.CaptureFixture[str]) -> None:
    said = why(node_class_job(), capsys)
    assert ("Attempt 0 ended in failure class node (node gpu-3: NotReady, then deleted); the node budget has 2 of 3 "
            "restarts left (spec.failurePolicy.budgets)") in said
    assert "Nodes kept out of the next attempts (status.excludedNodes, spec.failurePolicy.excludeNodesSeconds): " \
           "gpu-3 (until 2026-01-01T01:10:00Z), gpu-4 (until 2026-01-01T01:10:00Z)" in said
    assert "failure class" not in why(nvjob("plain", status=RUNNING), capsys)


def test_the_budgets_of_a_status_written_before_classes_charge_every_restart_to_the_user() -> None:
    """No ``restartsByClass``: every counted restart was the user's (``restarts``); an ``unknown``
    without a budget of its own shares the user's pool; a budget of 0 is a budget."""
    old = nvjob("old", status={**RUNNING, "restarts": 2}, max_restarts=3)
    rows = {row["class"]: row for row in view.budget_rows(old)}
    assert (rows["user"]["spent"], rows["user"]["left"]) == (2, 1)
    assert rows["unknown"] == {"class": "unknown", "budget": 3, "spent": 2, "left": 1, "shares": "user"}
    own = nvjob("own", status={**RUNNING, "restarts": 2, "restartsByClass": {"unknown": 1, "user": 1}},
                failurePolicy={"budgets": {"unknown": 0, "infrastructure": 0}})
    rows = {row["class"]: row for row in view.budget_rows(own)}
    assert rows["unknown"] == {"class": "unknown", "budget": 0, "spent": 1, "left": 0, "shares": ""}
    assert (rows["infrastructure"]["budget"], rows["user"]["spent"]) == (0, 1)


def test_why_says_the_user_budget_apart_when_other_classes_spent_restarts(capsys: pytest.CaptureFixture[str]) -> None:
    """``restarts`` counts every budget's restarts (ADR-108): two preemptions and one user failure are
    ``restarts 3``, of which one spent ``maxRestarts`` 2; "restarts 3 of 2" would say the Job is past
    its limit."""
    status = {**RUNNING, "restarts": 3, "restartsByClass": {"preempted": 2, "user": 1}}
    said = why(nvjob("llama", status=status), capsys)
    assert "(restarts 3, 1 of 2 on the user budget)" in said, said
    assert "(restarts 0 of 2)" in why(nvjob("llama", status=RUNNING), capsys)
