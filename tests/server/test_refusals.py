"""The hooks' refusals as behind the cluster (409), counted by cause, and a Job refused again and
again told apart from the normal lag after a change (issue 36 item 1): ``nvcre_hook_refusals_total``,
``nvcre_hook_redecided_total`` and ``nvcre_hook_refusal_loops_total``. In process, on
prometheus_client's default registry (read as differences: other tests count on it too)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from prometheus_client import REGISTRY

from hooks.server import metrics
from hooks.server.app import create_app
from hooks.server.freshness import FixedParentVersions
from hooks.server.metrics import REFUSAL_LOOP, RefusalStreaks
from tests.support import FakeReader, job_request, jobset_child, make_pod

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def post(app_parents: FixedParentVersions, name: str, version: str = "42") -> int:
    body = job_request(name=name, jobsets=[jobset_child(name, 0)])
    body["parent"]["metadata"]["resourceVersion"] = version
    reader = FakeReader([make_pod(f"{name}-0-worker-0-{i}", job=name, workload=f"{name}-0") for i in range(2)])
    app = create_app(reader, clock=lambda: NOW, parents=app_parents)
    return app.test_client().post("/sync", data=orjson.dumps(body), content_type="application/json").status_code


def test_refusals_are_counted_by_cause_and_a_run_of_them_is_a_loop() -> None:
    gone = FixedParentVersions({})  # the Job is gone from the API server: every call is refused
    refusals, loops = (value("nvcre_hook_refusals_total", hook="sync", cause="parent-gone"),
                       value("nvcre_hook_refusal_loops_total", hook="sync"))
    for _ in range(REFUSAL_LOOP - 1):
        assert post(gone, "looping") == 409
    assert value("nvcre_hook_refusal_loops_total", hook="sync") == loops
    assert post(gone, "looping") == 409
    assert value("nvcre_hook_refusals_total", hook="sync", cause="parent-gone") == refusals + REFUSAL_LOOP
    assert value("nvcre_hook_refusal_loops_total", hook="sync") == loops + 1


def test_an_answer_ends_the_run_and_a_redecided_one_is_counted() -> None:
    gone = FixedParentVersions({})
    loops, redecided = value("nvcre_hook_refusal_loops_total", hook="sync"), value("nvcre_hook_redecided_total",
                                                                                   hook="sync")
    for _ in range(REFUSAL_LOOP - 1):
        assert post(gone, "flaky") == 409
    live = job_request(name="flaky", jobsets=[jobset_child("flaky", 0)])["parent"]
    live["metadata"]["resourceVersion"] = "43"
    assert post(FixedParentVersions(jobs={("default", "flaky"): live}), "flaky") == 200  # decided on the live Job
    assert value("nvcre_hook_redecided_total", hook="sync") == redecided + 1
    for _ in range(REFUSAL_LOOP - 1):
        assert post(gone, "flaky") == 409
    assert value("nvcre_hook_refusal_loops_total", hook="sync") == loops


def test_streaks_are_per_job_bounded_and_count_every_further_loop() -> None:
    streaks = RefusalStreaks(loop=3, max_jobs=2)
    assert [streaks.refused(("ns", "a")) for _ in range(6)] == [False, False, True, False, False, True]
    streaks.refused(("ns", "b"))
    streaks.refused(("ns", "c"))  # the least recently refused ("a") is forgotten
    assert [streaks.refused(("ns", "a")) for _ in range(3)] == [False, False, True]
    streaks.answered(("ns", "a"))
    assert [streaks.refused(("ns", "a")) for _ in range(3)] == [False, False, True]


def test_every_cause_the_core_and_the_check_name_is_a_documented_one() -> None:
    from hooks.core.barrier import STALE_CAUSES
    help_text = metrics.REFUSALS._documentation
    assert all(cause in help_text for cause in STALE_CAUSES)
