"""Realistic pod dicts (the API server's JSON form) for tests and the fake API server."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from podread.constants import (
    ATTEMPT_LABEL,
    JOB_LABEL,
    JOBSET_NAME_LABEL,
    LAUNCHER_LABEL,
    REPLICATED_JOB_LABEL,
)

Pod = dict[str, Any]

_TIME = "2024-05-01T12:00:00Z"


def _ip(seed: str) -> str:
    """A stable 10.x.y.z address derived from ``seed``."""
    digest = hashlib.sha256(seed.encode()).digest()
    return f"10.{digest[0]}.{digest[1]}.{max(digest[2], 1)}"


def _container_status(name: str, image: str, phase: str) -> dict[str, Any]:
    """The status of one container consistent with the pod ``phase``."""
    status: dict[str, Any] = {
        "name": name,
        "image": image,
        "imageID": "",
        "restartCount": 0,
        "ready": phase == "Running",
        "started": phase == "Running",
    }
    if phase == "Running":
        status["state"] = {"running": {"startedAt": _TIME}}
        status["containerID"] = f"containerd://{hashlib.sha256(name.encode()).hexdigest()}"
    elif phase in ("Succeeded", "Failed"):
        code = 0 if phase == "Succeeded" else 1
        status["state"] = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": _TIME,
                "finishedAt": _TIME,
            }
        }
    else:
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    return status


def make_pod(
    name: str,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    phase: str = "Running",
    node: str | None = None,
    deletion_timestamp: str | None = None,
    *,
    annotations: Mapping[str, str] | None = None,
    owner: Mapping[str, Any] | None = None,
    image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
    gpus: int = 8,
    uid: str | None = None,
    restart_policy: str = "Never",
) -> Pod:
    """A pod as the API server returns it: metadata, a GPU container spec and a status for ``phase``.

    ``node`` sets ``spec.nodeName``; a ``Pending`` pod with no node is unschedulable, any other
    gets the status of a scheduled pod. ``deletion_timestamp`` marks the pod as being deleted
    (phase unchanged, as on a real cluster). ``owner`` is one ``ownerReferences`` entry. ``uid`` is
    derived from the namespace and name when not given, so the same call gives the same pod.
    """
    scheduled = node is not None or phase != "Pending"
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"pod/{namespace}/{name}")),
        "creationTimestamp": _TIME,
        "labels": dict(labels or {}),
    }
    if annotations:
        metadata["annotations"] = dict(annotations)
    if owner:
        metadata["ownerReferences"] = [{"controller": True, "blockOwnerDeletion": True, **owner}]
    if deletion_timestamp is not None:
        metadata["deletionTimestamp"] = deletion_timestamp
        metadata["deletionGracePeriodSeconds"] = 30
    resources = (
        {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    )
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "trainer",
                "image": image,
                "command": ["torchrun"],
                "args": ["--nnodes=$(NNODES)", "train.py"],
                "env": [{"name": "NNODES", "value": "2"}],
                "resources": resources,
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "readOnly": True,
                    }
                ],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": restart_policy,
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    status: dict[str, Any] = {"phase": phase, "qosClass": "Burstable"}
    if node is not None:
        spec["nodeName"] = node
        status["hostIP"] = _ip(f"node/{node}")
    if scheduled:
        status["startTime"] = _TIME
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": _TIME},
            {
                "type": "Ready",
                "status": "True" if phase == "Running" else "False",
                "lastProbeTime": None,
                "lastTransitionTime": _TIME,
            },
        ]
        status["containerStatuses"] = [_container_status("trainer", image, phase)]
        if phase == "Running":
            status["podIP"] = _ip(f"pod/{namespace}/{name}")
            status["podIPs"] = [{"ip": status["podIP"]}]
    else:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": _TIME,
                "reason": "Unschedulable",
                "message": "0/0 nodes are available",
            }
        ]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": spec, "status": status}


def make_job_pods(
    job: str,
    count: int,
    namespace: str = "default",
    *,
    attempt: int = 0,
    replicated_job: str = "worker",
    phase: str = "Running",
    node_prefix: str | None = "node",
    launcher: bool = False,
) -> list[Pod]:
    """The ``count`` pods JobSet makes for one replicated job of an NVCRE Job's attempt.

    Pods are named like JobSet's (``<jobset>-<replicatedJob>-0-<i>-<suffix>``), labelled with
    ``JOB_LABEL`` (``LAUNCHER_LABEL`` when ``launcher``), the attempt and the JobSet labels, and
    bound to ``<node_prefix>-<job>-<i>`` unless ``node_prefix`` is ``None``.
    """
    jobset = f"{job}-{attempt}"  # the JobSet name the hooks give an attempt (design §3)
    pods: list[Pod] = []
    for index in range(count):
        labels = {
            LAUNCHER_LABEL if launcher else JOB_LABEL: job,
            ATTEMPT_LABEL: str(attempt),
            JOBSET_NAME_LABEL: jobset,
            REPLICATED_JOB_LABEL: replicated_job,
            "batch.kubernetes.io/job-completion-index": str(index),
        }
        suffix = hashlib.sha256(f"{namespace}/{jobset}/{replicated_job}/{index}".encode()).hexdigest()[:5]
        node = None if node_prefix is None else f"{node_prefix}-{job}-{index}"
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": f"{jobset}-{replicated_job}-0",
            "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"job/{namespace}/{jobset}/{replicated_job}")),
        }
        pods.append(
            make_pod(
                f"{jobset}-{replicated_job}-0-{index}-{suffix}", namespace, labels, phase, node, owner=owner
            )
        )
    return pods
