"""Record the raw bytes of every golden payload's answers, before a change that must not alter them.

    .venv/bin/python -m tests.record_baseline

Writes ``tests/payloads/_baseline.json``: for each scenario, the HTTP status and the exact bytes of
the answer to request.json, and of the answer to the same request with that answer's status fed
back as ``parent.status``. ``tests/contract/test_baseline.py`` compares the app's answers today against them
byte for byte, so a refactor that re-orders keys, re-formats a time or drops a field fails even
where a parsed comparison would pass. Re-record only when the change is meant to alter answers.
"""

from __future__ import annotations

import copy
import json
import sys
from datetime import datetime
from typing import Any

import podread
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.writer import MemoryWriter
from tests.record_payloads import PAYLOADS, load, scenario_dirs

BASELINE = PAYLOADS / "_baseline.json"


def raw_answers(folder: Any) -> dict[str, Any]:
    """The status and raw body of the folder's request and of its fed-back request."""
    meta = load(folder, "meta")
    now = datetime.fromisoformat(meta["now"].replace("Z", "+00:00"))

    def call(body: Any) -> tuple[int, str]:
        app = create_app(reader=podread.reader_from_snapshot(load(folder, "pods")), clock=lambda: now,
                         settings=Settings(), writer=MemoryWriter())
        answer = app.test_client().post(f"/{meta['hook']}", data=json.dumps(body),
                                        content_type="application/json")
        app.extensions["nvcre_effects"].flush()
        return answer.status_code, answer.get_data(as_text=True)

    request = load(folder, "request")
    status, body = call(request)
    fed = copy.deepcopy(request)
    fed["parent"]["status"] = json.loads(body)["status"]
    status_again, body_again = call(fed)
    return {"status": status, "body": body, "fedBackStatus": status_again, "fedBackBody": body_again}


def main() -> int:
    answers = {folder.name: raw_answers(folder) for folder in scenario_dirs()}
    BASELINE.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(answers)} scenarios into {BASELINE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
