"""The slim projection keeps every field a reader of cached pods reads, and nothing else.

Every recorded scenario (tests/payloads) is run through the real app with its cache side read
through a real PodCache and handed out as guarded slim pods (``tests.support.slim_guard``): a caller that
reads a field ``podread.slim`` drops raises ``DroppedField`` and the scenario fails. The decision
tests do the same through ``tests.support.reader.FakeReader``, whose cached pods are guarded too.
"""

from __future__ import annotations

import json
import pathlib
from datetime import datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from bench.pods import realistic_pod
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.tools.cli_format import pod_row
from podread import PodCache, PodSelector, Reader, ReadMetrics, is_active, pod_key
from podread import slim as slim_module
from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, LAUNCHER_LABEL, REPLICATED_JOB_LABEL
from podread.slim import KEPT, KEPT_LABELS, slim
from podread.snapshot import _access, _jobs, _nodes, _side
from tests.record_payloads import load, scenario_dirs
from tests.support.slim_guard import DroppedField, guarded

SCENARIOS = scenario_dirs()


class GuardedCache:
    """A PodCache whose answers are guarded slim pods."""

    def __init__(self, cache: PodCache) -> None:
        self._cache = cache

    def list_pods(self, selector: PodSelector) -> list[dict[str, Any]]:
        return [guarded(pod) for pod in self._cache.list_pods(selector)]


def guarded_reader(doc: dict[str, Any]) -> Reader:
    metrics = ReadMetrics(CollectorRegistry())
    if "items" in doc:
        cache_side = live_side = _side({"side": {"pods": doc["items"]}}, "side")
    else:
        cache_side, live_side = _side(doc, "cache"), _side(doc, "live")
    return Reader(GuardedCache(PodCache(cache_side, metrics=metrics)), live_side, metrics=metrics,
                  nodes=_nodes(doc.get("nodes")), access=_access(doc.get("access")),
                  jobs=_jobs(doc.get("jobs")))


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_every_scenario_answers_the_same_over_guarded_slim_cached_pods(folder: pathlib.Path) -> None:
    meta = load(folder, "meta")
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
    app = create_app(reader=guarded_reader(load(folder, "pods")), clock=lambda: now, settings=Settings())
    answer = app.test_client().post(f"/{meta['hook']}", data=json.dumps(load(folder, "request")),
                                    content_type="application/json")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json() == load(folder, "response")


def test_the_guard_fails_a_caller_that_reads_a_dropped_field() -> None:
    pod = guarded(realistic_pod("llama", 0, "team-a"))
    with pytest.raises(DroppedField, match=r"spec\.containers"):
        pod["spec"].get("containers")
    with pytest.raises(DroppedField, match=r"metadata\.ownerReferences"):
        pod["metadata"]["ownerReferences"]
    with pytest.raises(DroppedField, match=r"status\.containerStatuses"):
        _ = "containerStatuses" in pod["status"]
    with pytest.raises(DroppedField, match="kind"):
        pod.get("kind")
    with pytest.raises(DroppedField, match=r"metadata\.labels\.batch\.kubernetes\.io/job-name"):
        pod["metadata"]["labels"].get("batch.kubernetes.io/job-name")


def test_the_readers_of_cached_pods_read_only_kept_fields() -> None:
    pod = guarded(realistic_pod("llama", 0, "team-a"))
    assert is_active(pod) and pod_key(pod) == "team-a/" + pod["metadata"]["name"]
    assert PodSelector(namespace="team-a", labels={"nvcre.nvidia.com/job": "llama"}).matches(pod)
    row = pod_row(pod, datetime.fromisoformat("2026-01-01T01:00:00+00:00"))
    assert row["job"] == "llama" and row["node"] and row["creationTimestamp"]


def test_slim_keeps_exactly_the_kept_fields() -> None:
    full = realistic_pod("llama", 0, "team-a")
    kept = slim(full)
    assert set(kept) == set(KEPT)
    for part, keys in KEPT.items():
        assert set(kept[part]) <= keys
        assert {key for key in keys if key in full[part]} == set(kept[part])
    assert kept["metadata"]["labels"] == {key: value for key, value in full["metadata"]["labels"].items()
                                          if key in KEPT_LABELS}
    assert set(kept["metadata"]["labels"]) == KEPT_LABELS - {LAUNCHER_LABEL}, "a worker carries every kept label"


def test_slim_keeps_only_the_labels_a_reader_of_cached_pods_reads() -> None:
    """The batch Job's and JobSet's own labels (a uid, a hash, the Job's name: values of the pod's
    own) and the user's are dropped (issue 36 item 2); a launcher keeps its label, a pod without
    any kept label an empty ``labels``."""
    full = realistic_pod("llama", 3, "team-a")
    full["metadata"]["labels"] |= {"jobset.sigs.k8s.io/job-key": "f" * 40, "team": "nlp"}
    assert set(slim(full)["metadata"]["labels"]) == {JOB_LABEL, ATTEMPT_LABEL, JOBSET_NAME_LABEL,
                                                     REPLICATED_JOB_LABEL}
    launcher = {"metadata": {"name": "l", "labels": {LAUNCHER_LABEL: "llama", "job-name": "llama-0-launcher-0"}}}
    assert slim(launcher)["metadata"]["labels"] == {LAUNCHER_LABEL: "llama"}
    assert slim({"metadata": {"name": "other", "labels": {"app": "x"}}})["metadata"]["labels"] == {}


def test_the_start_time_is_kept_and_shared_by_pods_that_started_together_within_a_bound() -> None:
    started = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    one, two = (slim({"metadata": {"name": n}, "status": dict(started)}) for n in ("a", "b"))
    assert one["status"] == started and one["status"] is two["status"]
    assert slim({"metadata": {"name": "c"}, "status": {"phase": "Pending"}})["status"] == {"phase": "Pending"}
    assert slim({"metadata": {"name": "d"}, "status": {"phase": "Running", "startTime": ["odd"]}})["status"] == {
        "phase": "Running"}, "anything but a string is no start time, never an error"
    for second in range(5000):
        slim({"metadata": {"name": "e"}, "status": {"phase": "Running", "startTime": f"2026-01-01T00:00:{second}Z"}})
    assert len(slim_module._shared_started) <= slim_module._SHARED_STARTED_MAX
