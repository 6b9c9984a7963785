"""``nvcre_attempt_ends_total{class}`` (issue 34 item 4): each attempt end is counted once, by its
failure class, on the answer that classifies it, as the checkpoint's outcomes are: a replayed answer,
a retry before the status is written, and a status that still carries the class count nothing more."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY

from hooks.core.decide import Decision
from hooks.core.historyentry import newly_classed
from hooks.core.observed import parse_request
from hooks.server import metrics
from hooks.server.effects import Effects
from hooks.server.writer import MemoryWriter
from tests.support import job_request

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ENDED = {"attempt": 0, "jobSet": "train-0", "ended": "2026-01-01T00:00:00Z", "outcome": "Failed"}


def count(cls: str) -> float:
    return REGISTRY.get_sample_value("nvcre_attempt_ends_total", {"class": cls}) or 0.0


def answered(attempts: list[dict[str, Any]]) -> Decision:
    status = {"phase": "Restarting", "attempt": 0, "restarts": 1, "conditions": [], "attempts": attempts}
    return Decision(response={"status": status, "children": []}, kind="held", phase_before="Running",
                    phase_after="Restarting", message="")


def test_an_end_is_counted_once_by_its_class_whatever_replays_it() -> None:
    before = parse_request(job_request(status={"phase": "Running", "attempt": 0, "attempts": [ENDED]}), "sync")
    classed = [ENDED | {"class": "node", "failedNodes": ["gpu-3"]}]
    node, user = count("node"), count("user")
    effects = Effects(MemoryWriter(), instance="test")
    for _ in range(3):  # Metacontroller replays the parent the status was not written to yet
        effects.submit(before, answered(classed), NOW)
    assert count("node") == node + 1 and count("user") == user
    after = parse_request(job_request(status={"phase": "Restarting", "attempt": 0, "attempts": classed}), "sync")
    effects.submit(after, answered(classed), NOW)  # the class is in the status now: a fixed point
    assert count("node") == node + 1
    assert effects.flush()


def test_every_class_is_exported_from_the_start_and_a_strange_word_is_other() -> None:
    assert all(REGISTRY.get_sample_value("nvcre_attempt_ends_total", {"class": cls}) is not None
               for cls in ("user", "preempted", "node", "infrastructure", "deadline", "unknown"))
    other = count("other")
    metrics.count_attempt_end("x" * 500)
    assert count("other") == other + 1


def test_newly_classed_names_the_ends_the_answer_classified() -> None:
    assert newly_classed([ENDED], [ENDED | {"class": "preempted"}]) == ((0, "preempted"),)
    assert newly_classed([ENDED | {"class": "user"}], [ENDED | {"class": "user"}]) == ()
    assert newly_classed(None, [{"attempt": 1, "class": "node"}, {"attempt": 0, "class": "user"}, {"attempt": 2}]) == (
        (0, "user"), (1, "node"))
    assert newly_classed([ENDED | {"class": "user"}], []) == (), "a dropped entry is no end"
