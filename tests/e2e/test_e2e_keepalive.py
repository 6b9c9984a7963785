"""Metacontroller's stand-in keeps its connections to the hooks alive, as Go's transport does, and a
run that idles across many resync ticks drops no call (issue 31: the real Metacontroller saw
``Post .../sync: EOF`` at resync ticks, on connections gunicorn closed as they were reused).

The real gunicorn (production config) over the fake API server; the driver resyncs every Job each
second of its clock, and the wall-clock pauses between ticks grow from 0.1 s to 2 s, so the
connections sit idle between the calls. Every call is answered, and on a connection reused, not on
one dialled per call. (The edge itself, reuse past gunicorn's old 5 s keep-alive, is in
tests/server/test_gunicorn.py.)
"""

from __future__ import annotations

import time

from tests.e2e.harness import Harness
from tests.e2e.server import HookServer
from tests.fakekube import FakeKubeServer

JOBS = ("keep-a", "keep-b", "keep-c")
IDLES = [0.1] * 8 + [0.5, 1.0, 2.0]
"""Wall seconds the connections sit idle before each resync tick."""


def test_a_run_idling_across_resync_ticks_reuses_its_connections_and_drops_no_call() -> None:
    with FakeKubeServer() as fake, HookServer(fake) as server:
        h = Harness.e2e(fake, server, namespace="keepalive")
        transport = h.driver.transport
        h.driver.resync_period = 1.0  # every step is a resync tick of every Job
        for name in JOBS:
            h.create_job(name)
        h.run_until(lambda: all(h.phase(name) == "Running" for name in JOBS), "Running")
        running_calls = len(h.driver.calls)
        for idle in IDLES:
            time.sleep(idle)
            h.step()
        calls = h.driver.calls
        ticks = calls[running_calls:]
        dropped = [(call.job, call.hook, call.reply.error) for call in calls if call.reply.status is None]
        assert dropped == [], dropped
        assert len(ticks) >= len(JOBS) * len(IDLES), len(ticks)
        assert all(call.reply.status == 200 for call in ticks)
        # one caller at a time: one connection, kept alive through every pause (Go would do the same)
        assert getattr(transport, "dials", len(calls)) <= 2, (transport, len(calls))
        h.assert_safe()
