"""``ApiBackend``: the e2e driver's Jobs and JobSets kept in a real kube-apiserver.

With it, ``tests.e2e.driver.Driver`` does what Metacontroller's CompositeController does to a real
server (reference/metacontroller-facts.md §1, §2, §5):

- it observes the NVCRE Jobs of its namespaces and, per Job, the JobSets that carry the
  ``controller-uid`` label (``generateSelector``) and name the Job as their controller owner; both
  are read once per round (Metacontroller reads its informers' caches, which lag as much);
- a new child is created with the ``controller-uid`` label and a controller ownerReference
  (``blockOwnerDeletion``), so the garbage collector removes it with its Job;
- an omitted child is deleted with ``propagationPolicy: Background`` and a UID precondition, so its
  Jobs and pods go later, in the background; a child already being deleted is left alone;
- the status is written through the ``/status`` subresource with the Job's resourceVersion
  (a conflict is a failed sync, retried);
- the finalizer is added and removed with a merge patch on the read resourceVersion.

With ``workloads`` (Kueue on the tier, issue 14) Workloads are children too, read, created and
deleted the same way (background propagation, UID precondition), and every WorkloadPriorityClass and
ResourceFlavor is listed for the requests' ``related``.

Every refused or failed write raises ``BackendError``; a failed read keeps the last objects read
(the informers' cache keeps serving while the server is away).

``CompositeControllerStandIn`` is what Metacontroller does with the CompositeController object itself
(reference/metacontroller-facts.md, runtime behaviour 11): it builds the controller from the object's
``spec``, reading the hook token from the Secret ``webhook.authorization.secretRef`` names then and
only then; it rebuilds when the ``spec`` differs from the one it was built from (metadata, such as an
annotation, changes nothing) or when Metacontroller restarts.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

import kubernetes
from kubernetes.client import ApiException

from tests.cluster.kube import REQUEST_TIMEOUT, SERVER_ERRORS
from tests.e2e.driver import BackendError, Key, Obj

GROUP, VERSION = "nvcre.nvidia.com", "v1alpha1"
JOBSET_GROUP, JOBSET_VERSION = "jobset.x-k8s.io", "v1alpha2"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
RELATED = (("WorkloadPriorityClass", "workloadpriorityclasses"), ("ResourceFlavor", "resourceflavors"))
"""The related objects of the manifests-kueue customize hook (hooks.core.queueing.customize_response)."""
CONTROLLER = "nvcre-jobs"
TOKEN_SECRET = ("nvcre-system", "nvcre-hooks-token")
"""The Secret the CompositeController's hooks name (manifests/compositecontroller.yaml); not shipped."""


def token_secret(token: str, previous: str = "") -> dict[str, Any]:
    """The hook token Secret as docs/operations.md has the operator create it: key ``token`` (what
    Metacontroller sends, what the hooks accept) and key ``previous`` (also accepted by the hooks;
    empty between rotations)."""
    namespace, name = TOKEN_SECRET
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": {"token": token, "previous": previous}}


class CompositeControllerStandIn:
    """Metacontroller's handling of CompositeController ``name`` (module doc): ``tokens`` holds, per
    hook, the bearer token read from its Secret when the controller was last built; ``builds``
    counts the builds. ``observe`` rebuilds only when the object's ``spec`` changed; ``restart``
    rebuilds as a restarted Metacontroller does; ``drive`` makes a ``Driver`` send the built token.
    A Secret or key that cannot be read when building raises ``BackendError`` (no controller runs)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, name: str = CONTROLLER) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.name = name
        self.spec: dict[str, Any] = {}
        self.tokens: dict[str, str] = {}
        self.builds = 0
        self.build()

    @property
    def token(self) -> str:
        """The token the sync hook's calls carry (the finalize hook names the same Secret key)."""
        return self.tokens["sync"]

    def build(self) -> None:
        """Builds the controller: reads the object and, for each hook with ``authorization``, its
        Secret's key, now."""
        spec = self._read()["spec"]
        tokens = {}
        for hook, definition in (spec.get("hooks") or {}).items():
            ref = (((definition.get("webhook") or {}).get("authorization") or {}).get("secretRef"))
            if ref:
                tokens[hook] = self._secret_key(ref["namespace"], ref["name"], ref["key"])
        if tokens.get("finalize", tokens.get("sync")) != tokens.get("sync"):
            raise BackendError("the stand-in's Driver sends one token: sync and finalize must name the same key")
        self.spec, self.tokens = spec, tokens
        self.builds += 1

    def observe(self) -> bool:
        """What Metacontroller does on an update event of the object: compares the ``spec`` with the
        one it was built from, and rebuilds (re-reading the Secret) only when they differ. Returns
        whether it rebuilt."""
        if self._read()["spec"] == self.spec:
            return False
        self.build()
        return True

    def restart(self) -> None:
        """Metacontroller restarted: every controller is built again, reading its Secret."""
        self.build()

    def drive(self, driver: Any) -> None:
        """Observes the object, then sets the token ``driver`` (a ``tests.e2e.driver.Driver``) sends."""
        self.observe()
        driver.token = self.token

    def _read(self) -> dict[str, Any]:
        return dict(self.custom.get_cluster_custom_object("metacontroller.k8s.io", "v1alpha1", "compositecontrollers",
                                                          self.name, _request_timeout=REQUEST_TIMEOUT))

    def _secret_key(self, namespace: str, name: str, key: str) -> str:
        try:
            secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            raise BackendError(f"building {self.name}: Secret {namespace}/{name}: {exc.status} {exc.reason}") from exc
        data = secret.data or {}
        if key not in data:
            raise BackendError(f"building {self.name}: Secret {namespace}/{name} has no key {key}")
        return base64.b64decode(data[key]).decode()


class ApiBackend:
    """NVCRE Jobs and their JobSets in namespaces ``namespaces`` of a real API server, read and
    written with ``api_client`` (the kubernetes client; Metacontroller's own credentials)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, namespaces: Iterable[str], *,
                 workloads: bool = False) -> None:
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.namespaces = sorted(namespaces)
        self.with_workloads = workloads
        self._jobs: dict[Key, Obj] = {}
        self._jobsets: dict[str, list[Obj]] = {}
        self._workloads: dict[str, list[Obj]] = {}
        self._related: dict[str, list[Obj]] = {}
        self.read_failures = 0

    # -- reads -------------------------------------------------------------------------------------

    def parents(self) -> dict[Key, Obj]:
        """Lists the Jobs and JobSets of every namespace (one round's snapshot). On a failed read
        the previous snapshot is returned."""
        try:
            jobs: dict[Key, Obj] = {}
            jobsets: dict[str, list[Obj]] = {}
            workloads: dict[str, list[Obj]] = {}
            for namespace in self.namespaces:
                for obj in (self._list(KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads", "controller-uid")
                            if self.with_workloads else []):
                    for owner in obj["metadata"].get("ownerReferences") or []:
                        if owner.get("controller") and owner.get("kind") == "Job":
                            workloads.setdefault(owner["uid"], []).append(obj)
                for obj in self._list(GROUP, VERSION, namespace, "jobs"):
                    jobs[(namespace, obj["metadata"]["name"])] = obj
                for obj in self._list(JOBSET_GROUP, JOBSET_VERSION, namespace, "jobsets", "controller-uid"):
                    for owner in obj["metadata"].get("ownerReferences") or []:
                        if owner.get("controller") and owner.get("kind") == "Job":
                            jobsets.setdefault(owner["uid"], []).append(obj)
            if self.with_workloads:
                self._related = {f"{kind}.{KUEUE_GROUP}/{KUEUE_VERSION}": list(self.custom.list_cluster_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, plural, _request_timeout=REQUEST_TIMEOUT)["items"])
                    for kind, plural in RELATED}
        except SERVER_ERRORS:
            self.read_failures += 1
            return dict(self._jobs)
        self._jobs, self._jobsets, self._workloads = jobs, jobsets, workloads
        return dict(jobs)

    def _list(self, group: str, version: str, namespace: str, plural: str, label: str = "") -> list[Obj]:
        answer = self.custom.list_namespaced_custom_object(group, version, namespace, plural,
                                                           label_selector=label or None,
                                                           _request_timeout=REQUEST_TIMEOUT)
        return list(answer.get("items") or [])

    def children(self, parent: Obj) -> list[Obj]:
        """The parent's JobSets in the last snapshot whose ``controller-uid`` label matches it."""
        uid = parent["metadata"]["uid"]
        return sorted((c for c in self._jobsets.get(uid, [])
                       if c["metadata"].get("labels", {}).get("controller-uid") == uid),
                      key=lambda c: c["metadata"]["name"])

    def workloads(self, parent: Obj) -> list[Obj]:
        """The parent's Workloads in the last snapshot (``controller-uid`` label and owner)."""
        uid = parent["metadata"]["uid"]
        return sorted((c for c in self._workloads.get(uid, [])
                       if c["metadata"].get("labels", {}).get("controller-uid") == uid),
                      key=lambda c: c["metadata"]["name"])

    def related(self) -> dict[str, list[Obj]]:
        """Every related object in the last snapshot, by Metacontroller's group key."""
        return {group: sorted(objects, key=lambda o: o["metadata"]["name"]) for group, objects in self._related.items()}

    def create_workload(self, parent: Obj, child: Obj) -> None:
        self._create(parent, child, KUEUE_GROUP, KUEUE_VERSION, "workloads")

    def delete_workload(self, parent: Obj, child: Obj) -> None:
        metadata = child["metadata"]
        options = {"propagationPolicy": "Background", "preconditions": {"uid": metadata["uid"]}}
        self._write(self.custom.delete_namespaced_custom_object, KUEUE_GROUP, KUEUE_VERSION,
                    metadata["namespace"], "workloads", metadata["name"], body=options, missing_ok=True)

    def child_versions(self, parent: Obj) -> tuple[Any, ...]:
        return tuple((c["metadata"]["name"], c["metadata"]["resourceVersion"]) for c in self.children(parent))

    # -- writes ------------------------------------------------------------------------------------

    def create_parent(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job",
                "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}
        self._write(self.custom.create_namespaced_custom_object, GROUP, VERSION, namespace, "jobs", body)

    def patch_parent_spec(self, namespace: str, name: str, changes: Mapping[str, Any]) -> bool:
        try:
            self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, "jobs", name,
                                                       {"spec": dict(changes)}, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise BackendError(f"patch spec of {namespace}/{name}: {exc.status} {exc.reason}") from exc
        return True

    def delete_parent(self, namespace: str, name: str) -> bool:
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "jobs", name,
                                                        _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise BackendError(f"delete {namespace}/{name}: {exc.status} {exc.reason}") from exc
        return True

    def set_finalizers(self, parent: Obj, finalizers: list[str]) -> None:
        metadata = parent["metadata"]
        patch = {"metadata": {"finalizers": finalizers or None, "resourceVersion": metadata["resourceVersion"]}}
        self._write(self.custom.patch_namespaced_custom_object, GROUP, VERSION, metadata["namespace"], "jobs",
                    metadata["name"], patch, missing_ok=True)

    def write_status(self, parent: Obj, status: Obj) -> None:
        metadata = parent["metadata"]
        body = {"apiVersion": parent["apiVersion"], "kind": parent["kind"], "metadata": metadata,
                "spec": parent.get("spec"), "status": status}
        self._write(self.custom.replace_namespaced_custom_object_status, GROUP, VERSION, metadata["namespace"],
                    "jobs", metadata["name"], body, missing_ok=True)

    def create_child(self, parent: Obj, child: Obj) -> None:
        self._create(parent, child, JOBSET_GROUP, JOBSET_VERSION, "jobsets")

    def _create(self, parent: Obj, child: Obj, group: str, version: str, plural: str) -> None:
        metadata = parent["metadata"]
        body = dict(child)
        body["metadata"] = {**child["metadata"], "ownerReferences": [{
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "Job", "name": metadata["name"], "uid": metadata["uid"],
            "controller": True, "blockOwnerDeletion": True}]}
        self._write(self.custom.create_namespaced_custom_object, group, version, body["metadata"]["namespace"],
                    plural, body)

    def delete_child(self, parent: Obj, child: Obj) -> None:
        metadata = child["metadata"]
        options = {"propagationPolicy": "Background", "preconditions": {"uid": metadata["uid"]}}
        self._write(self.custom.delete_namespaced_custom_object, JOBSET_GROUP, JOBSET_VERSION,
                    metadata["namespace"], "jobsets", metadata["name"], body=options, missing_ok=True)

    def _write(self, method: Any, *args: Any, missing_ok: bool = False, **kwargs: Any) -> None:
        try:
            method(*args, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        except ApiException as exc:
            if missing_ok and exc.status == 404:
                return
            raise BackendError(f"{method.__name__}: {exc.status} {exc.reason}: {(exc.body or '')[:300]}") from exc
        except SERVER_ERRORS as exc:
            raise BackendError(f"{method.__name__}: {exc}") from exc
