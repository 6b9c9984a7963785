"""``make dev``: a real local control plane with the CRD, the hooks, JobSet, a scheduler and kwok running.

Starts etcd, kube-apiserver and kube-controller-manager (tests/cluster/controlplane.py), applies
JobSet's CRD and manifests/, restarts kube-controller-manager (its garbage collector then watches the
new kinds at once), creates the hook token Secret with a token of its own (``secrets.token_hex(32)``,
as ``openssl rand -hex 32``: manifests/ ships none), starts the real kube-scheduler, the real JobSet
controller and kwok with its GPU nodes ``kwok-node-0`` .. ``kwok-node-11`` (tests/cluster/{scheduler,
jobsetctl,kwokctl}.py), serves the hooks with gunicorn as their ServiceAccount with that token, applies
manifests/samples/job-*.yaml in ``default`` and then runs the Metacontroller stand-in
(tests/cluster/world.py) as Metacontroller runs, its informers watching every namespace (``serve``,
``cluster_wide``: a namespace created later is served at once; fresh caches, no simulated lag), with
the tier's invariants checked every ``CHECK_SECONDS``, until Ctrl-C, SIGINT, SIGTERM or SIGHUP, which
stop everything it started.

The hooks run with the production defaults (docs/operations.md, section 2), not the tests' short
timeouts; every ``NVCRE_*`` of the environment is passed on (``hook_env``). Where they listen, their
metrics port and their log file are printed at startup (``startup_lines``). The hooks' Deployment
stays at 0/2: no kubelet runs images here (kwok only plays kubelets), the hooks run as a local gunicorn.

Pods run until told to end, as on the cluster tier (docs/operations.md, "Trying it on make dev"): the
label ``nvcre.test/complete=true`` makes kwok succeed one, the label
``pod-container-running-failed.stage.kwok.x-k8s.io=true`` with the annotation ``...-failed.stage.kwok
.x-k8s.io/exit-code`` fails it with that exit code; a finalizer holds one Terminating; removing a node's
``type=kwok`` label (and marking it not Ready) loses it. ``--run-seconds N`` makes every Running pod
succeed after N seconds instead. The kubeconfig is written to ``--kubeconfig`` (default
``.dev/kubeconfig``, git-ignored).

``--kueue`` adds the real Kueue (built like the other parts, ``make kueue``): the ``manifests-kueue``
overlay's RBAC, a ClusterQueue ``dev-cq`` of ``KUEUE_GPUS`` GPUs with the LocalQueue ``team`` in
``default``, the stand-in serving Workload children, and the samples of ``manifests/samples/kueue/``
(labelled with the queue: admitted, then run). ``--gang`` adds gang scheduling: the ``manifests-gang``
overlay's RBAC, the stand-in serving PodGroup children (the control plane always serves
``scheduling.k8s.io/v1beta1`` with ``GenericWorkload``), and the samples of ``manifests/samples/gang/``
(a gang larger than the free nodes: it waits, then binds all together once a sample ends).

A stop removes the control plane's folder and keeps the hooks' log as ``hooks.log`` beside the
kubeconfig (printed on the way out).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from hooks.server.config import MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD, Settings
from podread.cache import DEFAULT_TTL_SECONDS
from podread.live import DEFAULT_TIMEOUT_SECONDS
from tests.cluster.controlplane import ControlPlane
from tests.cluster.jobsetctl import JobSetManager
from tests.cluster.kube import (
    REPO,
    Applier,
    kustomized_manifests,
    load_documents,
    service_account_token,
)
from tests.cluster.kueue import Kueue
from tests.cluster.kwokctl import Kwok
from tests.cluster.metacontroller import token_secret
from tests.cluster.metacontroller_parts import FRESH
from tests.cluster.scheduler import Scheduler
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.server import HookServer

PRODUCTION_ENV = {
    "NVCRE_CACHE_TTL_SECONDS": f"{DEFAULT_TTL_SECONDS:g}",
    "NVCRE_RESYNC_SECONDS": f"{Settings().resync_seconds:g}",
    "NVCRE_API_TIMEOUT_SECONDS": f"{DEFAULT_TIMEOUT_SECONDS:g}",
    "NVCRE_LOG_LEVEL": Settings().log_level,
    "MALLOC_ARENA_MAX": str(MALLOC_ARENA_MAX),
    "MALLOC_MMAP_THRESHOLD_": str(MALLOC_MMAP_THRESHOLD),
}
"""The hooks' own defaults (hooks/server config, docs/operations.md section 2), set explicitly so that
HookServer's short test timeouts do not apply, and the image's ``MALLOC_ARENA_MAX`` and
``MALLOC_MMAP_THRESHOLD_`` (the Dockerfile)."""

OWN_ENV = ("NVCRE_HOOK_TOKEN_FILE", "NVCRE_HOOK_PREVIOUS_TOKEN_FILE")
"""``NVCRE_*`` that make dev sets itself: the token it created is the one the stand-in sends."""

KUEUE_GPUS = 16
"""The ClusterQueue's GPUs in ``--kueue``: the queued sample's 2 workers of 8 GPUs each."""
CHECK_SECONDS = 0.5
"""How often the tier's per-step invariants are checked while the stand-in serves."""
DEV_NODES = 12
"""The samples take 8 nodes (one pod per node); 4 more leave room for a Job of your own."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stop(Exception):
    """A stop signal arrived: unwind, stopping every process started (the context managers)."""


def hook_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the hooks get on top of HookServer's: ``PRODUCTION_ENV``, then every
    ``NVCRE_*`` of ``environ`` except the token files make dev writes itself."""
    env = dict(PRODUCTION_ENV)
    env.update({k: v for k, v in environ.items() if k.startswith("NVCRE_") and k not in OWN_ENV})
    return env


def startup_lines(hooks: HookServer, env: Mapping[str, str]) -> list[str]:
    """What make dev prints once the hooks are ready: where they listen, their metrics, their log,
    the settings they run with, and why their Deployment shows 0/2."""
    metrics_port = env.get("NVCRE_METRICS_PORT", str(hooks.metrics_port))
    settings = " ".join(f"{k}={v}" for k, v in sorted(env.items()))
    return [
        f"hooks: {hooks.url} (POST /sync, /finalize; GET /healthz, /readyz)",
        f"hooks metrics: http://127.0.0.1:{metrics_port}/metrics",
        f"hooks log: {hooks.log_path}",
        f"hooks settings: {settings}",
        "note: the Deployment nvcre-system/nvcre-hooks stays 0/2: no kubelet runs images on make dev "
        "(kwok only plays kubelets); the hooks run as the local gunicorn above",
    ]


@dataclass(frozen=True)
class Installed:
    """What ``install`` made: the JobSet controller (not started), the hook token Metacontroller's
    stand-in sends, a token of the hooks' ServiceAccount."""

    jobset: JobSetManager
    hook_token: str
    service_token: str


OVERLAY_RBAC = {"kueue": REPO / "manifests-kueue" / "kueue-rbac.yaml",
                "gang": REPO / "manifests-gang" / "podgroup-rbac.yaml"}
"""What each option's overlay adds to manifests/ besides its CompositeController patch (the stand-in
plays Metacontroller, told the child types itself)."""


@dataclass(frozen=True)
class Options:
    """What ``make dev`` runs beside the base: real Kueue, gang scheduling."""

    kueue: bool = False
    gang: bool = False

    def samples(self) -> list[Path]:
        """The sample Jobs applied in ``default``: ``manifests/samples/job-*.yaml``, then those of
        each option's folder (``samples/kueue/``, ``samples/gang/``)."""
        folder = REPO / "manifests" / "samples"
        found = sorted(folder.glob("job-*.yaml"))
        for name, wanted in (("kueue", self.kueue), ("gang", self.gang)):
            if wanted:
                found += sorted((folder / name).glob("job-*.yaml"))
        return found


def install(plane: ControlPlane, *, token_seconds: int = 3600, options: Options = Options()) -> Installed:
    """Installs what the hooks and the Metacontroller stand-in need on ``plane``: JobSet's CRD,
    manifests/ without the CompositeController (the stand-in plays Metacontroller) and the RBAC of
    each option's overlay, a restart of kube-controller-manager (its garbage collector then watches
    the new kinds at once), the hook token Secret with a token of its own
    (``secrets.token_hex(32)``, as ``openssl rand -hex 32``) and a TokenRequest token of the hooks'
    ServiceAccount valid ``token_seconds``."""
    admin = plane.api_client()
    applier = Applier(admin)
    jobset = JobSetManager(plane)
    jobset.install_crds()
    applier.apply_all([o for o in kustomized_manifests() if o["kind"] != "CompositeController"])
    for name, wanted in (("kueue", options.kueue), ("gang", options.gang)):
        if wanted:
            applier.apply_all(load_documents(OVERLAY_RBAC[name]))
    plane.restart_controller_manager()
    hook_token = secrets.token_hex(32)
    applier.apply(token_secret(hook_token))
    token = service_account_token(admin, "nvcre-system", "nvcre-hooks", seconds=token_seconds)
    return Installed(jobset, hook_token, token)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    for other in STOP_SIGNALS:  # one clean stop: later signals do not interrupt the teardown
        signal.signal(other, signal.SIG_IGN)
    raise Stop(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=str(REPO / ".dev" / "kubeconfig"))
    parser.add_argument("--run-seconds", type=float, default=0.0,
                        help="succeed every Running pod after this many seconds (default 0: pods run until "
                             "labelled nvcre.test/complete=true or failed)")
    parser.add_argument("--nodes", type=int, default=DEV_NODES,
                        help=f"kwok's GPU nodes, kwok-node-0 .. kwok-node-<N-1> (default {DEV_NODES})")
    parser.add_argument("--kueue", action="store_true",
                        help=f"run the real Kueue too: ClusterQueue dev-cq ({KUEUE_GPUS} GPUs), LocalQueue team in "
                             "default, the samples of manifests/samples/kueue/")
    parser.add_argument("--gang", action="store_true",
                        help="gang scheduling too: PodGroup children, the samples of manifests/samples/gang/")
    args = parser.parse_args(argv)
    for signum in STOP_SIGNALS:  # explicit: a shell's `make dev &` starts it with SIGINT ignored
        signal.signal(signum, _raise_stop)
    try:
        run(args.kubeconfig, args.run_seconds or None, args.nodes, Options(kueue=args.kueue, gang=args.gang))
    except (Stop, KeyboardInterrupt) as why:  # a stop before the control plane was up
        print(f"stopping ({why or 'SIGINT'})", file=sys.stderr)
    print("stopped", file=sys.stderr)
    return 0


def run(kubeconfig: str, run_seconds: float | None, nodes: int = DEV_NODES, options: Options = Options()) -> None:
    """Starts everything (module doc) and serves until a stop signal raises ``Stop``. The stop is
    caught inside the control plane's block, so that the plane takes it as a clean exit and removes
    its folder (an exception there keeps it for a post-mortem); the hooks' log is copied out first."""
    with ControlPlane() as plane:
        try:
            print(f"control plane up in {plane.started_in:.1f}s; logs in {plane.logs_dir}", file=sys.stderr)
            serve(plane, kubeconfig, run_seconds, nodes, options)
        except (Stop, KeyboardInterrupt) as why:
            print(f"stopping ({why or 'SIGINT'})", file=sys.stderr)


def serve(plane: ControlPlane, kubeconfig: str, run_seconds: float | None, nodes: int, options: Options) -> None:
    """Installs, starts the parts and steps the stand-in until a stop signal raises ``Stop``."""
    admin = plane.api_client()
    applier = Applier(admin)
    installed = install(plane, options=options)
    jobset, hook_token, token = installed.jobset, installed.hook_token, installed.service_token
    Path(kubeconfig).parent.mkdir(parents=True, exist_ok=True)
    plane.write_kubeconfig(kubeconfig)
    env = hook_env(os.environ)
    with contextlib.ExitStack() as parts:
        parts.enter_context(Scheduler(plane))
        parts.enter_context(jobset)
        kwok = parts.enter_context(Kwok(plane, nodes=nodes, complete_after=run_seconds))
        if options.kueue:
            kueue = parts.enter_context(Kueue(plane))
            kueue.queue("default", "team", gpus=KUEUE_GPUS, cluster_queue="dev-cq")
        hooks = parts.enter_context(HookServer(KubeconfigSource(plane, token, "nvcre-hooks"), token=hook_token,
                                               env=env))
        parts.callback(keep_log, hooks, Path(kubeconfig).parent / "hooks.log")
        world = ClusterWorld(plane, hooks, "default", kwok, workloads=options.kueue, podgroups=options.gang,
                             staleness=FRESH)
        world.backend.cluster_wide = True
        for sample in options.samples():
            doc = load_documents(sample)[0]
            doc["metadata"]["namespace"] = "default"
            applier.apply(doc)
        for line in startup_lines(hooks, env):
            print(line, file=sys.stderr)
        print(f"nodes: {' '.join(kwok.nodes())}", file=sys.stderr)
        print(f"ready: export KUBECONFIG={kubeconfig}; kubectl get nvjob -A -w   "
              f"(Ctrl-C or kill -INT {os.getpid()} stops)", file=sys.stderr)
        stop = threading.Event()
        serving = threading.Thread(target=world.driver.serve, args=(stop,), name="metacontroller", daemon=True)
        serving.start()
        try:
            while serving.is_alive():
                world.check()
                time.sleep(CHECK_SECONDS)
        finally:
            stop.set()
            serving.join(30)


def keep_log(hooks: HookServer, destination: Path) -> None:
    """Stops the hooks (their log then ends) and copies their log to ``destination``, which outlives
    the hooks' temporary folder; says where."""
    hooks.stop()
    with contextlib.suppress(OSError):
        shutil.copyfile(hooks.log_path, destination)
        print(f"hooks log kept in {destination}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
