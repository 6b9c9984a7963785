"""The docs' kubectl commands about a Job, run with the real kubectl against the real control plane
(issue 23, item 5): the troubleshooting reads and the suspend/resume patches of docs/operations.md,
the README's `kubectl get nvjob`, with NAME and NS standing for a Job the tier's world runs.

tests/contract/test_docs_commands.py finds every command in the docs and says which ones need a cluster; the
ones about one Job are run here, each as the docs write it (``-w`` left out: it never returns).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REPO, kubectl_binary
from tests.cluster.world import ClusterWorld
from tests.contract.test_docs_commands import ALL

pytestmark = pytest.mark.cluster

ABOUT_A_JOB = re.compile(r"^kubectl (get|describe|patch) nvjob( NAME)?( -n NS| -A)?( |$)")


def test_the_docs_kubectl_commands_about_a_job_run_as_written(world: ClusterWorld, control_plane: ControlPlane,
                                                              tmp_path: Path) -> None:
    binary = kubectl_binary()
    commands = [s for s in ALL if ABOUT_A_JOB.match(s.command)]
    shown = {s.command for s in commands}
    assert {"kubectl get nvjob NAME -n NS", "kubectl describe nvjob NAME -n NS"} <= shown, shown
    assert any("suspend\":true" in c for c in shown) and any("suspend\":false" in c for c in shown)

    world.create_job("docs")
    world.run_until(lambda: world.phase("docs") == "Running", "Running")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "KUBECONFIG": control_plane.write_kubeconfig(tmp_path / "kubeconfig")}
    for command in commands:
        args = [word.replace("NAME", "docs").replace("NS", world.namespace)
                for word in shlex.split(command.command) if word != "-w"]
        done = subprocess.run([binary, *args[1:]], env=env, capture_output=True, text=True, timeout=60, check=False)
        where = f"{command.doc}:{command.line}: {command.command}"
        assert done.returncode == 0, f"{where}\n{done.stderr}"
        if args[1:3] == ["get", "nvjob"] and "-o" not in args:
            header = done.stdout.splitlines()[0].split()
            expected = ["NAME", "PHASE", "ATTEMPT", "RESTARTS", "ACTIVE", "AGE"]
            assert header[-6:] == expected, f"{where}: the README's columns are {expected}, kubectl shows {header}"
            assert "docs" in done.stdout
        if "conditions[*]" in command.command:
            assert all(re.match(r"^\w+=(True|False|Unknown) \w*: ", line) for line in done.stdout.splitlines()), \
                done.stdout
    world.assert_safe()


OPERATOR_TOOLS = re.compile(r"^(\.venv/bin/)?python -m hooks (replay request\.json|node-pods gpu-)")


def test_the_operator_tools_read_the_cluster_as_the_docs_write_them(world: ClusterWorld, control_plane: ControlPlane,
                                                                    tmp_path: Path) -> None:
    """The README's replay of a bare request with ``--pods <(kubectl get pods ...)`` and ``--jobs <(kubectl
    get jobs ...)``, with ``--live``, and ``node-pods``, each run as written (the interpreter, the
    namespace, the node and the request file standing for the world's) against a running Job: each
    reads the cluster and answers what the server answered."""
    binary = kubectl_binary()
    commands = [s for s in ALL if OPERATOR_TOOLS.match(s.command)]
    assert {c.command.split()[3] for c in commands} == {"replay", "node-pods"}, commands
    world.create_job("tools")
    world.run_until(lambda: world.phase("tools") == "Running", "Running")
    world.run_for(2)
    [call, *_] = [c for c in reversed(world.driver.calls) if c.job == "tools" and c.reply.status == 200]
    (tmp_path / "request.json").write_text(json.dumps(call.request))
    node = world.active_pods("tools")[0]["spec"]["nodeName"]
    env = {"PATH": f"{Path(binary).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp_path),
           "KUBECONFIG": control_plane.write_kubeconfig(tmp_path / "kubeconfig"),
           "PYTHONPATH": str(REPO)}
    for command in commands:
        text = re.sub(r"#.*$", "", command.command)
        text = re.sub(r"^(\.venv/bin/)?python ", f"{sys.executable} ", text).replace("team-a", world.namespace)
        text = re.sub(r"\bgpu-[\w-]+", node, text)
        done = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        where = f"{command.doc}:{command.line}: {command.command}"
        assert done.returncode == 0, f"{where}\n{done.stdout}\n{done.stderr}"
        if "node-pods" in text:
            assert any(line.startswith("tools-") or " tools-" in line for line in done.stdout.splitlines()), done.stdout
        elif "--output json" in text:
            assert json.loads(done.stdout)["decision"]["kind"] == "kept", done.stdout
        else:
            assert re.search(r"^decision\s+\w+", done.stdout, re.M), done.stdout  # at the docs' --now
            assert "batch Jobs from /dev/fd/" in done.stdout, done.stdout
