"""What one answered hook call becomes when recorded: a folder name and the four scenario files.

Pure apart from the process id it names: reads the call (request bytes, ``HookResult``, the clock's
``now``, the settings) and returns bytes; nothing here touches the disk.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hooks.server.config import Settings
from hooks.server.handler import HookResult
from hooks.tools.replay import RECORDED_SETTINGS
from hooks.tools.scenario import META, PODS, REQUEST, RESPONSE, dump, format_time, pods_document, request_bytes

_NAME_UNSAFE = re.compile(r"[^a-z0-9.-]+")


@dataclass(frozen=True)
class Call:
    """One answered hook call waiting to be written."""

    hook: str
    raw: bytes
    result: HookResult
    now: datetime | None
    settings: Settings
    at: datetime


def folder_name(call: Call, sequence: int) -> str:
    """``<UTC time>-<hook>-<namespace>-<job>-<pid>-<n>``: sorts oldest first, unique across
    the worker processes sharing the directory (``sequence`` numbers this process's calls)."""
    stamp = call.at.strftime("%Y%m%dT%H%M%S.%fZ")
    parts = [_safe(call.result.namespace), _safe(call.result.job)]
    return f"{stamp}-{call.hook}-{'-'.join(parts)}-{os.getpid()}-{sequence}"


def scenario_files(call: Call) -> dict[str, bytes]:
    """The four files of a recorded call. Raises ``ValueError`` when the reads did not keep their pods."""
    result, decision = call.result, call.result.decision
    where = f"{result.namespace or '?'}/{result.job or '?'}"
    if decision is not None:
        what = f"{decision.phase_before or '(none)'} -> {decision.phase_after} ({decision.kind})"
    else:
        what = f"answered {result.status_code}"
    meta: dict[str, Any] = {
        "description": f"recorded {call.hook} of {where}: {what}",
        "hook": call.hook,
        "now": format_time(call.now) if call.now is not None else None,
        "recorded_at": format_time(call.at),
        "duration_seconds": round(result.seconds, 6),
        "code": result.status_code,
        "decision": decision.kind if decision else None,
        "phase_before": decision.phase_before if decision else None,
        "phase_after": decision.phase_after if decision else None,
        "namespace": result.namespace,
        "job": result.job,
        "settings": {name: getattr(call.settings, name) for name in RECORDED_SETTINGS},
        "reads": [
            {"method": r.method, "source": r.source, "selector": r.selector, "outcome": r.outcome,
             "pods": r.pods, "seconds": round(r.seconds, 6), "error": r.error}
            for r in result.reads
        ],
        "pid": os.getpid(),
    }
    return {
        REQUEST: request_bytes(call.raw, call.settings.max_body_bytes),
        PODS: dump(pods_document(result.reads)),
        META: dump(meta),
        RESPONSE: dump(result.body),
    }


def _safe(name: str) -> str:
    """``name`` reduced to what a folder name can safely hold (it came from the request)."""
    return _NAME_UNSAFE.sub("_", name.lower())[:63] or "_"
