"""A JobSet controller stand-in for the cluster tier: JobSets become real ``batch/v1`` Jobs.

The real JobSet controller cannot be run here (it needs its webhooks and an image), so this does
the part of it the NVCRE hooks rely on (reference/jobset-mpi-cache-facts.md A2, A4, A6):

- for every replicated job and index, one Job ``<jobset>-<replicatedJob>-<index>`` owned by the
  JobSet (controller ownerReference, ``blockOwnerDeletion``), labelled and annotated on the Job and
  on its pod template with JobSet's keys (``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name``,
  ``job-index``, ...), ``completionMode: Indexed`` unless the template says otherwise (JobSet's
  default); the real Job controller then creates the pods and the real garbage collector removes
  Jobs and pods when the JobSet is deleted;
- the status through the ``/status`` subresource: per replicated job counts of its Jobs, and the
  terminal state: ``Failed`` (reason ``FailedJobs``) as soon as one Job fails (``failurePolicy``
  ``maxRestarts: 0``, what the hooks emit), ``Completed`` (reason ``AllJobsCompleted``) when the
  success policy is met (``All`` Jobs, or ``Any`` Job of ``targetReplicatedJobs``);
- once terminal, still-active Jobs are deleted with foreground propagation (the MPI workers left
  running after their launcher succeeded);
- ``spec.suspend: true`` (what Kueue sets on a child JobSet whose ancestor's Workload is not
  admitted) creates no Job and suspends the existing ones (``spec.suspend`` on each Job), so the
  Job controller deletes their pods.

``sync()`` does one pass over its namespaces; the world calls it every step.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

import kubernetes
from kubernetes.client import ApiException

from podread import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from tests.cluster.kube import REQUEST_TIMEOUT as TIMEOUT
from tests.cluster.kube import SERVER_ERRORS, rfc3339
from tests.e2e.cluster import clone

GROUP, VERSION = "jobset.x-k8s.io", "v1alpha2"
PREFIX = "jobset.sigs.k8s.io/"
Obj = dict[str, Any]


def job_finished(job: Mapping[str, Any]) -> str:
    """``"Failed"``, ``"Complete"`` or ``""`` from a batch Job's conditions (the early
    ``FailureTarget``/``SuccessCriteriaMet`` count: the Job controller adds the final ones only
    after its pods are gone)."""
    types = {c.get("type") for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    if types & {"Failed", "FailureTarget"}:
        return "Failed"
    if types & {"Complete", "SuccessCriteriaMet"}:
        return "Complete"
    return ""


class JobSetController:
    """Turns the JobSets of ``namespaces`` into Jobs and keeps their status (see the module doc)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespaces: Iterable[str]) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.batch = kubernetes.client.BatchV1Api(api_client)
        self.namespaces = sorted(namespaces)
        self.errors = 0
        self._since: dict[tuple[str, str], float] = {}

    def sync(self) -> None:
        """One pass: create missing Jobs, write changed statuses, delete a terminal JobSet's active
        Jobs. A failing server skips the pass (counted in ``errors``)."""
        for namespace in self.namespaces:
            try:
                self._sync_namespace(namespace)
            except SERVER_ERRORS:
                self.errors += 1

    def _sync_namespace(self, namespace: str) -> None:
        jobsets = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "jobsets",
                                                            _request_timeout=TIMEOUT)["items"]
        raw = self.batch.list_namespaced_job(namespace, label_selector=JOBSET_NAME_LABEL,
                                             _preload_content=False, _request_timeout=TIMEOUT)
        jobs = json.loads(raw.data)["items"]
        by_owner: dict[str, list[Obj]] = {}
        for job in jobs:
            for owner in job["metadata"].get("ownerReferences") or []:
                if owner.get("kind") == "JobSet" and owner.get("controller"):
                    by_owner.setdefault(owner["uid"], []).append(job)
        for jobset in jobsets:
            if "deletionTimestamp" in jobset["metadata"]:
                continue  # JobSets marked for deletion are not reconciled
            self._reconcile(jobset, by_owner.get(jobset["metadata"]["uid"], []))

    def _reconcile(self, jobset: Obj, jobs: list[Obj]) -> None:
        metadata = jobset["metadata"]
        status = jobset.get("status") or {}
        existing = {job["metadata"]["name"]: job for job in jobs}
        terminal = status.get("terminalState") or ""
        if jobset["spec"].get("suspend") is True and not terminal:
            for job in jobs:
                if job["spec"].get("suspend") is not True and "deletionTimestamp" not in job["metadata"]:
                    try:
                        self.batch.patch_namespaced_job(job["metadata"]["name"], metadata["namespace"],
                                                        {"spec": {"suspend": True}}, _request_timeout=TIMEOUT)
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
            return
        if not terminal:
            global_index = 0
            total = sum(int(rj.get("replicas", 1)) for rj in jobset["spec"]["replicatedJobs"])
            for rj in jobset["spec"]["replicatedJobs"]:
                for index in range(int(rj.get("replicas", 1))):
                    name = f"{metadata['name']}-{rj['name']}-{index}"
                    if name not in existing:
                        self._create_job(jobset, rj, index, global_index, total, name)
                    global_index += 1
        counts = self._counts(jobset, jobs)
        new_state = terminal or self._terminal_state(jobset, jobs)
        desired = {**status, "replicatedJobsStatus": counts, "restarts": status.get("restarts", 0)}
        if new_state and not terminal:
            key = (metadata["namespace"], metadata["name"])
            self._since.setdefault(key, time.time())
            reason, message = (("FailedJobs", "jobset failed due to one or more job failures")
                               if new_state == "Failed" else ("AllJobsCompleted", "jobset completed successfully"))
            desired["terminalState"] = new_state
            desired["conditions"] = [*(status.get("conditions") or []), {
                "type": new_state, "status": "True", "reason": reason, "message": message,
                "lastTransitionTime": rfc3339(self._since[key])}]
        if desired != status:
            body = {**jobset, "status": desired}
            try:
                self.custom.replace_namespaced_custom_object_status(GROUP, VERSION, metadata["namespace"],
                                                                    "jobsets", metadata["name"], body,
                                                                    _request_timeout=TIMEOUT)
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
        if new_state:
            for job in jobs:
                if not job_finished(job) and "deletionTimestamp" not in job["metadata"]:
                    try:
                        self.batch.delete_namespaced_job(job["metadata"]["name"], metadata["namespace"],
                                                         propagation_policy="Foreground", _request_timeout=TIMEOUT)
                    except ApiException as exc:
                        if exc.status != 404:
                            raise

    def _create_job(self, jobset: Obj, rj: Mapping[str, Any], index: int, global_index: int, total: int,
                    name: str) -> None:
        metadata = jobset["metadata"]
        namespace = metadata["namespace"]
        keys = {
            JOBSET_NAME_LABEL: metadata["name"],
            f"{PREFIX}jobset-uid": metadata["uid"],
            REPLICATED_JOB_LABEL: rj["name"],
            f"{PREFIX}replicatedjob-replicas": str(rj.get("replicas", 1)),
            f"{PREFIX}global-replicas": str(total),
            f"{PREFIX}job-index": str(index),
            f"{PREFIX}job-global-index": str(global_index),
            f"{PREFIX}job-key": hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest(),
            f"{PREFIX}group-name": rj.get("groupName", "default"),
            f"{PREFIX}restart-attempt": str((jobset.get("status") or {}).get("restarts", 0)),
        }
        template = clone(rj.get("template") or {})
        spec = template.get("spec") or {}
        spec.setdefault("completionMode", "Indexed")
        pod_template = spec.setdefault("template", {})
        pod_meta = pod_template.setdefault("metadata", {})
        pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **keys}
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **keys}
        job_meta = template.get("metadata") or {}
        body = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {**(job_meta.get("labels") or {}), **keys},
                         "annotations": {**(job_meta.get("annotations") or {}), **keys},
                         "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "JobSet",
                                              "name": metadata["name"], "uid": metadata["uid"],
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec,
        }
        _quantities_as_strings(body)
        try:
            self.batch.create_namespaced_job(namespace, body, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 409:
                raise

    @staticmethod
    def _counts(jobset: Obj, jobs: list[Obj]) -> list[Obj]:
        counts = []
        for rj in jobset["spec"]["replicatedJobs"]:
            mine = [j for j in jobs if j["metadata"].get("labels", {}).get(REPLICATED_JOB_LABEL) == rj["name"]]
            states = [job_finished(j) for j in mine]
            counts.append({
                "name": rj["name"],
                "active": sum(1 for s, j in zip(states, mine, strict=True)
                              if not s and (j.get("status") or {}).get("active")),
                "ready": sum(1 for j in mine if (j.get("status") or {}).get("ready")),
                "succeeded": states.count("Complete"),
                "failed": states.count("Failed"),
                "suspended": 0,
            })
        return counts

    @staticmethod
    def _terminal_state(jobset: Obj, jobs: list[Obj]) -> str:
        states = {job["metadata"]["name"]: job_finished(job) for job in jobs}
        if "Failed" in states.values():
            return "Failed"
        policy = jobset["spec"].get("successPolicy") or {}
        targets = set(policy.get("targetReplicatedJobs") or [rj["name"] for rj in jobset["spec"]["replicatedJobs"]])
        wanted = [f"{jobset['metadata']['name']}-{rj['name']}-{index}"
                  for rj in jobset["spec"]["replicatedJobs"] if rj["name"] in targets
                  for index in range(int(rj.get("replicas", 1)))]
        done = [states.get(name) == "Complete" for name in wanted]
        if wanted and (any(done) if policy.get("operator") == "Any" else all(done)):
            return "Completed"
        return ""


def _quantities_as_strings(value: Any) -> None:
    """Resource quantities written as JSON numbers (``nvidia.com/gpu: 8``) become strings: the API
    server takes both, the kubernetes client's model validation only strings."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("limits", "requests") and isinstance(item, dict):
                value[key] = {k: str(v) if isinstance(v, int | float) else v for k, v in item.items()}
            else:
                _quantities_as_strings(item)
    elif isinstance(value, list):
        for item in value:
            _quantities_as_strings(item)
