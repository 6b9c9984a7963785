"""``python -m hooks``: replay, node-pods and demo through click's CliRunner, offline and against the
wire-level fake API server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.tools import cli as cli_mod
from hooks.tools import cli_format
from hooks.tools.cli import cli
from podread import JOB_LABEL, reader_from_snapshot
from tests.fakekube import FakeKubeServer, Fault, make_job_pods, make_pod
from tests.support import make_batch_job

PAYLOADS = Path(__file__).resolve().parents[1] / "payloads"
STALE = PAYLOADS / "v2-finalize-stale-cache"
KEPT = PAYLOADS / "v2-running-kept"
DRAINED = PAYLOADS / "v2-finalize-drained"
NO_CLUSTER = {"KUBERNETES_SERVICE_HOST": None, "NVCRE_RESYNC_SECONDS": None}


def run(*args: str, env: dict[str, Any] | None = None) -> Result:
    """Invokes the CLI with stdout and stderr kept apart."""
    return CliRunner().invoke(cli, list(args), env={**NO_CLUSTER, **(env or {})}, catch_exceptions=False)


def copy_scenario(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def http_error(body: bytes, hook: str = "sync") -> str:
    """The error text the HTTP API answers for ``body``."""
    app = create_app(reader_from_snapshot({"items": []}), settings=Settings())
    answer = app.test_client().post(f"/{hook}", data=body, content_type="application/json")
    assert answer.status_code >= 400
    return answer.get_json()["error"]


# --- help ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["replay"], ["node-pods"], ["demo"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Usage: " in result.output and "--help" in result.output


def test_python_dash_m_hooks_runs_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "hooks", "--help"], capture_output=True, text=True, timeout=60,
                          cwd=PAYLOADS.parent.parent)
    assert done.returncode == 0 and "replay" in done.stdout and "node-pods" in done.stdout


def test_an_unknown_command_is_a_usage_error() -> None:
    result = run("frobnicate")
    assert result.exit_code == 2 and "No such command" in result.stderr


# --- replay offline -----------------------------------------------------------------------------


def test_replay_of_a_scenario_explains_the_decision() -> None:
    result = run("replay", str(STALE))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "hook      finalize at 2026-01-01T00:00:00Z, pods from pods.json" in out
    assert "phase     Terminating -> Terminating" in out
    assert "decision  held" in out
    assert "message   waiting for 1 active pod: llama-0-worker-1-0" in out
    assert "active_job_pods from cache (namespace=team-a labels=nvcre.nvidia.com/job=llama): ok, 2 pods" in out
    assert "active_job_pods from live (namespace=team-a labels=nvcre.nvidia.com/job=llama): ok, 2 pods" in out
    assert ("attempt_jobs from live (namespace=team-a labels=jobset.sigs.k8s.io/jobset-name in (llama-0,llama-1)): "
            "ok, 0 batch Jobs") in out  # batch Jobs are not counted as pods
    response = json.loads(out.split("\nresponse\n", 1)[1])
    assert response == json.loads((STALE / "response.json").read_text())


def test_replay_diff_of_an_unchanged_scenario_exits_zero() -> None:
    result = run("replay", str(STALE), "--diff")
    assert result.exit_code == 0
    assert "same as response.json" in result.stderr


def test_replay_diff_shows_a_readable_difference_and_exits_one(tmp_path: Path) -> None:
    folder = copy_scenario(STALE, tmp_path)
    expected = json.loads((folder / "response.json").read_text())
    expected["status"]["activePods"] = 7
    (folder / "response.json").write_text(json.dumps(expected))
    result = run("replay", str(folder), "--diff")
    assert result.exit_code == 1
    assert "--- response.json\n+++ replayed\n" in result.stdout
    assert '-    "activePods": 7,\n+    "activePods": 1,\n' in result.stdout
    assert "differs from response.json" in result.stderr


def test_replay_json_output_is_one_document() -> None:
    result = run("replay", str(KEPT), "--output", "json", "--diff")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["code"] == 200 and document["matches"] is True and document["diff"] == ""
    assert document["decision"] == {"kind": "kept", "phase_before": "Pending", "phase_after": "Running",
                                    "message": ""}
    assert [(r["method"], r["source"], r["outcome"]) for r in document["reads"]] == [
        ("counted_job_pods", "cache", "ok"), ("counted_job_pods", "live", "ok")  # a new count, confirmed live
    ]
    assert document["response"] == json.loads((KEPT / "response.json").read_text())


def test_replay_of_a_request_file_with_a_kubectl_pod_list_and_a_chosen_time(tmp_path: Path) -> None:
    request = tmp_path / "call.json"
    shutil.copy(STALE / "request.json", request)
    pods = tmp_path / "pods.json"
    # kubectl get pods,jobs -o json: a List whose items carry their kind (a PodList says nothing of
    # the batch Jobs the barrier also reads, and replays as a failed read; so does a List without a Job)
    batch = {"kind": "Job", "apiVersion": "batch/v1",
             **make_batch_job("llama-0", namespace="team-a", finished="Complete")}
    pods.write_text(json.dumps({"kind": "List", "apiVersion": "v1",
                                "items": [*({"kind": "Pod", "apiVersion": "v1", **pod}
                                            for pod in make_job_pods("llama", 3, "team-a", phase="Running")),
                                          batch]}))
    result = run("replay", str(request), "--pods", str(pods), "--now", "2026-03-04T05:06:07+02:00",
                 "--output", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["hook"] == "finalize"  # the request says finalizing: true
    assert document["now"] == "2026-03-04T03:06:07Z"
    assert document["decision"]["kind"] == "held" and "3 active pods" in document["decision"]["message"]
    assert document["response"]["status"]["conditions"][0]["lastTransitionTime"] == "2026-03-04T03:06:07Z"
    assert "matches" not in document


def test_replay_hook_option_wins_over_the_scenario() -> None:
    result = run("replay", str(STALE), "--hook", "sync", "--output", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["hook"] == "sync"


@pytest.mark.parametrize(
    ("body", "hook"),
    [
        (b"{not json", "sync"),
        (b"[]", "sync"),
        (b'{"controller": {}}', "finalize"),
        (json.dumps({"parent": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "y"}}})
         .encode(), "sync"),
    ],
    ids=["not-json", "not-an-object", "no-parent", "not-a-job"],
)
def test_bad_input_gets_the_http_api_error_text_and_exit_two(tmp_path: Path, body: bytes, hook: str) -> None:
    request = tmp_path / "bad.json"
    request.write_bytes(body)
    pods = tmp_path / "pods.json"
    pods.write_text('{"items": []}')
    result = run("replay", str(request), "--pods", str(pods), "--hook", hook)
    assert result.exit_code == 2
    assert result.stderr == f"error: {http_error(body, hook)}\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--now", "yesterday"], "is not an RFC 3339 time"),
        (["--now", "2026-01-01T00:00:00"], "has no timezone"),
        (["--live", "--pods", str(STALE / "pods.json")], "--pods and --live are exclusive"),
    ],
)
def test_replay_refuses_bad_options(args: list[str], says: str) -> None:
    result = run("replay", str(STALE), *args)
    assert result.exit_code == 2 and says in result.stderr


def test_replay_of_a_lone_request_needs_a_pod_source(tmp_path: Path) -> None:
    request = tmp_path / "call.json"
    shutil.copy(STALE / "request.json", request)
    result = run("replay", str(request))
    assert result.exit_code == 2
    assert "give --pods PODS.json (kubectl get pods -o json) and --jobs JOBS.json (kubectl get jobs -o json), or " \
           "--live" in result.stderr
    result = run("replay", str(request), "--pods", str(STALE / "pods.json"), "--diff")
    assert result.exit_code == 2 and "--diff needs a response.json" in result.stderr


def test_replay_names_a_broken_scenario_file(tmp_path: Path) -> None:
    folder = copy_scenario(STALE, tmp_path)
    (folder / "pods.json").write_text("{oops")
    result = run("replay", str(folder))
    assert result.exit_code == 2 and f"error: {folder / 'pods.json'}: not JSON" in result.stderr
    (folder / "pods.json").write_text('{"nodes": []}')
    result = run("replay", str(folder))
    assert result.exit_code == 2 and "a pod snapshot must be a PodList" in result.stderr
    result = run("replay", str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_replay_applies_the_recorded_settings(tmp_path: Path) -> None:
    folder = copy_scenario(STALE, tmp_path)
    meta = json.loads((folder / "meta.json").read_text())
    meta["settings"] = {"resync_seconds": 2.5}
    (folder / "meta.json").write_text(json.dumps(meta))
    result = run("replay", str(folder), "--output", "json", env={"NVCRE_RESYNC_SECONDS": "9"})
    assert json.loads(result.stdout)["response"]["resyncAfterSeconds"] == 2.5
    result = run("replay", str(STALE), "--output", "json", env={"NVCRE_RESYNC_SECONDS": "9"})
    assert json.loads(result.stdout)["response"]["resyncAfterSeconds"] == 9.0


# --- replay --live ------------------------------------------------------------------------------


def test_replay_live_reads_the_cluster(fake_kube: FakeKubeServer, kubeconfig: str) -> None:
    fake_kube.put_pods(make_job_pods("llama", 2, "team-a", phase="Running"))
    result = run("replay", str(STALE), "--live", "--output", "json", env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["pods_from"] == "the cluster (live)"
    assert document["decision"]["kind"] == "held"
    assert document["response"]["status"]["activePods"] == 2
    assert any(r.path == "/api/v1/namespaces/team-a/pods" for r in fake_kube.requests)


def test_replay_live_with_every_pod_finished_lets_the_finalizer_go(fake_kube: FakeKubeServer,
                                                                  kubeconfig: str) -> None:
    fake_kube.put_pods(make_job_pods("llama", 2, "team-a", phase="Succeeded"))
    result = run("replay", str(STALE), "--live", "--output", "json", env={"KUBECONFIG": kubeconfig})
    document = json.loads(result.stdout)
    assert document["response"]["finalized"] is True
    # A fresh process's cache misses: the one list it sends to fill it is the live check of the job
    # label; the launcher label, the batch Jobs (by the Job's label, then JobSet's) and JobSet's label
    # are read live too.
    assert [(r["method"], r["source"], r["filled"], r["outcome"]) for r in document["reads"]] == [
        ("active_job_pods", "cache", True, "ok"), ("active_launcher_pods", "live", False, "ok"),
        ("attempt_jobs", "live", False, "ok"), ("attempt_jobs", "live", False, "ok"),
        ("active_attempt_pods", "live", False, "ok")]
    assert sum(r.path == "/api/v1/namespaces/team-a/pods" for r in fake_kube.requests) == 3
    assert sum(r.path == "/apis/batch/v1/namespaces/team-a/jobs" for r in fake_kube.requests) == 2
    text = run("replay", str(STALE), "--live", env={"KUBECONFIG": kubeconfig}).stdout
    assert "active_job_pods from cache, filled from the API server" in text


def test_replay_live_shows_a_failed_read_as_the_server_would(fake_kube: FakeKubeServer, kubeconfig: str) -> None:
    fake_kube.inject(Fault(path="/api/v1/namespaces/team-a/pods", status=500))
    result = run("replay", str(STALE), "--live", env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 0
    assert "decision  held" in result.stdout
    # The status names the error's class; the read list keeps the full story.
    assert "message   waiting for a pod read to succeed: the API server answered HTTP 500" in result.stdout
    assert "failed: active_job_pods from cache:" in result.stdout


# --- node-pods ----------------------------------------------------------------------------------


def node_pods(fake_kube: FakeKubeServer) -> None:
    """gpu-1 holds two llama workers (one being deleted), a gpt worker and a kube-system installer."""
    fake_kube.put_pods([
        make_pod("llama-0-worker-0-0-aaaaa", "team-a", {JOB_LABEL: "llama", "nvcre.nvidia.com/attempt": "0"},
                 "Running", "gpu-1", deletion_timestamp="2026-01-01T00:00:00Z"),
        make_pod("llama-1-worker-0-0-bbbbb", "team-a", {JOB_LABEL: "llama", "nvcre.nvidia.com/attempt": "1"},
                 "Pending", "gpu-1"),
        make_pod("gpt-2-worker-0-3-ccccc", "team-b", {JOB_LABEL: "gpt", "nvcre.nvidia.com/attempt": "2"},
                 "Running", "gpu-1"),
        make_pod("llama-1-worker-0-1-ddddd", "team-a", {JOB_LABEL: "llama", "nvcre.nvidia.com/attempt": "1"},
                 "Running", "gpu-2"),
        make_pod("driver-installer-x1", "kube-system", {"app": "gpu-driver"}, "Running", "gpu-1"),
        make_pod("driver-installer-x2", "kube-system", {"app": "gpu-driver"}, "Running", "gpu-2"),
        make_pod("notebook", "team-a", {"app": "jupyter"}, "Running", "gpu-1"),
    ])


def test_node_pods_lists_the_nvcre_workload_pods_of_the_node(fake_kube: FakeKubeServer, kubeconfig: str) -> None:
    node_pods(fake_kube)
    result = run("node-pods", "gpu-1", env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAMESPACE", "JOB", "ATTEMPT", "POD", "PHASE", "AGE"]
    rows = [line.split()[:5] for line in lines[1:]]
    assert rows == [
        ["team-a", "llama", "0", "llama-0-worker-0-0-aaaaa", "Terminating"],
        ["team-a", "llama", "1", "llama-1-worker-0-0-bbbbb", "Pending"],
        ["team-b", "gpt", "2", "gpt-2-worker-0-3-ccccc", "Running"],
    ]
    assert all(line.split()[5].endswith("d") for line in lines[1:])  # created long ago
    (request,) = [r for r in fake_kube.requests if r.path == "/api/v1/pods"]
    assert request.query["fieldSelector"] == "spec.nodeName=gpu-1"
    assert request.query["labelSelector"] == JOB_LABEL


def test_node_pods_adds_the_other_pods_of_a_namespace_on_the_node(fake_kube: FakeKubeServer,
                                                                 kubeconfig: str) -> None:
    node_pods(fake_kube)
    result = run("node-pods", "gpu-1", "--all-namespaces-pods", "kube-system", "--output", "json",
                 env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["node"] == "gpu-1" and document["namespace"] == "kube-system"
    assert [(p["namespace"], p["pod"], p["kind"], p["phase"]) for p in document["pods"]] == [
        ("kube-system", "driver-installer-x1", "other", "Running"),
        ("team-a", "llama-0-worker-0-0-aaaaa", "workload", "Terminating"),
        ("team-a", "llama-1-worker-0-0-bbbbb", "workload", "Pending"),
        ("team-b", "gpt-2-worker-0-3-ccccc", "workload", "Running"),
    ]
    terminating = document["pods"][1]
    assert terminating["deletionTimestamp"] == "2026-01-01T00:00:00Z" and terminating["age_seconds"] > 0
    table = run("node-pods", "gpu-1", "--all-namespaces-pods", "kube-system", env={"KUBECONFIG": kubeconfig})
    assert table.stdout.splitlines()[1].split()[:5] == ["kube-system", "-", "-", "driver-installer-x1", "Running"]


def test_node_pods_of_an_empty_node_says_so(fake_kube: FakeKubeServer, kubeconfig: str) -> None:
    node_pods(fake_kube)
    result = run("node-pods", "gpu-9", env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 0 and result.stdout == "no NVCRE workload pods on node gpu-9\n"


def test_node_pods_fails_clearly_when_the_read_fails(fake_kube: FakeKubeServer, kubeconfig: str) -> None:
    fake_kube.inject(Fault(path="/api/v1/pods", status=503))
    result = run("node-pods", "gpu-1", env={"KUBECONFIG": kubeconfig})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: pod read failed: job_pods_on_node from cache:")
    assert "503" in result.stderr and result.stdout == ""


def test_node_pods_without_a_cluster_fails_clearly(tmp_path: Path) -> None:
    result = run("node-pods", "gpu-1", env={"KUBECONFIG": str(tmp_path / "missing")})
    assert result.exit_code == 1
    assert "error: pod read failed: job_pods_on_node from cache:" in result.stderr
    assert "no kubeconfig at" in result.stderr


def test_node_pods_names_a_bad_setting(kubeconfig: str) -> None:
    result = run("node-pods", "gpu-1", env={"KUBECONFIG": kubeconfig, "NVCRE_API_TIMEOUT_SECONDS": "soon"})
    assert result.exit_code == 2 and "NVCRE_API_TIMEOUT_SECONDS='soon'" in result.stderr


# --- demo ---------------------------------------------------------------------------------------


def test_demo_replays_every_recorded_scenario() -> None:
    result = run("demo", str(PAYLOADS))
    assert result.exit_code == 0, result.stdout
    lines = result.stdout.splitlines()
    scenarios = sorted(path.parent.name for path in PAYLOADS.glob("*/request.json"))
    assert [line.split()[0] for line in lines[:-1]] == scenarios
    assert all(line.endswith(" ok") for line in lines[:-1])
    assert lines[-1] == f"{len(scenarios)} of {len(scenarios)} scenarios answer as recorded"
    stale = next(line for line in lines if line.startswith("v2-finalize-stale-cache "))
    assert stale.split()[1:] == ["Terminating", "->", "Terminating", "held", "ok"]


def test_demo_defaults_to_tests_payloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PAYLOADS.parent.parent)
    result = run("demo")
    assert result.exit_code == 0 and "scenarios answer as recorded" in result.stdout


def test_demo_outside_a_clone_says_it_needs_the_clone_or_a_folder(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("demo")
    assert result.exit_code == 2
    assert "run it from a clone of nvcre-hooks, or give a folder of scenarios as DIR" in result.stderr


@pytest.mark.parametrize(("argv0", "shown"), [("/usr/local/bin/nvcre-hooks", "nvcre-hooks"),
                                              ("/src/hooks/__main__.py", "python -m hooks")])
def test_the_usage_names_the_command_as_it_was_invoked(argv0: str, shown: str) -> None:
    assert cli_mod.program_name(argv0) == shown


def test_demo_exits_non_zero_when_an_answer_differs(tmp_path: Path) -> None:
    copy_scenario(KEPT, tmp_path)
    changed = copy_scenario(STALE, tmp_path)
    (changed / "response.json").write_text('{"status": {}, "children": []}')
    broken = tmp_path / "zz-broken"
    broken.mkdir()
    (broken / "request.json").write_text("{}")
    result = run("demo", str(tmp_path))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("v2-finalize-stale-cache") and lines[0].endswith("DIFFERS")
    assert lines[1].startswith("v2-running-kept") and lines[1].endswith(" ok")
    assert lines[2].startswith("zz-broken") and "ERROR: no pods.json" in lines[2]
    assert lines[-1] == "1 of 3 scenarios answer as recorded"


def test_demo_of_a_folder_without_scenarios_is_an_error(tmp_path: Path) -> None:
    result = run("demo", str(tmp_path))
    assert result.exit_code == 2 and "no scenario folders" in result.stderr


@pytest.mark.parametrize(("seconds", "shown"), [(None, "<unknown>"), (-3, "0s"), (45, "45s"), (119, "119s"),
                                                (120, "2m"), (7199, "119m"), (7200, "2h"), (172799, "47h"),
                                                (172800, "2d")])
def test_ages_read_like_kubectl(seconds: int | None, shown: str) -> None:
    assert cli_format.format_age(seconds) == shown


def test_replay_accepts_exactly_what_kubectl_get_pods_prints(tmp_path: Path) -> None:
    """``--pods <(kubectl get pods -n NS -o json)``: kubectl prints ``kind: List`` (not PodList),
    each item with its kind, and ``metadata.resourceVersion: ""``. Accepted; it says nothing of batch
    Jobs, so a barrier that needs them holds on a failed batch Job read rather than reading "none"."""
    request = tmp_path / "call.json"
    shutil.copy(STALE / "request.json", request)
    done = [{"apiVersion": "v1", "kind": "Pod", **pod}
            for pod in make_job_pods("llama", 2, "team-a", phase="Succeeded")]
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "items": done, "kind": "List",
                                "metadata": {"resourceVersion": ""}}, indent=4) + "\n")
    result = run("replay", str(request), "--pods", str(pods), "--output", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["decision"]["kind"] == "held", document["decision"]
    assert document["decision"]["message"] == ("waiting for a batch Job read to succeed: the snapshot replayed "
                                               "does not hold what this read asks for")
    assert not document["response"].get("finalized")
    assert "no cluster configuration" not in result.stdout, "a snapshot, not a missing cluster configuration"
    failed = [read["error"] for read in document["reads"] if read["outcome"] != "ok"]
    assert failed and all(f"{pods} holds no batch Job" in error and "--jobs" in error for error in failed), failed
    assert document["pods_from"] == f"{pods} (it holds no batch Job: give --jobs)"


def kubectl_list(*objects: dict[str, Any]) -> dict[str, Any]:
    """What ``kubectl get KIND -o json`` prints: a ``kind: List`` whose items carry their kind."""
    return {"apiVersion": "v1", "items": list(objects), "kind": "List", "metadata": {"resourceVersion": ""}}


def test_replay_with_the_batch_jobs_read_apart_answers_as_the_server_once_they_are_gone(tmp_path: Path) -> None:
    """``--pods <(kubectl get pods -n NS -o json) --jobs <(kubectl get jobs -n NS -o json)``: once the
    Job's batch Jobs are gone kubectl prints an empty List of them, which says "none" (not "not read"),
    and the replay answers what the server answered: finalized."""
    request = tmp_path / "call.json"
    shutil.copy(DRAINED / "request.json", request)
    recorded = json.loads((DRAINED / "pods.json").read_text())
    pods, jobs = tmp_path / "pods.json", tmp_path / "jobs.json"
    pods.write_text(json.dumps(kubectl_list(*({"apiVersion": "v1", "kind": "Pod", **pod}
                                              for pod in recorded["live"]["pods"]))))
    jobs.write_text(json.dumps(kubectl_list()))
    result = run("replay", str(request), "--pods", str(pods), "--jobs", str(jobs), "--now", "2026-01-01T00:00:00Z",
                 "--hook", "finalize", "--output", "json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["response"] == json.loads((DRAINED / "response.json").read_text())
    assert document["response"]["finalized"] is True
    assert document["pods_from"] == f"{pods}, batch Jobs from {jobs}"
    # a batch Job that is there and still running holds it, from --jobs as from a List of pods and jobs
    jobs.write_text(json.dumps(kubectl_list({"apiVersion": "batch/v1", "kind": "Job",
                                             **make_batch_job("llama-0", namespace="team-a")})))
    result = run("replay", str(request), "--pods", str(pods), "--jobs", str(jobs), "--now", "2026-01-01T00:00:00Z",
                 "--hook", "finalize", "--output", "json")
    document = json.loads(result.stdout)
    assert document["decision"]["kind"] == "held" and "batch Job llama-0" in document["decision"]["message"]


@pytest.mark.parametrize(("jobs", "says"), [
    ({"kind": "PodList", "items": []}, "expected what kubectl get jobs -o json prints"),
    ({"kind": "List", "items": [{"kind": "Pod"}]}, "items: expected a list of batch Job objects"),
    ({"kind": "List"}, "items: expected a list of batch Job objects"),
])
def test_replay_refuses_a_jobs_file_that_is_not_batch_jobs(tmp_path: Path, jobs: dict[str, Any], says: str) -> None:
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(jobs))
    result = run("replay", str(STALE), "--jobs", str(path))
    assert result.exit_code == 2 and f"error: {path}: {says}" in result.stderr
    result = run("replay", str(STALE), "--jobs", str(path), "--live")
    assert result.exit_code == 2 and "--jobs and --live are exclusive" in result.stderr


def test_replay_of_a_bare_request_json_names_that_file(tmp_path: Path) -> None:
    """A ``request.json`` alone in a folder is a request file, and the error names it (not its folder)."""
    request = tmp_path / "request.json"
    shutil.copy(STALE / "request.json", request)
    result = run("replay", str(request))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: no pods for {request}: give --pods"), result.stderr
