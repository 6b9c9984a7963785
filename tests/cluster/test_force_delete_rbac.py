"""Issue 20 on the real control plane, with the hooks' own ServiceAccount token: the real server's
NotFound for a missing Node is what ``podread.nodes`` reads as deleted (and its plain-text 404 is
not); the base install grants no pod delete (a delete is 403, the permission read says no, the
hooks' decision holds with ``ForceDeleteAllowed=False``); the overlay ``manifests/overlays/force-delete/``
applied for one namespace allows it there and nowhere else."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

import podread
from hooks.core.actions import ForceDeletePod
from hooks.core.decide import Decision, decide
from hooks.core.observed import parse_request
from hooks.server.writer import ApiWriter
from podread import JOB_LABEL, JOBSET_NAME_LABEL
from podread.access import AccessClient
from podread.nodes import NodeClient, not_found_for
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import REPO, REQUEST_TIMEOUT, Applier, ensure_namespace, load_documents, rfc3339
from tests.support import job_request, job_spec

pytestmark = pytest.mark.cluster

GRANTS = REPO / "manifests" / "overlays" / "force-delete" / "pod-deleter.yaml"
GONE_NODE = "force-delete-gone-node"
JOB, WORKLOAD, BATCH_JOB, POD = "train", "train-0", "train-0-worker-0", "train-0-worker-0-0"


def grants_for(namespace: str) -> list[dict[str, Any]]:
    """The overlay's Role and RoleBinding, moved to ``namespace`` (what docs/operations.md says to do)."""
    docs = load_documents(GRANTS)
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
    return docs


def stuck_worker(admin: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """A worker of ``train-0`` as JobSet's batch Job owns it, bound to a node that does not exist,
    terminating (grace 1 s; no kubelet will ever confirm it): the pod a force delete is for."""
    batch = kubernetes.client.BatchV1Api(admin)
    owner = batch.create_namespaced_job(namespace, {
        "metadata": {"name": BATCH_JOB, "labels": {JOBSET_NAME_LABEL: WORKLOAD}},
        "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                        "containers": [{"name": "c", "image": "i"}]}}}},
        _request_timeout=REQUEST_TIMEOUT)
    core = kubernetes.client.CoreV1Api(admin)
    labels = {JOB_LABEL: JOB, JOBSET_NAME_LABEL: WORKLOAD, **owner.spec.selector.match_labels}
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": POD, "labels": labels, "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": BATCH_JOB, "uid": owner.metadata.uid,
             "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"nodeName": GONE_NODE, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "i"}]}}, _request_timeout=REQUEST_TIMEOUT)
    core.delete_namespaced_pod(POD, namespace, grace_period_seconds=1, _request_timeout=REQUEST_TIMEOUT)
    pod = core.read_namespaced_pod(POD, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
    body = json.loads(pod.data)
    assert body["metadata"].get("deletionTimestamp"), "bound to a node without a kubelet: it stays terminating"
    return body


def hooks_decision(api: kubernetes.client.ApiClient, namespace: str) -> Decision:
    """The hooks' /finalize decision for Job ``train`` in ``namespace``, draining for an hour, with
    force delete after 1 s, read through a Reader on ``api`` (the hooks' token)."""
    live = podread.LiveClient(api)
    reader = podread.Reader(podread.PodCache(live, ttl_seconds=0.05), live, nodes=NodeClient(api),
                            access=AccessClient(api), jobs=podread.JobClient(api))
    now = datetime.now(UTC) + timedelta(seconds=5)
    drained = {"type": "Drained", "status": "False", "reason": "PodsActive", "message": "w",
               "lastTransitionTime": rfc3339(time.time() - 3600)}
    body = job_request(name=JOB, namespace=namespace, finalizing=True, deleting=rfc3339(time.time() - 3600),
                       spec={**job_spec(), "drain": {"stuckAfterSeconds": 1, "forceDeleteStuckPodsAfterSeconds": 1}},
                       status={"phase": "Terminating", "attempt": 0, "workload": "", "conditions": [drained]})
    with podread.deadline(10.0):
        return decide(parse_request(body, "finalize"), reader, now)


def condition(decision: Decision, kind: str) -> dict[str, Any]:
    found = [c for c in decision.response["status"].get("conditions") or [] if c["type"] == kind]
    return found[0] if found else {}


@pytest.fixture
def namespaces(control_plane: ControlPlane, installed: dict) -> Iterator[tuple[str, str]]:
    admin = control_plane.api_client()
    stamp = str(int(time.time() * 1000))[-7:]
    pair = (f"force-a-{stamp}", f"force-b-{stamp}")
    for namespace in pair:
        ensure_namespace(admin, namespace)
    yield pair
    core = kubernetes.client.CoreV1Api(admin)
    for namespace in pair:
        try:
            core.delete_namespaced_pod(POD, namespace, grace_period_seconds=0, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise


def test_the_real_servers_not_found_for_a_missing_node_reads_as_deleted(
        control_plane: ControlPlane, installed: dict, hooks_token: str) -> None:
    api = control_plane.api_client(hooks_token)
    with pytest.raises(ApiException) as missing:
        kubernetes.client.CoreV1Api(api).read_node(GONE_NODE, _preload_content=False)
    assert missing.value.status == 404
    assert not_found_for(missing.value.body, GONE_NODE), missing.value.body
    assert not not_found_for(missing.value.body, "another-node")
    assert NodeClient(api).get_node(GONE_NODE) is None
    admin = control_plane.api_client()  # a path no group serves: past RBAC, the server's plain-text 404
    request = admin.param_serialize("GET", f"/apis/no.such.group/v1/nodes/{GONE_NODE}", auth_settings=["BearerToken"])
    unserved = admin.call_api(*request, _request_timeout=REQUEST_TIMEOUT)
    text = unserved.read()
    assert unserved.status == 404, text
    assert not not_found_for(text, GONE_NODE), f"a 404 that is not the NotFound of a Node: {text[:80]!r}"


@pytest.mark.timeout(120)
def test_the_base_grants_no_pod_delete_and_the_overlay_grants_it_in_its_namespace_only(
        control_plane: ControlPlane, installed: dict, hooks_token: str, namespaces: tuple[str, str]) -> None:
    admin = control_plane.api_client()
    api = control_plane.api_client(hooks_token)
    a, b = namespaces
    pods = {namespace: stuck_worker(admin, namespace) for namespace in (a, b)}
    core = kubernetes.client.CoreV1Api(api)
    writer = ApiWriter(api)
    access = AccessClient(api)

    # the base install: no pod delete anywhere
    for namespace in (a, b):
        with pytest.raises(ApiException) as refused:
            core.delete_namespaced_pod(POD, namespace, grace_period_seconds=0, _preload_content=False)
        assert refused.value.status == 403
        assert access.may_delete_pods(namespace) is False
        decision = hooks_decision(api, namespace)
        assert decision.actions == () and decision.response["finalized"] is False
        refused_condition = condition(decision, "ForceDeleteAllowed")
        assert (refused_condition.get("status"), refused_condition.get("reason")) == ("False", "Forbidden")
        assert "nvcre-hooks-pod-deleter" in refused_condition["message"]
        assert condition(decision, "DrainStuck").get("status") == "True"
        action = ForceDeletePod(namespace, POD, pods[namespace]["metadata"]["uid"], GONE_NODE, "test")
        assert writer.force_delete_pod(action) == "forbidden"

    # the overlay, applied for namespace a only
    Applier(admin).apply_all(grants_for(a))
    deadline = time.monotonic() + 20
    while not access.may_delete_pods(a):
        assert time.monotonic() < deadline, "the Role bound in a never took effect"
        time.sleep(0.2)
    assert access.may_delete_pods(b) is False
    allowed = hooks_decision(api, a)
    assert condition(allowed, "ForceDeleteAllowed").get("status") == "True"
    assert allowed.actions == (ForceDeletePod(a, POD, pods[a]["metadata"]["uid"], GONE_NODE,
                                              f"node {GONE_NODE} is deleted"),)
    assert writer.force_delete_pod(allowed.actions[0]) == "deleted"
    with pytest.raises(ApiException) as gone:
        kubernetes.client.CoreV1Api(admin).read_namespaced_pod(POD, a, _preload_content=False)
    assert gone.value.status == 404
    still = hooks_decision(api, b)
    assert still.actions == () and condition(still, "ForceDeleteAllowed").get("reason") == "Forbidden"
    with pytest.raises(ApiException) as refused_in_b:
        core.delete_namespaced_pod(POD, b, grace_period_seconds=0, _preload_content=False)
    assert refused_in_b.value.status == 403
