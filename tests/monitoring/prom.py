"""What the monitoring tests share: the shipped rules and dashboard, read as the tools read them,
and the two binaries of Debian's ``prometheus`` package (``promtool``, ``prometheus``).

``require(binary)`` skips the calling test with a message naming the package when the binary is not
on PATH, and only then; CI installs the package (``.ci/run``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"
RULES = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "dashboards" / "nvcre-hooks.json"
UNIT_TESTS = Path(__file__).resolve().parent / "rules_test.yaml"
JOB = "nvcre-hooks"
"""The scrape job name: the Service's name, which a ServiceMonitor makes the job label."""
RATE_INTERVAL = "30s"
"""What Grafana's ``$__rate_interval`` becomes when the tests query a panel's expression."""


def require(binary: str) -> str:
    """The path of ``binary``; skips the test, naming the package to install, when it is missing."""
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"{binary} is not installed: it comes with Debian's `prometheus` package "
                    "(apt-get install -y prometheus); CI installs it (.ci/run)")
    return path


def rule_spec() -> dict[str, Any]:
    """The ``spec`` of the shipped PrometheusRule: ``{"groups": [...]}``, a plain rules file's content."""
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert document["apiVersion"] == "monitoring.coreos.com/v1" and document["kind"] == "PrometheusRule"
    return dict(document["spec"])


def rules(spec: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every rule of ``spec`` (default: the shipped one), recording and alerting, in file order."""
    spec = rule_spec() if spec is None else spec
    return [rule for group in spec["groups"] for rule in group["rules"]]


def write_rules(path: Path, spec: dict[str, Any] | None = None, *, descriptions: bool = True) -> Path:
    """Writes ``spec`` (default: the shipped one) to ``path`` as a plain rules file; without
    ``descriptions``, the ``description`` annotations are left out (the promtool unit tests)."""
    spec = rule_spec() if spec is None else spec
    if not descriptions:
        for rule in rules(spec):
            rule.get("annotations", {}).pop("description", None)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def dashboard() -> dict[str, Any]:
    """The shipped Grafana dashboard."""
    return dict(json.loads(DASHBOARD.read_text(encoding="utf-8")))


def panels(board: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every panel of ``board`` that is not a row, those inside collapsed rows included."""
    for panel in (dashboard() if board is None else board)["panels"]:
        if panel.get("type") == "row":
            yield from panel.get("panels") or ()
        else:
            yield panel


def panel_queries(board: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """``(panel title and refId, expression)`` of every target, with Grafana's ``$__rate_interval``
    replaced by ``RATE_INTERVAL``."""
    return [(f"{panel['title']} [{target['refId']}]", target["expr"].replace("$__rate_interval", RATE_INTERVAL))
            for panel in panels(board) for target in panel["targets"]]
