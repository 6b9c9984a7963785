"""Every shell command README.md and docs/operations.md show is run here or says why not, so none can go stale.

The commands are read from the docs themselves: each line of a ```sh block (continuation lines joined,
a heredoc kept with its command) and each ``$ command`` of an output block. ``RULES`` gives each one a
way to be checked, first match wins:

- ``run``: the command runs here, no cluster needed, and what the docs show under it (an output block)
  is what it prints (timings aside);
- ``kustomize``: ``kubectl apply -k DIR`` builds with the real kustomize in kubectl (``kubectl kustomize
  DIR``), the overlay the docs write included, so what would be applied is well formed;
- ``synopsis``: a usage line; every ``--flag`` it names is in the command's own ``--help``;
- ``file``: the file the command reads is in the repository and parses;
- ``pip``: ``pip install .`` of a copy of the tree into a folder of its own (``--target``, no
  dependencies: the venv has them), then the installed commands run from elsewhere;
- ``make-run``: a ``curl`` to ``make run``'s address: the server starts as ``make run`` starts it (no
  cluster, no token, a free port in place of 8080) and the command prints what the docs show;
- ``helm``: ``helm install`` or ``helm upgrade`` of the chart renders with ``helm template`` and the
  same chart, namespace and values (the flags that only act on a cluster dropped), so what would be
  installed is well formed (the helm of ``make helm``; skipped without it, except in CI);
- ``elsewhere``: it needs a cluster, Docker, a registry or a long-running process; the reason names
  where it is exercised (the cluster tier, ``make dev``, another test).

A command no rule matches fails the test: a new command in the docs is either checked or says why not.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.helm import require_helm, run_helm
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/operations.md")


@dataclass(frozen=True)
class Shown:
    """One command in the docs: where, the command line, and the output block shown under it (if any)."""

    doc: str
    line: int
    command: str
    output: tuple[str, ...] | None = None


def shown_commands(doc: str) -> list[Shown]:
    """The commands of ``doc``: ``sh`` blocks line by line, and ``$ ...`` lines of output blocks with
    the lines up to the next ``$``."""
    text = (ROOT / doc).read_text()
    found: list[Shown] = []
    for block in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        lang, body = block.group(1), block.group(2)
        first = text[:block.start()].count("\n") + 2
        lines = body.splitlines()
        if lang == "sh":
            index = 0
            while index < len(lines):
                start, line = index, lines[index]
                while index + 1 < len(lines) and (line.endswith("\\") or re.match(r"\s+\[", lines[index + 1])):
                    index += 1  # a continued line, or a usage line's options wrapped under it
                    line = line.removesuffix("\\").rstrip() + " " + lines[index].strip()
                heredoc = re.search(r"<<'?(\w+)'?", line)
                if heredoc:
                    end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == heredoc.group(1))
                    line = "\n".join([line, *lines[index + 1:end + 1]])
                    index = end
                index += 1
                command = line if heredoc else re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append(Shown(doc, first + start, command))
        elif not lang and lines and lines[0].startswith("$ "):
            starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
            for at, end in zip(starts, [*starts[1:], len(lines)], strict=True):
                found.append(Shown(doc, first + at, lines[at][2:].strip(), tuple(lines[at + 1:end])))
    return found


CLUSTER = "needs a cluster: the real control plane tier (tests/cluster) or `make dev`"
INSTALL = "tests/cluster/test_install_commands.py runs its block as written on a control plane of its own"
RULES: list[tuple[str, str, str]] = [
    (r"^make test$", "elsewhere", "the whole suite: this test is part of it"),
    (r"^make test-cluster$", "elsewhere", "the cluster tier itself (.ci/run runs it)"),
    (r"^make run$", "elsewhere", "a long-running server: the curl to it below runs against the same command"),
    (r"^curl .*http://127\.0\.0\.1:8080/", "make-run", ""),
    (r"^make dev$", "elsewhere", "a long-running control plane: tests/cluster/dev.py, the tier's fixtures"),
    (r"^make demo$", "run", "python -m hooks demo tests/payloads"),
    (r"^(\.venv/bin/)?python -m hooks replay tests/payloads/\S+ --diff$", "run", ""),
    (r"^(\.venv/bin/)?python -m hooks replay SCENARIO_DIR", "synopsis", ""),
    (r"^(\.venv/bin/)?python -m hooks node-pods NODE ", "synopsis", ""),
    (r"^kubectl nvjob (get|describe|why|history|summary) .*(\[|NAME)", "synopsis", ""),
    (r"^kubectl nvjob get -n cluster-0$|^kubectl nvjob (describe|why) retry -n cluster-0$", "elsewhere",
     "recorded objects: tests/tools/test_nvjob_recorded.py compares every line of the README's sample"),
    (r"^kubectl nvjob ", "elsewhere", CLUSTER + " (tests/cluster/test_nvjob.py runs get with -o json|jsonpath|name, "
                                                "-l and -w, summary, describe and why)"),
    (r"^pip install \.$", "pip", ""),
    (r"^(\.venv/bin/)?python -m hooks (replay request\.json|node-pods gpu-)", "elsewhere",
     CLUSTER + " (tests/cluster/test_docs_commands.py runs each as written)"),
    (r"^docker ", "elsewhere", "Docker and a registry: tests/contract/test_dockerfile.py checks the Dockerfile"),
    (r"^mkdir -p deploy/prod$", "elsewhere", "the site overlay: run with the heredoc after it "
                                             "before `kubectl apply -k deploy/prod/` is built, and " + INSTALL),
    (r"^cat > deploy/prod/kustomization.yaml <<'EOF'\n", "elsewhere", "the site overlay (above)"),
    (r"^kubectl apply -k ", "kustomize", ""),
    (r"^helm (install|upgrade) nvcre-hooks charts/nvcre-hooks ", "helm", ""),
    (r"^kubectl apply -f (manifests/\S+)$", "file", ""),
    (r"^kubectl (get|describe|patch) nvjob( NAME)?( -n NS| -A)?( |$)", "elsewhere",
     "about one Job: tests/cluster/test_docs_commands.py runs each as written with the real kubectl"),
    (r"^kubectl (label|patch|cordon|uncordon) (pod|node) ", "elsewhere",
     "make dev's kwok: tests/cluster/test_dev_commands.py runs each as written with the real kubectl"),
    (r"^kubectl create namespace team-a && sed ", "elsewhere", "make dev's stand-in watches every "
                                                             "namespace (tests/cluster/dev.py, cluster_wide)"),
    (r"^kubectl create namespace nvcre-system$|^kubectl -n nvcre-system create secret generic nvcre-hooks-token |"
     r"^kubectl -n nvcre-system rollout status deploy/nvcre-hooks$|^kubectl get compositecontroller nvcre-jobs$|"
     r"^(NS|OLD|NEW)=|^kubectl -n \$NS |"
     r"^kubectl -n metacontroller rollout (restart|status) statefulset/metacontroller$",
     "elsewhere", INSTALL),
    (r"^kubectl -n nvcre-system (set env|exec|cp) ", "elsewhere",
     "the recorder in a running hooks pod: exec and cp need a kubelet that runs containers (kwok runs none); "
     "tests/tools and tests/e2e run the recorder and the replay of what it writes"),
    (r"^(export KUBECONFIG=|kubectl |NS=|OLD=|NEW=)", "elsewhere", CLUSTER),
]


def rule_of(command: str) -> tuple[str, str, re.Match[str]] | None:
    for pattern, kind, note in RULES:
        match = re.search(pattern, command)
        if match:
            return kind, note, match
    return None


ALL = [shown for doc in DOCS for shown in shown_commands(doc)]


def ident(shown: Shown) -> str:
    return f"{shown.doc}:{shown.line}:{shown.command.splitlines()[0][:60]}"


def test_the_docs_show_commands_and_every_one_has_a_rule() -> None:
    assert len(ALL) > 30, "the docs' commands were not found"
    assert {"make demo", "kubectl apply -k manifests/monitoring/"} <= {s.command for s in ALL}
    unruled = [ident(shown) for shown in ALL if rule_of(shown.command) is None]
    assert not unruled, f"commands in the docs that no rule checks or explains: {unruled}"


def run(args: list[str], cwd_override: Path | None = None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd_override or ROOT, capture_output=True, text=True, timeout=300, check=False,
                          **kwargs)


def normalized(line: str) -> str:
    """A line with timings (``0.5 ms``) as ``N ms`` and runs of spaces as one."""
    return re.sub(r"\s+", " ", re.sub(r"\d+(\.\d+)? ms\b", "N ms", line)).strip()


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "run"], ids=ident)
def test_a_command_that_runs_here_prints_what_the_docs_show(shown: Shown) -> None:
    command = shown.command
    if command == "make demo":  # the recipe, not make: make may rebuild the venv
        args = [sys.executable, "-m", "hooks", "demo", "tests/payloads"]
    else:
        args = [sys.executable, *shlex.split(command)[1:]]
    done = run(args)
    assert done.returncode == 0, done.stdout + done.stderr
    if shown.output is None:
        return
    out = [normalized(line) for line in done.stdout.splitlines()]
    err = [normalized(line) for line in done.stderr.splitlines()]
    for line in shown.output:
        if line.strip() in ("...", "{ ... the response JSON ... }"):
            continue
        text, on_stderr = (line.split("(on stderr)")[0], True) if "(on stderr)" in line else (line, False)
        assert normalized(text) in (err if on_stderr else out), f"{ident(shown)}: the docs show {line!r}"


def synopsis_help(command: str) -> str:
    """The ``--help`` of the command a usage line shows."""
    words = command.split()
    if words[0] == "kubectl":
        args = [sys.executable, "-m", "hooks.tools.nvjob", words[2], "--help"]
    else:
        args = [sys.executable, "-m", "hooks", words[3], "--help"]
    done = run(args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "synopsis"], ids=ident)
def test_a_usage_line_names_only_flags_the_command_has(shown: Shown) -> None:
    flags = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", shown.command))
    assert flags, ident(shown)
    helped = synopsis_help(shown.command)
    missing = sorted(flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}\b", helped))
    assert not missing, f"{ident(shown)}: not in --help: {missing}"


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip("no kubectl (Debian's package): the kustomizations are not built")
    return found


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "kustomize"], ids=ident)
def test_what_kubectl_apply_k_would_apply_builds(shown: Shown, tmp_path: Path) -> None:
    binary = kubectl()
    if shown.command.split()[3] == "deploy/prod/":  # the site overlay, written first as the docs write it
        at = next(i for i, s in enumerate(ALL) if s.command == "mkdir -p deploy/prod")
        assert ALL[at + 1].command.startswith("cat > deploy/prod/kustomization.yaml <<")
        (tmp_path / "manifests").symlink_to(ROOT / "manifests")
        script = ALL[at].command + "\n" + ALL[at + 1].command + "\n"
        done = subprocess.run(["bash", "-ec", script], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        directories = [tmp_path / "deploy" / "prod"]
    else:
        directories = [ROOT / word for word in shown.command.split()[3:] if not word.startswith("#")]
        directories = [d for d in directories if d.is_dir()] or [ROOT / shown.command.split()[3]]
    for directory in directories:
        built = subprocess.run([binary, "kustomize", str(directory)], capture_output=True, text=True, timeout=120,
                               check=False)
        assert built.returncode == 0, f"{ident(shown)}: kubectl kustomize {directory}: {built.stderr}"
        objects = [o for o in yaml.safe_load_all(built.stdout) if o]
        assert objects, f"{directory} builds nothing"
        if directory.name == "prod":
            images = {c["image"] for o in objects if o["kind"] == "Deployment"
                      for c in o["spec"]["template"]["spec"]["containers"]}
            assert images == {"registry.example.com/nvcre-hooks:0.1.0"}


def test_the_other_directory_the_docs_apply_builds_too() -> None:
    """``kubectl apply -k manifests/   # or manifests-kueue/``: the alternative in the comment builds as well."""
    built = subprocess.run([kubectl(), "kustomize", str(ROOT / "manifests-kueue")], capture_output=True, text=True,
                           timeout=120, check=False)
    assert built.returncode == 0, built.stderr


CLUSTER_ONLY_FLAGS = ("--create-namespace", "--take-ownership", "--reuse-values", "--wait")
"""``helm install``/``upgrade`` flags that act on a cluster only: ``helm template`` has none of them."""


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "helm"], ids=ident)
def test_what_helm_install_would_install_renders(shown: Shown) -> None:
    helm = require_helm()
    words = [w for w in shlex.split(shown.command)[2:] if w not in CLUSTER_ONLY_FLAGS]
    done = run_helm(helm, ["template", *words])
    assert done.returncode == 0, f"{ident(shown)}: helm template: {done.stderr}"
    kinds = {o["kind"] for o in yaml.safe_load_all(done.stdout) if o}
    assert {"CustomResourceDefinition", "Deployment", "CompositeController"} <= kinds, kinds


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "file"], ids=ident)
def test_a_file_the_docs_apply_is_there_and_parses(shown: Shown) -> None:
    path = ROOT / shown.command.split()[-1]
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert documents and all("kind" in d for d in documents)


def make_run_command() -> list[str]:
    """``make run``'s recipe as the Makefile writes it, with ``$(VENV)/bin/`` as this interpreter's
    folder and HOST and PORT left as ``$(HOST):$(PORT)``."""
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n", 2)[1].strip()
    return shlex.split(recipe.replace("$(VENV)/bin/", str(Path(sys.executable).parent) + "/"))


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "make-run"], ids=ident)
def test_a_request_to_make_run_answers_what_the_docs_show(shown: Shown, tmp_path: Path) -> None:
    """``make run`` with no cluster (no kubeconfig, not in a pod) and no token, as a fresh clone has it."""
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    port, metrics_port = free_port(), free_port()
    args = [arg.replace("$(HOST):$(PORT)", f"127.0.0.1:{port}") for arg in make_run_command()]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KUBERNETES_", "NVCRE_", "PROMETHEUS_", "GUNICORN_")) and k != "WEB_CONCURRENCY"}
    env.update({"KUBECONFIG": str(tmp_path / "no-such-kubeconfig"), "HOME": str(tmp_path),
                "NVCRE_METRICS_PORT": str(metrics_port)})
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(["curl", "-sf", f"http://127.0.0.1:{port}/readyz"], capture_output=True,
                             check=False).returncode != 0:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        done = run(["bash", "-c", shown.command.replace("127.0.0.1:8080", f"127.0.0.1:{port}")])
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert shown.output, f"{ident(shown)}: show what it answers"
    for line in shown.output:
        head, _, tail = line.partition("(...)")
        assert done.stdout.strip().startswith(head) and done.stdout.strip().endswith(tail), (line, done.stdout)


@pytest.mark.parametrize("shown", [s for s in ALL if (rule_of(s.command) or ("",))[0] == "pip"], ids=ident)
def test_pip_install_dot_installs_commands_that_run_from_anywhere(shown: Shown, tmp_path: Path) -> None:
    """The package index gives the build backend (build isolation, as a user's pip does); the tree is
    copied first, so the build's ``build/`` and ``*.egg-info`` land in the copy."""
    source = tmp_path / "source"
    tracked = run(["git", "ls-files", "pyproject.toml", "requirements.txt", "README.md", "hooks", "podread"])
    for name in tracked.stdout.split():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    site = tmp_path / "site"
    done = run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                *shlex.split(shown.command)[2:]], cwd_override=source)
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**os.environ, "PYTHONPATH": str(site)}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    usage = subprocess.run([sys.executable, str(site / "bin" / "nvcre-hooks"), "--help"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, timeout=60, check=False)
    assert usage.returncode == 0 and usage.stdout.startswith("Usage: nvcre-hooks "), usage.stdout + usage.stderr
    demo = subprocess.run([sys.executable, str(site / "bin" / "nvcre-hooks"), "demo"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert demo.returncode == 2 and "run it from a clone" in demo.stderr, demo.stderr
    plugin = subprocess.run([sys.executable, str(site / "bin" / "kubectl-nvjob"), "--help"], cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert plugin.returncode == 0, plugin.stderr
