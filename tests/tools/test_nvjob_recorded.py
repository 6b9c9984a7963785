"""``kubectl nvjob`` over objects recorded from the real control plane tier: a Job whose attempt 0
failed and is Restarting, held by its MPI launcher, which the kubelet keeps terminating. The attempt's
batch Jobs, which the garbage collector has not deleted yet (the JobSet is gone), held it too when it
was recorded; since issue 31 they hold nothing (one Failed, one being deleted: neither can create a pod).

``tests/nvjob_recorded/restarting-launcher-held.json`` holds what the API server answered then
(the NVCRE Job with the status the hooks wrote, JobSets, pods, batch Jobs, Nodes and Events, as raw
JSON), taken with the world of tests/cluster/world.py as in
``test_failure_restarts_only_after_the_last_pod_is_gone``.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hooks.tools.nvjob import commands
from tests.tools.test_nvjob import Recorded

RECORDED_FILE = Path(__file__).resolve().parents[1] / "nvjob_recorded" / "restarting-launcher-held.json"
RECORDED = json.loads(RECORDED_FILE.read_text())
NS = RECORDED["namespace"]
LAUNCHER = "retry-0-launcher-0-0-j7zrb"


def recorded() -> Recorded:
    return Recorded(RECORDED["jobs"], jobsets=RECORDED["jobsets"], events=RECORDED["events"], pods=RECORDED["pods"],
                    batch_jobs=RECORDED["batchJobs"], nodes=RECORDED["nodes"])


def at_recording(*args: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The output of ``kubectl nvjob ARGS`` over the recorded objects, 30 s after the Job was created
    (never the wall clock: the recorded node's heartbeat ages, and a drain would read as stuck)."""
    created = datetime.fromisoformat(RECORDED["jobs"][0]["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    code = commands.run(list(args), connector=lambda _: (recorded(), NS), clock=lambda: created + timedelta(seconds=30))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return out


def test_get_shows_the_restart_and_the_barriers_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    out = at_recording("get", "-n", NS, capsys=capsys)
    row = out.splitlines()[1]
    assert row.split()[:5] == ["retry", "Restarting", "0", "1", "0"]
    assert f"waiting for launcher pod {LAUNCHER}" in row and row.split()[-1] != "<none>"


def test_describe_says_the_launcher_and_the_batch_jobs_hold_the_restart(capsys: pytest.CaptureFixture[str]) -> None:
    document: dict[str, Any] = json.loads(at_recording("describe", "retry", "-n", NS, "-o", "json", capsys=capsys))
    drain = document["drain"]
    assert (drain["draining"], drain["passed"], drain["reason"]) == (True, False, "LauncherActive")
    assert drain["jobsets"] == [] and drain["pods"] == []
    assert [(p["name"], p["deletionStarted"], p["gracePeriodEnds"]) for p in drain["launchers"]] == [
        (LAUNCHER, "2026-12-04T20:44:01Z", "2026-12-04T20:44:31Z")], "deleted at :01 with 30 s grace: not 'since :31'"
    assert drain["batchJobs"] == [], "one Failed, one being deleted: neither can create a pod (issue 31)"
    assert document["workload"] == "retry-0"
    assert [(p["name"], p["phase"]) for p in document["pods"]] == [(LAUNCHER, "Terminating"),
                                                                   ("retry-0-worker-0-0-t2sjd", "Failed")]
    assert all(p["node"].startswith(f"{NS}-node") for p in document["pods"])
    reasons = [e["reason"] for e in document["events"]]
    assert "Restarting" in reasons and "DrainWaiting" in reasons
    assert "SuccessfulCreate" not in reasons and "BackoffLimitExceeded" not in reasons  # the batch Jobs' Events
    assert document["attempts"] is None


def test_describe_text_reads_like_kubectl_describe(capsys: pytest.CaptureFixture[str]) -> None:
    out = at_recording("describe", "retry", "-n", NS, capsys=capsys)
    for heading in ("Name:", "Phase:", "Spec:", "Attempts:", "Pods (JobSet retry-0):", "Drain barrier:",
                    "Conditions:", "Events:"):
        assert heading in out
    assert "State:        waiting (LauncherActive)" in out
    assert f"Launchers:    {LAUNCHER} on {NS}-node-0 (terminating since 2026-12-04T20:44:01Z, grace period ends " \
           "2026-12-04T20:44:31Z)" in out
    assert "Batch Jobs:   <none>" in out
    assert "Restarts:             1 of 1" in out


def test_why_says_what_failed_and_what_the_restart_waits_for(capsys: pytest.CaptureFixture[str]) -> None:
    text = json.loads(at_recording("why", "retry", "-n", NS, "-o", "json", capsys=capsys))["why"]
    assert text.startswith("Job retry is Restarting: attempt 0 failed (JobSet failed (FailedJobs))")
    assert f"launcher pod {LAUNCHER} (terminating, grace period ends 2026-12-04T20:44:31Z) to finish" in text
    assert "batch Job" not in text, "a Failed batch Job and one being deleted hold nothing (issue 31)"
    assert "From Restarting it moves to Pending when drain barrier passed, JobSet retry-1;" in text, \
        "the lifecycle table's arrows out of Restarting, the next attempt's JobSet named"


README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_sample_is_what_the_plugin_prints_for_these_objects(capsys: pytest.CaptureFixture[str]) -> None:
    """Every ``$ kubectl nvjob ...`` in the README's sample block, run over the recorded objects 30 s
    after the Job was created, prints exactly the lines the README shows under it."""
    text = README.read_text()
    block = re.search(r"```\n(\$ kubectl nvjob get -n cluster-0\n.*?)```", text, re.S)
    assert block, "the README's kubectl nvjob sample is gone"
    commands_shown = re.split(r"^\$ kubectl nvjob ", block.group(1), flags=re.M)[1:]
    assert len(commands_shown) == 3
    created = datetime.fromisoformat(RECORDED["jobs"][0]["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    for shown in commands_shown:
        line, _, expected = shown.partition("\n")
        code = commands.run(shlex.split(line), connector=lambda _: (recorded(), NS),
                            clock=lambda: created + timedelta(seconds=30))
        out, err = capsys.readouterr()
        assert (code, err) == (0, "")
        assert out == expected, f"kubectl nvjob {line}"
