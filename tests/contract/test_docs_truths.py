"""The docs say what the code does: each fact a new user met false is checked
against its source here, so it cannot drift again."""

from __future__ import annotations

import re
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
