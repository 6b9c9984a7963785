"""``make dev``: a real local control plane with the CRD, the hooks and the stand-ins running.

Starts etcd, kube-apiserver and kube-controller-manager (tests/cluster/controlplane.py), applies the
JobSet CRD and manifests/, creates the hook token Secret with a token of its own (``secrets.token_hex(32)``,
as ``openssl rand -hex 32``: manifests/ ships none), serves the hooks with gunicorn as their
ServiceAccount with that token, applies
manifests/samples/job-*.yaml in ``default`` and then runs the Metacontroller, JobSet and kubelet
stand-ins (tests/cluster/world.py) until Ctrl-C, which stops everything. Pods "train" for
``--run-seconds`` and then succeed, so ``kubectl get nvjob -w`` shows Pending -> Running ->
Succeeded. The kubeconfig is written to ``--kubeconfig`` (default ``.dev/kubeconfig``, git-ignored).
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REPO, Applier, jobset_crd, kustomized_manifests, load_documents, service_account_token
from tests.cluster.metacontroller import token_secret
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
        applier.apply(jobset_crd()[0])
        applier.apply_all([o for o in kustomized_manifests() if o["kind"] != "CompositeController"])
        hook_token = secrets.token_hex(32)
        applier.apply(token_secret(hook_token))
        token = service_account_token(plane.api_client(), "nvcre-system", "nvcre-hooks")
        Path(args.kubeconfig).parent.mkdir(parents=True, exist_ok=True)
        plane.write_kubeconfig(args.kubeconfig)
        with HookServer(KubeconfigSource(plane, token, "nvcre-hooks"), token=hook_token) as hooks:
            world = ClusterWorld(plane, hooks, "default", succeed_after=args.run_seconds)
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
