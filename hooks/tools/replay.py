"""Replaying a hook call offline: the server's own ``hooks.server.handler.handle`` over a chosen Reader and clock.

Used by ``python -m hooks replay`` and ``python -m hooks demo``. Nothing here decides anything: the
request bytes go through ``handle`` exactly as the HTTP app passes them.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from hooks.server.config import Settings
from hooks.server.handler import HookResult, handle
from hooks.tools.scenario import RESPONSE, Scenario
from podread import Reader

RECORDED_SETTINGS = ("resync_seconds", "max_body_bytes", "max_json_depth")
"""The Settings fields that shape an answer; the recorder writes them to meta.json's ``settings``."""


@dataclass(frozen=True)
class Replay:
    """One replayed call: what was run (``hook``, ``now``) and the handler's ``result``."""

    scenario: Scenario
    hook: str
    now: datetime
    result: HookResult

    @property
    def body(self) -> dict[str, Any]:
        """The answer body, as the server would send it."""
        return self.result.body

    @property
    def matches(self) -> bool | None:
        """Whether the answer equals the scenario's response.json; ``None`` when there is none."""
        if self.scenario.expected is None:
            return None
        return self.scenario.expected == self.body

    def diff(self) -> str:
        """A unified diff from the scenario's response.json to the replayed answer ("" when equal)."""
        if self.scenario.expected is None or self.matches:
            return ""
        return unified_diff(self.scenario.expected, self.body, RESPONSE, "replayed")


def choose_hook(scenario: Scenario, hook: str | None) -> str:
    """The hook to run: ``hook`` if given, else the scenario's meta.json ``hook``, else ``finalize``
    when the request says ``"finalizing": true`` (Metacontroller sends that to the finalize hook
    only), else ``sync``."""
    if hook:
        return hook
    if scenario.hook:
        return scenario.hook
    try:
        document = orjson.loads(scenario.raw)
    except orjson.JSONDecodeError:
        return "sync"
    return "finalize" if isinstance(document, dict) and document.get("finalizing") is True else "sync"


def scenario_settings(scenario: Scenario, base: Settings) -> Settings:
    """``base`` with the answer-shaping settings the server had when it recorded ``scenario``
    (meta.json ``settings``), so that e.g. ``resyncAfterSeconds`` replays as it was answered.
    Unknown or badly typed entries are ignored."""
    recorded = scenario.meta.get("settings")
    if not isinstance(recorded, dict):
        return base
    changes = {
        name: recorded[name] for name in RECORDED_SETTINGS
        if isinstance(recorded.get(name), int | float) and not isinstance(recorded.get(name), bool)
    }
    for name in ("max_body_bytes", "max_json_depth"):
        if name in changes:
            changes[name] = int(changes[name])
    return dataclasses.replace(base, **changes)


NOT_READ_CODE = "not-in-snapshot"
"""The error class of a batch Job read a pod snapshot cannot answer: its fixed phrase (what the held
status shows) says the snapshot lacks it, not ``no-source``'s missing cluster configuration."""


def batch_jobs(document: Any, name: str) -> list[dict[str, Any]]:
    """The batch Jobs of ``document``, what ``kubectl get jobs -n NS -o json`` prints (``kind: List``
    or ``JobList``, each item of kind ``Job``; a bare ``{"items": [...]}`` too). An empty list is an
    answer: no batch Job is there. Raises ValueError naming ``name`` for anything else."""
    if not isinstance(document, dict) or document.get("kind") not in (None, "List", "JobList"):
        raise ValueError(f"{name}: expected what kubectl get jobs -o json prints (a List or JobList of batch Jobs)")
    items = document.get("items")
    if not isinstance(items, list) or not all(isinstance(item, dict) and item.get("kind") in (None, "Job")
                                              for item in items):
        raise ValueError(f"{name}: items: expected a list of batch Job objects")
    return items


def snapshot(document: Any, name: str, jobs: list[dict[str, Any]] | None = None) -> Any:
    """The snapshot ``podread.reader_from_snapshot`` reads for the pods of ``document`` (read from
    ``name``) and, when given, the batch Jobs read apart (``jobs``, ``batch_jobs``: ``[]`` is "none").

    A scenario's ``{cache, live, ...}`` keeps its own batch Jobs unless ``jobs`` is given. A pod list
    (``kubectl get pods -o json``: a ``PodList``, or a ``List`` whose items carry their kind; ``get
    pods,jobs`` adds the Jobs) becomes the same pods on both sides, and its batch Jobs are the List's
    Jobs and ``jobs``. A pod list with neither cannot tell "no batch Job is left" from "none was
    asked for": its batch Job reads fail (the barrier holds, as the server holds on a failed read),
    with an error that names ``name`` and ``--jobs``. Anything else is returned as it is, for
    ``reader_from_snapshot`` to refuse in its own words."""
    if not isinstance(document, dict):
        return document
    items = document.get("items")
    if ("items" in document or document.get("kind") is not None) and document.get("kind") in (None, "PodList", "List") \
            and isinstance(items, list) and all(isinstance(item, dict) for item in items):
        listed = document.get("kind") == "List"
        pods = [item for item in items if not listed or item.get("kind") in (None, "Pod")]
        found = [item for item in items if listed and item.get("kind") == "Job"]
        side: dict[str, Any] = {"items": _union(found, jobs)} if found or jobs is not None else {
            "error": f"{name} holds no batch Job (kubectl get pods -o json says nothing of them): give --jobs "
                     "<(kubectl get jobs -n NS -o json) to say which exist, none included",
            "code": NOT_READ_CODE}
        return {"cache": {"pods": pods}, "live": {"pods": pods}, "jobs": side}
    if jobs is not None and ("cache" in document or "live" in document):
        return {**document, "jobs": {"items": jobs}}
    return document


def _union(first: list[dict[str, Any]], second: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """``first`` then the batch Jobs of ``second`` not in it (by namespace and name)."""
    def key(job: dict[str, Any]) -> tuple[str, str]:
        metadata = job.get("metadata") if isinstance(job.get("metadata"), dict) else {}
        return str(metadata.get("namespace", "")), str(metadata.get("name", ""))
    seen = {key(job) for job in first}
    return [*first, *(job for job in second or () if key(job) not in seen)]


def run(scenario: Scenario, *, reader: Reader, hook: str, now: datetime, settings: Settings) -> Replay:
    """Runs ``scenario``'s request through ``hooks.server.handler.handle`` with ``reader`` and the clock
    frozen at ``now``: the very code path of the HTTP app. Never raises for the request's sake."""
    result = handle(scenario.raw, hook, reader=reader, clock=lambda: now, settings=settings)
    return Replay(scenario=scenario, hook=hook, now=now, result=result)


def unified_diff(expected: Any, actual: Any, expected_name: str, actual_name: str) -> str:
    """A unified diff of two JSON documents, each rendered indented with sorted keys."""
    before = json.dumps(expected, indent=2, sort_keys=True).splitlines(keepends=True)
    after = json.dumps(actual, indent=2, sort_keys=True).splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, fromfile=expected_name, tofile=actual_name, n=3)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
