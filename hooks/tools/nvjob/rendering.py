"""What ``kubectl nvjob`` prints: kubectl-style tables and ``describe`` text, or JSON/YAML documents.

Pure: documents in (the dicts ``view`` builds), text out.

Every string read from the cluster (names, labels, messages, reasons, Event notes, node names, the
API server's error text) reaches a terminal only through ``escape`` (as kubectl does since
CVE-2021-25743, and more): the human renderers ``get_table``, ``describe_text``, ``why_text`` and
``error_line`` escape what they are given before laying it out, so no field can miss it. ``dump``
keeps the strings exact: JSON escapes every control and non-ASCII character, YAML every control
character, and ``_TerminalSafeDumper`` the bidi controls YAML would write raw.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from hooks.tools.nvjob.view import age, human_duration

NONE = "<none>"
WAITING_WIDTH = 60
"""The widest ``WAITING FOR`` cell of ``get``; the whole sentence is in ``describe``, ``why`` and ``-o json``."""
MESSAGE_WIDTH = 100
WHY_WIDTH = 100
"""The width ``why``'s paragraph is wrapped to."""

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""The Unicode bidi marks, embeddings, overrides and isolates (as a regex class body): they reorder the
text that follows them on a terminal that does bidi, so a message could show another order than it has."""
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{BIDI_CONTROLS}]")
"""What ``escape`` replaces: the C0 controls (ESC, CR, LF, TAB, BS, BEL...), DEL, the C1 controls
(8-bit CSI U+009B, OSC U+009D, NEL U+0085...), the line and paragraph separators, the bidi controls, and
lone surrogates (a JSON string may hold one; it cannot be written as UTF-8)."""
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
_NAMED = {"\x1b": "^[", "\r": "\\r", "\n": "\\n", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")


def escape(text: str) -> str:
    """``text`` as a terminal may show it: every character of ``_UNSAFE`` written visibly instead of
    acted on: ESC as ``^[`` and CR as ``\\r`` (kubectl's ``printers.EscapeTerminal``), LF and TAB as
    ``\\n`` and ``\\t`` (a field or a cell is one line), any other below U+0080 as ``\\xNN`` (BEL
    ``\\x07``, DEL ``\\x7f``), the rest as ``\\uNNNN`` (8-bit CSI ``\\u009b``, RLO ``\\u202e``). Other
    text, ``é`` or ``中`` too, is unchanged. The result holds none of them, so escaping twice is once."""
    return _UNSAFE.sub(_visible, text) if _UNSAFE.search(text) else text


def terminal_safe(value: Any) -> Any:
    """``value`` with every string in it ``escape``d, through mappings (their values), lists and
    tuples; anything else as it is. What the human renderers do first with what they are given."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, Mapping):
        return {key: terminal_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [terminal_safe(item) for item in value]
    return value


def error_line(message: str) -> str:
    """A line for stderr (kubectl's error words, the API server's message in them), ``escape``d."""
    return escape(message)


class _TerminalSafeDumper(yaml.SafeDumper):
    """YAML's safe dumper, but a string holding a bidi control is written double-quoted with every
    non-ASCII character escaped (``"\\u202E"``): with ``allow_unicode`` YAML writes those raw. It
    already escapes the C0 and C1 controls, DEL and the line separators; ``yaml.safe_load`` reads
    back the exact string either way."""

    def analyze_scalar(self, scalar: str) -> Any:
        analysis = super().analyze_scalar(scalar)
        if _BIDI.search(scalar):
            analysis.allow_flow_plain = analysis.allow_block_plain = False
            analysis.allow_single_quoted = analysis.allow_block = False
        return analysis

    def write_double_quoted(self, text: str, split: bool = True) -> None:
        if not _BIDI.search(text):
            super().write_double_quoted(text, split)
            return
        allow_unicode, self.allow_unicode = self.allow_unicode, False
        try:
            super().write_double_quoted(text, split)
        finally:
            self.allow_unicode = allow_unicode


def dump(document: Any, output: str, indent: int = 2) -> str:
    """``document`` as indented JSON (sorted keys, ``indent`` spaces) or YAML, its strings exact and
    still safe to show on a terminal (JSON escapes every control and non-ASCII character; YAML:
    ``_TerminalSafeDumper``)."""
    if output == "yaml":
        return yaml.dump(document, Dumper=_TerminalSafeDumper, sort_keys=True, default_flow_style=False,
                         allow_unicode=True).rstrip("\n")
    return json.dumps(document, indent=indent, sort_keys=True)


def dump_objects(document: Any, output: str) -> str:
    """API objects as ``kubectl get -o json|yaml`` prints them: JSON indented by four spaces with
    sorted keys (Go's ``json.MarshalIndent`` of an unstructured object), or YAML with sorted keys;
    exact, terminal-safe (``dump``)."""
    return dump(document, output, indent=4)


def name_line(name: str) -> str:
    """One object as ``kubectl get -o name`` prints it: ``job.nvcre.nvidia.com/<name>``, ``escape``d."""
    return escape(f"job.nvcre.nvidia.com/{name}")


def cell(value: Any) -> str:
    """A table cell: ``<none>`` for nothing, the text otherwise."""
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "") -> str:
    """Columns padded as kubectl pads them (three spaces apart), the last one not padded."""
    cells = [list(columns)] + [[cell(value) for value in row] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(indent + "   ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
                     for line in cells)


def phase_cell(row: Mapping[str, Any]) -> str:
    """``get``'s PHASE cell: the phase, and ``,STUCK <for how long>`` while its drain is stuck on pods
    on lost nodes (``DrainStuck=True``; ``,STUCK`` alone when the condition carries no time), as
    kubectl marks a node ``Ready,SchedulingDisabled``."""
    phase = str(row["phase"] or NONE)
    if not row.get("stuck"):
        return phase
    return f"{phase},STUCK {row['stuckFor']}" if row.get("stuckFor") else f"{phase},STUCK"


def get_table(rows: Sequence[Mapping[str, Any]], all_namespaces: bool, *, wide: bool = False,
              headers: bool = True) -> str:
    """``get``'s table: NAME, PHASE (``phase_cell``), ATTEMPT, RESTARTS, ACTIVE, WAITING FOR (cut to
    ``WAITING_WIDTH``), AGE (NAMESPACE first with ``-A``); ``wide`` (``-o wide``) adds WORKLOAD,
    QUEUE and GANG before WAITING FOR and shows it whole; ``headers`` False (``--no-headers``)
    leaves the header line out. From the rows of ``view.summary``, ``escape``d."""
    rows = terminal_safe(rows)
    columns = ["NAME", "PHASE", "ATTEMPT", "RESTARTS", "ACTIVE", *(["WORKLOAD", "QUEUE", "GANG"] if wide else []),
               "WAITING FOR", "AGE"]
    body = []
    for row in rows:
        line = [row["name"], phase_cell(row), row["attempt"], row["restarts"], row["activePods"],
                *([row["workload"], row["queue"], row["gang"]] if wide else []),
                row["waitingFor"] if wide else cut(row["waitingFor"], WAITING_WIDTH), row["age"]]
        body.append(([row["namespace"]] if all_namespaces else []) + line)
    text = table((["NAMESPACE"] if all_namespaces else []) + columns, body)
    return text if headers else "\n".join(text.splitlines()[1:])


def _seconds(value: Any) -> str:
    return f"{value}s" if isinstance(value, int) and not isinstance(value, bool) else NONE


def _field(label: str, value: Any, width: int = 22) -> str:
    return f"{label + ':':<{width}}{cell(value)}"


def describe_text(doc: Mapping[str, Any], now: datetime) -> str:
    """``describe``'s text, section by section: the Job, the spec in short, the attempts, the current
    attempt's pods, what the drain barrier waits for now, the conditions, the recent Events. Every
    string of ``doc`` is ``escape``d first: a field or a cell is one line, the line breaks are the layout's."""
    doc = terminal_safe(doc)
    job = doc["job"]
    lines = [
        _field("Name", job["name"]),
        _field("Namespace", job["namespace"]),
        _field("Phase", (job["phase"] or NONE) + (" (deleted, finalizing)" if job["deleting"] else "")),
        _field("Attempt", f"{cell(job['attempt'])} (JobSet {doc['workload']})"),
        _field("Restarts", cell(job["restarts"]) + (f" of {doc['spec']['maxRestarts']}"
                                                    if doc["spec"]["maxRestarts"] is not None else "")),
        _field("Active pods", job["activePods"]),
        _field("Age", job["age"]),
        _field("Message", job["waitingFor"]),
        "Spec:",
    ]
    spec = doc["spec"]
    lines.append("  Replicated jobs:")
    replicated = [[r["name"], r["replicas"], r["parallelism"], r["gpusPerPod"], ", ".join(r["images"])]
                  for r in spec["replicatedJobs"]]
    lines.append(table(["NAME", "REPLICAS", "PARALLELISM", "GPUS/POD", "IMAGE"], replicated, indent="    "))
    lines += [
        "  " + _field("Launcher", spec["launcher"], 28),
        "  " + _field("Max restarts", spec["maxRestarts"], 28),
        "  " + _field("Suspend", spec["suspend"], 28),
        "  " + _field("Active deadline", _seconds(spec["activeDeadlineSeconds"]), 28),
        "  " + _field("TTL after finished", _seconds(spec["ttlSecondsAfterFinished"]), 28),
        "  " + _field("Failure rules", spec["failureRules"], 28),
        "  " + _field("Drain stuck after", _seconds(spec["stuckAfterSeconds"]) if spec["stuckAfterSeconds"]
                      is not None else "300s (default)", 28),
        "  " + _field("Force delete stuck after", _seconds(spec["forceDeleteStuckPodsAfterSeconds"]), 28),
        "  " + _field("Queue", spec["queue"], 28),
    ]
    lines += _attempts_text(doc.get("attempts"), doc.get("attemptsDropped", 0), now)
    lines += _budgets_text(doc.get("budgets") or ())
    lines += _excluded_text(doc.get("excludedNodes") or ())
    lines.append(f"Pods (JobSet {doc['workload']}):")
    if doc.get("podsError"):
        lines.append(f"  unknown: {doc['podsError']}")
    elif doc["pods"]:
        lines.append(table(["NAME", "REPLICATED JOB", "PHASE", "NODE", "RESTARTS", "AGE"],
                           [[p["name"], p["replicatedJob"], p["phase"], p["node"], p["restarts"], p["age"]]
                            for p in doc["pods"]], indent="  "))
    else:
        lines.append("  none")
    lines += _drain_text(doc["drain"], job["phase"])
    lines.append("Conditions:")
    if doc["conditions"]:
        lines.append(table(["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"],
                           [[c["type"], c["status"], c["reason"], c["since"], cut(c["message"], MESSAGE_WIDTH)]
                            for c in doc["conditions"]], indent="  "))
    else:
        lines.append("  none")
    lines.append("Events:")
    if doc.get("eventsError"):
        lines.append(f"  unknown: {doc['eventsError']}")
    elif doc["events"]:
        lines.append(table(["TYPE", "REASON", "AGE", "FROM", "MESSAGE"],
                           [[e["type"], e["reason"], e["age"] + (f" (x{e['count']})" if e["count"] != 1 else ""),
                             e["from"], cut(e["note"], MESSAGE_WIDTH)] for e in doc["events"]], indent="  "))
    else:
        lines.append("  <none>")
    return "\n".join(lines)


def _attempts_text(rows: Sequence[Mapping[str, Any]] | None, dropped: int, now: datetime) -> list[str]:
    """The attempts table (rows of ``view.attempt_rows``: the keys of ``status.attempts``), or "no
    attempt history recorded" when the status has none; then how many older ones it no longer keeps."""
    lines = ["Attempts:"]
    if rows is None:
        return [*lines, "  no attempt history recorded (status.attempts is absent)"]
    if not rows:
        return [*lines, "  none yet"]
    lines.append(attempts_table(rows, now, indent="  "))
    lines += ["  " + line for line in class_lines(rows)]
    if dropped:
        lines.append(f"  ({dropped} earlier attempts counted, not kept)")
    return lines


def class_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Under the attempts table, for each attempt whose end has a failure class (issue 34): the class,
    the evidence it was named from and the nodes it blames."""
    lines = []
    for row in rows:
        if not row.get("class"):
            continue
        said = f"attempt {cell(row.get('attempt'))}: class {row['class']}"
        said += f": {row['classEvidence']}" if row.get("classEvidence") else ""
        nodes = row.get("failedNodes") or []
        said += f" (failed nodes: {', '.join(str(node) for node in nodes)})" if nodes else ""
        lines.append(said)
    return lines


def _budgets_text(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The restart budget of each failure class (``view.budget_rows``): budget, spent, left."""
    if not rows:
        return []
    body = [[r["class"], ("unlimited" if r["budget"] is None else str(r["budget"]))
             + (f" (the {r['shares']} budget)" if r["shares"] else ""), r["spent"],
             "unlimited" if r["left"] is None else r["left"]] for r in rows]
    return ["Budgets (spec.failurePolicy.budgets):", table(["CLASS", "BUDGET", "SPENT", "LEFT"], body, indent="  ")]


def _excluded_text(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The nodes kept out of the next attempts (``view.excluded_rows``), or "none"."""
    lines = ["Excluded nodes (status.excludedNodes):"]
    if not rows:
        return [*lines, "  none"]
    return [*lines, table(["NODE", "CLASS", "ATTEMPT", "UNTIL", "LEFT"],
                          [[r["node"], r["class"], r["attempt"], r["until"], r["left"]] for r in rows], indent="  ")]


def history_text(rows: Sequence[Mapping[str, Any]], dropped: int, now: datetime, *, headers: bool = True,
                 budgets: Sequence[Mapping[str, Any]] = ()) -> str:
    """``history``'s output: the attempts table (``attempts_table``; without its header line for
    ``--no-headers``), each ended attempt's class and evidence (``class_lines``), how many older
    attempts the status counted but no longer keeps, and the budgets left (``budgets_line``).
    Every string ``escape``d."""
    safe = terminal_safe(list(rows))
    text = attempts_table(safe, now)
    if not headers:
        text = "\n".join(text.splitlines()[1:])
    text += "".join(f"\n{line}" for line in class_lines(safe))
    text += f"\n({dropped} earlier attempts counted, not kept)" if dropped else ""
    return text + (f"\n{budgets_line(terminal_safe(list(budgets)))}" if budgets else "")


def budgets_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The budgets left in one line (``view.budget_rows``): ``budgets left: user 2 of 3, preempted
    unlimited, node 10 of 10, ...``."""
    said = [f"{r['class']} unlimited" if r["budget"] is None else f"{r['class']} {r['left']} of {r['budget']}"
            + (f" (shared with {r['shares']})" if r["shares"] else "") for r in rows]
    return "budgets left: " + ", ".join(said)


def attempts_table(rows: Sequence[Mapping[str, Any]], now: datetime, indent: str = "") -> str:
    """The attempts as a table: #, JOBSET, CREATED, STARTED, ENDED (ages), OUTCOME, REPLICATED JOB,
    FAILING POD, NODE, EXIT/REASON, CAUSE, CLASS (the failure class, issue 34), DRAIN (its length,
    ``(stuck)`` when it got stuck)."""
    body = []
    for row in rows:
        exit_or_reason = row.get("exitCode") if row.get("exitCode") is not None else row.get("reason")
        seconds = row.get("drainSeconds")
        drain = human_duration(int(seconds)) if isinstance(seconds, int | float) and not isinstance(seconds, bool) \
            else None
        if row.get("drainStuck") is True:
            drain = f"{cell(drain)} (stuck)"
        created, started, ended = (age(row[key], now) if row.get(key) else None for key in ("created", "started",
                                                                                             "ended"))
        body.append([row.get("attempt"), row.get("jobSet"), created, started, ended,
                     row.get("outcome"), row.get("failedReplicatedJob"), row.get("failedPod"), row.get("node"),
                     exit_or_reason, row.get("cause"), row.get("class"), drain])
    return table(["#", "JOBSET", "CREATED", "STARTED", "ENDED", "OUTCOME", "REPLICATED JOB", "FAILING POD", "NODE",
                  "EXIT/REASON", "CAUSE", "CLASS", "DRAIN"], body, indent=indent)


def _terminating(pod: Mapping[str, Any]) -> str:
    """``terminating since <deletion start>, grace period ends <deletionTimestamp>`` for a pod being
    deleted (``since`` only when its grace period is known: ``deletionTimestamp`` is the delete
    time plus the grace period, never when the deletion began), ``""`` for any other pod."""
    if not pod.get("gracePeriodEnds"):
        return ""
    since = f" since {pod['deletionStarted']}" if pod.get("deletionStarted") else ""
    return f"terminating{since}, grace period ends {pod['gracePeriodEnds']}"


def _drain_text(drain: Mapping[str, Any], phase: str) -> list[str]:
    """What the drain barrier waits for now (or, when the Job is not draining, what a teardown would wait for)."""
    if drain["error"]:
        state = f"unknown: {drain['error']} (the barrier holds)"
    elif drain["passed"]:
        state = "nothing left (no JobSet, no active pod, no batch Job)"
    elif drain["draining"]:
        state = f"waiting ({drain['reason']})"
    else:
        state = f"not draining (phase {phase or NONE}); a teardown now would wait ({drain['reason']})"
    pods = [f"{p['name']} on {p['node'] or NONE} ({_terminating(p) or p['phase']})" for p in drain["pods"]]
    launchers = [f"{p['name']} on {p['node'] or NONE}" + (f" ({_terminating(p)})" if _terminating(p) else "")
                 for p in drain["launchers"]]
    lines = ["Drain barrier:", "  " + _field("State", state, 14)]
    if not drain["error"]:
        lines += ["  " + _field("JobSets", ", ".join(drain["jobsets"]), 14),
                  "  " + _field("Pods", ", ".join(pods), 14),
                  "  " + _field("Launchers", ", ".join(launchers), 14),
                  "  " + _field("Batch Jobs", ", ".join(drain["batchJobs"]), 14),
                  "  " + _field("Stuck", drain["stuck"], 14)]
    return lines


def why_text(paragraph: str) -> str:
    """``why``'s paragraph (``why.why``: the hooks' words and the cluster's in one line) ``escape``d,
    then wrapped to ``WHY_WIDTH`` at spaces only (never inside a word, a name or an escape)."""
    return textwrap.fill(escape(paragraph), WHY_WIDTH, break_long_words=False, break_on_hyphens=False)
