"""The declared types convert safely from many threads at once, from a process's first call on.

A gunicorn worker serves calls on 4 threads. msgspec builds a type's conversion info on the first
conversion into it, and threads making that first conversion at once crashed the worker (SIGSEGV
in ``msgspec.convert``: under load in tests/server/test_load.py, whose clients then saw their
calls on that worker's connections dropped). ``hooks.core.declared.prepare`` builds the info when
the types are declared; this runs fresh processes whose threads all make their first conversions
together (a switch interval of a microsecond, so they interleave inside msgspec), and none may die.
Without ``prepare``, 18 of 30 such processes crashed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 4
THREADS = 8

FIRST_CALLS = f"""
import sys, threading
sys.setswitchinterval(1e-6)
from hooks.core.observed import parse_request
from hooks.core.work import Work
from tests.support.requests import job_request, jobset_child

payload = job_request(jobsets=[jobset_child("train", 0)], status={{"phase": "Running", "attempt": 0}})
start = threading.Barrier({THREADS})

def first_calls():
    start.wait()
    observed = parse_request(payload, "sync")  # Request, then each JobSet child
    Work.of(observed.status).status()          # the decided status into Status

threads = [threading.Thread(target=first_calls) for _ in range({THREADS})]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


def test_first_conversions_on_many_threads_do_not_crash_the_process() -> None:
    runs = [subprocess.Popen([sys.executable, "-c", FIRST_CALLS], cwd=ROOT, stderr=subprocess.PIPE)
            for _ in range(PROCESSES)]
    outcomes = [(run.wait(timeout=60), run.stderr.read().decode() if run.stderr else "") for run in runs]
    for run in runs:
        if run.stderr:
            run.stderr.close()
    assert [code for code, _ in outcomes] == [0] * PROCESSES, [err[-2000:] for code, err in outcomes if code]
