"""Recording real hook calls as scenario folders (``NVCRE_RECORD_DIR``), off by default.

Each hook call the server answers becomes one folder in the layout of ``tests/payloads/``
(``hooks.tools.scenario``): request.json, pods.json (the pods its Reader read, from
``podread.recording(keep_pods=True)``), meta.json (hook, the clock's ``now``, duration, decision) and
response.json. Copying the folder under ``tests/payloads/`` makes it a regression test, and
``python -m hooks replay FOLDER --diff`` replays it.

Guarantees:
- Bounded: at most ``max_count`` folders and ``max_bytes`` bytes in the directory; the oldest
  folders (by name, which starts with the UTC time) are dropped first to make room.
- Atomic: a folder is written into a ``.tmp-*`` directory next to it, every file and the directory
  fsynced, then renamed into place; a folder being dropped is renamed to ``.del-*`` before it is
  removed. Readers never see a half-written or half-removed folder.
- Never in the hook's way: the hook thread only enqueues (bounded queue, bounded pending bytes);
  one background thread per process writes. A full queue drops the call; a write that fails is
  logged and counted in ``nvcre_record_failures_total``; neither ever changes or delays the answer.
- No secrets: the hooks never read Secrets, and the one secret the server handles, the bearer
  token, travels in the Authorization header, which is never recorded (only the body is).

The parts, one job each: ``recorder`` (``Recorder``: the queue and the writer thread), ``call``
(what one answered call becomes: its folder name and four files), ``store`` (the bounded, atomic
directory of folders), ``failures`` (the counters and the rate-limited warning).
"""

from hooks.tools.record.recorder import Recorder

__all__ = ["Recorder"]
