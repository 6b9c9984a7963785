"""Every expression of the shipped dashboard and rules, evaluated by a real Prometheus server
(Debian's ``prometheus`` package) scraping a real hooks server that has served a lifecycle.

The hooks server is gunicorn (``tests/e2e/server.py``) over the fake API server; the lifecycle is
driven through it as Metacontroller would (``tests/e2e/harness.py``): a Job created, a worker failed
and the Job restarted through the drain barrier, an API outage during its deletion (reads fail, the
teardown holds), the outage over and the Job finalized; and one unreadable request (a 4xx). Prometheus
scrapes the metrics port every second and evaluates the shipped rules (every group every second,
the only change to them) from a temporary data directory. Then, through its HTTP API:

- every dashboard target (``$__rate_interval`` as ``tests.monitoring.prom.RATE_INTERVAL``) parses and
  returns at least one series;
- every recording rule's expression returns at least one series, and so does the series it records;
- every alerting rule's expression parses, and the rule manager reports every rule healthy, evaluated
  after the lifecycle without an error. (An alert's expression returns a series only while it fires:
  ``tests/contract/test_monitoring_rules.py`` has promtool's unit tests of each firing and not firing.)

Skipped, saying so, only when the ``prometheus`` binary is not installed; CI installs it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import Harness
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer, Fault
from tests.monitoring import prom
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

DEADLINE_SECONDS = 25.0
"""How long the series may take to appear once the lifecycle is over (about 2 s is usual)."""


LIFECYCLE_SHOWS = (
    'nvcre_decision_phases_total{phase="Restarting"} > 0',
    'nvcre_decision_phases_total{phase="Terminating"} > 0',
    'nvcre_drain_holds_total{reason=~"WorkloadPresent|PodsActive"} > 0',
    'nvcre_drain_holds_total{reason="ReadFailed"} > 0',
    "nvcre_drain_wait_seconds_count > 0",
    'podread_read_errors_total{code="http-503"} > 0',
    'nvcre_hook_requests_total{code=~"4.."} > 0',
    'sum(nvcre_writes_total{kind="event"}) > 0',
)
"""What the lifecycle did, as the scraped metrics must show it (not only series at 0)."""


class PrometheusAPI:
    """The HTTP API of a Prometheus server at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: str) -> dict[str, Any]:
        """``GET path?params``, the JSON answer (a 4xx answer's JSON too: a query that does not parse)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
                return dict(json.load(response))
        except urllib.error.HTTPError as error:
            return dict(json.load(error))

    def query(self, expr: str) -> dict[str, Any]:
        """An instant query of ``expr`` now: ``{"status": ..., "data": {"result": [...]}}`` or the error."""
        return self.get("/api/v1/query", query=expr)

    def series(self, expr: str) -> list[Any]:
        """The series ``expr`` returns now; fails with Prometheus's error when it does not parse."""
        answer = self.query(expr)
        assert answer["status"] == "success", f"{expr}: {answer.get('errorType')}: {answer.get('error')}"
        return list(answer["data"]["result"])


@contextlib.contextmanager
def prometheus(binary: str, workdir: Path, metrics_port: int, rules_file: Path) -> Iterator[PrometheusAPI]:
    """A Prometheus server on a free loopback port scraping ``127.0.0.1:metrics_port`` every second
    as job ``nvcre-hooks`` and evaluating ``rules_file``; data in ``workdir``; stopped on exit."""
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules_file)],
        "scrape_configs": [{"job_name": prom.JOB, "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}],
    }
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    log = workdir / "prometheus.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [binary, f"--config.file={config_file}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            api = PrometheusAPI(f"http://127.0.0.1:{port}")
            wait_for(lambda: _ready(api), 15.0, lambda: f"Prometheus is not ready:\n{log.read_text()}",
                     process=process)
            yield api
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def _ready(api: PrometheusAPI) -> bool:
    try:
        with urllib.request.urlopen(f"{api.url}/-/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(done: Callable[[], bool], seconds: float, why: Callable[[], str],
             process: subprocess.Popen[bytes] | None = None) -> None:
    """Polls ``done`` until it holds; fails with ``why()`` after ``seconds`` or when ``process`` exits."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline or (process is not None and process.poll() is not None):
            pytest.fail(why())
        time.sleep(0.2)


def lifecycle(fake: FakeKubeServer, server: HookServer) -> None:
    """A Job created, restarted through the drain barrier, deleted during an API outage (its reads
    fail, the teardown holds), finalized once the outage is over; and one unreadable request."""
    h = Harness.e2e(fake, server, namespace="monitoring", grace_steps=2)
    h.create_job("watched", max_restarts=1)
    h.run_until(lambda: h.phase("watched") == "Running", "Running")
    h.cluster.fail_worker(h.namespace, "watched-0")
    h.reconcile()
    h.run_until(lambda: h.jobsets("watched") == ["watched-1"], "restarted as attempt 1")
    h.run_until(lambda: h.phase("watched") == "Running", "Running again")
    fake.inject(Fault.error(f"/api/v1/namespaces/{h.namespace}/pods", 503))
    h.driver.delete_job(h.namespace, "watched")
    h.reconcile()
    h.run_until(lambda: h.condition("watched", "Drained").get("reason") == "ReadFailed", "held: ReadFailed")
    fake.clear_faults()
    h.run_until(lambda: h.gone("watched"), "finalized")
    h.assert_safe()
    status, _ = server.post("/sync", b'{"parent": {}}')
    assert 400 <= status < 500


def test_every_dashboard_and_rule_expression_returns_series_from_a_real_prometheus(tmp_path: Path) -> None:
    binary = prom.require("prometheus")
    started = time.monotonic()
    spec = prom.rule_spec()
    for group in spec["groups"]:
        group["interval"] = "1s"
    rules_file = prom.write_rules(tmp_path / "rules.yml", spec)
    with FakeKubeServer() as fake, HookServer(fake) as server, \
            prometheus(binary, tmp_path, server.metrics_port, rules_file) as api:
        lifecycle(fake, server)
        ended = time.time()
        queries = prom.panel_queries()
        records = [rule for rule in prom.rules(spec) if "record" in rule]
        alerts = [rule for rule in prom.rules(spec) if "alert" in rule]

        def empty() -> list[str]:
            """The panels and recording rules that return no series yet."""
            missing = [title for title, expr in queries if not api.series(expr)]
            missing += [f"rule {r['record']}" for r in records if not api.series(r["expr"])]
            return missing + [f"series {r['record']}" for r in records if not api.series(r["record"])]

        def evaluated() -> bool:
            groups = api.get("/api/v1/rules")["data"]["groups"]
            return all(_seconds(rule["lastEvaluation"]) > ended for group in groups for rule in group["rules"])

        wait_for(lambda: not empty() and evaluated(), DEADLINE_SECONDS,
                 lambda: f"no series after {DEADLINE_SECONDS} s for: {empty()}")
        for rule in alerts:
            api.series(rule["expr"])  # parses and evaluates (a series only while it fires)
        for expr in LIFECYCLE_SHOWS:
            assert api.series(expr), f"the lifecycle should show in {expr}"
        groups = api.get("/api/v1/rules")["data"]["groups"]
        loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
        assert set(loaded) == {rule.get("record") or rule["alert"] for rule in prom.rules(spec)}
        for name, rule in loaded.items():
            assert rule["health"] == "ok" and not rule.get("lastError"), (name, rule.get("lastError"))
    assert time.monotonic() - started < 60


def _seconds(timestamp: str) -> float:
    """An RFC 3339 time of Prometheus's API (nanoseconds, ``Z``) as Unix seconds."""
    from datetime import datetime

    text = timestamp.replace("Z", "+00:00")
    head, _, rest = text.partition(".")
    if rest:
        fraction, sign, zone = rest[:-6], rest[-6:-5], rest[-5:]
        text = f"{head}.{fraction[:6].ljust(6, '0')}{sign}{zone}"
    return datetime.fromisoformat(text).timestamp()
