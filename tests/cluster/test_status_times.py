"""Status times as the real API server admits them (issue 31), then the hooks' answer to what it stored.

The API server checks a ``format: date-time`` status field with kube-openapi's ``strfmt.IsDateTime``:
``hooks.core.apitime.admitted`` must say exactly what it says, for every spelling the tests know
(each is written through ``/status`` and read back). A Job whose status the API server stored with a
lower-case, fractional or offset time, or with one that names no instant, is then sent as stored to
the real gunicorn hook server (the hooks' ServiceAccount reading the real API server): always a 200,
a hold naming the field where a policy counts from it, the time kept as it came; and once deleted
and drained, ``/finalize`` finalizes it. Before, each was a 400 on every call and a deleted Job hung
on its finalizer.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from kubernetes.client import ApiException, CustomObjectsApi

from hooks.core import apitime
from tests.cluster.conftest import HOOK_TOKEN
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import ensure_namespace
from tests.core import test_apitime
from tests.e2e.harness import job_spec
from tests.e2e.server import HookServer
from tests.support import JOBSET_GROUP
from tests.support.timespellings import ADMITTED, REFUSED

pytestmark = pytest.mark.cluster

GROUP, VERSION, PLURAL = "nvcre.nvidia.com", "v1alpha1", "jobs"
NAMESPACE = "status-times"
FINALIZER = "metacontroller.io/compositecontroller-nvcre-jobs"
SPELLINGS = sorted({*test_apitime.READABLE, *test_apitime.UNREADABLE, *test_apitime.REFUSED, *ADMITTED.values(),
                    *REFUSED.values()})
"""Every spelling the unit tests judge, admitted or not."""


def custom(plane: ControlPlane) -> CustomObjectsApi:
    return CustomObjectsApi(plane.api_client())


def create_job(plane: ControlPlane, name: str, **spec: Any) -> dict[str, Any]:
    """Creates Job ``name`` with Metacontroller's finalizer (so a delete leaves it for ``/finalize``)."""
    ensure_namespace(plane.api_client(), NAMESPACE)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "finalizers": [FINALIZER]},
            "spec": {**job_spec(), **spec}}
    return custom(plane).create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)


def write_status(plane: ControlPlane, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
    """Replaces Job ``name``'s status through ``/status`` (as anyone with status write may), returns
    the stored Job; ``ApiException`` when the API server refuses it."""
    job = custom(plane).get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    job["status"] = dict(status)
    return custom(plane).replace_namespaced_custom_object_status(GROUP, VERSION, NAMESPACE, PLURAL, name, job)


def stored(plane: ControlPlane, name: str) -> dict[str, Any]:
    return custom(plane).get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)


def ask(hooks: HookServer, parent: Mapping[str, Any]) -> dict[str, Any]:
    """The hooks' answer to ``parent`` as stored (no JobSet observed), as Metacontroller asks: ``/finalize``
    once it is being deleted, else ``/sync``; asserts a 200."""
    finalizing = "deletionTimestamp" in parent["metadata"]
    request = {"controller": {"metadata": {"name": "nvcre-jobs"}}, "parent": copy.deepcopy(dict(parent)),
               "children": {JOBSET_GROUP: {}}, "related": {}, "finalizing": finalizing}
    code, body = hooks.post("/finalize" if finalizing else "/sync", orjson.dumps(request), token=HOOK_TOKEN)
    assert code == 200, (code, body[:400])
    return orjson.loads(body)


def mismatch(answer: Mapping[str, Any]) -> dict[str, Any]:
    return next((c for c in answer["status"].get("conditions") or () if c["type"] == "StatusMismatch"), {})


def test_the_api_server_admits_exactly_what_apitime_admits(control_plane: ControlPlane, installed: dict) -> None:
    create_job(control_plane, "spellings")
    wrong = []
    for text in SPELLINGS:
        for field, status in (("startTime", {"startTime": text}),
                              ("attempts[0].created", {"attempts": [{"attempt": 0, "created": text}]}),
                              ("conditions[0].lastTransitionTime",
                               {"conditions": [{"type": "Drained", "status": "True", "lastTransitionTime": text}]})):
            try:
                kept = write_status(control_plane, "spellings", status)["status"]
            except ApiException as refused:
                assert refused.status == 422, refused.body
                if apitime.admitted(text):
                    wrong.append(f"{text!r} in {field}: refused, but apitime admits it")
                continue
            if not apitime.admitted(text):
                wrong.append(f"{text!r} in {field}: admitted, but apitime refuses it")
            assert kept == status, "stored as given"
    assert wrong == []
    assert not apitime.admitted("2025-02-30T00:00:00Z"), "Go's time.Parse bounds the day by its month"


def test_a_stored_status_is_answered_and_a_deleted_drained_job_finalizes(
        control_plane: ControlPlane, installed: dict, hooks: HookServer) -> None:
    created = create_job(control_plane, "spelled", activeDeadlineSeconds=3600)
    since = created["metadata"]["creationTimestamp"]  # 2026-...T...Z: the same instant, spelled otherwise
    lower = since.lower()
    fraction = since.replace("Z", ".000000001Z")
    with pytest.raises(ApiException) as refused:
        write_status(control_plane, "spelled", {"startTime": "2025-02-30T00:00:00Z"})
    assert refused.value.status == 422 and "startTime" in refused.value.body, "no Job carries a February 30"

    running = {"phase": "Running", "attempt": 0, "restarts": 0, "workload": "spelled-0",
               "attempts": [{"attempt": 0, "jobSet": "spelled-0", "created": lower, "started": fraction}]}
    for start, held in ((lower, False), (fraction, False), ("2025-06-01t00:00:00z", True),
                        ("0000-01-01T00:00:00Z", True), ("2026-01-01T00:00:00+99:99", True)):
        job = write_status(control_plane, "spelled", {**running, "startTime": start})
        assert job["status"]["startTime"] == start and job["status"]["attempts"] == running["attempts"]
        answer = ask(hooks, job)
        assert answer["status"]["startTime"] == start, "kept as it came"
        assert answer["status"]["attempts"][0] == running["attempts"][0]
        if held:
            assert mismatch(answer).get("status") == "True", answer["status"]
            assert mismatch(answer)["reason"] == "StartTimeDisagrees"
            assert mismatch(answer)["message"].startswith("status.startTime ")
        else:
            assert mismatch(answer).get("status") != "True", answer["status"]

    succeeded = {**running, "phase": "Succeeded", "workload": "", "startTime": lower}
    for completion in ("0000-01-01T00:00:00Z", "2025-06-01t00:00:00z"):
        job = write_status(control_plane, "spelled", {**succeeded, "completionTime": completion})
        answer = ask(hooks, job)
        assert answer["status"]["completionTime"] == completion
        assert mismatch(answer)["reason"] == "CompletionTimeDisagrees"
        assert mismatch(answer)["message"].startswith("status.completionTime ")

    job = write_status(control_plane, "spelled", {**succeeded, "startTime": "0000-01-01T00:00:00Z",
                                                  "completionTime": "2026-01-01t00:00:00.5+99:99"})
    custom(control_plane).delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "spelled")
    deleted = stored(control_plane, "spelled")
    assert deleted["metadata"].get("deletionTimestamp") and deleted["status"] == job["status"]
    answer = ask(hooks, deleted)
    assert answer["finalized"] is True and answer["children"] == [], answer
    custom(control_plane).patch_namespaced_custom_object(  # as Metacontroller does once finalized
        GROUP, VERSION, NAMESPACE, PLURAL, "spelled", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as gone:
        stored(control_plane, "spelled")
    assert gone.value.status == 404
