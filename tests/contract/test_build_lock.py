"""Two builds of a cluster-tier part at once never break each other (tests/cluster/*/build.sh with
tests/cluster/build-lock.sh): the second caller waits for the first, then prints the same folder and
builds nothing; a failed build leaves no half folder and no private folder behind.

The real scripts run against a temporary cache (``NVCRE_CACHE_HOME``) with a stub ``go`` first on
``PATH``: ``go build -o OUT`` logs OUT, waits until the test releases it, then writes an executable
there (or fails when told); ``go list -m`` names a fake module folder holding what the scripts copy
(CRDs, webhook configurations, kwok's stages). Nothing touches the real cache or builds Kubernetes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

CLUSTER = Path(__file__).resolve().parents[2] / "tests" / "cluster"

STUB_GO = r"""#!/usr/bin/env bash
set -eu
case "$1" in
  build)
    out="" prev=""
    for arg in "$@"; do [[ "$prev" == "-o" ]] && out="$arg"; prev="$arg"; done
    echo "$(basename "$out")" >> "$STUB_LOG"
    for m in one two three; do echo "go: downloading example.com/$m v1.0.0" >&2; done
    for _ in $(seq 1200); do [[ -e "$STUB_RELEASE" ]] && break; sleep 0.05; done
    if [[ -n "${STUB_FAIL:-}" ]]; then echo "stub go: failing as told" >&2; exit 1; fi
    printf '#!/bin/sh\n' > "$out" && chmod +x "$out";;
  list) echo "$STUB_MODULE";;
  *) echo "stub go: unexpected: $*" >&2; exit 2;;
esac
"""

MODULE_FILES = ("config/components/crd/bases/crd.yaml", "config/components/webhook/manifests.yaml",
                "config/components/webhook/patches/patch.yaml", "kustomize/stage/node/node.yaml",
                "kustomize/stage/pod/pod.yaml", "kustomize/stage/pod/testdata/case.yaml")


@dataclass(frozen=True)
class Part:
    """One build script: its folder under tests/cluster, the cache folder it builds into, the
    binaries it builds and the variable that forbids building."""

    script: str
    cache_dir: str
    binaries: tuple[str, ...]
    no_build_env: str


PARTS = (
    Part("controlplane", "control-plane", ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"),
         "NVCRE_CONTROL_PLANE_NO_BUILD"),
    Part("jobset", "jobset", ("jobset-manager",), "NVCRE_JOBSET_NO_BUILD"),
    Part("kueue", "kueue", ("kueue",), "NVCRE_KUEUE_NO_BUILD"),
    Part("kwok", "kwok", ("kwok",), "NVCRE_KWOK_NO_BUILD"),
    Part("helm", "helm", ("helm",), "NVCRE_HELM_NO_BUILD"),
)


class Sandbox:
    """A temporary cache, the stub ``go`` and the environment the scripts run with."""

    def __init__(self, root: Path, part: Part) -> None:
        self.root, self.part = root, part
        self.cache = root / "cache"
        self.log = root / "go-builds.log"
        self.release = root / "release"
        bin_dir = root / "bin"
        bin_dir.mkdir()
        (bin_dir / "go").write_text(STUB_GO)
        (bin_dir / "go").chmod(0o755)
        module = root / "module"
        for name in MODULE_FILES:
            (module / name).parent.mkdir(parents=True, exist_ok=True)
            (module / name).write_text("kind: Fake\n")
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("NVCRE_", "GOMODCACHE", "GOCACHE", "XDG_CACHE_HOME"))}
        self.env.update({"NVCRE_CACHE_HOME": str(self.cache), "PATH": f"{bin_dir}:{os.environ['PATH']}",
                         "STUB_LOG": str(self.log), "STUB_RELEASE": str(self.release), "STUB_MODULE": str(module)})

    def start(self, name: str, **env: str) -> tuple[subprocess.Popen[str], Path]:
        """Starts the part's build.sh; its stderr goes to a file (returned) the test can watch."""
        stderr = self.root / f"{name}.stderr"
        with open(stderr, "w") as err:
            process = subprocess.Popen(["bash", str(CLUSTER / self.part.script / "build.sh")], env={**self.env, **env},
                                       stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        return process, stderr

    def finish(self, process: subprocess.Popen[str], stderr: Path) -> str:
        """The folder the script printed last; fails with its stderr when it did not succeed."""
        out = wait_for_exit(process)
        assert process.returncode == 0, stderr.read_text()
        return out.strip().splitlines()[-1]

    def run(self, name: str, **env: str) -> tuple[int, str]:
        """Runs the part's build.sh to its end: its exit code and stderr."""
        process, stderr = self.start(name, **env)
        wait_for_exit(process)
        return process.returncode, stderr.read_text()

    def builds(self) -> list[str]:
        """The outputs the stub ``go build`` was asked for, in order."""
        return self.log.read_text().split() if self.log.exists() else []

    def leftovers(self) -> list[str]:
        """Temporary folders left in the part's cache folder (none after any build)."""
        folder = self.cache / self.part.cache_dir
        if not folder.exists():
            return []
        return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def stop(process: subprocess.Popen[str]) -> None:
    """Kills a script still running and its stub ``go`` (its own process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for_exit(process: subprocess.Popen[str], seconds: float = 60.0) -> str:
    """The script's stdout once it exited; killed (with its stub) when it takes longer than ``seconds``."""
    try:
        out, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        stop(process)
        raise
    return out


def wait_until(done: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


@pytest.fixture(params=PARTS, ids=lambda part: part.script)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    if shutil.which("flock") is None:
        pytest.fail("flock (util-linux) is needed by tests/cluster/build-lock.sh")
    return Sandbox(tmp_path, request.param)


def test_a_second_caller_waits_for_the_first_build_and_builds_nothing(sandbox: Sandbox) -> None:
    first, first_err = sandbox.start("first")
    processes = [first]
    try:
        wait_until(lambda: bool(sandbox.builds()), "the first caller builds")
        second, second_err = sandbox.start("second")
        processes.append(second)
        wait_until(lambda: "waiting for it" in second_err.read_text(), "the second caller waits for the lock")
        sandbox.release.touch()
        folders = {sandbox.finish(first, first_err), sandbox.finish(second, second_err)}
    finally:
        sandbox.release.touch()
        for process in processes:
            stop(process)
    folder = sandbox.cache / sandbox.part.cache_dir
    assert len(folders) == 1
    built = Path(folders.pop())
    assert built.parent == folder, built  # the temporary cache, never the real one
    assert sorted(sandbox.builds()) == sorted(sandbox.part.binaries), "built once"
    assert all(os.access(built / name, os.X_OK) for name in sandbox.part.binaries)
    assert "built meanwhile by another caller" in second_err.read_text()
    # a line when each binary starts and one when it ends, instead of go's module downloads
    said = first_err.read_text()
    assert "go: downloading" not in said, said
    for name in sandbox.part.binaries:
        assert f": building {name} ...\n" in said and f": {name} built in " in said, said
        assert "(3 modules downloaded)" in said.split(f": {name} built in ", 1)[1].splitlines()[0]
    assert sandbox.leftovers() == []
    # a third caller finds the build without the lock
    third, third_err = sandbox.start("third")
    assert sandbox.finish(third, third_err) == str(built)
    assert "cached in" in third_err.read_text()
    assert len(sandbox.builds()) == len(sandbox.part.binaries)


def test_a_failed_build_leaves_nothing_and_the_next_caller_builds(sandbox: Sandbox) -> None:
    folder = sandbox.cache / sandbox.part.cache_dir
    code, err = sandbox.run("no-build", **{sandbox.part.no_build_env: "1"})
    assert code == 4, err
    assert not folder.exists()

    sandbox.release.touch()
    code, err = sandbox.run("failed", STUB_FAIL="1")
    assert code != 0
    assert "failing as told" in err
    assert sorted(p.name for p in folder.iterdir()) == [f"{_version(folder)}.lock"]  # no half build

    killed = folder / f"{_version(folder)}.tmp.AbC123"  # as a build killed before its trap ran leaves it
    killed.mkdir()
    after, after_err = sandbox.start("after")
    built = Path(sandbox.finish(after, after_err))
    assert all(os.access(built / name, os.X_OK) for name in sandbox.part.binaries)
    assert sandbox.leftovers() == []


def _version(folder: Path) -> str:
    """The version folder name the part's lock file is named after (``v1.37.2`` of ``v1.37.2.lock``)."""
    (lock,) = folder.glob("*.lock")
    return lock.name.removesuffix(".lock")
