"""``hooks.core.observed._managed_times``: what the parent's ``managedFields`` say, read in one pass
(issue 32 item 4), held equal to the three reads it replaced (``_write_times``, ``_status_written``,
``_suspend_set_at``, kept here as they were) on every recorded request and on random metadata."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hooks.core.observed import _managed_times
from tests.record_payloads import load, scenario_dirs

SCENARIOS = scenario_dirs()


def _write_times(metadata: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not isinstance(metadata, Mapping):
        return (), ()
    fields = metadata.get("managedFields")
    entries = [entry for entry in fields if isinstance(entry, Mapping)] if isinstance(fields, list) else []
    timed = [entry for entry in entries if isinstance(entry.get("time"), str) and entry["time"]]
    if not timed:
        return (), ()
    deletion = metadata.get("deletionTimestamp")
    tail = (deletion,) if isinstance(deletion, str) and deletion else ()
    world = tuple(entry["time"] for entry in timed if entry.get("subresource") != "status")
    return (*(entry["time"] for entry in timed), *tail), (*world, *tail)


def _status_written(metadata: object) -> str:
    fields = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    if not isinstance(fields, list):
        return ""
    return max((entry["time"] for entry in fields if isinstance(entry, Mapping)
                and entry.get("subresource") == "status" and isinstance(entry.get("time"), str)), default="")


def _suspend_set_at(metadata: object) -> str:
    fields = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    if not isinstance(fields, list):
        return ""
    return max((entry["time"] for entry in fields if isinstance(entry, Mapping)
                and entry.get("subresource") != "status" and isinstance(entry.get("time"), str)
                and isinstance(entry.get("fieldsV1"), Mapping) and isinstance(entry["fieldsV1"].get("f:spec"), Mapping)
                and "f:suspend" in entry["fieldsV1"]["f:spec"]), default="")


def _former(metadata: object) -> tuple[tuple[str, ...], tuple[str, ...], str, str]:
    return (*_write_times(metadata), _status_written(metadata), _suspend_set_at(metadata))


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_the_one_pass_reads_a_recorded_request_as_the_three_did(folder: pathlib.Path) -> None:
    metadata = load(folder, "request")["parent"].get("metadata")
    assert _managed_times(metadata) == _former(metadata)


def test_the_one_pass_reads_managed_fields_as_the_api_server_writes_them() -> None:
    """The recorded requests carry no ``managedFields``: a Job's as the API server writes them."""
    metadata = {"deletionTimestamp": "2026-03-01T00:00:09Z", "managedFields": [
        {"manager": "kubectl", "operation": "Update", "time": "2026-03-01T00:00:01Z",
         "fieldsV1": {"f:spec": {"f:suspend": {}, "f:replicatedJobs": {}}}},
        {"manager": "metacontroller", "operation": "Update", "subresource": "status", "time": "2026-03-01T00:00:05Z",
         "fieldsV1": {"f:status": {}}},
        {"manager": "kubectl", "operation": "Update", "time": "2026-03-01T00:00:03Z", "fieldsV1": {"f:metadata": {}}},
        {"manager": "metacontroller", "operation": "Update", "subresource": "status", "time": "2026-03-01T00:00:04Z"},
    ]}
    assert _managed_times(metadata) == _former(metadata) == (
        ("2026-03-01T00:00:01Z", "2026-03-01T00:00:05Z", "2026-03-01T00:00:03Z", "2026-03-01T00:00:04Z",
         "2026-03-01T00:00:09Z"), ("2026-03-01T00:00:01Z", "2026-03-01T00:00:03Z", "2026-03-01T00:00:09Z"),
        "2026-03-01T00:00:05Z", "2026-03-01T00:00:01Z")


TIMES = st.sampled_from(["", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-02-01T00:00:00Z"])
ODD = st.one_of(st.none(), st.integers(-1, 1), st.booleans(), st.just([]), st.just({}), st.just("text"))


def _mostly(usual: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` four times in five, else a value of another JSON type."""
    return st.tuples(st.integers(0, 4), ODD, usual).map(lambda drawn: drawn[1] if drawn[0] == 0 else drawn[2])


SPEC_FIELDS = st.fixed_dictionaries({}, optional={"f:suspend": st.just({}), "f:replicatedJobs": st.just({})})
FIELDS_V1 = _mostly(st.fixed_dictionaries({}, optional={"f:spec": _mostly(SPEC_FIELDS), "f:status": st.just({})}))
ENTRY = _mostly(st.fixed_dictionaries({"time": _mostly(TIMES)}, optional={
    "subresource": _mostly(st.sampled_from(["status", "", "scale"])), "manager": st.just("m"),
    "fieldsV1": FIELDS_V1}))
METADATA: st.SearchStrategy[Any] = _mostly(st.fixed_dictionaries({}, optional={
    "managedFields": _mostly(st.lists(ENTRY, max_size=5)), "deletionTimestamp": _mostly(TIMES), "name": st.just("j")}))


@settings(max_examples=800, deadline=None)
@given(metadata=METADATA)
def test_the_one_pass_reads_random_metadata_as_the_three_did(metadata: Any) -> None:
    assert _managed_times(metadata) == _former(metadata)
