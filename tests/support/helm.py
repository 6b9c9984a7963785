"""The Helm chart (charts/nvcre-hooks) and the helm binary its tests run, built from the Go module
``helm.sh/helm/v4`` by tests/cluster/helm/build.sh (``make helm``) into ~/.cache/nvcre-hooks.

``helm_binary`` finds the build without building (a cold build takes minutes: ``make helm`` and
.ci/run build it first); ``require_helm`` turns a missing binary into a skip on a developer's machine
and a failure in CI (``CI=true``), where the chart's tests must run. ``kustomize`` and ``render``
give the objects of ``kubectl kustomize`` and ``helm template``; ``normalised`` keys them by
(kind, namespace, name) and removes what Helm adds on purpose (``HELM_LABELS``, ``HELM_ANNOTATIONS``;
the chart's README.md says why)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "nvcre-hooks"
BUILD_SCRIPT = REPO / "tests" / "cluster" / "helm" / "build.sh"
RELEASE, NAMESPACE = "nvcre-hooks", "nvcre-system"
"""The release and namespace the docs install as (the manifests' namespace)."""
HELM_LABELS = frozenset({"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"})
"""The labels the chart adds to every object's metadata (never to selectors or the pod template)."""
HELM_ANNOTATIONS = frozenset({"helm.sh/resource-policy"})
"""``keep`` on the CRD and the Namespace: ``helm uninstall`` leaves them (and so every NVCRE Job)."""

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML has it: the CRD alone is 29 KB, parsed for every combination."""

Key = tuple[str, str, str]
"""(kind, namespace or "", name)."""


class HelmMissing(RuntimeError):
    """The helm binary is not built (``make helm``)."""


def helm_binary(*, build: bool = False) -> Path:
    """The built helm: ``$NVCRE_HELM_BIN`` when set, else build.sh's folder. By default build.sh is
    told never to build (``NVCRE_HELM_NO_BUILD=1``: it answers from its stamp at once); the cluster
    tier builds on a miss, as it does its other parts. Raises ``HelmMissing``."""
    override = os.environ.get("NVCRE_HELM_BIN")
    if override:
        binary = Path(override)
    else:
        env = dict(os.environ)
        if not build:
            env["NVCRE_HELM_NO_BUILD"] = "1"
        result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0:
            raise HelmMissing(result.stderr.strip()[-2000:])
        binary = Path(result.stdout.strip().splitlines()[-1]) / "helm"
    if not os.access(binary, os.X_OK):
        raise HelmMissing(f"{binary} is not an executable")
    return binary


def require_helm() -> Path:
    """``helm_binary``, or a skip naming ``make helm`` (a failure when ``CI=true``: CI builds helm
    before the fast suite, so the chart's tests always run there)."""
    try:
        return helm_binary()
    except HelmMissing as exc:
        _missing(f"the helm binary is not built (make helm): {exc}")


def require_kubectl() -> str:
    """``kubectl`` (Debian's package, for ``kubectl kustomize``), or a skip (a failure in CI)."""
    found = shutil.which("kubectl")
    if found is None:
        _missing("kubectl is not installed (apt-get install kubectl; CI installs it)")
    return found


def _missing(why: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the chart's tests: {why}")
    pytest.skip(why)


def values_args(values: Mapping[str, Any]) -> list[str]:
    """``--set-json`` arguments for ``values`` (dotted keys: ``{"kueue.enabled": True}``)."""
    args = []
    for key, value in values.items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    return args


def run_helm(helm: Path, args: Sequence[str], *, kubeconfig: str | None = None,
             timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``helm ARGS`` from the repository's root (as the docs run it), with its own config and cache
    folders out of $HOME (``HELM_*_HOME``: nothing of the developer's helm is read or written),
    against ``kubeconfig`` when given. Never raises on a non-zero exit: the caller reads
    ``returncode``, ``stdout`` and ``stderr``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HELM_", "KUBECONFIG"))}
    state = Path(os.environ.get("TMPDIR", "/tmp")) / f"nvcre-helm-{os.getuid()}"
    env.update({"HELM_CONFIG_HOME": str(state / "config"), "HELM_CACHE_HOME": str(state / "cache"),
                "HELM_DATA_HOME": str(state / "data")})
    if kubeconfig:
        env["KUBECONFIG"] = kubeconfig
    return subprocess.run([str(helm), *args], cwd=REPO, capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def render(helm: Path, values: Mapping[str, Any] | None = None, *, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders for ``values``; fails the test with helm's words when
    it cannot render."""
    result = run_helm(helm, ["template", RELEASE, str(CHART), "--namespace", namespace,
                             *values_args(values or {})])
    assert result.returncode == 0, f"helm template {values}: {result.stderr}"
    return documents(result.stdout)


def documents(text: str) -> list[dict[str, Any]]:
    """The non-empty YAML documents of ``text``."""
    return [doc for doc in yaml.load_all(text, Loader=LOADER) if doc]


def kustomize(folder: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize FOLDER`` builds."""
    result = subprocess.run([require_kubectl(), "kustomize", str(folder)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, f"kubectl kustomize {folder}: {result.stderr}"
    return documents(result.stdout)


def key_of(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return str(obj.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name"))


def without_helm_marks(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without the labels and annotations the chart adds on purpose (a copy); an emptied
    ``labels`` or ``annotations`` is removed."""
    metadata = dict(obj.get("metadata") or {})
    for field, marks in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
        if field in metadata:
            kept = {k: v for k, v in metadata[field].items() if k not in marks}
            if kept:
                metadata[field] = kept
            else:
                del metadata[field]
    return {**obj, "metadata": metadata}


def normalised(objects: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, Any]]:
    """The objects by (kind, namespace, name), Helm's own marks removed. A key rendered twice fails."""
    found: dict[Key, dict[str, Any]] = {}
    for obj in objects:
        key = key_of(obj)
        assert key not in found, f"{key} rendered twice"
        found[key] = without_helm_marks(obj)
    return found
