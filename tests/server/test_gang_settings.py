"""The gang settings of the hook server (issue 22): ``NVCRE_GANG_POLICY`` and the PodGroup
discovery, from the environment and the API server to the core's ``Observed.gang``."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from hooks.server import discovery
from hooks.server.app import create_app
from hooks.server.config import Settings
from podread import reader_from_snapshot
from tests.support import job_request

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_default_policy_comes_from_the_environment() -> None:
    assert Settings.from_env({}).gang_policy == "None"
    assert Settings.from_env({"NVCRE_GANG_POLICY": "Gang"}).gang_policy == "Gang"
    with pytest.raises(ValueError, match="NVCRE_GANG_POLICY='gang' is not valid: must be one of Gang, None"):
        Settings.from_env({"NVCRE_GANG_POLICY": "gang"})


def test_discovery_is_read_once_per_ttl_and_says_why() -> None:
    answers: list[list[str] | None] = [None, ["podgroups", "workloads"], []]
    calls: list[int] = []
    now = [0.0]

    def fetch() -> list[str] | None:
        calls.append(1)
        return answers[len(calls) - 1]

    found = discovery.PodGroupDiscovery(fetch, ttl=60, clock=lambda: now[0])
    assert found.note() == discovery.NOT_SERVED
    assert found.note() == discovery.NOT_SERVED and len(calls) == 1
    now[0] = 61
    assert found.note() == discovery.SERVED
    now[0] = 122
    assert found.note() == discovery.NO_RESOURCE


def test_a_failed_discovery_read_is_words() -> None:
    def fetch() -> list[str] | None:
        raise TimeoutError("read timed out")

    assert discovery.PodGroupDiscovery(fetch).note() == \
        "discovery of scheduling.k8s.io/v1beta1 failed: TimeoutError: read timed out"


def answer(app_settings: Settings, body: dict, found: discovery.PodGroupDiscovery | None) -> dict:
    reader = reader_from_snapshot({"cache": {"pods": []}, "live": {"pods": []}, "jobs": {"items": []}})
    app = create_app(reader, clock=lambda: NOW, settings=app_settings, discovery=found)
    reply = app.test_client().post("/sync", data=orjson.dumps(body))
    assert reply.status_code == 200, reply.data
    return reply.get_json()


def test_the_default_and_discovery_reach_the_decision() -> None:
    asked: list[int] = []

    def fetch() -> list[str] | None:
        asked.append(1)
        return None

    found = discovery.PodGroupDiscovery(fetch)
    body = answer(Settings(gang_policy="Gang"), job_request(), found)
    assert body["children"] == []
    (condition,) = [c for c in body["status"]["conditions"] if c["type"] == "GangScheduled"]
    assert condition["reason"] == "GangUnavailable" and discovery.NOT_SERVED in condition["message"]
    listed = answer(Settings(gang_policy="Gang"), job_request(podgroups=[]), found)
    assert [c["kind"] for c in listed["children"]] == ["PodGroup"]  # the group first, its JobSet next
    assert len(asked) == 1, "a request that lists PodGroups needs no discovery"
    assert answer(Settings(), job_request(), found)["children"][0]["kind"] == "JobSet"
