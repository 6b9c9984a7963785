"""Fixtures of the cluster tier (each module sets ``pytestmark = pytest.mark.cluster``): one real
control plane for the session, with the real JobSet controller, kube-scheduler and kwok's nodes.

The binaries are built on first use (tests/cluster/{controlplane,jobset,kwok}/build.sh, cached
outside the work tree). Without Go and without a cache the tier is skipped with the reason, unless
``NVCRE_REQUIRE_CLUSTER=1`` (``make test-cluster`` sets it), where it fails instead.
"""

from __future__ import annotations

import itertools
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.cluster.controlplane import ControlPlane, ControlPlaneError, binaries_dir
from tests.cluster.jobsetctl import JobSetError, JobSetManager, jobset_crds, jobset_dir
from tests.cluster.kube import METACONTROLLER_CRDS, Applier, kustomized_manifests, load_documents
from tests.cluster.kube import service_account_token as sa_token
from tests.cluster.kueue import Kueue, KueueError, kueue_dir
from tests.cluster.kwokctl import Kwok, KwokError, kwok_dir
from tests.cluster.metacontroller import token_secret
from tests.cluster.order import ordered
from tests.cluster.scheduler import Scheduler
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.server import HookServer
from tests.support import crdschema

HOOK_TOKEN = secrets.token_hex(32)
"""The tier's own hook token, new each session: manifests/ ships no token, so ``installed`` puts this
one in the Secret the CompositeController names, as an operator does (docs/operations.md)."""


def missing(what: str, tier: str, exc: Exception) -> NoReturn:
    """A binary the tier needs cannot be had: a failure under ``NVCRE_REQUIRE_CLUSTER=1`` (CI,
    ``make test-cluster``), else a skip that says which ``tier`` of tests it skips. Never returns."""
    if os.environ.get("NVCRE_REQUIRE_CLUSTER") == "1":
        pytest.fail(f"the cluster tier needs {what}: {exc}")
    pytest.skip(f"no {what} binaries ({tier} skipped): {exc}")


_names = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tier's files longest first (``tests.cluster.order``: the order ``make test-cluster``'s
    workers take them in); every other test keeps its place."""
    items[:] = ordered(items)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager, started once for the session."""
    try:
        binaries = binaries_dir()
    except ControlPlaneError as exc:
        missing("the control plane", "cluster tier", exc)
    plane = ControlPlane(binaries)
    plane.start()
    print(f"\ncontrol plane: kube-apiserver ready in {plane.started_in:.1f}s (logs in {plane.logs_dir})",
          file=sys.stderr)
    try:
        yield plane
    finally:
        plane.close()


def metacontroller_crds() -> Path:
    """Metacontroller's CRDs: ``$NVCRE_SHARED_DIR/reference`` when set (a work tree elsewhere), else
    ``../shared/reference``."""
    override = crdschema.reference_path(METACONTROLLER_CRDS.name)
    return override if override.is_file() else METACONTROLLER_CRDS


def built_jobset() -> Path:
    """The folder of the built JobSet manager; skips (or fails, when the tier is required) without it."""
    try:
        return jobset_dir()
    except JobSetError as exc:
        missing("JobSet", "cluster tier", exc)


@pytest.fixture(scope="session")
def installed(control_plane: ControlPlane) -> dict[str, str]:
    """JobSet's CRD (from its module), Kueue's CRDs (when Kueue is built), Metacontroller's CRDs
    (when ../shared/reference has them), the whole of manifests/ applied, and the hook token Secret
    manifests/ does not ship, created with the tier's own token (``HOOK_TOKEN``) before the
    CompositeController that names it; then kube-controller-manager is restarted, so its garbage
    collector watches every one of these kinds from the start (it learns new ones only every 30 s,
    and meanwhile the JobSets' Jobs are not collected). Returns what came from where (and what was
    skipped)."""
    applier = Applier(control_plane.api_client())
    folder = built_jobset()
    applier.apply_all(jobset_crds(folder))
    notes = {"jobset-crd": str(folder / "crd")}
    try:
        for path in sorted((kueue_dir(build=False) / "crd").glob("*.yaml")):
            applier.apply_all(load_documents(path))
        notes["kueue-crds"] = "applied"
    except KueueError as exc:
        notes["kueue-crds"] = f"not built yet ({exc}); applied by the Kueue tests"
    objects = kustomized_manifests()
    assert not [o for o in objects if o["kind"] == "Secret"], "manifests/ ships no token"
    crds = metacontroller_crds()
    if crds.is_file():
        applier.apply_all(load_documents(crds))
        notes["metacontroller-crds"] = str(crds)
    else:
        objects = [o for o in objects if o["kind"] != "CompositeController"]
        notes["metacontroller-crds"] = f"SKIPPED: {crds} is missing, CompositeController not applied"
        print(f"\n{notes['metacontroller-crds']}", file=sys.stderr)
    first = [o for o in objects if o["kind"] in ("Namespace", "CustomResourceDefinition")]
    applier.apply_all(first)
    applier.apply(token_secret(HOOK_TOKEN))
    applier.apply_all([o for o in objects if o not in first])
    notes["hook-token"] = "generated for the session (HOOK_TOKEN)"
    control_plane.restart_controller_manager()
    return notes


def built_kueue(tier: str = "Kueue tests") -> Path:
    """The folder of the built Kueue; skips ``tier`` (or fails it, when the cluster tier is required)
    without it."""
    try:
        return kueue_dir()
    except KueueError as exc:
        missing("Kueue", tier, exc)


@pytest.fixture(scope="module")
def kueue(control_plane: ControlPlane, installed: dict[str, str]) -> Iterator[Kueue]:
    """Kueue's manager for the module that asks for it (each module its own, as its queues are), with
    priority classes low and high; its webhook configurations removed afterwards."""
    with Kueue(control_plane, built_kueue()) as manager:
        manager.priority_class("low", 10)
        manager.priority_class("high", 1000)
        yield manager


@pytest.fixture(scope="session")
def scheduler(control_plane: ControlPlane) -> Iterator[Scheduler]:
    """The real kube-scheduler, for the session."""
    with Scheduler(control_plane) as running:
        yield running


@pytest.fixture(scope="session")
def jobset_manager(control_plane: ControlPlane, installed: dict[str, str]) -> Iterator[JobSetManager]:
    """The real JobSet controller and its webhooks, for the session."""
    with JobSetManager(control_plane, built_jobset()) as manager:
        yield manager


@pytest.fixture(scope="session")
def kwok(control_plane: ControlPlane, scheduler: Scheduler, jobset_manager: JobSetManager) -> Iterator[Kwok]:
    """kwok and its pool of GPU nodes, for the session (after the scheduler and JobSet: a world needs
    all three)."""
    try:
        folder = kwok_dir()
    except KwokError as exc:
        missing("kwok", "cluster tier", exc)
    with Kwok(control_plane, folder) as running:
        yield running


@pytest.fixture(scope="session")
def hooks_token(control_plane: ControlPlane, installed: dict[str, str]) -> str:
    """A TokenRequest token of the ServiceAccount manifests/rbac.yaml binds (nvcre-system/nvcre-hooks)."""
    return sa_token(control_plane.api_client(), "nvcre-system", "nvcre-hooks")


@pytest.fixture(scope="session")
def hooks(control_plane: ControlPlane, hooks_token: str) -> Iterator[HookServer]:
    """The real gunicorn hook server reading the real API server as the hooks' ServiceAccount, for the
    session: every world has a namespace and Jobs of its own, and the hooks keep nothing between calls
    but caches of what the server holds, so one server serves every module (a start and a stop cost
    about 10 s on 2 shared cores). A module that needs other settings overrides ``hooks`` with a
    module fixture of its own (test_watch.py) or names its own (test_api_load.py, test_rotation.py)."""
    source = KubeconfigSource(control_plane, hooks_token, "nvcre-hooks")
    with HookServer(source, token=HOOK_TOKEN) as server:
        yield server


@pytest.fixture
def world(control_plane: ControlPlane, hooks: HookServer, kwok: Kwok) -> ClusterWorld:
    """A world in a namespace of its own, on the real JobSet controller, scheduler and kwok."""
    return ClusterWorld(control_plane, hooks, f"cluster-{next(_names)}", kwok)
