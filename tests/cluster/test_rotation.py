"""Rotating the hook token on the real control plane while a Job runs (issue 20, item 8).

Metacontroller v4.17.2 reads the token from the Secret only when it builds the controller, and
rebuilds only when the CompositeController's ``spec`` changes or Metacontroller restarts
(``CompositeControllerStandIn``, tests/cluster/metacontroller.py). The hooks read the Secret as the
kubelet projects it into their pod (``SecretVolume``: a new directory swapped in with one rename),
keys ``token`` and ``previous``, and accept both.

- The documented steps (docs/operations.md, "Rotate the token"), with the Job running: no call is
  refused at any step, the Job keeps its pods, and at the end the old token is refused.
- The steps documented before (update the Secret, annotate the CompositeController): the annotation
  rebuilds nothing, Metacontroller keeps sending the old token and every call is refused; only a
  spec change (or a restart) makes it read the Secret again.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import orjson
import pytest
from kubernetes.client import ApiException

from tests.cluster.conftest import HOOK_TOKEN
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REQUEST_TIMEOUT, Applier
from tests.cluster.kwokctl import Kwok
from tests.cluster.metacontroller import CONTROLLER, TOKEN_SECRET, CompositeControllerStandIn, token_secret
from tests.cluster.world import ClusterWorld, KubeconfigSource
from tests.e2e.driver import Call
from tests.e2e.server import HookServer
from tests.support import job_request

pytestmark = pytest.mark.cluster

_names = itertools.count()
PHASE_SECONDS = 2.5
"""How long the world runs in each state of a rotation (the world resyncs every second)."""


class SecretVolume:
    """The token Secret as the kubelet projects it into the hooks' pod, under ``directory``:
    ``sync()`` reads the Secret now and writes its keys as kubelet's atomic writer does (a new
    timestamped directory, ``..data`` re-pointed to it with one rename, then one ``<key> ->
    ..data/<key>`` symlink per key, links of keys no longer there removed)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, directory: Path) -> None:
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.directory = directory
        self._versions = itertools.count()

    @property
    def token_file(self) -> Path:
        return self.directory / "token"

    @property
    def previous_file(self) -> Path:
        return self.directory / "previous"

    def sync(self) -> None:
        namespace, name = TOKEN_SECRET
        secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
        version = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{next(self._versions)}"
        (self.directory / version).mkdir()
        for key, value in data.items():
            (self.directory / version / key).write_bytes(value)
        (self.directory / "..data_tmp").symlink_to(version)
        os.replace(self.directory / "..data_tmp", self.directory / "..data")
        for key in ("token", "previous"):
            link = self.directory / key
            if key in data and not link.is_symlink():
                link.symlink_to(f"..data/{key}")
            elif key not in data and link.is_symlink():
                link.unlink()


@pytest.fixture(scope="module")
def volume(control_plane: ControlPlane, installed: dict[str, str],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretVolume]:
    """The hooks' projected token Secret; the Secret is set back to the tier's token afterwards."""
    if "SKIPPED" in installed["metacontroller-crds"]:
        if os.environ.get("NVCRE_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"token rotation needs the CompositeController: {installed['metacontroller-crds']}")
        pytest.skip(f"token rotation needs the CompositeController: {installed['metacontroller-crds']}")
    projected = SecretVolume(control_plane.api_client(), tmp_path_factory.mktemp("hook-token"))
    projected.sync()
    try:
        yield projected
    finally:
        Applier(control_plane.api_client()).apply(token_secret(HOOK_TOKEN))


@pytest.fixture(scope="module")
def rotating_hooks(control_plane: ControlPlane, hooks_token: str, volume: SecretVolume) -> Iterator[HookServer]:
    """The real gunicorn hook server reading its two token files from the projected Secret."""
    source = KubeconfigSource(control_plane, hooks_token, "nvcre-hooks")
    env = {"NVCRE_HOOK_TOKEN_FILE": str(volume.token_file),
           "NVCRE_HOOK_PREVIOUS_TOKEN_FILE": str(volume.previous_file)}
    with HookServer(source, env=env) as server:
        yield server


def set_secret(plane: ControlPlane, token: str, previous: str = "") -> None:
    """``kubectl apply`` of the Secret with these keys (docs/operations.md)."""
    Applier(plane.api_client()).apply(token_secret(token, previous))


ACCEPTED = 409
"""What a probe past authentication gets: its Job (namespace ``rotation-probe``) is not on the API
server, so the hooks' check of the request against the live Job refuses it as behind the cluster
(``hooks.server.freshness``); a wrong token gets 401 before anything is read."""


def hook_status(hooks: HookServer, token: str) -> int:
    """The status of one /sync with ``token`` (a valid request for a Job the API server does not
    hold: ``ACCEPTED`` once authenticated, 401 otherwise)."""
    return hooks.post("/sync", orjson.dumps(job_request(namespace="rotation-probe")), token=token)[0]


def behind(call: Call) -> bool:
    """A call the hooks refused because the stand-in's cache was behind the API server (a 409 after
    a status write, until its next list): accepted, answered later; not a refusal of the token."""
    return call.reply.status == 409 and b"behind the cluster" in bytes(call.reply.body or b"")


def auth_failures(hooks: HookServer) -> float:
    for line in hooks.metrics().splitlines():
        if line.startswith("nvcre_hook_auth_failures_total "):
            return float(line.split()[1])
    return 0.0


class Rotation:
    """A world whose Metacontroller stand-in builds its controller from the CompositeController
    and the Secret, and sends the token it built with."""

    def __init__(self, plane: ControlPlane, hooks: HookServer, kwok: Kwok) -> None:
        self.metacontroller = CompositeControllerStandIn(plane.api_client())
        self.world = ClusterWorld(plane, hooks, f"rotation-{next(_names)}", kwok, resync_period=1.0)
        self.metacontroller.drive(self.world.driver)

    def run(self, seconds: float = PHASE_SECONDS) -> list[Call]:
        """Steps the world (Metacontroller observing its CompositeController before each step);
        returns the hook calls made."""
        mark = len(self.world.driver.calls)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.metacontroller.drive(self.world.driver)
            self.world.step()
        return self.world.driver.calls[mark:]


def test_the_documented_rotation_refuses_no_call_while_a_job_runs(
        control_plane: ControlPlane, rotating_hooks: HookServer, volume: SecretVolume, kwok: Kwok) -> None:
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    set_secret(control_plane, old)
    volume.sync()
    rotation = Rotation(control_plane, rotating_hooks, kwok)  # Metacontroller built with the old token
    world = rotation.world
    world.create_job("train", workers=2)
    running = set(world.run_until_pods_run("train", 2))
    # the real JobSet can still say nothing of its pods when they already run: the phase follows it
    world.run_until(lambda: world.phase("train") == "Running", "Running")
    failures_before = auth_failures(rotating_hooks)

    phases: dict[str, list[Call]] = {}
    # 1. The Secret gets the new token in `token` and the old one in `previous`, in one apply.
    set_secret(control_plane, new, previous=old)
    phases["1. Secret updated, the hooks' volume not yet"] = rotation.run()
    volume.sync()  # the kubelet's refresh (or the hooks' rollout restart): both tokens accepted
    phases["1. the hooks accept both tokens"] = rotation.run()
    assert rotation.metacontroller.token == old, "the Secret changed, Metacontroller still sends the old token"
    # 2. Metacontroller restarts: it builds the controller again and reads the new token.
    rotation.metacontroller.restart()
    phases["2. Metacontroller rebuilt with the new token"] = rotation.run()
    assert world.driver.token == new
    # 3. `previous` emptied: once the hooks' volume has it, the old token is refused.
    set_secret(control_plane, new)
    phases["3. previous emptied, the hooks' volume not yet"] = rotation.run()
    volume.sync()
    phases["3. only the new token"] = rotation.run()

    for phase, calls in phases.items():
        assert calls, f"{phase}: no hook call was made in {PHASE_SECONDS} s"
        refused = [(c.hook, c.reply.status) for c in calls if c.reply.status != 200 and not behind(c)]
        assert not refused, f"{phase}: calls not answered 200: {refused}"
    assert auth_failures(rotating_hooks) == failures_before, "no call was refused at any step"
    assert hook_status(rotating_hooks, old) == 401, "the old token is refused at the end"
    assert hook_status(rotating_hooks, new) == ACCEPTED
    assert world.phase("train") == "Running"
    still = {p["metadata"]["name"] for p in world.active_pods("train")}
    assert still == running, "the Job kept its pods through the rotation"
    world.assert_safe()


def test_the_old_steps_refuse_every_call_until_a_spec_change_rebuilds(
        control_plane: ControlPlane, rotating_hooks: HookServer, volume: SecretVolume, kwok: Kwok) -> None:
    """What docs/operations.md said before: update the Secret, then annotate the CompositeController.
    Metacontroller compares the spec, finds it equal and keeps the token it built with: every call
    is a 401 until the spec changes (or Metacontroller restarts)."""
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    set_secret(control_plane, old)
    volume.sync()
    metacontroller = CompositeControllerStandIn(control_plane.api_client())
    custom = kubernetes.client.CustomObjectsApi(control_plane.api_client())

    def patch(body: dict[str, Any]) -> None:
        custom.patch_cluster_custom_object("metacontroller.k8s.io", "v1alpha1", "compositecontrollers", CONTROLLER,
                                           body, _request_timeout=REQUEST_TIMEOUT)

    set_secret(control_plane, new)
    volume.sync()
    patch({"metadata": {"annotations": {"nvcre.nvidia.com/token-rotated": str(time.time())}}})
    assert not metacontroller.observe(), "an annotation changes no spec: no rebuild"
    assert metacontroller.token == old and metacontroller.builds == 1
    assert hook_status(rotating_hooks, metacontroller.token) == 401, "every call refused"

    resync = metacontroller.spec["resyncPeriodSeconds"]
    try:
        patch({"spec": {"resyncPeriodSeconds": resync + 1}})
        assert metacontroller.observe(), "a spec change rebuilds the controller"
        assert metacontroller.token == new
        assert hook_status(rotating_hooks, metacontroller.token) == ACCEPTED
    finally:
        with contextlib.suppress(ApiException):
            patch({"spec": {"resyncPeriodSeconds": resync}})
