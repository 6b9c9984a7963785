"""``kubectl nvjob`` is installable as a krew plugin: ``plugins/krew/nvjob.yaml`` passes the rules krew
applies before it installs a manifest (``sigs.k8s.io/krew`` ``internal/index/validation``) and the
krew index's check, and the archive ``plugins/krew/build.py`` builds, unpacked as krew unpacks it
(the manifest's ``files``, ``bin`` linked into a bin folder), is a ``kubectl-nvjob`` that runs.
"""

from __future__ import annotations

import copy
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.krew import build

MANIFEST: dict[str, Any] = yaml.safe_load(build.MANIFEST.read_text())


def test_the_manifest_passes_krews_validation() -> None:
    assert build.validate(MANIFEST, build.MANIFEST.name) == []
    project = tomllib.loads((build.ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert MANIFEST["spec"]["version"] == f"v{project}", "the project's version, as krew writes versions"
    (platform,) = MANIFEST["spec"]["platforms"]
    assert platform["uri"].endswith(f"/{build.version()}/{build.archive_name(build.version())}")
    assert build.written(build.MANIFEST.read_text(), platform["sha256"], build.version()) == \
        build.MANIFEST.read_text(), "what a release writes keeps the rest of the file as it is"


def broken(path: str, value: Any) -> dict[str, Any]:
    """The manifest with the value at ``path`` (dots; a number indexes a list) replaced, or removed for ``...``."""
    manifest = copy.deepcopy(MANIFEST)
    *parents, last = path.split(".")
    node: Any = manifest
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return manifest


@pytest.mark.parametrize(("path", "value", "error"), [
    ("apiVersion", "krew.googlecode.github.com/v1alpha2", "apiVersion="),
    ("kind", "Plugins", "only 'Plugin' is supported"),
    ("metadata.name", "nv-job", "plugin should be named 'nvjob'"),
    ("spec.shortDescription", "two\nlines", "line breaks"),
    ("spec.shortDescription", ..., "short description"),
    ("spec.version", "0.1.0", "failed to parse plugin version"),
    ("spec.version", "v0.1", "failed to parse plugin version"),
    ("spec.version", "v01.1.0", "failed to parse plugin version"),
    ("spec.platforms", [], "should have a platform"),
    ("spec.platforms.0.sha256", "ABC", "is not valid"),
    ("spec.platforms.0.sha256", ..., "`sha256` sum has to be set"),
    ("spec.platforms.0.uri", ..., "`uri` has to be set"),
    ("spec.platforms.0.uri", "http://example.com/a.tar.gz", "not https"),
    ("spec.platforms.0.bin", ..., "`bin` has to be set"),
    ("spec.platforms.0.files", [], "has to be unspecified or non-empty"),
    ("spec.platforms.0.files", [{"from": "x"}], "`to` field has to be set"),
    ("spec.platforms.0.selector", ..., "nil selector"),
    ("spec.platforms.0.selector", {}, "empty selector"),
    ("spec.platforms.0.selector", {"matchLabels": {"distro": "debian"}}, 'key "distro" not supported'),
])
def test_validation_refuses_what_krew_refuses(path: str, value: Any, error: str) -> None:
    errors = build.validate(broken(path, value), "nvjob.yaml")
    assert errors and error in errors[0], errors
    assert build.validate(MANIFEST, "kubectl-nvjob.yaml")[0].startswith("plugin should be named 'kubectl-nvjob'")


def test_two_platforms_that_select_one_os_and_arch_are_refused() -> None:
    manifest = copy.deepcopy(MANIFEST)
    manifest["spec"]["platforms"].append({**manifest["spec"]["platforms"][0],
                                          "selector": {"matchLabels": {"os": "linux", "arch": "amd64"}}})
    assert build.validate(manifest, "nvjob.yaml") == ["linux/amd64 is selected by more than one platform: [0, 1]"]


def install(archive: bytes, into: Path) -> Path:
    """``archive`` installed as krew installs a platform: unpacked, each ``files`` operation copies
    ``from`` (a path in the archive) to ``to`` (in the install folder), and ``bin`` is linked into a
    bin folder. Returns the link."""
    unpacked, store, bin_dir = into / "unpacked", into / "store", into / "bin"
    for folder in (unpacked, store, bin_dir):
        folder.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(unpacked, filter="data")
    (platform,) = MANIFEST["spec"]["platforms"]
    for op in platform["files"]:
        source, target = unpacked / op["from"], store / op["to"]
        if source.is_dir():
            shutil.copytree(source, target / source.name if op["to"] == "." else target, symlinks=True)
        else:
            shutil.copy2(source, target / source.name if op["to"] == "." else target)
    binary = store / platform["bin"]
    assert binary.is_file() and os.access(binary, os.X_OK), "bin is an executable the files put in place"
    link = bin_dir / "kubectl-nvjob"
    link.symlink_to(binary)
    return link


def test_the_archive_is_reproducible_and_what_krew_installs_runs(tmp_path: Path) -> None:
    archive = build.build_archive()
    assert build.build_archive() == archive, "byte for byte the same for the same tree"
    assert len(hashlib.sha256(archive).hexdigest()) == 64
    link = install(archive, tmp_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVJOB_PYTHON": sys.executable, "HOME": str(tmp_path)}
    # the plugin's own entry point, from the unpacked lib/: kubectl's error for no configuration, exit 1
    done = subprocess.run([str(link), "get"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "error: no configuration: give --kubeconfig, set KUBECONFIG or write ~/.kube/config\n")


def test_without_its_requirements_the_launcher_says_what_to_install(tmp_path: Path) -> None:
    link = install(build.build_archive(), tmp_path)
    bare = tmp_path / "python-without-site-packages"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")  # the interpreter, its requirements out of reach
    bare.chmod(0o755)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVJOB_PYTHON": str(bare)}
    done = subprocess.run([str(link), "get"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: kubectl nvjob needs its requirements (") and done.stderr.endswith(
        f" is missing): {sys.executable} -m pip install --user -r {tmp_path / 'store'}/requirements.txt\n"), done.stderr
    env["NVJOB_PYTHON"] = "no-such-python"
    done = subprocess.run([str(link), "get"], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (1, "error: kubectl nvjob needs Python 3.11 or later (no-such-python is "
                                                 "not on PATH)\n")
