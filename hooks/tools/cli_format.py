"""What the operator commands print: replay explanations, the node's pod table, demo lines.

Pure functions from data to text or JSON-ready dicts, so that ``hooks.tools.cli`` only wires and exits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hooks.tools.replay import Replay
from hooks.tools.scenario import format_time, parse_time
from podread import ATTEMPT_LABEL, JOB_LABEL, LAUNCHER_LABEL, ReadRecord
from podread.attempts import attempt_number

NODE_COLUMNS = ("NAMESPACE", "JOB", "ATTEMPT", "POD", "PHASE", "AGE")


def pretty_json(document: Any) -> str:
    """``document`` as indented JSON with sorted keys, as the scenario files hold it."""
    return json.dumps(document, indent=2, sort_keys=True)


def read_line(record: ReadRecord) -> str:
    """One read as ``method from source (selector): ok, N pods`` (``N batch Jobs`` for
    ``attempt_jobs``) or ``...: failed: why``."""
    if record.outcome == "ok":
        noun = "batch Job" if record.method == "attempt_jobs" else "pod"  # attempt_jobs lists batch Jobs
        outcome = f"ok, {record.pods} {noun}{'' if record.pods == 1 else 's'}"
    else:
        outcome = f"failed: {record.error}"
    source = f"{record.source}, filled from the API server" if record.filled else record.source
    return f"{record.method} from {source} ({record.selector}): {outcome}, {record.seconds * 1000:.1f} ms"


def replay_text(replay: Replay, pods_from: str) -> str:
    """The human explanation of a replayed call, then the answer's JSON."""
    result, decision = replay.result, replay.result.decision
    lines = [
        f"scenario  {replay.scenario.name}",
        f"hook      {replay.hook} at {format_time(replay.now)}, pods from {pods_from}",
        f"answer    {result.status_code} in {result.seconds * 1000:.1f} ms",
    ]
    if decision is not None:
        lines += [
            f"phase     {decision.phase_before or '(none)'} -> {decision.phase_after}",
            f"decision  {decision.kind}",
            f"message   {decision.message or '(none: nothing to wait for)'}",
        ]
    reads = [read_line(record) for record in result.reads] or ["none"]
    lines.append(f"reads     {reads[0]}")
    lines += [f"          {line}" for line in reads[1:]]
    lines += ["response", pretty_json(result.body)]
    return "\n".join(lines)


def replay_json(replay: Replay, pods_from: str) -> dict[str, Any]:
    """The replayed call as one JSON document: the answer and the explanation as fields."""
    result, decision = replay.result, replay.result.decision
    document: dict[str, Any] = {
        "scenario": replay.scenario.name,
        "hook": replay.hook,
        "now": format_time(replay.now),
        "pods_from": pods_from,
        "code": result.status_code,
        "seconds": round(result.seconds, 6),
        "response": result.body,
        "decision": None if decision is None else {
            "kind": decision.kind,
            "phase_before": decision.phase_before,
            "phase_after": decision.phase_after,
            "message": decision.message,
        },
        "reads": [
            {"method": r.method, "source": r.source, "filled": r.filled, "selector": r.selector, "outcome": r.outcome,
             "pods": r.pods, "seconds": round(r.seconds, 6), "error": r.error}
            for r in result.reads
        ],
    }
    if replay.matches is not None:
        document["matches"] = replay.matches
    return document


def demo_line(name: str, replay: Replay | None, problem: str = "", width: int = 40) -> str:
    """One demo line: ``scenario  phase before -> after  decision  ok|DIFFERS`` (or the problem)."""
    if replay is None:
        return f"{name:<{width}} ERROR: {problem}"
    decision = replay.result.decision
    if decision is None:
        what = f"answer {replay.result.status_code}: {replay.body.get('error', '')}"
    else:
        what = f"{decision.phase_before or '(none)':<11} -> {decision.phase_after:<11} {decision.kind:<13}"
    verdict = {True: "ok", False: "DIFFERS", None: "(no response.json)"}[replay.matches]
    return f"{name:<{width}} {what} {verdict}"


def pod_row(pod: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """A pod as the node view shows it: names, the NVCRE job and attempt, phase, age.

    ``kind`` is ``workload`` (JOB_LABEL), ``launcher`` (LAUNCHER_LABEL) or ``other``; ``phase`` is
    ``Terminating`` when the pod has a deletionTimestamp (as kubectl shows it).
    """
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if JOB_LABEL in labels:
        kind, job = "workload", labels[JOB_LABEL]
    elif LAUNCHER_LABEL in labels:
        kind, job = "launcher", labels[LAUNCHER_LABEL]
    else:
        kind, job = "other", ""
    deleting = metadata.get("deletionTimestamp")
    created = metadata.get("creationTimestamp")
    return {
        "namespace": metadata.get("namespace", ""),
        "job": job,
        "attempt": labels.get(ATTEMPT_LABEL, ""),
        "pod": metadata.get("name", ""),
        "phase": "Terminating" if deleting else (pod.get("status") or {}).get("phase", "Unknown"),
        "age_seconds": _age_seconds(created, now),
        "kind": kind,
        "node": (pod.get("spec") or {}).get("nodeName", ""),
        "creationTimestamp": created,
        "deletionTimestamp": deleting,
    }


def sort_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows by namespace, job, attempt (as a number) and pod name."""
    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        number = attempt_number(str(row["attempt"]))  # the naming rule's reading of a label
        number = -1 if number is None else number
        return (row["namespace"], row["kind"] == "other", row["job"], number, row["pod"])

    return sorted(rows, key=key)


def node_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a kubectl-style table with the NODE_COLUMNS; an empty value shows as ``-``."""
    cells = [list(NODE_COLUMNS)] + [
        [str(row[name]) or "-" for name in ("namespace", "job", "attempt", "pod", "phase")]
        + [format_age(row["age_seconds"])]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(NODE_COLUMNS))]
    return "\n".join(
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells
    )


def format_age(seconds: int | None) -> str:
    """An age in the largest unit that fits twice, close to kubectl: ``90s``, ``12m``, ``47h``, ``5d``;
    ``<unknown>`` without a creation time."""
    if seconds is None:
        return "<unknown>"
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _age_seconds(created: Any, now: datetime) -> int | None:
    """Whole seconds since ``created`` (an RFC 3339 string); ``None`` when it is missing or malformed."""
    if not isinstance(created, str):
        return None
    try:
        return int((now - parse_time(created)).total_seconds())
    except ValueError:
        return None
