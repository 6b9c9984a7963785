"""``make dev``: a real local control plane with the CRD, the hooks, JobSet, a scheduler and kwok running.

Starts etcd, kube-apiserver and kube-controller-manager (tests/cluster/controlplane.py), applies
JobSet's CRD and manifests/, restarts kube-controller-manager (its garbage collector then watches the
new kinds at once), creates the hook token Secret with a token of its own (``secrets.token_hex(32)``,
as ``openssl rand -hex 32``: manifests/ ships none), starts the real kube-scheduler, the real JobSet
controller and kwok with its GPU nodes (tests/cluster/{scheduler,jobsetctl,kwokctl}.py), serves the
hooks with gunicorn as their ServiceAccount with that token, applies manifests/samples/job-*.yaml in
``default`` and then runs the Metacontroller stand-in (tests/cluster/world.py) until Ctrl-C, which
stops everything. kwok lets pods "train" for ``--run-seconds`` and then succeed, so ``kubectl get
nvjob -w`` shows Pending -> Running -> Succeeded, ``kubectl get pods -o wide`` the pods bound by the
scheduler to kwok's nodes and ``kubectl get jobsets`` the real JobSet status. The kubeconfig is
written to ``--kubeconfig`` (default ``.dev/kubeconfig``, git-ignored).
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.jobsetctl import JobSetManager
from tests.cluster.kube import REPO, Applier, kustomized_manifests, load_documents, service_account_token
from tests.cluster.kwokctl import Kwok
from tests.cluster.metacontroller import token_secret
from tests.cluster.scheduler import Scheduler
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.server import HookServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=str(REPO / ".dev" / "kubeconfig"))
    parser.add_argument("--run-seconds", type=float, default=20.0, help="how long a pod runs before it succeeds")
    args = parser.parse_args(argv)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    with ControlPlane() as plane:
        print(f"control plane up in {plane.started_in:.1f}s; logs in {plane.logs_dir}", file=sys.stderr)
        applier = Applier(plane.api_client())
        jobset = JobSetManager(plane)
        jobset.install_crds()
        applier.apply_all([o for o in kustomized_manifests() if o["kind"] != "CompositeController"])
        plane.restart_controller_manager()
        hook_token = secrets.token_hex(32)
        applier.apply(token_secret(hook_token))
        token = service_account_token(plane.api_client(), "nvcre-system", "nvcre-hooks")
        Path(args.kubeconfig).parent.mkdir(parents=True, exist_ok=True)
        plane.write_kubeconfig(args.kubeconfig)
        with Scheduler(plane), jobset, Kwok(plane, complete_after=args.run_seconds) as kwok, \
                HookServer(KubeconfigSource(plane, token, "nvcre-hooks"), token=hook_token) as hooks:
            world = ClusterWorld(plane, hooks, "default", kwok)
            for sample in sorted((REPO / "manifests" / "samples").glob("job-*.yaml")):
                doc = load_documents(sample)[0]
                doc["metadata"]["namespace"] = "default"
                applier.apply(doc)
            print(f"ready: export KUBECONFIG={args.kubeconfig}; kubectl get nvjob -w   (Ctrl-C stops)",
                  file=sys.stderr)
            try:
                while not stop["now"]:
                    world.step()
            except KeyboardInterrupt:
                pass
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
