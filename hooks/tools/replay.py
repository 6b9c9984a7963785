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
