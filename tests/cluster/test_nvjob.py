"""``kubectl nvjob`` invoked by the real ``kubectl`` (Debian's package) against the real control plane,
over a Job the tier's world drives (tests/cluster/world.py). Kept small (a Job that runs; no
teardown, which takes the tier about 35 s): the phases and the barrier's views are the unit tests'
(tests/tools/test_nvjob.py), over the same Reader and barrier code.

The plugin is the ``kubectl-nvjob`` console script pyproject.toml declares: the one in the venv's
bin when the project is installed there (``pip install .``), else the same script written the way
pip writes it (the venv's interpreter calling the entry point) into a folder of its own. ``kubectl``
finds it on ``PATH`` (``kubectl plugin list``) and runs it with the world's admin kubeconfig.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.world import ClusterWorld

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def console_script(folder: Path) -> Path:
    """The ``kubectl-nvjob`` command: the venv's when installed there, else one written in ``folder``
    as pip writes console scripts, from the entry point pyproject.toml declares."""
    installed = VENV_BIN / "kubectl-nvjob"
    if installed.is_file():
        return installed
    module, _, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"][
        "kubectl-nvjob"].partition(":")
    script = folder / "kubectl-nvjob"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\n"
                      f"if __name__ == '__main__':\n    sys.exit({function}())\n")
    script.chmod(0o755)
    return script


class Kubectl:
    """Runs ``kubectl ARGS...`` with ``env`` (the plugin ``script`` on PATH); returns the finished process."""

    def __init__(self, script: Path, env: dict[str, str], cwd: Path) -> None:
        self.script, self.env, self.cwd = script, env, cwd

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", *args], env=self.env, capture_output=True, text=True, timeout=60,
                              cwd=self.cwd, check=False)

    def streaming(self, *args: str) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
        """Starts ``kubectl ARGS...`` (a watch); returns the process and a queue of its stdout lines,
        filled by a reader thread as they come."""
        process = subprocess.Popen(["kubectl", *args], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, cwd=self.cwd)
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.put(line.rstrip("\n"))

        threading.Thread(target=read, daemon=True).start()
        return process, lines


def next_line(lines: queue.Queue[str], process: subprocess.Popen[str], seconds: float = 30.0) -> str:
    """The next line a watch printed, within ``seconds``; fails with its stderr when none came."""
    try:
        return lines.get(timeout=seconds)
    except queue.Empty:
        process.kill()
        _, err = process.communicate(timeout=10)
        pytest.fail(f"the watch printed no line in {seconds} s: {err}")


@pytest.fixture
def kubectl(tmp_path: Path, control_plane: ControlPlane) -> Kubectl:
    """The real kubectl with the plugin on PATH and the control plane's admin kubeconfig."""
    if shutil.which("kubectl") is None:
        if os.environ.get("NVCRE_REQUIRE_CLUSTER") == "1":
            pytest.fail("the plugin test needs kubectl (apt-get install kubectl)")
        pytest.skip("no kubectl on PATH (apt-get install kubectl)")
    folder = tmp_path / "bin"
    folder.mkdir()
    script = console_script(folder)
    env = {"PATH": os.pathsep.join([str(script.parent), str(VENV_BIN), os.environ.get("PATH", "/usr/bin:/bin")]),
           "KUBECONFIG": control_plane.write_kubeconfig(tmp_path / "kubeconfig"), "HOME": str(tmp_path),
           "PYTHONPATH": str(ROOT)}  # the repository's code, as an installed copy would be
    return Kubectl(script, env, tmp_path)


def test_kubectl_finds_the_plugin_and_it_reports_a_running_job(world: ClusterWorld, kubectl: Kubectl) -> None:
    listed = kubectl("plugin", "list")
    assert str(kubectl.script) in listed.stdout, listed.stdout + listed.stderr

    ns = world.namespace
    world.create_job("plug")
    world.run_until(lambda: world.phase("plug") == "Running", "Running")
    pods = sorted(world.run_until_pods_run("plug", 2))
    world.run_until(lambda: "AttemptCreated" in world.event_reasons("plug"), "the hooks' AttemptCreated Event")
    # status.attempts dates attempt 0 from what the API server and the kubelets (kwok) wrote
    world.run_until(lambda: {"created", "started"} <= set((world.status("plug").get("attempts") or [{}])[0]),
                    "attempt 0 dated in status.attempts")
    entry = world.status("plug")["attempts"][0]
    jobset = next(js for js in world.view.jobsets_of(world.created["plug"]) if js["metadata"]["name"] == "plug-0")
    assert entry["created"] == jobset["metadata"]["creationTimestamp"], (entry, jobset["metadata"])
    started = [p["status"]["startTime"] for p in world.view.job_pods(ns, "plug")
               if p["status"].get("phase") == "Running" and p["status"].get("startTime")]
    assert entry["started"] == min(started), (entry, started)

    got = kubectl("nvjob", "get", "-n", ns)
    assert got.returncode == 0, got.stderr
    header, row = got.stdout.splitlines()
    assert header.split()[:5] == ["NAME", "PHASE", "ATTEMPT", "RESTARTS", "ACTIVE"]
    assert row.split()[:5] == ["plug", "Running", "0", "0", "2"]
    every = kubectl("nvjob", "summary", "-A")
    assert (ns, "plug") in {(i["namespace"], i["name"]) for i in json.loads(every.stdout)["items"]}

    described = kubectl("nvjob", "describe", "plug", "-n", ns, "-o", "json")
    assert described.returncode == 0, described.stderr
    document = json.loads(described.stdout)
    assert [p["name"] for p in document["pods"]] == pods  # read live through podread
    assert all(p["node"] and p["phase"] == "Running" for p in document["pods"])
    barrier = document["drain"]
    assert (barrier["draining"], barrier["reason"], barrier["jobsets"]) == (False, "WorkloadPresent", ["plug-0"])
    assert sorted(p["name"] for p in barrier["pods"]) == pods
    assert "AttemptCreated" in [e["reason"] for e in document["events"]]  # events.k8s.io, by regarding.name
    text = kubectl("nvjob", "describe", "plug", "-n", ns).stdout
    assert "Pods (JobSet plug-0):" in text and "Drain barrier:" in text and "Conditions:" in text
    assert text.split("Attempts:\n", 1)[1].splitlines()[1].split()[:2] == ["0", "plug-0"], text
    assert document["attempts"][0]["created"] == entry["created"]

    why = kubectl("nvjob", "why", "plug", "-n", ns)
    assert why.returncode == 0 and why.stdout.startswith("Job plug is Running at attempt 0 with 2 active pods")


    # kubectl get's flags, against the real API server: -o json|jsonpath (the Job object), -l, -w
    assert json.loads(kubectl("nvjob", "get", "plug", "-n", ns, "-o", "json").stdout)["kind"] == "Job"
    phase = kubectl("nvjob", "get", "plug", "-n", ns, "-o", "jsonpath={.status.phase}")
    assert (phase.returncode, phase.stdout) == (0, "Running"), phase.stderr
    watch, lines = kubectl.streaming("nvjob", "get", "-n", ns, "-l", "!watched", "-w", "--request-timeout", "60s")
    try:
        assert next_line(lines, watch).split()[:2] == ["NAME", "PHASE"]
        assert next_line(lines, watch).split()[:2] == ["plug", "Running"], "listed first"
        labelled = kubectl("label", "nvjob", "plug", "-n", ns, "watched=no")
        assert labelled.returncode == 0, labelled.stderr
        deadline = time.monotonic() + 30
        seen = next_line(lines, watch)  # the label change: the Job leaves the selector, a last row for it
        while not seen.startswith("plug") and time.monotonic() < deadline:
            seen = next_line(lines, watch)
        assert seen.split()[:2] == ["plug", "Running"], seen
    finally:
        watch.kill()
        watch.communicate(timeout=10)
    selected = kubectl("nvjob", "get", "-n", ns, "-l", "watched=no", "-o", "name")
    assert (selected.returncode, selected.stdout) == (0, "job.nvcre.nvidia.com/plug\n"), selected.stderr

    missing = kubectl("nvjob", "describe", "nope", "-n", ns)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == 'Error from server (NotFound): jobs.nvcre.nvidia.com "nope" not found\n'
    bad = kubectl("nvjob", "get", "--no-such-flag")
    assert bad.returncode == 1 and "Usage: kubectl nvjob get" in bad.stderr
    world.assert_safe()
