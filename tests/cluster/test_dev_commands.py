"""The kubectl commands the docs give for ``make dev`` (README.md, docs/operations.md section 10), run
as written with the real kubectl against a world of the tier (the same kwok stages as ``make dev``),
checking that what the docs say happens does (issue 23, item 5): a failed pod restarts the Job, a held
pod keeps it Restarting until released, a lost node is named by the stuck drain and restoring it ends
the drain, the complete label ends the Job Succeeded, and the launcher's complete label ends the MPI
sample (``manifests/samples/job-mpi.yaml``, its launcher labelled apart: issue 35).

tests/contract/test_docs_commands.py finds the commands and classifies them; here each one that
touches a pod or a node is run, POD, NODE and the sample's name standing for the world's own.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import kubectl_binary
from tests.cluster.world import ClusterWorld
from tests.contract.test_docs_commands import ALL, rule_of
from tests.e2e.harness import job_spec

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]

KINDS = {
    "complete": "nvcre.nvidia.com/job=llm-pretrain nvcre.test/complete=true",
    "complete-launcher": "nvcre.nvidia.com/launcher=allreduce-bench nvcre.test/complete=true",
    "fail": "pod-container-running-failed.stage.kwok.x-k8s.io/exit-code",
    "hold": '"value":"nvcre.test/hold"',
    "release": '"finalizers":null',
    "lose": "type- && kubectl cordon NODE",
    "not-ready": "--subresource status",
    "restore": "type=kwok && kubectl uncordon NODE",
}


def dev_commands() -> dict[str, str]:
    """The documented make dev commands by what they do (``KINDS``); every one the rule sends here
    must be one of them, and each kind must be documented."""
    ruled = {s.command for s in ALL if "test_dev_commands" in (rule_of(s.command) or ("", ""))[1]}
    found: dict[str, str] = {}
    for command in ruled:
        kinds = [kind for kind, marker in KINDS.items() if marker in command]
        assert len(kinds) == 1, f"a make dev command this test does not know: {command}"
        assert kinds[0] not in found or found[kinds[0]] == command, f"two forms of {kinds[0]}: {command}"
        found[kinds[0]] = command
    assert set(found) == set(KINDS), f"not documented: {set(KINDS) - set(found)}"
    return found


@pytest.mark.timeout(240)
def test_the_make_dev_commands_fail_hold_lose_and_complete_as_the_docs_say(
        world: ClusterWorld, control_plane: ControlPlane, tmp_path: Path) -> None:
    binary = kubectl_binary()
    commands = dev_commands()
    kubeconfig = control_plane.write_kubeconfig(tmp_path / "kubeconfig")
    env = {"PATH": f"{Path(binary).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": kubeconfig}
    subprocess.run([binary, "config", "set-context", "--current", f"--namespace={world.namespace}"], env=env,
                   check=True, capture_output=True, timeout=30)

    def kubectl(kind: str, pod: str = "", node: str = "") -> None:
        script = commands[kind].replace("POD", pod).replace("NODE", node).replace("llm-pretrain", "devcmd")
        done = subprocess.run(["bash", "-ec", script], env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, f"{script}\n{done.stdout}{done.stderr}"

    world.create_job("devcmd", {**job_spec(max_restarts=2), "drain": {"stuckAfterSeconds": 1}})
    first, second = world.run_until_pods_run("devcmd", 2)

    # hold one pod, fail the other: Restarting, held by the pod, until it is released
    kubectl("hold", pod=second)
    kubectl("fail", pod=first)
    world.run_until(lambda: world.phase("devcmd") == "Restarting", "Restarting after the failed pod")
    world.run_for(3)
    assert world.phase("devcmd") == "Restarting" and world.jobsets("devcmd") == []
    drained = world.condition("devcmd", "Drained")
    assert (drained["status"], drained["reason"]) == ("False", "PodsActive") and second in drained["message"]
    kubectl("release", pod=second)
    world.run_until(lambda: world.jobsets("devcmd") == ["devcmd-1"], "attempt 1 once the held pod is released")
    assert world.status("devcmd")["restarts"] == 1

    # lose the node of one pod, fail the other: the drain names the lost pod and node; restore ends it
    running = sorted(world.run_until_pods_run("devcmd", 2))
    marooned = next(p for p in world.active_pods("devcmd") if p["metadata"]["name"] == running[0])
    node = marooned["spec"]["nodeName"]
    try:
        kubectl("lose", node=node)
        kubectl("not-ready", node=node)
        kubectl("fail", pod=running[1])
        world.run_until(lambda: world.condition("devcmd", "DrainStuck").get("status") == "True", "DrainStuck")
        stuck = world.condition("devcmd", "DrainStuck")
        assert stuck["reason"] == "PodsOnLostNodes" and running[0] in stuck["message"] and node in stuck["message"]
        assert "devcmd-2" not in world.jobsets("devcmd"), "no next attempt while the lost node holds a pod"
        kubectl("restore", node=node)
    finally:
        world.kwok.restore_node(node)  # the pool is the session's: never leave a node lost
    world.run_until(lambda: world.jobsets("devcmd") == ["devcmd-2"], "attempt 2 once the node is back")

    # the complete label: Succeeded
    world.run_until_pods_run("devcmd", 2)
    kubectl("complete")
    world.run_until(lambda: world.phase("devcmd") == "Succeeded", "Succeeded")
    world.assert_safe()

    # the MPI sample, as shipped: its launcher's complete label ends it Succeeded (successPolicy Any)
    sample = yaml.safe_load((ROOT / "manifests" / "samples" / "job-mpi.yaml").read_text())
    for replicated in sample["spec"]["replicatedJobs"]:  # the session's nodes are shared: no whole-node GPUs
        for container in replicated["template"]["spec"]["template"]["spec"]["containers"]:
            container.pop("resources", None)
    world.create_job("allreduce-bench", sample["spec"])
    world.run_until(lambda: world.phase("allreduce-bench") == "Running", "the MPI sample Running")
    world.run_until_pods_run("allreduce-bench", 3)
    kubectl("complete-launcher")
    world.run_until(lambda: world.phase("allreduce-bench") == "Succeeded", "the MPI sample Succeeded")
    world.assert_safe()
