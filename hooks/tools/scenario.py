"""The scenario folder: one hook call as files, the layout of ``tests/payloads/<scenario>/``.

    request.json   the request body Metacontroller sent
    pods.json      the pods the Reader saw: {"cache": {"pods": [...]} | {"error": "...", "code": "..."},
                   "live": ...}
    meta.json      {"hook": "sync"|"finalize", "now": RFC 3339, "description": ..., ...}
    response.json  the answer body

The recorder (``hooks.tools.record``) writes this layout, ``python -m hooks replay`` and ``demo`` read it,
and ``tests/contract/test_payloads.py`` turns every folder under ``tests/payloads/`` into a regression test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from hooks.core.observed import HOOKS
from podread import ReadRecord, pod_key

REQUEST = "request.json"
PODS = "pods.json"
NODES = "nodes"
"""The pods.json key of the Nodes a call read (``Reader.node_states``), as ``reader_from_snapshot`` reads it."""
ACCESS = "access"
"""The pods.json key of the pod delete permission reviews a call made (``Reader.pod_delete_allowed``)."""
JOBS = "jobs"
"""The pods.json key of the batch Jobs a call read (``Reader.attempt_jobs``), as ``reader_from_snapshot`` reads it."""
KEYED_BY_METHOD = {"node_states": NODES, "attempt_jobs": JOBS}
"""Reads whose objects are not pods, and the pods.json key they are kept under (``{"items": [...]}``)."""
META = "meta.json"
RESPONSE = "response.json"
SOURCES = ("cache", "live")


class ScenarioError(ValueError):
    """A scenario folder or file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Scenario:
    """One hook call to replay. Only ``raw`` (the request bytes) is always there.

    ``folder`` is the scenario folder, ``None`` for a lone request file; ``hook``, ``now``,
    ``pods`` (the parsed pods.json) and ``expected`` (the parsed response.json) are ``None`` when
    the folder does not have them. ``meta`` is the parsed meta.json (empty without one).
    """

    name: str
    raw: bytes
    folder: Path | None = None
    hook: str | None = None
    now: datetime | None = None
    pods: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def format_time(moment: datetime) -> str:
    """``moment`` in UTC as RFC 3339 with a ``Z`` (microseconds only when there are some)."""
    if moment.tzinfo is None:
        raise ValueError("a time without a timezone is ambiguous")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (``2026-01-01T00:00:00Z``, ``...+02:00``) as an aware UTC datetime.

    Raises ``ValueError`` for anything else, including a time without a timezone.
    """
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time (like 2026-01-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no timezone (add Z for UTC)")
    return moment.astimezone(UTC)


def dump(document: Any) -> bytes:
    """``document`` as the scenario files hold it: indented JSON, sorted keys, a final newline."""
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def request_bytes(raw: bytes, max_bytes: int) -> bytes:
    """What request.json holds for a request body ``raw``: indented JSON with the keys in their order,
    so a recording reads well and diffs well; ``raw`` itself when it is not JSON, when the indented
    form would be over ``max_bytes`` (the server's body limit), or when it is nested too deeply for
    the indenting encoder (it recurses on the Python stack: a request the server accepts under
    ``NVCRE_MAX_JSON_DEPTH`` up to 1024 can pass its limit), so that a replay sees the same input.
    """
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    try:
        pretty = (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()
    except RecursionError:
        return raw
    return pretty if len(pretty) <= max_bytes else raw


def pods_document(reads: Iterable[ReadRecord]) -> dict[str, Any]:
    """The pods.json of a hook call from the ReadRecords of its reads (recorded with ``keep_pods``).

    Each source (``cache``, ``live``) gets the union of the pods its reads returned, deduplicated by
    namespace/name (the first copy read is kept; Nodes under ``nodes``, by name, and batch Jobs under
    ``jobs``, by namespace/name, each as ``{"items": [...]}``; pod delete permission reviews under
    ``access`` as ``{"allowed": {namespace: bool}}``),
    or ``{"error": reason, "code": class}`` when one
    of its reads failed: a replay then fails that source's reads with the same text and class (the
    class is what the status shows). A source with no read has no
    pods. Raises ``ValueError`` when a successful read did not keep its pods.
    """
    pods: dict[str, dict[str, dict[str, Any]]] = {source: {} for source in SOURCES}
    errors: dict[str, dict[str, str]] = {}
    access: dict[str, bool] = {}
    for record in reads:
        if record.method == "pod_delete_allowed":  # a permission (may the hooks delete pods), not pods
            if record.outcome != "ok":
                errors.setdefault(ACCESS, {"error": _reason(record), **({"code": record.error_code}
                                                                        if record.error_code else {})})
            for answer in record.items or ():
                access.setdefault(str(answer["namespace"]), bool(answer["allowed"]))
            continue
        key = KEYED_BY_METHOD.get(record.method, record.source)
        side = pods.setdefault(key, {})
        if record.outcome != "ok":
            failed = {"error": _reason(record)}
            if record.error_code:
                failed["code"] = record.error_code
            errors.setdefault(key, failed)
        elif record.items is None:
            if record.pods:
                raise ValueError(f"{record.method} from {record.source} did not keep its pods "
                                 "(the decision ran outside podread.recording(keep_pods=True))")
        else:
            for pod in record.items:
                side.setdefault(pod_key(pod), pod)
    document: dict[str, Any] = {
        source: errors[source] if source in errors else {"pods": list(side.values())}
        for source, side in pods.items() if source not in KEYED_BY_METHOD.values()
    }
    for key in KEYED_BY_METHOD.values():  # Nodes (a name read but absent was deleted), batch Jobs
        if key in pods:
            document[key] = errors.get(key) or {"items": list(pods[key].values())}
    if access or ACCESS in errors:
        document[ACCESS] = errors.get(ACCESS) or {"allowed": access}
    return document


def _reason(record: ReadRecord) -> str:
    """The cause of a failed read without the ``<method> from <source>: `` the Reader puts in front,
    so that the replayed read, which the Reader names again, has the very same message."""
    text = record.error or "read failed"
    prefix = f"{record.method} from {record.source}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def scenario_dirs(root: Path) -> list[Path]:
    """Every scenario folder (one holding a request.json) directly under ``root``, sorted by name."""
    return sorted(path.parent for path in root.glob(f"*/{REQUEST}"))


def load(path: Path) -> Scenario:
    """The scenario at ``path``: a scenario folder, or a request file (a ``request.json`` inside a
    scenario folder brings the folder's other files along).

    Raises ``ScenarioError`` for a missing request, unreadable or non-JSON meta/pods/response files,
    or a meta.json with a bad ``hook`` or ``now``.
    """
    if path.is_dir():
        folder: Path | None = path
        request = path / REQUEST
        if not request.is_file():
            raise ScenarioError(f"{path}: not a scenario folder (no {REQUEST})")
    elif path.is_file():
        request = path
        folder = path.parent if path.name == REQUEST else None
    else:
        raise ScenarioError(f"{path}: no such file or folder")
    try:
        raw = request.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{request}: {exc.strerror or exc}") from None
    if folder is None:
        return Scenario(name=path.name, raw=raw)
    meta = _json_file(folder / META) or {}
    hook = meta.get("hook")
    if hook is not None and hook not in HOOKS:
        raise ScenarioError(f"{folder / META}: hook must be sync or finalize, not {hook!r}")
    now = None
    if meta.get("now") is not None:
        try:
            now = parse_time(str(meta["now"]))
        except ValueError as exc:
            raise ScenarioError(f"{folder / META}: now: {exc}") from None
    return Scenario(
        name=folder.name, raw=raw, folder=folder, hook=hook, now=now,
        pods=_json_file(folder / PODS), expected=_json_file(folder / RESPONSE), meta=meta,
    )


def read_json(path: Path) -> Any:
    """The JSON document in the file ``path``; ``ScenarioError`` naming the file if it cannot be read."""
    try:
        return json.loads(path.read_bytes())
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ScenarioError(f"{path}: not JSON: {exc}") from None


def _json_file(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, ``None`` when there is no such file."""
    if not path.is_file():
        return None
    document = read_json(path)
    if not isinstance(document, dict):
        raise ScenarioError(f"{path}: expected a JSON object")
    return document
