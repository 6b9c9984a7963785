"""Realistic GPU training pods for the memory and parsing benchmarks.

``tests.fakekube.make_pod`` gives a lean pod (one container, no managed fields). A pod written by
JobSet's Job controller and the kubelet carries much more: managed fields for every manager,
annotations, a second container, env, probes, volumes, init containers and a status with four
conditions and two container statuses. ``realistic_pod`` adds those: about 8 KB of JSON per pod, a fifth
of it managedFields (two managers; real pods often carry more).
"""

from __future__ import annotations

import copy
from typing import Any

from podread.constants import ATTEMPT_LABEL, JOB_LABEL, JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from tests.fakekube import make_pod

Pod = dict[str, Any]
_TIME = "2024-05-01T12:00:00Z"


def _fields_v1(paths: list[str]) -> dict[str, Any]:
    """A ``fieldsV1`` tree: each dotted path becomes nested ``f:`` keys ending in ``{}``."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for part in path.split("."):
            node = node.setdefault(f"f:{part}", {})
    return tree


_CONTROLLER_FIELDS = _fields_v1([
    "metadata.annotations.batch.kubernetes.io/job-completion-index", "metadata.generateName",
    "metadata.labels.batch.kubernetes.io/controller-uid", "metadata.labels.batch.kubernetes.io/job-name",
    "metadata.labels.controller-uid", "metadata.labels.job-name", "metadata.labels.jobset.sigs.k8s.io/jobset-name",
    "metadata.labels.jobset.sigs.k8s.io/replicatedjob-name", "metadata.labels.nvcre.nvidia.com/job",
    "metadata.labels.nvcre.nvidia.com/attempt", "metadata.ownerReferences",
    "spec.containers.k:{\"name\":\"trainer\"}.env", "spec.containers.k:{\"name\":\"trainer\"}.image",
    "spec.containers.k:{\"name\":\"trainer\"}.resources.limits", "spec.containers.k:{\"name\":\"trainer\"}.ports",
    "spec.containers.k:{\"name\":\"trainer\"}.volumeMounts", "spec.containers.k:{\"name\":\"trainer\"}.livenessProbe",
    "spec.containers.k:{\"name\":\"metrics\"}.image", "spec.containers.k:{\"name\":\"metrics\"}.ports",
    "spec.dnsPolicy", "spec.enableServiceLinks", "spec.hostname", "spec.initContainers", "spec.restartPolicy",
    "spec.schedulerName", "spec.securityContext", "spec.subdomain", "spec.terminationGracePeriodSeconds",
    "spec.tolerations", "spec.volumes.k:{\"name\":\"dshm\"}", "spec.volumes.k:{\"name\":\"data\"}",
])
_KUBELET_FIELDS = _fields_v1([
    "status.conditions.k:{\"type\":\"ContainersReady\"}", "status.conditions.k:{\"type\":\"Initialized\"}",
    "status.conditions.k:{\"type\":\"PodReadyToStartContainers\"}", "status.conditions.k:{\"type\":\"Ready\"}",
    "status.containerStatuses", "status.hostIP", "status.hostIPs", "status.initContainerStatuses", "status.phase",
    "status.podIP", "status.podIPs.k:{\"ip\":\"10.0.0.1\"}", "status.startTime",
])


def _env(index: int) -> list[dict[str, Any]]:
    return [
        {"name": "NNODES", "value": "64"}, {"name": "NODE_RANK", "value": str(index)},
        {"name": "MASTER_ADDR", "value": "llama-0-worker-0-0.llama-0"}, {"name": "MASTER_PORT", "value": "29500"},
        {"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "NCCL_IB_HCA", "value": "mlx5_0,mlx5_1,mlx5_2,mlx5_3"},
        {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}, {"name": "OMP_NUM_THREADS", "value": "8"},
        {"name": "WANDB_PROJECT", "value": "llama-pretrain"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
    ]


def _probe(port: int) -> dict[str, Any]:
    return {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"}, "initialDelaySeconds": 30,
            "periodSeconds": 10, "timeoutSeconds": 5, "successThreshold": 1, "failureThreshold": 6}


def realistic_pod(job: str, index: int, namespace: str = "default", *, attempt: int = 0,
                  phase: str = "Running") -> Pod:
    """One worker pod of ``job``'s ``attempt`` as the API server lists it (about 8 KB of JSON)."""
    jobset = f"{job}-{attempt}"
    labels = {
        JOB_LABEL: job, ATTEMPT_LABEL: str(attempt), JOBSET_NAME_LABEL: jobset, REPLICATED_JOB_LABEL: "worker",
        "batch.kubernetes.io/job-completion-index": str(index), "batch.kubernetes.io/controller-uid": f"uid-{jobset}",
        "batch.kubernetes.io/job-name": f"{jobset}-worker-0", "controller-uid": f"uid-{jobset}",
        "job-name": f"{jobset}-worker-0", "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    pod = make_pod(f"{jobset}-worker-0-{index}-x{index:04x}", namespace, labels, phase, f"gpu-{job}-{index}",
                   owner={"apiVersion": "batch/v1", "kind": "Job", "name": f"{jobset}-worker-0",
                          "uid": f"uid-{jobset}-worker-0"},
                   annotations={
                       "batch.kubernetes.io/job-completion-index": str(index),
                       "jobset.sigs.k8s.io/jobset-name": jobset,
                       "jobset.sigs.k8s.io/replicatedjob-name": "worker",
                       "kubectl.kubernetes.io/default-container": "trainer",
                       "prometheus.io/scrape": "true", "prometheus.io/port": "9400",
                   })
    metadata = pod["metadata"]
    metadata["generateName"] = f"{jobset}-worker-0-{index}-"
    metadata["resourceVersion"] = str(1000 + index)
    metadata["managedFields"] = [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": _TIME,
         "fieldsType": "FieldsV1", "fieldsV1": copy.deepcopy(_CONTROLLER_FIELDS)},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": _TIME,
         "fieldsType": "FieldsV1", "fieldsV1": copy.deepcopy(_KUBELET_FIELDS), "subresource": "status"},
    ]
    spec = pod["spec"]
    trainer = spec["containers"][0]
    trainer["env"] = _env(index)
    trainer["ports"] = [{"containerPort": 29500, "name": "rdzv", "protocol": "TCP"}]
    trainer["resources"] = {
        "limits": {"cpu": "96", "memory": "1600Gi", "nvidia.com/gpu": "8", "rdma/ib": "4"},
        "requests": {"cpu": "90", "memory": "1500Gi", "nvidia.com/gpu": "8", "rdma/ib": "4"},
    }
    trainer["volumeMounts"] += [{"name": "dshm", "mountPath": "/dev/shm"},
                                {"name": "data", "mountPath": "/data", "readOnly": True}]
    trainer["livenessProbe"] = _probe(8080)
    trainer["readinessProbe"] = _probe(8080)
    trainer["securityContext"] = {"capabilities": {"add": ["IPC_LOCK", "SYS_NICE"]}}
    metrics = {
        "name": "metrics", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04",
        "ports": [{"containerPort": 9400, "name": "metrics", "protocol": "TCP"}],
        "env": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"}],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "256Mi"}},
        "livenessProbe": _probe(9400), "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
    }
    spec["containers"].append(metrics)
    spec["initContainers"] = [{
        "name": "wait-for-peers", "image": "busybox:1.36", "command": ["sh", "-c", "until nslookup $(MASTER_ADDR); "
                                                                      "do sleep 2; done"],
        "resources": {}, "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent",
    }]
    spec["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "datasets", "readOnly": True}},
        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                          "fieldPath": "metadata.namespace"}}]}},
        ]}},
    ]
    spec["hostname"] = f"{jobset}-worker-0-{index}"
    spec["subdomain"] = jobset
    status = pod["status"]
    status["conditions"] = [
        {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": _TIME}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    status["hostIPs"] = [{"ip": status.get("hostIP", "10.1.1.1")}]
    status["initContainerStatuses"] = [{
        "name": "wait-for-peers", "image": "docker.io/library/busybox:1.36", "imageID": "", "restartCount": 0,
        "ready": True, "started": False,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": _TIME, "finishedAt": _TIME}},
    }]
    statuses = status.get("containerStatuses") or []
    if statuses:
        extra = copy.deepcopy(statuses[0])
        extra["name"], extra["image"] = "metrics", metrics["image"]
        statuses.append(extra)
    return pod


def realistic_job_pods(job: str, count: int, namespace: str = "default", *, attempt: int = 0) -> list[Pod]:
    """``count`` realistic worker pods of one job."""
    return [realistic_pod(job, index, namespace, attempt=attempt) for index in range(count)]
