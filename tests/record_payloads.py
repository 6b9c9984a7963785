"""Re-record the golden responses of tests/payloads/<scenario>/ by running each request through the app.

    .venv/bin/python -m tests.record_payloads [SCENARIO...]

For each scenario folder (all of them when none is named): builds the real app with
``hooks.server.app.create_app(reader=podread.reader_from_snapshot(pods.json), clock=<meta.json now>,
settings=Settings())``, POSTs request.json to ``/<meta.json hook>`` with the Flask test client and
writes the JSON answer to response.json and, when the call asks for writes of its own (Events, a
TTL delete, a force delete), those to effects.json. This is the only writer of both;
review their diff.
"""

from __future__ import annotations

import json
import pathlib
import sys
from datetime import datetime
from typing import Any

import podread
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.writer import MemoryWriter

PAYLOADS = pathlib.Path(__file__).resolve().parent / "payloads"


def scenario_dirs() -> list[pathlib.Path]:
    """Every scenario folder (one holding a request.json), sorted by name."""
    return sorted(path.parent for path in PAYLOADS.glob("*/request.json"))


def load(folder: pathlib.Path, part: str) -> Any:
    """The parsed ``<part>.json`` of a scenario folder."""
    return json.loads((folder / f"{part}.json").read_text())


def post(folder: pathlib.Path, request: Any | None = None) -> tuple[int, Any]:
    """Runs ``request`` (default: the folder's request.json) through a fresh app built from the
    folder's pods.json and meta.json; returns the HTTP status and the decoded JSON body.
    """
    status, body, _ = post_with_effects(folder, request)
    return status, body


def post_with_effects(folder: pathlib.Path, request: Any | None = None) -> tuple[int, Any, list[Any]]:
    """``post``, and the writes the call asked for besides its answer (Events, deletes),
    from a ``MemoryWriter``, without the replica's name (``reportingInstance``)."""
    meta = load(folder, "meta")
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))
    writer = MemoryWriter()
    app = create_app(reader=podread.reader_from_snapshot(load(folder, "pods")), clock=lambda: now,
                     settings=Settings(), writer=writer)
    body = load(folder, "request") if request is None else request
    answer = app.test_client().post(f"/{meta['hook']}", data=json.dumps(body), content_type="application/json")
    if not app.extensions["nvcre_effects"].flush():
        raise RuntimeError(f"{folder.name}: the effects of the call did not finish")
    writes = [[kind, {k: v for k, v in detail.items() if k != "reportingInstance"}] for kind, detail in writer.writes]
    return answer.status_code, answer.get_json(), writes


def record(folder: pathlib.Path) -> None:
    """Writes folder/response.json from the app's answer (it must be a 200)."""
    status, body, writes = post_with_effects(folder)
    if status != 200:
        raise SystemExit(f"{folder.name}: the app answered {status}: {body}")
    (folder / "response.json").write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    effects = folder / "effects.json"
    if writes:
        effects.write_text(json.dumps(writes, indent=2, sort_keys=True) + "\n")
    elif effects.exists():
        effects.unlink()


def main(names: list[str]) -> int:
    folders = [PAYLOADS / name for name in names] if names else scenario_dirs()
    missing = [folder.name for folder in folders if not (folder / "request.json").is_file()]
    if missing:
        print(f"no such scenario: {', '.join(missing)}", file=sys.stderr)
        return 2
    for folder in folders:
        record(folder)
        print(f"recorded {folder.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
