"""The docs say what the code does: each fact a new user met false is checked
against its source here, so it cannot drift again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from hooks.core import work
from hooks.core.barrier import Drain
from hooks.server.app import create_app
from hooks.server.config import LOG_LEVELS, Settings
from podread import SnapshotLister
from podread.cache import PodCache
from podread.errors import PodReadError
from podread.reader import Reader

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()


def test_make_image_builds_the_tag_the_manifests_name() -> None:
    image = next(i for i in yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())["images"]
                 if i["name"] == "nvcre-hooks")
    tag = f"{image['newName']}:{image['newTag']}"
    recipe = re.search(r"^image:.*\n\tdocker build -t (\S+) \.$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe and recipe.group(1) == tag
    assert f"`{tag}`" in README


def test_the_demo_count_in_the_readme_is_the_number_of_scenarios() -> None:
    scenarios = [d for d in (ROOT / "tests" / "payloads").iterdir() if (d / "request.json").is_file()]
    assert f"{len(scenarios)} of {len(scenarios)} scenarios answer as recorded" in README


def test_the_routes_table_names_every_route_the_app_serves() -> None:
    app = create_app(Reader(PodCache(SnapshotLister([])), SnapshotLister([])), settings=Settings())
    served = {(rule.rule, method) for rule in app.url_map.iter_rules() if rule.endpoint != "static"
              for method in rule.methods or () if method in ("GET", "POST")}
    table = README.split("| route |", 1)[1].split("\n\n", 1)[0]
    for path, method in served:
        assert f"`{method} {path}`" in table, (method, path)
    assert "`GET /metrics` (port `NVCRE_METRICS_PORT`" in table  # the master's own port, not the app's


def test_log_level_values_and_once_per_worker() -> None:
    row = next(line for line in README.splitlines() if line.startswith("| `NVCRE_LOG_LEVEL`"))
    assert all(level in row for level in LOG_LEVELS) and "any case" in row
    row = next(line for line in OPERATIONS.splitlines() if line.startswith("| `NVCRE_LOG_LEVEL`"))
    assert all(f"`{level}`" in row for level in LOG_LEVELS) and "any case" in row
    assert "once in its log per worker process" in README


def drained_reasons() -> set[str]:
    """Every reason the barrier sets on the Drained condition: the reason of a Drain of each kind
    (a failed read, each thing waited for alone, nothing found)."""
    pod = {"metadata": {"name": "p"}}
    drains = [Drain(), Drain(error=PodReadError("injected")), Drain(jobsets=("j-0",)), Drain(workers=(pod,)),
              Drain(launchers=(pod,)), Drain(batch_jobs=("j-0-worker-0",))]
    return {drain.drained()[1] for drain in drains}


def test_every_drained_reason_is_documented() -> None:
    reasons = drained_reasons()
    assert reasons == {"WorkloadPresent", "PodsActive", "LauncherActive", "BatchJobsPresent", "NoActivePods",
                       "ReadFailed"}
    for reason in reasons:
        assert f"`{reason}`" in README and f"`{reason}`" in OPERATIONS, reason
    assert "`Drained=True` but the phase does not move" not in OPERATIONS  # the barrier never says so


def test_the_state_diagram_names_every_phase() -> None:
    diagram = README.split("```mermaid", 1)[1].split("```", 1)[0]
    phases = {work.PENDING, work.RUNNING, work.RESTARTING, work.SUSPENDING, work.SUSPENDED, work.SUCCEEDED,
              work.FAILED, work.TERMINATING, work.QUEUED}
    for phase in phases:
        assert re.search(rf"\b{phase} -->", diagram) and re.search(rf"--> {phase}\b", diagram), phase
    assert "Pending --> Terminating: activeDeadlineSeconds passed" in diagram
    assert "Running --> Pending" not in diagram


def test_suspend_resume_and_the_replay_pod_source_are_documented() -> None:
    patch = """kubectl patch nvjob NAME --type merge -p '{"spec":{"suspend":true}}'"""
    assert patch in README
    assert "a bare request file needs --pods or --live" in README
    flowing = " ".join(OPERATIONS.split())  # its paragraphs as one line each: wrapping is not content
    assert "needs `--pods` or `--live`" in flowing
    # the documented replay reads the batch Jobs apart: kubectl prints a List with no Job both for
    # `get pods` and for `get pods,jobs` once they are gone, and only --jobs says "none"
    documented = "--pods <(kubectl get pods -n team-a -o json) --jobs <(kubectl get jobs -n team-a -o json)"
    assert documented in README and "pods,jobs" not in README.split("## Operator tools", 1)[1].split("```", 2)[1]
    assert "`--pods <(kubectl get pods -n NS -o json) --jobs <(kubectl get jobs -n NS -o json)`" in flowing


METRIC = re.compile(r"\b(?:Counter|Gauge|Histogram|Summary)\(\s*\"([a-z_]+)\"")


def test_the_readmes_metrics_row_names_every_metric_family_the_code_registers() -> None:
    """Every family a ``Counter``/``Gauge``/``Histogram``/``Summary`` of hooks/ or podread/ declares
    is named in the README's ``GET /metrics`` row, by its name or by a ``prefix_*`` the row gives."""
    declared = {name for path in [*ROOT.glob("hooks/**/*.py"), *ROOT.glob("podread/**/*.py")]
                for name in METRIC.findall(path.read_text())}
    assert len(declared) > 20, "the metric declarations were not found"
    row = next(line for line in README.splitlines() if line.startswith("| `GET /metrics`"))
    named = set(re.findall(r"`([a-z_]+)(?:\{[^}]*\})?`", row))
    prefixes = tuple(name.removesuffix("*") for name in re.findall(r"`([a-z_]+_\*)`", row))
    missing = sorted(name for name in declared if name not in named and not name.startswith(prefixes))
    assert not missing, f"registered but not in the README's /metrics row: {missing}"


def test_the_reader_roles_grants_are_the_ones_operations_md_lists() -> None:
    """docs/operations.md's install section lists the reader ClusterRole's grants as
    ``resource `verbs```; each rule of ``manifests/rbac.yaml``'s reader is there, and no other."""
    role = next(doc for doc in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text())
                if doc and doc["kind"] == "ClusterRole" and doc["metadata"]["name"] == "nvcre-hooks-pod-reader")
    flowing = " ".join(OPERATIONS.split())
    listed = flowing.split("`nvcre-hooks-pod-reader` (", 1)[1].split("), and the writer", 1)[0]
    granted = set()
    for rule in role["rules"]:
        for resource in rule["resources"]:
            group = rule["apiGroups"][0]
            granted.add((resource if not group else f"{resource}.{group}", "/".join(rule["verbs"])))
    shown = {(resource, verbs) for resource, verbs in re.findall(r"`?([a-z.]+)`? `([a-z/`]+)`", listed)}
    shown = {(resource, verbs.replace("`", "")) for resource, verbs in shown}
    assert shown == granted, listed


def test_the_tier_readme_states_how_many_tests_the_tier_has() -> None:
    """tests/cluster/README.md says "(N tests" of the tier: N is what pytest collects there."""
    stated = re.search(r"\((\d+) tests\b", (ROOT / "tests" / "cluster" / "README.md").read_text())
    assert stated, "tests/cluster/README.md states no test count"
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-m", "cluster", "tests/cluster"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    count = sum(1 for line in collected.stdout.splitlines() if "::" in line)
    assert count > 50, collected.stdout[-2000:] + collected.stderr[-2000:]
    assert int(stated.group(1)) == count
