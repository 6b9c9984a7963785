"""The trainer's helper (``nvcre_checkpoint``, issue 33) against the wire-level fake API server: it
reads the control file the hooks publish, acknowledges with a merge patch of its Job's annotation
that the hooks then accept, reads the request from the status when asked, and saves on a SIGTERM
only when no request came."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import nvcre_checkpoint as helper
from hooks.core import checkpoint
from hooks.core.decide import decide
from hooks.core.observed import parse_request
from tests.fakekube.server import FakeKubeServer
from tests.support import FakeReader, job_request, job_spec, jobset_child, make_pod
from tests.support.requests import mounting

pytest_plugins = ["tests.fakekube.fixtures"]
ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SPEC = job_spec() | {"checkpoint": {}, "suspend": True}


def suspend(status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None,
            now: datetime = NOW) -> dict[str, Any]:
    """The hooks' answer for train (attempt 0, running, mounting the control file), suspended."""
    body = job_request(spec=SPEC, status=status or {"phase": "Running", "attempt": 0, "workload": "train-0"},
                       jobsets=[mounting(jobset_child("train", 0))], annotations=annotations)
    pods = [make_pod("train-0-worker-0-0", job="train", workload="train-0")]
    return decide(parse_request(body, "sync"), FakeReader(pods), now).response


def publish(answer: dict[str, Any], path: Path) -> Path:
    """What the kubelet does: the answered control ConfigMap's file, in the pod's volume."""
    child = next(c for c in answer["children"] if c["kind"] == "ConfigMap")
    path.write_text(child["data"][checkpoint.CONTROL_FILE])
    return path


def test_the_contract_s_names_are_the_hooks_own() -> None:
    published = f"{checkpoint.CONTROL_PATH}/{checkpoint.CONTROL_FILE}"
    assert published == helper.CONTROL_FILE
    assert (helper.ACK_ANNOTATION, helper.VERSION) == (checkpoint.ACK_ANNOTATION, checkpoint.VERSION)


def test_the_request_is_read_from_the_published_file(tmp_path: Path) -> None:
    quiet = publish(decide(parse_request(job_request(spec=job_spec() | {"checkpoint": {}}, configmaps=True), "sync"),
                           FakeReader(), NOW).response, tmp_path / "quiet.json")
    assert helper.pending(str(quiet)) is None and not helper.should_checkpoint(str(quiet))
    asked = publish(suspend(), tmp_path / "asked.json")
    request = helper.pending(str(asked))
    assert request is not None and helper.should_checkpoint(str(asked))
    assert (request.attempt, request.reason, request.job, request.namespace) == (0, "suspend", "train", "default")
    assert request.deadline == "2026-01-01T00:03:00Z"


def test_a_request_of_another_attempt_or_cancelled_is_not_this_attempt_s(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    base = {"version": "v1", "job": "train", "namespace": "default", "attempt": 1}
    path.write_text(json.dumps(base | {"request": {"id": "0-suspend-1", "attempt": 0, "outcome": "Requested"}}))
    assert helper.pending(str(path)) is None
    os.utime(path, ns=(1, 1))  # a new file: the cache is keyed by mtime and size
    path.write_text(json.dumps(base | {"request": {"id": "1-suspend-1", "attempt": 1, "outcome": "Cancelled"}}))
    assert helper.pending(str(path)) is None


def test_a_missing_file_or_another_version_is_said(tmp_path: Path) -> None:
    with pytest.raises(helper.CheckpointError, match="no control file"):
        helper.control(str(tmp_path / "absent.json"))
    other = tmp_path / "v2.json"
    other.write_text(json.dumps({"version": "v2"}))
    with pytest.raises(helper.CheckpointError, match="this helper speaks v1"):
        helper.control(str(other))


def test_the_acknowledgement_is_a_merge_patch_the_hooks_accept(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    first = suspend()
    fake_kube.put_job({"metadata": {"name": "train", "namespace": "default", "uid": "u"},
                       "status": first["status"]})
    api = helper.InClusterApi(fake_kube.url, token=fake_kube.token)
    done = helper.acknowledge(1200, str(publish(first, tmp_path / "c.json")), api=api)
    assert done.id == first["status"]["checkpoint"]["id"]
    [patch] = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert patch.path == "/apis/nvcre.nvidia.com/v1alpha1/namespaces/default/jobs/train"
    assert patch.headers["content-type"] == "application/merge-patch+json"
    assert patch.headers["authorization"] == f"Bearer {fake_kube.token}"
    annotations = fake_kube.writes.jobs[("default", "train")]["metadata"]["annotations"]
    second = suspend(status=first["status"], annotations=annotations, now=NOW + timedelta(seconds=20))
    assert second["status"]["checkpoint"]["outcome"] == "Acknowledged"
    assert second["status"]["checkpoint"]["acknowledgedStep"] == 1200
    assert [c["kind"] for c in second["children"]] == []  # the JobSet is dropped: the drain is today's


def test_the_request_is_read_from_the_status_when_asked(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    first = suspend()
    quiet = {"version": "v1", "job": "train", "namespace": "default", "attempt": 0, "request": None}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(quiet))  # the kubelet has not refreshed the file yet
    fake_kube.put_job({"metadata": {"name": "train", "namespace": "default"}, "status": first["status"]})
    api = helper.InClusterApi(fake_kube.url, token=fake_kube.token)
    assert helper.pending(str(path)) is None
    assert helper.should_checkpoint(str(path), api=api)


def test_an_acknowledgement_needs_a_request_a_step_and_a_job(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    api = helper.InClusterApi(fake_kube.url, token=fake_kube.token)
    quiet = tmp_path / "q.json"
    quiet.write_text(json.dumps({"version": "v1", "job": "train", "namespace": "default", "attempt": 0,
                                 "request": None}))
    with pytest.raises(helper.CheckpointError, match="no checkpoint request"):
        helper.acknowledge(1, str(quiet), api=api)
    asked = publish(suspend(), tmp_path / "a.json")
    with pytest.raises(helper.CheckpointError, match="step must be"):
        helper.acknowledge(-1, str(asked), api=api)
    with pytest.raises(helper.CheckpointError, match="HTTP 404"):  # no such Job: said, never silent
        helper.acknowledge(1, str(asked), api=api)


def test_a_wrong_token_is_said(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    with pytest.raises(helper.CheckpointError, match="HTTP 401"):
        helper.acknowledge(1, str(publish(suspend(), tmp_path / "a.json")),
                           api=helper.InClusterApi(fake_kube.url, token="not-it"))


def test_outside_a_cluster_the_in_cluster_api_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(helper.CheckpointError, match="not in a cluster"):
        helper.InClusterApi()


TRAINER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import nvcre_checkpoint as helper
    saved = Path(sys.argv[2])
    helper.on_sigterm(lambda: saved.write_text("saved"), sys.argv[1])
    print("ready", flush=True)
    time.sleep(30)
""")


@pytest.mark.parametrize("asked", [False, True])
def test_a_sigterm_saves_only_when_no_request_came(tmp_path: Path, asked: bool) -> None:
    control = tmp_path / "c.json"
    request = {"id": "0-suspend-1", "attempt": 0, "outcome": "Requested"} if asked else None
    control.write_text(json.dumps({"version": "v1", "job": "train", "namespace": "default", "attempt": 0,
                                   "request": request}))
    saved = tmp_path / "saved"
    process = subprocess.Popen([sys.executable, "-c", TRAINER, str(control), str(saved)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 143
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert saved.exists() is (not asked)


def test_the_helper_needs_nothing_beyond_the_standard_library() -> None:
    import ast
    tree = ast.parse((ROOT / "nvcre_checkpoint" / "__init__.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
