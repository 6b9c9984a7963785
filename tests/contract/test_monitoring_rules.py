"""The shipped monitoring (manifests/monitoring/): the PrometheusRule checked and unit-tested
with the real ``promtool``, and the kustomization that ships it with the ServiceMonitor and the
dashboard. ``tests/server/test_monitoring_live.py`` has a real Prometheus evaluate every expression.

promtool reads plain rule files: each test writes the PrometheusRule's ``spec`` to one
(``tests.monitoring.prom.write_rules``). Skipped, saying so, only when promtool is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring import prom

MANIFESTS = prom.ROOT / "manifests"


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``promtool ARGS``, its output captured (skips when promtool is missing)."""
    return subprocess.run([prom.require("promtool"), *map(str, args)], capture_output=True, text=True, timeout=60)


def unit_test(tmp_path: Path, spec: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    """``promtool test rules`` of tests/monitoring/rules_test.yaml on ``spec`` (default: the shipped
    rules), both written to ``tmp_path``."""
    prom.write_rules(tmp_path / "rules.yml", spec, descriptions=False)
    shutil.copy(prom.UNIT_TESTS, tmp_path / "rules_test.yaml")
    return promtool("test", "rules", tmp_path / "rules_test.yaml")


def test_promtool_checks_the_rules(tmp_path: Path) -> None:
    path = prom.write_rules(tmp_path / "rules.yml")
    result = promtool("check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(prom.rules())} rules found" in result.stdout


def test_promtool_refuses_a_rule_that_does_not_parse(tmp_path: Path) -> None:
    spec = prom.rule_spec()
    spec["groups"][1]["rules"][0]["expr"] = 'up{job="nvcre-hooks" == 0'
    result = promtool("check", "rules", prom.write_rules(tmp_path / "rules.yml", spec))
    assert result.returncode != 0 and "parse error" in (result.stdout + result.stderr)


def test_promtool_unit_tests_of_every_alert_pass(tmp_path: Path) -> None:
    result = unit_test(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(("alert", "expr"), [
    ("NvcreDrainStuck", "nvcre:drain_stuck_pods:increase10m > 1000"),  # would never fire
    ("NvcreHookErrors", 'nvcre:hook_requests:rate5m{code=~"[45].."} > 0'),  # would fire on a 401 too
])
def test_the_unit_tests_fail_on_a_wrong_alert(tmp_path: Path, alert: str, expr: str) -> None:
    spec = prom.rule_spec()
    [rule] = [r for r in prom.rules(spec) if r.get("alert") == alert]
    rule["expr"] = expr
    result = unit_test(tmp_path, spec)
    assert result.returncode != 0
    assert f"alertname: {alert}" in result.stdout + result.stderr


def test_every_alert_is_unit_tested_firing_and_not_firing() -> None:
    tests = yaml.safe_load(prom.UNIT_TESTS.read_text(encoding="utf-8"))["tests"]
    cases = [case for test in tests for case in test.get("alert_rule_test") or ()]
    alerts = [rule["alert"] for rule in prom.rules() if "alert" in rule]
    assert len(alerts) == len(set(alerts)) >= 10
    for alert in alerts:
        mine = [case for case in cases if case["alertname"] == alert]
        assert any(case["exp_alerts"] for case in mine), f"{alert}: no unit test where it fires"
        assert any(not case["exp_alerts"] for case in mine), f"{alert}: no unit test where it does not fire"
    assert {case["alertname"] for case in cases} <= set(alerts), "a unit test names an alert that does not exist"


def test_every_alert_says_what_it_means_and_how_bad() -> None:
    for rule in prom.rules():
        if "alert" in rule:
            assert rule["labels"]["severity"] in ("info", "warning", "critical"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, str], dict[str, Any]]:
    """``kubectl kustomize manifests/monitoring``, keyed by (kind, name)."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed: kustomize build skipped (Debian's kubectl package; CI installs it)")
    result = subprocess.run(["kubectl", "kustomize", str(prom.MONITORING)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(result.stdout) if doc}


def test_the_monitoring_kustomization_ships_the_rule_the_monitor_and_the_dashboard(
    built: dict[tuple[str, str], dict[str, Any]],
) -> None:
    assert set(built) == {("PrometheusRule", "nvcre-hooks"), ("ServiceMonitor", "nvcre-hooks"),
                          ("ConfigMap", "nvcre-hooks-dashboard")}
    for doc in built.values():
        assert doc["metadata"]["namespace"] == "nvcre-system"
    assert built[("PrometheusRule", "nvcre-hooks")]["spec"] == prom.rule_spec()
    config_map = built[("ConfigMap", "nvcre-hooks-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["nvcre-hooks.json"]) == prom.dashboard()


def test_the_service_monitor_scrapes_the_metrics_port_of_the_hooks_service(
    built: dict[tuple[str, str], dict[str, Any]],
) -> None:
    service = yaml.safe_load((MANIFESTS / "service.yaml").read_text(encoding="utf-8"))
    deployment = yaml.safe_load((MANIFESTS / "deployment.yaml").read_text(encoding="utf-8"))
    monitor = built[("ServiceMonitor", "nvcre-hooks")]["spec"]
    labels = service["metadata"]["labels"]
    assert monitor["selector"]["matchLabels"].items() <= labels.items()
    assert monitor["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    [endpoint] = monitor["endpoints"]
    [port] = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    [target] = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    metrics_port = [e for e in container["env"] if e["name"] == "NVCRE_METRICS_PORT"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    assert not metrics_port or int(metrics_port[0]["value"]) == target["containerPort"]
    assert service["metadata"]["name"] == prom.JOB  # the job label the alerts and the dashboard name


def test_the_base_kustomization_installs_without_the_operator_crds() -> None:
    base = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text(encoding="utf-8"))
    assert not any("monitoring" in str(entry) for entry in base["resources"])
    for name in base["resources"]:
        for doc in yaml.safe_load_all((MANIFESTS / name).read_text(encoding="utf-8")):
            assert doc is None or not str(doc.get("apiVersion", "")).startswith("monitoring.coreos.com/")


def test_every_dashboard_panel_queries_the_chosen_prometheus() -> None:
    board = prom.dashboard()
    [variable] = [v for v in board["templating"]["list"] if v["type"] == "datasource"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    panels = list(prom.panels(board))
    assert len(panels) >= 15
    for panel in panels:
        assert panel["datasource"]["uid"] == "${" + variable["name"] + "}", panel["title"]
        assert panel["targets"] and panel["description"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"].strip(), panel["title"]

