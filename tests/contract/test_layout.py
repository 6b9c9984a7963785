"""The layout's two promises, checked statically on the source:

1. ``hooks.core`` is pure. Walking its imports (the ``import`` statements of its source, nested ones
   included, transitively through every project module they name) reaches no module doing I/O: no
   flask, gunicorn, kubernetes client, urllib3, requests, socket, threading, subprocess, os, ...; only
   the standard modules and the third-party ones in ``CORE_MAY_IMPORT``. Nor does it call ``open``,
   ``exec``, ``eval``, ``__import__`` or ``input``. Imports under ``if TYPE_CHECKING:`` are types only
   and never run, so they are skipped. The walk follows the module an import names (``from
   podread.constants import X`` reaches ``podread/constants.py``), not the package ``__init__`` that
   Python also runs on the way: ``podread/__init__.py`` gathers the Reader and its live client, which
   the core receives and never imports; the core names only podread's pure modules, and those are
   checked like the core's own.
2. Only podread reads pods (ADR-102). No Python file outside ``podread/`` (and outside the test and
   benchmark trees, which drive the fake and real API servers themselves) calls or names a CoreV1Api
   pod read (``list_namespaced_pod``, ``list_pod_for_all_namespaces``, ``read_namespaced_pod[_status
   |_log|...]``, their ``_with_http_info`` forms), asks a dynamic client for ``kind="Pod"``, holds a
   string that is a pods path of the API (``/api/v1/pods``, ``.../namespaces/<ns>/pods``), names
   ``podread.rest``'s pods paths (``PODS_PATH``, ``ALL_PODS_PATH``), or sends its one-pod path (``POD_PATH``) with
   any method but ``DELETE``. Writes (the force delete: ``DELETE`` ``rest.POD_PATH``,
   ``delete_namespaced_pod``) are not reads.

Neither check can pass by finding nothing: each is run on a planted violation (a synthetic project,
and a copy of this tree with one bad line added) and must report it; the pod-read check must find
podread's own reads in ``podread/live.py``; the purity walk must reach the modules it claims to.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = ("hooks", "podread")
CORE = "hooks.core"

CORE_MAY_IMPORT = frozenset({
    "__future__", "collections", "dataclasses", "datetime", "enum", "functools", "itertools", "math", "operator", "re",
    "types", "typing",
    "hashlib",  # digests of bytes in memory (hooks.core.specpin)
    "orjson",  # JSON to and from bytes, in memory
    "msgspec",  # the declared request and status (ADR-105): typed conversion in memory
})
"""The only modules outside the project the core (and the project modules it reaches) may import."""

FORBIDDEN_CALLS = frozenset({"open", "exec", "eval", "__import__", "input", "breakpoint"})
NOT_SHIPPED = ("podread", "tests", "bench", "docs", "manifests", "manifests-kueue")
"""Top-level folders the pod-read check skips: podread itself, and the trees that are not controller code."""

POD_READ_METHOD = re.compile(
    r"^(list|read|watch)_(namespaced_pod|pod_for_all_namespaces)"
    r"(_status|_log|_ephemeralcontainers|_resize)?(_with_http_info)?$")
PODS_PATH = re.compile(r"(^|/)api/v1/(namespaces/[^/]*/)?pods($|[/?])|(^|/)namespaces/\{[^}]*\}/pods($|[/?])|^/pods$")


@dataclass(frozen=True)
class Finding:
    """One violation: where (``path:line``), what, and for the purity walk the import chain."""

    where: str
    what: str


# ---- the purity walk -------------------------------------------------------------------------------

def module_file(root: Path, name: str) -> Path | None:
    """The source file of project module ``name`` under ``root`` (package ``__init__`` or module), or ``None``."""
    if name.split(".")[0] not in project_packages(root):
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def project_packages(root: Path) -> set[str]:
    """The top-level packages of the project at ``root``: folders with an ``__init__.py``."""
    return {p.parent.name for p in root.glob("*/__init__.py")} - {"tests", "bench"}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    """The modules ``path`` (module ``module``) imports, with their lines: every ``import`` and ``from
    ... import`` anywhere in it (functions included), except under ``if TYPE_CHECKING:``. ``from
    package import name`` counts as ``package.name`` when that is a module, else as ``package``."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def forbidden_calls(path: Path) -> list[tuple[int, str]]:
    """Calls of ``FORBIDDEN_CALLS`` builtins in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    return [(node.lineno, node.func.id) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS]


def walk_core(root: Path, start: str = CORE) -> tuple[list[Finding], set[str]]:
    """Walks the imports of every module of package ``start`` under ``root`` (and ``start``'s parent
    packages), transitively through project modules. Returns the violations and the project modules
    reached."""
    start_dir = root.joinpath(*start.split("."))
    first = [".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
             for p in sorted(start_dir.rglob("*.py"))]
    parents = [".".join(start.split(".")[:i]) for i in range(1, len(start.split(".")))]
    chain: dict[str, list[str]] = {name: [name] for name in [*parents, *first]}
    todo, seen, findings = list(chain), set(), []
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = module_file(root, module)
        assert path is not None, module
        rel = path.relative_to(root)
        for line, name in forbidden_calls(path):
            findings.append(Finding(f"{rel}:{line}", f"calls {name}() ({' -> '.join(chain[module])})"))
        for line, imported in imports_of(path, module):
            target = imported if module_file(root, imported) else imported.rpartition(".")[0]
            if module_file(root, target) is not None:
                if target not in chain:
                    chain[target] = [*chain[module], target]
                todo.append(target)
            elif imported.split(".")[0] in project_packages(root):
                findings.append(Finding(f"{rel}:{line}", f"imports {imported}, which is not in the project"))
            elif imported.split(".")[0] not in CORE_MAY_IMPORT:
                path_to = " -> ".join([*chain[module], imported])
                findings.append(Finding(f"{rel}:{line}", f"imports {imported} ({path_to})"))
    return findings, seen


# ---- the pod-read check ----------------------------------------------------------------------------

def shipped_files(root: Path) -> list[Path]:
    """Every Python file under ``root`` outside ``NOT_SHIPPED`` and hidden folders (``.venv``, ...)."""
    files = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in NOT_SHIPPED or any(part.startswith(".") for part in parts):
            continue
        files.append(path)
    return files


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def pod_reads(path: Path, root: Path) -> list[Finding]:
    """The pod reads ``path`` makes or names: a CoreV1Api pod read method (called, or named in a
    string as for ``getattr``), ``kind="Pod"`` given to a call, or an API pods path in a string
    (docstrings aside)."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    rel = path.relative_to(root)
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            name = node.value
            if PODS_PATH.search(node.value):
                found.append(Finding(f"{rel}:{node.lineno}", f"names the pods path {node.value!r}"))
        if name is not None and POD_READ_METHOD.match(name):
            found.append(Finding(f"{rel}:{node.lineno}", f"reads pods with {name}"))
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "kind" and isinstance(keyword.value, ast.Constant) and keyword.value.value == "Pod":
                    found.append(Finding(f"{rel}:{node.lineno}", "asks a client for kind='Pod'"))
        if name in REST_PODS_PATHS:
            found.append(Finding(f"{rel}:{node.lineno}", f"reads pods with podread.rest's {name}"))
        if isinstance(node, ast.Call) and any(_names(arg, "POD_PATH") for arg in node.args) and not any(
                isinstance(arg, ast.Constant) and arg.value == "DELETE" for arg in node.args):
            found.append(Finding(f"{rel}:{node.lineno}", "sends podread.rest's POD_PATH, not to DELETE"))
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if PODS_PATH.search(text.replace("{}", "{x}")):
                found.append(Finding(f"{rel}:{node.lineno}", f"builds the pods path {text!r}"))
    return found


REST_PODS_PATHS = frozenset({"PODS_PATH", "ALL_PODS_PATH"})
"""``podread.rest``'s paths of pod collections: a list or a watch, never a write."""


def _names(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == name) or (isinstance(node, ast.Name) and node.id == name)


def pod_reads_outside_podread(root: Path) -> list[Finding]:
    return [finding for path in shipped_files(root) for finding in pod_reads(path, root)]


# ---- the checks on this tree -----------------------------------------------------------------------

def test_the_core_imports_nothing_that_does_io() -> None:
    findings, reached = walk_core(ROOT)
    assert findings == [], "\n".join(f"{f.where}: {f.what}" for f in findings)
    # the walk reaches what the core is made of, the rows and podread's pure modules through imports
    assert {"hooks.core.decide", "hooks.core.rows.current", "hooks.core.barrier", "hooks.core.jobset",
            "podread.constants", "podread.selector", "podread.errors"} <= reached
    assert not any(name.startswith(("hooks.server", "hooks.tools")) for name in reached)
    assert "podread.live" not in reached and "podread.reader" not in reached


def test_no_module_outside_podread_reads_pods() -> None:
    files = shipped_files(ROOT)
    assert ROOT / "hooks" / "core" / "barrier.py" in files and ROOT / "hooks" / "server" / "writer.py" in files
    findings = pod_reads_outside_podread(ROOT)
    assert findings == [], "\n".join(f"{f.where}: {f.what}" for f in findings)


def test_the_pod_read_check_finds_podreads_own_reads() -> None:
    """The patterns match the real thing: podread's live client lists pods by these very paths, and
    ``podread.rest`` spells them."""
    found = pod_reads(ROOT / "podread" / "live.py", ROOT)
    assert {f.what for f in found} >= {"reads pods with podread.rest's PODS_PATH",
                                       "reads pods with podread.rest's ALL_PODS_PATH"}
    assert len([f for f in pod_reads(ROOT / "podread" / "rest.py", ROOT) if "names the pods path" in f.what]) == 3


def test_the_core_is_told_apart_by_its_folder() -> None:
    """Every module of the core, the server and the tools is in its sub-package: at the top are only the
    entry points that put them together (``__main__``, the tools' command; ``wsgi``, the composition
    root that builds the production server from the environment)."""
    top = sorted(p.name for p in (ROOT / "hooks").glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "wsgi.py"]
    assert (ROOT / "hooks" / "core" / "decide.py").is_file() and (ROOT / "hooks" / "server" / "app.py").is_file()


# ---- the checks fail on planted violations -----------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_purity_walk_reports_io_reached_through_project_modules(tmp_path: Path) -> None:
    _write(tmp_path, {
        "hooks/__init__.py": "",
        "hooks/core/__init__.py": "",
        "hooks/core/a.py": "from hooks.core import b\nfrom collections.abc import Mapping\n",
        "hooks/core/b.py": "from helper.net import get\n",
        "hooks/core/c.py": "def f():\n    import subprocess\n    return subprocess\n",
        "hooks/core/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import socket\n",
        "hooks/core/e.py": "def f(p):\n    return open(p).read()\n",
        "hooks/core/rows/__init__.py": "from . import g\n",
        "hooks/core/rows/g.py": "from ..b import get\nimport threading\n",
        "helper/__init__.py": "",
        "helper/net.py": "import urllib3\n\ndef get():\n    return urllib3\n",
        "hooks/server/__init__.py": "import flask\n",
    })
    findings, reached = walk_core(tmp_path)
    whats = sorted(f.what for f in findings)
    assert any("imports urllib3 (hooks.core.a -> hooks.core.b -> helper.net -> urllib3)" in w
               or "imports urllib3 (hooks.core.b -> helper.net -> urllib3)" in w for w in whats), whats
    assert any(w.startswith("imports subprocess") for w in whats)  # nested in a function
    assert any(w.startswith("imports threading (hooks.core.rows.g") for w in whats)  # relative imports resolved
    assert any(w.startswith("calls open()") for w in whats)
    assert not any("socket" in w for w in whats)  # a type-only import never runs
    assert not any("flask" in w for w in whats)  # hooks.server is not reached from the core
    assert "hooks.server" not in reached


def _copy_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for package in PROJECT_PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.mark.parametrize(("module", "line", "expected"), [
    ("hooks/core/wording.py", "import kubernetes.client\n", "imports kubernetes.client"),
    ("hooks/core/rows/terminal.py", "from hooks.server.app import create_app\n", "imports flask"),
    ("hooks/core/jobset.py", "from podread.live import LiveClient\n", "imports urllib3"),
    ("hooks/core/stuck.py", "import requests\n", "imports requests"),
])
def test_the_purity_walk_fails_on_this_tree_with_one_bad_import(tmp_path: Path, module: str, line: str,
                                                                expected: str) -> None:
    copy = _copy_tree(tmp_path)
    target = copy / module
    target.write_text(target.read_text() + "\n" + line)
    findings, _ = walk_core(copy)
    assert any(f.what.startswith(expected) for f in findings), [f.what for f in findings]


@pytest.mark.parametrize("code", [
    "from kubernetes import client\n\ndef peek(ns):\n    return client.CoreV1Api().list_namespaced_pod(ns)\n",
    "def peek(api, ns, name):\n    return api.read_namespaced_pod_status_with_http_info(name, ns)\n",
    "def peek(api):\n    return getattr(api, 'list_pod_for_all_namespaces')()\n",
    "def peek(pool, ns):\n    return pool.request('GET', f'/api/v1/namespaces/{ns}/pods')\n",
    "def peek(pool):\n    return pool.request('GET', '/api/v1/pods?labelSelector=x')\n",
    "def peek(dyn):\n    return dyn.resources.get(api_version='v1', kind='Pod').get()\n",
    "from podread import rest\n\ndef peek(api, ns):\n"
    "    return rest.send(api, 'GET', rest.PODS_PATH, params={'namespace': ns})\n",
    "from podread.rest import ALL_PODS_PATH, open_stream\n\ndef peek(api):\n"
    "    return open_stream(api, ALL_PODS_PATH)\n",
    "from podread import rest\n\ndef peek(api, ns, name):\n"
    "    return rest.send(api, 'GET', rest.POD_PATH, params={'namespace': ns, 'name': name})\n",
])
def test_the_pod_read_check_fails_on_a_planted_read(tmp_path: Path, code: str) -> None:
    copy = _copy_tree(tmp_path)
    assert pod_reads_outside_podread(copy) == []
    (copy / "hooks" / "server" / "peek.py").write_text(code)
    findings = pod_reads_outside_podread(copy)
    assert [f.where.split(":")[0] for f in findings] == ["hooks/server/peek.py"] * len(findings) and findings


def test_a_pod_write_and_a_docstring_are_not_reads(tmp_path: Path) -> None:
    copy = _copy_tree(tmp_path)
    (copy / "hooks" / "server" / "ok.py").write_text(
        '"""Lists nothing; GET /api/v1/namespaces/x/pods is podread\'s."""\n\n'
        "from podread import rest\n\n"
        "def force(api, ns, name):\n    return api.delete_namespaced_pod(name, ns, grace_period_seconds=0)\n\n"
        "def force_raw(api, ns, name):\n"
        "    return rest.send(api, 'DELETE', rest.POD_PATH, params={'namespace': ns, 'name': name})\n")
    assert pod_reads_outside_podread(copy) == []


if __name__ == "__main__":  # pragma: no cover - a quick look: python tests/contract/test_layout.py
    for finding in walk_core(ROOT)[0] + pod_reads_outside_podread(ROOT):
        print(f"{finding.where}: {finding.what}", file=sys.stderr)


HEAVY = ("kubernetes", "urllib3", "pydantic", "flask", "gunicorn", "prometheus_client", "cachetools")
"""What the pure core must not load at run time: the API client and its stack, the HTTP edge."""


def test_importing_the_core_loads_no_client_at_run_time() -> None:
    """The source check above follows imports as written; this one imports the core in a fresh
    interpreter and looks at what was loaded (podread's package exports are lazy for this)."""
    import subprocess

    code = ("import sys, hooks.core.decide, hooks.core.observed, hooks.core.barrier; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert loaded == "", f"importing hooks.core loaded {loaded}"


def test_podreads_lazy_exports_are_its_modules_names() -> None:
    import importlib

    import podread

    for name in podread.__all__:
        assert getattr(podread, name) is getattr(importlib.import_module(podread._EXPORTS[name]), name), name
    assert set(podread.__all__) == set(podread._EXPORTS)
    with pytest.raises(AttributeError):
        podread.no_such_name  # noqa: B018
