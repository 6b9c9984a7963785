"""The metrics the dashboard and the alerts need beyond the per-call ones: decisions by the
phase they leave the Job in, held drains by the Drained reason and their age, and the writes that did
not happen exported at 0 from the start. In process, on prometheus_client's default registry (the
values are read as differences: other tests count on the same registry)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import REGISTRY, generate_latest

from hooks.core import barrier
from hooks.server import metrics
from hooks.server.effects import WRITES_NOT_DONE
from tests.e2e.harness import Harness

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def value(name: str, **labels: str) -> float:
    """The current value of a sample of the default registry (0 when absent)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def drained(status: str, reason: str, since: str) -> dict[str, object]:
    return {"conditions": [{"type": "Ready", "status": "False", "reason": "X", "lastTransitionTime": since},
                           {"type": "Drained", "status": status, "reason": reason, "message": "m",
                            "lastTransitionTime": since}]}


def test_a_waiting_drain_is_counted_by_its_reason_with_its_age() -> None:
    holds, ages, total = (value("nvcre_drain_holds_total", reason="PodsActive"),
                          value("nvcre_drain_wait_seconds_count"), value("nvcre_drain_wait_seconds_sum"))
    since = (NOW - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
    metrics.count_drain_hold(drained("False", "PodsActive", since), NOW)
    assert value("nvcre_drain_holds_total", reason="PodsActive") == holds + 1
    assert value("nvcre_drain_wait_seconds_count") == ages + 1
    assert value("nvcre_drain_wait_seconds_sum") == total + 90
    assert value("nvcre_drain_wait_seconds_bucket", le="60.0") < value("nvcre_drain_wait_seconds_bucket", le="120.0")


def test_a_drain_that_passed_or_never_ran_counts_nothing() -> None:
    before = drain_samples()
    metrics.count_drain_hold(drained("True", "NoActivePods", "2026-03-01T11:00:00Z"), NOW)
    metrics.count_drain_hold({"conditions": []}, NOW)
    metrics.count_drain_hold({}, NOW)
    metrics.count_drain_hold({"conditions": ["Drained", None]}, NOW)
    metrics.count_drain_hold({"conditions": "Drained"}, NOW)
    assert drain_samples() == before


def drain_samples() -> list[str]:
    """The drain metrics' lines of the registry (the process and GC collectors move by themselves)."""
    return [line for line in generate_latest(REGISTRY).decode().splitlines() if line.startswith("nvcre_drain_")]


def test_a_read_failure_hold_with_an_unreadable_time_is_counted_not_aged() -> None:
    holds, ages = value("nvcre_drain_holds_total", reason="ReadFailed"), value("nvcre_drain_wait_seconds_count")
    metrics.count_drain_hold(drained("Unknown", "ReadFailed", "yesterday"), NOW)
    assert value("nvcre_drain_holds_total", reason="ReadFailed") == holds + 1
    assert value("nvcre_drain_wait_seconds_count") == ages


def test_every_reason_the_barrier_can_give_is_exported_from_the_start() -> None:
    source = barrier.__doc__ + (barrier.barrier.__doc__ or "")
    for reason in ("WorkloadPresent", "PodsActive", "LauncherActive", "BatchJobsPresent"):
        assert reason in source and reason in metrics.DRAIN_REASONS
    text = generate_latest(REGISTRY).decode()
    for reason in metrics.DRAIN_REASONS:
        assert f'nvcre_drain_holds_total{{reason="{reason}"}}' in text


def test_the_writes_that_did_not_happen_are_exported_from_the_start() -> None:
    text = generate_latest(REGISTRY).decode()
    for kind, outcomes in WRITES_NOT_DONE.items():
        for outcome in outcomes:
            assert f'nvcre_writes_total{{kind="{kind}",outcome="{outcome}"}}' in text


def test_answered_calls_count_phases_and_held_drains() -> None:
    h = Harness.fast(grace_steps=3)
    running = value("nvcre_decision_phases_total", phase="Running")
    h.create_job("counted", max_restarts=1)
    h.run_until(lambda: h.phase("counted") == "Running", "Running")
    assert value("nvcre_decision_phases_total", phase="Running") > running
    terminating = value("nvcre_decision_phases_total", phase="Terminating")
    holds = sum(value("nvcre_drain_holds_total", reason=r) for r in metrics.DRAIN_REASONS)
    ages = value("nvcre_drain_wait_seconds_count")
    h.driver.delete_job(h.namespace, "counted")
    h.reconcile()
    assert h.phase("counted") == "Terminating"
    h.run_until(lambda: h.gone("counted"), "finalized")
    assert value("nvcre_decision_phases_total", phase="Terminating") > terminating
    held = sum(value("nvcre_drain_holds_total", reason=r) for r in metrics.DRAIN_REASONS) - holds
    assert held >= 1
    assert value("nvcre_drain_wait_seconds_count") - ages == held
    h.assert_safe()


def test_a_drain_reason_the_hooks_never_write_is_counted_as_other() -> None:
    """A Drained condition carried over from a status written by hand cannot grow the label set."""
    before = value("nvcre_drain_holds_total", reason="other")
    metrics.count_drain_hold(drained("False", "x" * 200, "2026-03-01T11:00:00Z"), NOW)
    assert value("nvcre_drain_holds_total", reason="other") == before + 1
    assert value("nvcre_drain_holds_total", reason="x" * 200) == 0


def test_the_per_call_counts_go_through_children_bound_once(monkeypatch) -> None:
    """Issue 32: no ``labels()`` look-up per hook call once a (hook, code), kind or phase was seen."""
    metrics.observe_request("sync", 200, 0.002)
    metrics.count_decision("held")
    metrics.count_phase("Running")
    before = (value("nvcre_hook_requests_total", hook="sync", code="200"),
              value("nvcre_hook_request_duration_seconds_count", hook="sync"),
              value("nvcre_decisions_total", kind="held"), value("nvcre_decision_phases_total", phase="Running"))
    looked_up: list[tuple] = []
    for metric in (metrics.REQUESTS, metrics.DURATION, metrics.DECISIONS, metrics.PHASE_DECISIONS):
        real = metric.labels
        monkeypatch.setattr(metric, "labels", lambda *a, real=real, **k: looked_up.append((a, k)) or real(*a, **k))
    for _ in range(3):
        metrics.observe_request("sync", 200, 0.002)
        metrics.count_decision("held")
        metrics.count_phase("Running")
    assert looked_up == []
    monkeypatch.undo()
    after = (value("nvcre_hook_requests_total", hook="sync", code="200"),
             value("nvcre_hook_request_duration_seconds_count", hook="sync"),
             value("nvcre_decisions_total", kind="held"), value("nvcre_decision_phases_total", phase="Running"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [3, 3, 3, 3]
