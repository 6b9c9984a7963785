"""The krew package of ``kubectl nvjob``: its archive, and the manifest (``nvjob.yaml``) that names it.

``python plugins/krew/build.py [--out DIR] [--write]`` builds ``kubectl-nvjob-<version>.tar.gz``
(the version is pyproject.toml's, ``v``-prefixed as krew wants it) and prints its sha256; ``--write``
also writes that sha256 and the archive's name into ``plugins/krew/nvjob.yaml`` (a release does
this, then uploads the archive to the manifest's ``uri`` and sends the manifest to a krew index).

The archive is the same for every platform (the plugin is Python: ``kubectl-nvjob``, a POSIX sh
launcher, runs ``python3 -m hooks.tools.nvjob`` with ``lib/`` on the import path), and byte for byte
the same for the same tree: members sorted, owner root, one fixed time, gzip without a timestamp.
It holds the launcher, ``requirements.txt`` (the project's pins: the launcher says to install them
when they are missing, as the manifest's caveats do) and ``lib/hooks``, ``lib/podread`` (the ``.py``
files). ``validate`` checks a manifest against the rules krew applies before it installs one
(``sigs.k8s.io/krew`` ``internal/index/validation``) and those of the krew index's manifest check.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import sys
import tarfile
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "nvjob.yaml"
LAUNCHER = HERE / "kubectl-nvjob"
PACKAGES = ("hooks", "podread")
MTIME = 1_700_000_000
"""The one modification time of every member (2023-11-14): the archive does not change with checkouts."""

API_VERSION = "krew.googlecontainertools.github.com/v1alpha2"
"""krew's ``constants.CurrentAPIVersion``: the only apiVersion it installs."""
SAFE_NAME = re.compile(r"^[\w-]+$")
WINDOWS_FORBIDDEN = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
SHA256 = re.compile(r"^[a-f0-9]{64}$")
SEMVER = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
                    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")
"""A version as krew parses one (``semver.Parse``: a leading ``v``, then apimachinery's ParseSemantic)."""
PLATFORMS = [(os_, arch) for os_ in ("linux", "darwin", "windows") for arch in ("amd64", "arm64", "386", "arm")]
"""The os/arch pairs the krew index's check tries every manifest's selectors on."""


def version() -> str:
    """The project's version (pyproject.toml) as krew wants it: ``v0.1.0``."""
    return "v" + tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def archive_name(tag: str) -> str:
    return f"kubectl-nvjob-{tag}.tar.gz"


def _members() -> Iterator[tuple[str, Path, int]]:
    """What the archive holds, as (name in the archive, file, mode), sorted by name."""
    found = [("kubectl-nvjob", LAUNCHER, 0o755), ("requirements.txt", ROOT / "requirements.txt", 0o644)]
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.append((f"lib/{path.relative_to(ROOT).as_posix()}", path, 0o644))
    yield from sorted(found)


def build_archive() -> bytes:
    """The archive, byte for byte the same for the same tree (``MTIME``, root owner, sorted, gzip mtime 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path, mode in _members():
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, filename="") as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def _selected(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a platform ``selector`` (a metav1.LabelSelector) selects the ``os``/``arch`` ``labels``."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _platform_errors(platform: Mapping[str, Any]) -> list[str]:
    """krew's ``validatePlatform``: uri, sha256, bin, files, selector."""
    if not platform.get("uri"):
        return ["`uri` has to be set"]
    if not platform.get("sha256"):
        return ["`sha256` sum has to be set"]
    if not SHA256.match(str(platform["sha256"])):
        return [f"`sha256` value {platform['sha256']} is not valid, must match pattern {SHA256.pattern}"]
    if not platform.get("bin"):
        return ["`bin` has to be set"]
    files = platform.get("files")
    if files is not None:
        if not files:
            return ["`files` is invalid: `files` has to be unspecified or non-empty"]
        for op in files:
            if not op.get("from"):
                return ["`files` is invalid: `from` field has to be set"]
            if not op.get("to"):
                return ["`files` is invalid: `to` field has to be set"]
    selector = platform.get("selector")
    if not isinstance(selector, Mapping):
        return ["invalid platform selector: nil selector is not supported"]
    labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    if labels is None and not expressions:
        return ["invalid platform selector: empty selector is not supported"]
    for key in [*(labels or {}), *(e.get("key") for e in expressions or ())]:
        if key not in ("os", "arch"):
            return [f'invalid platform selector: key "{key}" not supported']
    if labels is not None and not labels:
        return ["invalid platform selector: `matchLabels` specified but empty"]
    if expressions is not None and not expressions:
        return ["invalid platform selector: `matchExpressions` specified but empty"]
    if not str(platform["uri"]).startswith("https://"):
        return [f"`uri` {platform['uri']} is not https"]
    return []


def validate(manifest: Mapping[str, Any], file_name: str) -> list[str]:
    """Why krew would refuse ``manifest`` read from ``file_name`` (``[]``: it would not). krew's
    ``ValidatePlugin`` in its order (apiVersion, kind, a safe name that is the file's, a one-line
    short description, platforms, a ``v``-semver version, each platform's uri, sha256, bin, files and
    os/arch selector), then the krew index's check: no os/arch that two platforms both select."""
    name = file_name.removesuffix(".yaml")
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), Mapping) else {}
    if manifest.get("apiVersion") != API_VERSION:
        return [f"plugin manifest has apiVersion={manifest.get('apiVersion')!r}, not supported in this version of krew"]
    if manifest.get("kind") != "Plugin":
        return [f"plugin manifest has kind={manifest.get('kind')!r}, but only 'Plugin' is supported"]
    if not SAFE_NAME.match(name) or name.upper() in WINDOWS_FORBIDDEN:
        return [f"the plugin name {name!r} is not allowed, must match {SAFE_NAME.pattern}"]
    if (manifest.get("metadata") or {}).get("name") != name:
        return [f"plugin should be named {name!r}, not {(manifest.get('metadata') or {}).get('name')!r}"]
    short = spec.get("shortDescription")
    if not short:
        return ["should have a short description"]
    if "\r" in short or "\n" in short:
        return ["should not have line breaks in short description"]
    platforms = spec.get("platforms") or []
    if not platforms:
        return ["should have a platform specified"]
    if not spec.get("version"):
        return ["should have a version specified"]
    if not SEMVER.match(str(spec["version"])):
        return [f"failed to parse plugin version: {spec['version']!r}"]
    errors = [f"platform {i} is badly constructed: {error}" for i, platform in enumerate(platforms)
              for error in _platform_errors(platform)]
    for os_, arch in PLATFORMS:
        chosen = [i for i, p in enumerate(platforms)
                  if isinstance(p.get("selector"), Mapping) and _selected(p["selector"], {"os": os_, "arch": arch})]
        if len(chosen) > 1:
            errors.append(f"{os_}/{arch} is selected by more than one platform: {chosen}")
    return errors


def written(manifest_text: str, sha256: str, tag: str) -> str:
    """The manifest's text with this archive's sha256, version and file name in it (its layout kept)."""
    text = re.sub(r"(?m)^(\s*sha256:\s*).*$", rf"\g<1>{sha256}", manifest_text)
    text = re.sub(r"(?m)^(\s*version:\s*).*$", rf"\g<1>{tag}", text)
    return re.sub(r"kubectl-nvjob-v[^/\s]*\.tar\.gz", archive_name(tag), re.sub(
        r"/download/v[^/\s]*/", f"/download/{tag}/", text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where to write the archive (default dist/)")
    parser.add_argument("--write", action="store_true", help="write its sha256 and version into nvjob.yaml")
    args = parser.parse_args(argv)
    tag, data = version(), build_archive()
    digest = hashlib.sha256(data).hexdigest()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / archive_name(tag)).write_bytes(data)
    if args.write:
        MANIFEST.write_text(written(MANIFEST.read_text(), digest, tag))
    errors = validate(yaml.safe_load(MANIFEST.read_text()), MANIFEST.name)
    print(f"{args.out / archive_name(tag)} sha256 {digest}")
    for error in errors:
        print(f"error: {MANIFEST.name}: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
