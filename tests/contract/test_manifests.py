"""The deployable manifests: they parse, fit together, and validate against the real schemas.

Schema checks read the published CRDs from ``../shared/reference/`` (``tests/support/crdschema.py``) and skip
with a reason when it is absent. CEL rules are not evaluated by jsonschema: each rule that judges a
sample is checked with a Python equivalent, tied to the rule's message (``CEL_EQUIVALENTS``).
"""

from __future__ import annotations

import copy
import pathlib
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
import yaml

from tests.support import crdschema

ROOT = crdschema.REPO_ROOT
MANIFESTS = ROOT / "manifests"
SAMPLES = MANIFESTS / "samples"
INVALID = SAMPLES / "invalid"
VALID_SAMPLES = sorted([*SAMPLES.glob("*.yaml"), *SAMPLES.glob("kueue/*.yaml"), *SAMPLES.glob("gang/*.yaml")])
"""The samples: make dev applies those of kueue/ and gang/ with its options of those names."""
INVALID_SAMPLES = sorted(INVALID.glob("*.yaml"))

METACONTROLLER_CRDS = "metacontroller-v4.17.2-crds.yaml"
JOBSET_CRD = "jobset-v0.12.0-crd.yaml"

# The routes the hook port must serve (design §4), for the cross-checks below. /metrics is served on a
# port of its own by the gunicorn master, not by the Flask app.
DESIGN_ROUTES = {"/sync": "POST", "/finalize": "POST", "/healthz": "GET", "/readyz": "GET"}

LAUNCHER_RULE = "!has(self.launcher) || self.replicatedJobs.exists(r, r.name == self.launcher)"

# What is wrong with each invalid sample: (path of the error, text it must contain). The CEL-only
# case has path "cel" and is checked with the Python equivalent of the launcher rule.
INVALID_EXPECTED: dict[str, tuple[str, str]] = {
    "no-replicated-jobs.yaml": ("spec", "'replicatedJobs' is a required property"),
    "empty-replicated-jobs.yaml": ("spec.replicatedJobs", "should be non-empty"),
    "launcher-not-a-replicated-job.yaml": ("cel", "launcher must name an entry of replicatedJobs"),
    "job-name-with-a-dot.yaml": ("cel", "the Job name must be a DNS-1035 label"),
    "name-too-long-for-the-last-attempt.yaml": ("cel", "the Job name is too long"),
    "managed-by-multikueue.yaml": ("cel", "template.spec.managedBy must be unset or kubernetes.io/job-controller"),
    "too-many-pods.yaml": ("cel", "replicas x parallelism must not exceed 2147483647"),
    "negative-max-restarts.yaml": ("spec.maxRestarts", "-1 is less than the minimum of 0"),
    "duplicate-replicated-job-names.yaml": ("spec.replicatedJobs[1]", "Duplicate value"),
    "suspend-not-a-bool.yaml": ("spec.suspend", "'yes' is not of type 'boolean'"),
    "bad-replicated-job-name.yaml": ("spec.replicatedJobs[0].name", "does not match"),
    "negative-replicas.yaml": ("spec.replicatedJobs[0].replicas", "-2 is less than the minimum of 0"),
    "unknown-spec-field.yaml": ("spec", "'maxRestart' was unexpected"),
    "failure-policy-in-exit-code-zero.yaml": ("cel", "exit code 0 is success"),
    "failure-policy-unknown-action.yaml": ("spec.failurePolicy.rules[0].action", "is not one of"),
    "failure-policy-duplicate-rule-names.yaml": ("spec.failurePolicy.rules[1]", "Duplicate value"),
    "failure-policy-unknown-class.yaml": ("spec.failurePolicy.rules[0].class", "is not one of"),
    "failure-policy-negative-budget.yaml": ("spec.failurePolicy.budgets.node", "-1 is less than the minimum of 0"),
    "force-delete-before-stuck.yaml": ("cel", "forceDeleteStuckPodsAfterSeconds must be at least stuckAfterSeconds"),
    "gang-when-unavailable-without-gang.yaml": ("cel", "whenUnavailable says what a gang does"),
    "gang-policy-unknown.yaml": ("spec.gang.policy", "is not one of ['Gang', 'None']"),
    "checkpoint-grace-too-short.yaml": ("spec.checkpoint.graceSeconds", "5 is less than the minimum of 30"),
    "zero-active-deadline.yaml": ("spec.activeDeadlineSeconds", "0 is less than the minimum of 1"),
    "ttl-over-ten-years.yaml": ("spec.ttlSecondsAfterFinished", "is greater than the maximum of 315360000"),
    "exclude-nodes-over-a-week.yaml": ("spec.failurePolicy.excludeNodesSeconds",
                                       "604801 is greater than the maximum of 604800"),
    "max-restarts-past-the-last-attempt.yaml": ("spec.maxRestarts", "10000 is greater than the maximum of 9999"),
    "parallelism-over-int32.yaml": ("spec.replicatedJobs[0].template.spec.parallelism",
                                    "2147483648 is greater than the maximum of 2147483647"),
    "pod-template-not-an-object.yaml": ("spec.replicatedJobs[0].template.spec.template", "is not of type 'object'"),
    "pod-spec-not-an-object.yaml": ("spec.replicatedJobs[0].template.spec.template.spec",
                                    "'x' is not of type 'object'"),
    "pod-labels-not-strings.yaml": ("spec.replicatedJobs[0].template.spec.template.metadata.labels.tier",
                                    "1 is not of type 'string'"),
    "node-selector-not-strings.yaml": ("spec.replicatedJobs[0].template.spec.template.spec.nodeSelector."
                                       "nvidia.com/gpu.count", "8 is not of type 'string'"),
    "tolerations-not-objects.yaml": ("spec.replicatedJobs[0].template.spec.template.spec.tolerations[0]",
                                     "is not of type 'object'"),
}

# Invalid samples the sync hook must refuse too (hooks.core.jobset.InvalidSpec): the CRD rejects at
# admission what the hook would reject later. The others (a non-boolean suspend, an unknown field)
# never reach the hook: the API server refuses or prunes them; a maxRestarts past the last attempt
# is meaningless but harmless to the hook (the attempt limit ends the Job first), so a Job stored
# before the bound keeps running.
HOOK_REJECTS = {
    "no-replicated-jobs.yaml",
    "empty-replicated-jobs.yaml",
    "launcher-not-a-replicated-job.yaml",
    "negative-max-restarts.yaml",
    "duplicate-replicated-job-names.yaml",
    "bad-replicated-job-name.yaml",
    "negative-replicas.yaml",
    "job-name-with-a-dot.yaml",
    "name-too-long-for-the-last-attempt.yaml",
    "managed-by-multikueue.yaml",
    "too-many-pods.yaml",
    "failure-policy-in-exit-code-zero.yaml",
    "failure-policy-unknown-action.yaml",
    "failure-policy-duplicate-rule-names.yaml",
    "failure-policy-unknown-class.yaml",
    "failure-policy-negative-budget.yaml",
    "force-delete-before-stuck.yaml",
    "gang-policy-unknown.yaml",
    "checkpoint-grace-too-short.yaml",
    "zero-active-deadline.yaml",
    "ttl-over-ten-years.yaml",
    "exclude-nodes-over-a-week.yaml",
    "parallelism-over-int32.yaml",
    "pod-template-not-an-object.yaml",
    "pod-spec-not-an-object.yaml",
    "pod-labels-not-strings.yaml",
    "node-selector-not-strings.yaml",
    "tolerations-not-objects.yaml",
}


# ---- loading -------------------------------------------------------------------------------------


def manifest_files() -> list[pathlib.Path]:
    """Every YAML file under manifests/, samples included."""
    return sorted(MANIFESTS.rglob("*.yaml"))


def load_all(path: pathlib.Path) -> list[dict[str, Any]]:
    """The non-empty documents of a YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def load_one(path: pathlib.Path) -> dict[str, Any]:
    """The single document of a YAML file (a copy: callers may change it)."""
    docs = load_all(path)
    assert len(docs) == 1, f"{path.name}: expected one document, found {len(docs)}"
    return docs[0]


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    """Every object of the kustomization's resources, keyed by (kind, metadata.name)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for name in kustomization()["resources"]:
        for doc in load_all(MANIFESTS / name):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in found, f"{key} is defined twice"
            found[key] = doc
    return found


def kustomization() -> dict[str, Any]:
    """manifests/kustomization.yaml, parsed."""
    return load_one(MANIFESTS / "kustomization.yaml")


@pytest.fixture(scope="module")
def job_schema() -> dict[str, Any]:
    """Our CRD's v1alpha1 openAPIV3Schema."""
    return crdschema.crd_schema(MANIFESTS / "crd-job.yaml", "v1alpha1")


@pytest.fixture(scope="module")
def composite_schema() -> dict[str, Any]:
    """Metacontroller v4.17.2's CompositeController schema (skips without ../shared)."""
    path = crdschema.require_reference(METACONTROLLER_CRDS)
    return crdschema.crd_schema(path, "v1alpha1", "compositecontrollers.metacontroller.k8s.io")


@pytest.fixture(scope="module")
def jobset_schema() -> dict[str, Any]:
    """JobSet v0.12.0's v1alpha2 schema (skips without ../shared)."""
    return crdschema.crd_schema(crdschema.require_reference(JOBSET_CRD), "v1alpha2")


def deployment(objects: Mapping[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The hook server's Deployment."""
    return objects[("Deployment", "nvcre-hooks")]


def hooks_container(objects: Mapping[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The Deployment's single container."""
    containers = deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def with_defaults(obj: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of ``obj`` with the schema's ``default`` values filled in, as the API server does."""
    obj = copy.deepcopy(obj)

    def fill(value: Any, node: Mapping[str, Any]) -> None:
        if isinstance(value, dict):
            for prop, sub in node.get("properties", {}).items():
                if prop not in value and "default" in sub:
                    value[prop] = copy.deepcopy(sub["default"])
                if prop in value:
                    fill(value[prop], sub)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            for item in value:
                fill(item, node["items"])

    fill(obj, schema)
    return obj


def launcher_rule_holds(spec: Mapping[str, Any]) -> bool:
    """Python equivalent of the CEL rule ``LAUNCHER_RULE`` on ``spec``."""
    return "launcher" not in spec or any(
        entry.get("name") == spec["launcher"] for entry in spec.get("replicatedJobs") or []
    )


def _job_spec_of(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    return (entry.get("template") or {}).get("spec") or {}


def name_rule_holds(job: Mapping[str, Any]) -> bool:
    """Python equivalent of the root rule on ``metadata.name`` (a DNS-1035 label)."""
    return re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", job["metadata"]["name"]) is not None


def length_rule_holds(job: Mapping[str, Any]) -> bool:
    """Python equivalent of the root length rule: names fit attempt 9999."""
    name = job["metadata"]["name"]
    for entry in job["spec"].get("replicatedJobs") or []:
        replicas = entry.get("replicas", 1)
        if replicas == 0:
            continue
        fixed = len(name) + len(entry["name"]) + len(str(replicas - 1))
        completions = _job_spec_of(entry).get("completions", 1)
        if fixed > 56 or (completions != 0 and fixed + len(str(completions - 1)) > 49):
            return False
    return True


def items_rules_hold(job: Mapping[str, Any], message: str) -> bool:
    """Python equivalents of the two rules on each replicated job (managedBy, replicas x parallelism)."""
    for entry in job["spec"].get("replicatedJobs") or []:
        spec = _job_spec_of(entry)
        if message.startswith("template.spec.managedBy") and spec.get("managedBy", JOB_CONTROLLER) != JOB_CONTROLLER:
            return False
        if message.startswith("replicas x parallelism") and entry.get("replicas", 1) * spec.get("parallelism", 1) \
                > 2**31 - 1:
            return False
    return True


JOB_CONTROLLER = "kubernetes.io/job-controller"
CEL_EQUIVALENTS: dict[str, tuple[str, Any]] = {
    # message prefix -> (path of the rule, Python equivalent on the whole Job)
    "launcher must name": ("spec", lambda job: launcher_rule_holds(job["spec"])),
    "the Job name must be a DNS-1035 label": ("", name_rule_holds),
    "the Job name is too long": ("", length_rule_holds),
    "template.spec.managedBy": ("spec.replicatedJobs[]",
                                lambda job: items_rules_hold(job, "template.spec.managedBy")),
    "replicas x parallelism": ("spec.replicatedJobs[]", lambda job: items_rules_hold(job, "replicas x parallelism")),
    "exit code 0 is success": ("spec.failurePolicy.rules[].onExitCodes", lambda job: exit_code_rule_holds(job)),
    "forceDeleteStuckPodsAfterSeconds must be at least": ("spec.drain", lambda job: force_delete_rule_holds(job)),
    "whenUnavailable says what a gang does": ("spec.gang", lambda job: gang_rule_holds(job)),
}


def gang_rule_holds(job: Mapping[str, Any]) -> bool:
    """Python equivalent of the gang rule (issue 22): whenUnavailable only with a policy that may be Gang."""
    gang = job["spec"].get("gang") or {}
    return "whenUnavailable" not in gang or gang.get("policy", "Gang") == "Gang"


def exit_code_rule_holds(job: Mapping[str, Any]) -> bool:
    """Python equivalent of the onExitCodes rule: ``In`` never lists exit code 0."""
    rules = (job["spec"].get("failurePolicy") or {}).get("rules") or []
    return not any((r.get("onExitCodes") or {}).get("operator") == "In" and 0 in r["onExitCodes"].get("values", [])
                   for r in rules)


def force_delete_rule_holds(job: Mapping[str, Any]) -> bool:
    """Python equivalent of the drain rule: a force delete never comes before a pod is stuck."""
    drain = job["spec"].get("drain") or {}
    return "forceDeleteStuckPodsAfterSeconds" not in drain or \
        drain["forceDeleteStuckPodsAfterSeconds"] >= drain.get("stuckAfterSeconds", 300)


def cel_holds(job: Mapping[str, Any]) -> list[str]:
    """The messages of the CEL rules ``job`` breaks, judged by their Python equivalents."""
    return [prefix for prefix, (_, holds) in CEL_EQUIVALENTS.items() if not holds(job)]


# ---- every manifest parses; the kustomization lists exactly the files -------------------------


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_manifest_parses_into_kubernetes_objects(path: pathlib.Path) -> None:
    docs = load_all(path)
    assert docs, f"{path.name} is empty"
    for doc in docs:
        assert isinstance(doc, dict)
        if path.name == "kustomization.yaml":
            assert doc["kind"] == "Kustomization"
            continue
        assert doc.get("apiVersion") and doc.get("kind"), f"{path.name}: apiVersion and kind are required"
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", doc["metadata"]["name"])


def test_kustomization_lists_exactly_the_manifest_files() -> None:
    on_disk = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    listed = kustomization()["resources"]
    assert len(listed) == len(set(listed)), "a resource is listed twice"
    assert set(listed) == on_disk


def test_kustomization_image_override_names_the_deployment_image(objects: dict) -> None:
    image = hooks_container(objects)["image"]
    name, _, tag = image.rpartition(":")
    entries = {entry["name"]: entry for entry in kustomization()["images"]}
    assert name in entries, "kustomize images: must name the Deployment's image so users can override it"
    assert tag and tag != "latest"
    assert entries[name].get("newTag", tag) != "latest"


def test_namespaced_objects_live_in_nvcre_system(objects: dict) -> None:
    cluster_scoped = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                      "CompositeController"}
    for (kind, name), obj in objects.items():
        namespace = obj["metadata"].get("namespace")
        if kind in cluster_scoped:
            assert namespace is None, f"{kind}/{name} is cluster-scoped"
        else:
            assert namespace == "nvcre-system", f"{kind}/{name}"
    assert ("Namespace", "nvcre-system") in objects


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed: kustomize build skipped")
def test_kustomize_builds_the_same_objects(objects: dict) -> None:
    result = subprocess.run(["kubectl", "kustomize", str(MANIFESTS)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    built = {(doc["kind"], doc["metadata"]["name"]) for doc in yaml.safe_load_all(result.stdout) if doc}
    assert built == set(objects)


# ---- our CRD ---------------------------------------------------------------------------------------


def test_crd_identity_and_printer_columns() -> None:
    crd = load_one(MANIFESTS / "crd-job.yaml")
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "jobs.nvcre.nvidia.com"
    assert (spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["plural"]) == (
        "nvcre.nvidia.com", "Namespaced", "Job", "jobs")
    assert "nvjob" in spec["names"]["shortNames"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}, "Metacontroller ignores a parent without status"
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {"Phase": ".status.phase", "Attempt": ".status.attempt", "Restarts": ".status.restarts",
                       "Active": ".status.activePods", "Queue": ".metadata.labels.kueue\\.x-k8s\\.io/queue-name",
                       "Gang": '.status.conditions[?(@.type=="GangScheduled")].reason',
                       "Age": ".metadata.creationTimestamp"}


PRESERVED = (".template", ".template.spec", ".template.metadata", ".tolerations[]")
"""Where the CRD keeps unknown fields: the Job template, the pod template and their metadata and
specs (the batch API's to judge), and the tolerations; only the fields the rules and the hooks read
are declared there."""


def test_crd_schema_is_structural(job_schema: dict) -> None:
    """Every node has a type; unknown fields are preserved only inside the Job templates (the
    template and its spec, whose few fields the CEL rules and the hooks read are declared)."""

    def walk(node: Mapping[str, Any], path: str) -> None:
        if node.get("x-kubernetes-preserve-unknown-fields"):
            assert path.endswith(PRESERVED), f"{path}: preserve-unknown-fields only in templates"
        assert "type" in node or node.get("x-kubernetes-int-or-string"), f"{path} has no type"
        for prop, sub in node.get("properties", {}).items():
            walk(sub, f"{path}.{prop}")
        if isinstance(node.get("items"), Mapping):
            walk(node["items"], f"{path}[]")
        if node.get("x-kubernetes-list-type") == "map":
            item = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in item.get("required", []) or "default" in item["properties"][key], (
                    f"{path}: list-map key {key} must be required or defaulted")

    walk(job_schema, "")


def integer_fields(node: Mapping[str, Any], path: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    """Every integer node of a schema, by path (``[]`` for items, ``{}`` for map values)."""
    found = [(path, node)] if node.get("type") == "integer" else []
    for prop, sub in (node.get("properties") or {}).items():
        found += integer_fields(sub, f"{path}.{prop}")
    for key, mark in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(node.get(key), Mapping):
            found += integer_fields(node[key], f"{path}{mark}")
    return found


def test_every_integer_of_the_crd_is_bounded(job_schema: dict) -> None:
    """The hooks do arithmetic with these (deadlines, counts, attempts): an unbounded integer is a
    value no Job means, and one the hooks would have to survive. An ``int64`` field is bounded by its
    format: the API server refuses a ``maximum`` of 2**63-1 there (it reads the bound as a float, which
    is no int64: every status write with ``observedGeneration`` was a 422 on the real server)."""
    fields = dict(integer_fields(job_schema))
    assert len(fields) >= 15
    unbounded = [path for path, node in fields.items()
                 if "minimum" not in node or ("maximum" not in node and node.get("format") != "int64")]
    assert unbounded == []
    int32 = [path for path, node in fields.items() if node.get("format") == "int32"]
    assert all(-(2**31) <= fields[p]["minimum"] <= fields[p]["maximum"] <= 2**31 - 1 for p in int32)


def test_the_crd_bounds_are_the_hooks_bounds(job_schema: dict) -> None:
    from hooks.core import deadlines, jobset

    fields = dict(integer_fields(job_schema))
    for path in (".spec.activeDeadlineSeconds", ".spec.ttlSecondsAfterFinished", ".spec.drain.stuckAfterSeconds",
                 ".spec.drain.forceDeleteStuckPodsAfterSeconds"):
        assert fields[path]["maximum"] == deadlines.MAX_SECONDS, path
    for path in (".spec.maxRestarts", ".status.attempt", ".status.restarts", ".status.restartsByCause{}",
                 ".status.lastFailure.attempt"):
        assert fields[path]["maximum"] == jobset.MAX_ATTEMPT, path

    assert fields[".spec.drain.stuckAfterSeconds"]["default"] == deadlines.STUCK_AFTER_DEFAULT


def test_the_pod_template_parts_the_hooks_touch_are_typed(job_schema: dict) -> None:
    """A pod template, a pod spec, labels, annotations, a node selector and tolerations of the wrong
    type reached the hooks (a 500 once Kueue admitted the Job): the API server refuses them now."""
    template = job_schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]["template"]
    pod = template["properties"]["spec"]["properties"]["template"]
    assert pod["type"] == "object"
    assert pod["properties"]["spec"]["type"] == "object"
    metadata = pod["properties"]["metadata"]["properties"]
    spec = pod["properties"]["spec"]["properties"]
    for node in (metadata["labels"], metadata["annotations"], spec["nodeSelector"]):
        assert node == {"type": "object", "additionalProperties": {"type": "string"}}
    assert spec["tolerations"]["items"]["type"] == "object"


def test_crd_status_schema_carries_every_field_the_hook_writes(job_schema: dict) -> None:
    status = job_schema["properties"]["status"]["properties"]
    assert set(status) >= {"phase", "attempt", "restarts", "workload", "activePods", "message",
                           "conditions", "observedGeneration"}
    assert status["phase"]["enum"] == ["Pending", "Running", "Restarting", "Suspending", "Suspended",
                                       "Succeeded", "Failed", "Terminating", "Queued"]
    condition = status["conditions"]["items"]["properties"]
    assert set(condition) == {"type", "status", "reason", "message", "lastTransitionTime"}
    written = {
        "phase": "Suspending", "attempt": 2, "restarts": 1, "workload": "", "activePods": 3,
        "message": "Waiting for 3 pods to finish", "observedGeneration": 4,
        "conditions": [{"type": "Drained", "status": "Unknown", "reason": "ReadFailed",
                        "message": "pod read failed", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }
    job = load_one(SAMPLES / "job-multinode.yaml")
    job["status"] = written
    assert crdschema.validate(job, job_schema) == []


def test_crd_cel_rules_cover_launcher_and_immutability(job_schema: dict) -> None:
    rules = {(path, rule["rule"]): rule for path, rule in crdschema.cel_rules(job_schema)}
    assert ("spec", LAUNCHER_RULE) in rules
    assert ("spec.replicatedJobs", "self == oldSelf") in rules
    launcher_transition = [r for (p, text), r in rules.items() if p == "spec" and "oldSelf.launcher" in text]
    assert launcher_transition, "launcher must be immutable"
    # Transition rules on maxRestarts or suspend would forbid what the design allows.
    assert not [p for p, _ in rules if p.startswith(("spec.maxRestarts", "spec.suspend"))]


def test_crd_spec_defaults(job_schema: dict) -> None:
    spec = job_schema["properties"]["spec"]["properties"]
    assert spec["maxRestarts"]["default"] == 0 and spec["maxRestarts"]["minimum"] == 0
    assert spec["suspend"] == {**spec["suspend"], "type": "boolean", "default": False}
    assert spec["replicatedJobs"]["items"]["properties"]["replicas"]["default"] == 1


# ---- samples against our CRD ---------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID_SAMPLES, ids=lambda p: p.name)
def test_valid_samples_validate(path: pathlib.Path, job_schema: dict) -> None:
    job = load_one(path)
    assert (job["apiVersion"], job["kind"]) == ("nvcre.nvidia.com/v1alpha1", "Job")
    assert crdschema.validate(job, job_schema) == []
    assert cel_holds(job) == []


def test_samples_cover_multinode_and_mpi() -> None:
    names = {p.name for p in VALID_SAMPLES}
    assert {"job-multinode.yaml", "job-mpi.yaml"} <= names
    mpi = load_one(SAMPLES / "job-mpi.yaml")["spec"]
    assert mpi["launcher"] == "launcher"
    assert {e["name"] for e in mpi["replicatedJobs"]} == {"launcher", "worker"}


def test_every_invalid_sample_has_an_expectation_and_a_comment() -> None:
    assert {p.name for p in INVALID_SAMPLES} == set(INVALID_EXPECTED)
    for path in INVALID_SAMPLES:
        assert path.read_text(encoding="utf-8").startswith("# INVALID: "), f"{path.name}: say what is wrong"


@pytest.mark.parametrize("path", INVALID_SAMPLES, ids=lambda p: p.name)
def test_invalid_samples_fail_for_the_stated_reason(path: pathlib.Path, job_schema: dict) -> None:
    job = load_one(path)
    where, text = INVALID_EXPECTED[path.name]
    errors = crdschema.validate(job, job_schema)
    if where == "cel":
        # jsonschema cannot evaluate CEL: the schema passes, the rule (by its Python equivalent) does not.
        assert errors == []
        messages = [rule["message"] for _, rule in crdschema.cel_rules(job_schema)]
        assert any(message.startswith(text) for message in messages), text
        assert [prefix for prefix in cel_holds(job) if text.startswith(prefix)], f"{path.name} breaks no rule"
        return
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{where}: "), errors
    assert text in errors[0], errors


def test_every_cel_rule_has_a_python_equivalent_at_its_path(job_schema: dict) -> None:
    """A new rule, or a reworded one, needs its equivalent here (and a check against a real API
    server: the CEL itself was run by kube-apiserver v1.37 when written)."""
    rules = crdschema.cel_rules(job_schema)
    transition = [rule for _, rule in rules if "oldSelf" in rule["rule"]]
    judged = {(path, next(p for p in CEL_EQUIVALENTS if rule["message"].startswith(p)))
              for path, rule in rules if rule not in transition}
    assert judged == {(path, prefix) for prefix, (path, _) in CEL_EQUIVALENTS.items()}


def test_length_rule_equivalent_matches_the_hook() -> None:
    from hooks.core.jobset import InvalidSpec, check_names

    for name_length in range(30, 60):
        for replicas, completions in ((2, None), (11, 0), (1, 11), (0, None)):
            spec: dict[str, Any] = {"completions": completions} if completions is not None else {}
            entry = {"name": "worker", "replicas": replicas, "template": {"spec": spec}}
            job = {"metadata": {"name": "a" * name_length}, "spec": {"replicatedJobs": [entry]}}
            try:
                check_names("a" * name_length, [entry])
                hook_ok = True
            except InvalidSpec:
                hook_ok = False
            assert length_rule_holds(job) == hook_ok, (name_length, replicas, completions)


def test_launcher_rule_equivalent_on_edge_cases() -> None:
    entries = [{"name": "launcher"}, {"name": "worker"}]
    assert launcher_rule_holds({"replicatedJobs": entries})
    assert launcher_rule_holds({"replicatedJobs": entries, "launcher": "worker"})
    assert not launcher_rule_holds({"replicatedJobs": entries, "launcher": "Launcher"})


# ---- the CompositeController against Metacontroller's CRD, and the cross-references ----------------


def test_compositecontroller_validates_strictly(objects: dict, composite_schema: dict) -> None:
    controller = objects[("CompositeController", "nvcre-jobs")]
    assert crdschema.validate(controller, composite_schema, strict=True) == []


def test_strict_validation_catches_a_typo(objects: dict, composite_schema: dict) -> None:
    controller = copy.deepcopy(objects[("CompositeController", "nvcre-jobs")])
    controller["spec"]["hooks"]["sync"]["webhook"]["timout"] = "10s"
    errors = crdschema.validate(controller, composite_schema)
    assert errors == ["spec.hooks.sync.webhook: Additional properties are not allowed ('timout' was unexpected)"]


def test_compositecontroller_contract(objects: dict) -> None:
    spec = objects[("CompositeController", "nvcre-jobs")]["spec"]
    assert spec["generateSelector"] is True
    assert spec["resyncPeriodSeconds"] >= 1
    assert spec["parentResource"] == {"apiVersion": "nvcre.nvidia.com/v1alpha1", "resource": "jobs"}
    # JobSets are never updated (OnDelete); the checkpoint control ConfigMap is updated in place (issue 33)
    assert spec["childResources"] == [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "resource": "jobsets",
                                       "updateStrategy": {"method": "OnDelete"}},
                                      {"apiVersion": "v1", "resource": "configmaps",
                                       "updateStrategy": {"method": "InPlace"}}]
    assert set(spec["hooks"]) == {"sync", "finalize"}
    for hook in ("sync", "finalize"):
        assert spec["hooks"][hook]["version"] == "v2"
        webhook = spec["hooks"][hook]["webhook"]
        assert webhook["path"] == f"/{hook}"
        assert "url" not in webhook
        assert re.fullmatch(r"\d+s", webhook["timeout"])


def test_webhooks_reach_the_service_and_the_container(objects: dict) -> None:
    service = objects[("Service", "nvcre-hooks")]
    container = hooks_container(objects)
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for hook in ("sync", "finalize"):
        ref = objects[("CompositeController", "nvcre-jobs")]["spec"]["hooks"][hook]["webhook"]["service"]
        assert (ref["name"], ref["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
        assert ref.get("protocol", "http") == "http"
        matching = [p for p in ports.values() if p["port"] == ref.get("port", 80)]
        assert matching, f"{hook}: no Service port {ref.get('port', 80)}"
        target = matching[0]["targetPort"]
        assert container_ports.get(target, target) == 8080
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PORT"] == "8080"
    labels = deployment(objects)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()


@pytest.fixture(scope="module")
def served_routes() -> dict[str, set[str]]:
    """Route -> methods the Flask app serves (the design's list while hooks.server.app does not import)."""
    try:
        from hooks.server.app import create_app
    except ImportError:
        return {route: {method} for route, method in DESIGN_ROUTES.items()}
    from hooks.server.config import Settings
    from podread import reader_from_snapshot

    # Default settings, whatever the test process' environment holds; no cluster needed.
    app = create_app(reader_from_snapshot({"kind": "PodList", "items": []}), settings=Settings())
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        routes.setdefault(rule.rule, set()).update(rule.methods or ())
    return routes


def test_hook_and_probe_paths_are_served(objects: dict, served_routes: dict) -> None:
    spec = objects[("CompositeController", "nvcre-jobs")]["spec"]
    for hook in ("sync", "finalize"):
        assert "POST" in served_routes.get(spec["hooks"][hook]["webhook"]["path"], set())
    container = hooks_container(objects)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert "GET" in served_routes.get(get["path"], set())
        assert get["port"] in ("http", 8080)
    assert "/metrics" not in served_routes, "the hook port serves no /metrics: it has a port of its own"


def test_metrics_have_a_port_of_their_own(objects: dict) -> None:
    container = hooks_container(objects)
    env = {e["name"]: e.get("value") for e in container["env"]}
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert container_ports == {"http": 8080, "metrics": int(env["NVCRE_METRICS_PORT"])}
    assert container_ports["metrics"] != container_ports["http"]
    service_ports = {p["name"]: p for p in objects[("Service", "nvcre-hooks")]["spec"]["ports"]}
    assert service_ports["metrics"]["targetPort"] == "metrics"
    assert service_ports["metrics"]["port"] != service_ports["http"]["port"]


def test_rbac_is_exactly_the_reads_the_watch_and_the_hooks_own_writes(objects: dict) -> None:
    roles = {obj["metadata"]["name"]: obj for (kind, _), obj in objects.items() if kind in ("Role", "ClusterRole")}
    assert set(roles) == {"nvcre-hooks-pod-reader", "nvcre-hooks-writer"}
    assert roles["nvcre-hooks-pod-reader"]["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]},
        {"apiGroups": ["nvcre.nvidia.com"], "resources": ["jobs"], "verbs": ["get"]}]
    assert roles["nvcre-hooks-writer"]["rules"] == [
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": ["nvcre.nvidia.com"], "resources": ["jobs"], "verbs": ["delete"]}]
    for name in roles:
        binding = objects[("ClusterRoleBinding", name)]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nvcre-hooks",
                                        "namespace": "nvcre-system"}]
    pod = deployment(objects)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "nvcre-hooks"
    assert ("ServiceAccount", "nvcre-hooks") in objects
    assert pod["automountServiceAccountToken"] is True, "the pod reads the API: it needs its token"


def test_the_base_grants_no_pod_delete_anywhere(objects: dict) -> None:
    """Force delete is opt-in (manifests/overlays/force-delete/), never in the base."""
    for (kind, name), obj in objects.items():
        if kind not in ("Role", "ClusterRole"):
            continue
        for rule in obj.get("rules") or []:
            on_pods = "" in rule.get("apiGroups", []) and {"pods", "*"} & set(rule.get("resources", []))
            assert not (on_pods and {"delete", "deletecollection", "*"} & set(rule.get("verbs", []))), name


FORCE_DELETE_OVERLAY = MANIFESTS / "overlays" / "force-delete"


def test_the_force_delete_overlay_binds_pod_delete_per_namespace_and_nothing_else() -> None:
    kustomization = load_one(FORCE_DELETE_OVERLAY / "kustomization.yaml")
    assert kustomization["resources"] == ["pod-deleter.yaml"]
    docs = load_all(FORCE_DELETE_OVERLAY / "pod-deleter.yaml")
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "Role"}
    bindings = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "RoleBinding"}
    assert {d["kind"] for d in docs} == {"Role", "RoleBinding"} and roles and set(roles) == set(bindings)
    for key, role in roles.items():
        assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}], key
        binding = bindings[key]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": "nvcre-hooks-pod-deleter"}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nvcre-hooks", "namespace": "nvcre-system"}]
    assert {name for _, name in roles} == {"nvcre-hooks-pod-deleter"}, "the name the ForceDeleteAllowed message gives"


def test_the_force_delete_names_in_the_hooks_match_the_overlay() -> None:
    from hooks.core import stuckwait
    assert stuckwait.ROLE == "nvcre-hooks-pod-deleter"
    assert (MANIFESTS.parent / stuckwait.OVERLAY).resolve() == FORCE_DELETE_OVERLAY.resolve()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed: kustomize build skipped")
def test_kustomize_builds_the_force_delete_overlay() -> None:
    result = subprocess.run(["kubectl", "kustomize", str(FORCE_DELETE_OVERLAY)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert sorted(doc["kind"] for doc in built) == ["Role", "RoleBinding"]


def test_token_secret_is_mounted_where_the_server_reads_it(objects: dict) -> None:
    """Key ``token`` (what Metacontroller sends) is the hooks' token file, key ``previous`` their
    previous-token file, both from the Secret the CompositeController names; the Secret itself is
    not shipped (a token in a public manifest is no secret: the operator creates it)."""
    container = hooks_container(objects)
    pod = deployment(objects)["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    token_file = pathlib.PurePosixPath(env["NVCRE_HOOK_TOKEN_FILE"])
    previous_file = pathlib.PurePosixPath(env["NVCRE_HOOK_PREVIOUS_TOKEN_FILE"])
    assert previous_file.parent == token_file.parent
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = [m for m in container["volumeMounts"] if pathlib.PurePosixPath(m["mountPath"]) == token_file.parent]
    assert len(mounts) == 1 and mounts[0]["readOnly"] is True
    secret_volume = volumes[mounts[0]["name"]]["secret"]
    paths = {item["path"]: item["key"] for item in secret_volume["items"]}
    assert paths == {token_file.name: "token", previous_file.name: "previous"}
    assert secret_volume["optional"] is True, "a missing Secret is the hooks' own clear start-up error"
    assert not [key for key in objects if key[0] == "Secret"], "no token is shipped"
    spec = objects[("CompositeController", "nvcre-jobs")]["spec"]
    for hook in ("sync", "finalize"):
        auth = spec["hooks"][hook]["webhook"]["authorization"]
        assert auth.get("type", "Bearer") == "Bearer"
        assert auth["secretRef"] == {"name": secret_volume["secretName"], "namespace": "nvcre-system",
                                     "key": paths[token_file.name]}


def test_deployment_is_hardened(objects: dict) -> None:
    dep = deployment(objects)
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    container = hooks_container(objects)
    context = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    for ctx in (pod["securityContext"], context):
        assert isinstance(ctx["runAsUser"], int) and ctx["runAsUser"] > 0
        assert isinstance(ctx["runAsGroup"], int) and ctx["runAsGroup"] > 0
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert pod["topologySpreadConstraints"] or pod["affinity"]["podAntiAffinity"]
    # /tmp is the only writable place: prometheus multiprocess files and gunicorn's heartbeat files.
    env = {e["name"]: e.get("value") for e in container["env"]}
    tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert tmp and "emptyDir" in {v["name"]: v for v in pod["volumes"]}[tmp[0]["name"]]
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp")


def test_deployment_configures_every_documented_variable(objects: dict) -> None:
    env = {e["name"]: e.get("value") for e in hooks_container(objects)["env"] if "valueFrom" not in e}
    assert set(env) == {"PORT", "NVCRE_CACHE_TTL_SECONDS", "NVCRE_CACHE_MAX_ENTRIES",
                        "NVCRE_API_TIMEOUT_SECONDS", "NVCRE_RESYNC_SECONDS", "NVCRE_MAX_BODY_BYTES",
                        "NVCRE_LOG_LEVEL", "NVCRE_HOOK_TOKEN_FILE", "NVCRE_HOOK_PREVIOUS_TOKEN_FILE",
                        "NVCRE_METRICS_PORT", "PROMETHEUS_MULTIPROC_DIR"}
    assert all(isinstance(value, str) for value in env.values()), "env values must be strings"
    from_pod = {e["name"]: e["valueFrom"] for e in hooks_container(objects)["env"] if "valueFrom" in e}
    # apiVersion written out (the default): a server-side apply compares the whole fieldRef with the
    # stored one, which has it (tests/cluster/test_helm.py takes a kubectl apply -k install over).
    assert from_pod == {"POD_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}
    timeout = objects[("CompositeController", "nvcre-jobs")]["spec"]["hooks"]["sync"]["webhook"]["timeout"]
    assert float(env["NVCRE_API_TIMEOUT_SECONDS"]) < int(timeout.rstrip("s")) / 2


def test_pdb_and_networkpolicy_select_the_hook_pods(objects: dict) -> None:
    labels = deployment(objects)["spec"]["template"]["metadata"]["labels"]
    pdb = objects[("PodDisruptionBudget", "nvcre-hooks")]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    policy = objects[("NetworkPolicy", "nvcre-hooks")]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    sources: dict[str, list[Any]] = {}
    for rule in policy["ingress"]:
        for peer in rule["from"]:
            assert set(peer) == {"namespaceSelector"}, "whole namespaces, nothing wider"
            name = peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            sources.setdefault(name, []).extend(p["port"] for p in rule["ports"])
    assert sources == {"metacontroller": ["http"], "monitoring": ["metrics"]}, \
        "Metacontroller to the hook port only, monitoring to the metrics port only"
    egress_ports = {p["port"] for rule in policy["egress"] for p in rule["ports"]}
    assert {53, 443} <= egress_ports


# ---- the JobSets the hook builds for the samples, against JobSet's CRD ---------------------------


def _jobset_module() -> Any:
    """hooks.core.jobset, or a skip while it is not written yet."""
    try:
        import hooks.core.jobset as module
    except ImportError as exc:
        pytest.skip(f"hooks.core.jobset does not import yet: {exc}")
    return module


@pytest.mark.parametrize("path", VALID_SAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("attempt", [0, 3])
def test_jobsets_built_from_samples_validate(path: pathlib.Path, attempt: int, job_schema: dict,
                                             jobset_schema: dict) -> None:
    module = _jobset_module()
    job = with_defaults(load_one(path), job_schema)
    job["metadata"]["uid"] = "0b6e1d6e-5f0a-4b8e-9d55-3f1f4a7c2b10"
    jobset = module.build_jobset(job, attempt)
    assert (jobset["apiVersion"], jobset["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert jobset["metadata"]["name"] == f"{job['metadata']['name']}-{attempt}"
    assert crdschema.validate(jobset, jobset_schema, strict=True) == []


@pytest.mark.parametrize("name", sorted(HOOK_REJECTS))
def test_hook_rejects_what_the_crd_rejects(name: str, job_schema: dict) -> None:
    module = _jobset_module()
    job = with_defaults(load_one(INVALID / name), job_schema)
    from hooks.core.spec import check_spec

    with pytest.raises(module.InvalidSpec):
        check_spec(job, 0)


# ---- the schema helper itself ----------------------------------------------------------------------


def test_reference_path_honours_the_override(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("NVCRE_SHARED_DIR", str(tmp_path))
    assert crdschema.reference_path("x.yaml") == tmp_path / "reference" / "x.yaml"
    with pytest.raises(pytest.skip.Exception, match=r"\.\./shared/reference/x\.yaml not found"):
        crdschema.require_reference("x.yaml")
    monkeypatch.delenv("NVCRE_SHARED_DIR")
    assert crdschema.reference_path("x.yaml") == ROOT.parent / "shared" / "reference" / "x.yaml"


@pytest.mark.parametrize(
    ("schema", "value", "errors"),
    [
        ({"x-kubernetes-int-or-string": True}, "50%", []),
        ({"x-kubernetes-int-or-string": True}, 3, []),
        ({"x-kubernetes-int-or-string": True}, 1.5, ["<root>: 1.5 is not valid under any of the given schemas"]),
        ({"type": "string", "nullable": True}, None, []),
        ({"type": "string", "format": "duration"}, "ten seconds", []),
        ({"type": "integer", "minimum": 0, "exclusiveMinimum": True}, 0,
         ["<root>: 0 is less than or equal to the minimum of 0"]),
        ({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}, ["a", "a"],
         ["[1]: Duplicate value: 'a'"]),
        ({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                  "properties": {"b": {"type": "string"}}}}},
         {"a": {"c": 1}}, []),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, {"metadata": {"x": 1}, "b": 1},
         ["<root>: Additional properties are not allowed ('b' was unexpected)"]),
    ],
)
def test_validate_emulates_the_api_server(schema: dict, value: Any, errors: list[str]) -> None:
    assert crdschema.validate(value, schema) == errors


def test_validate_without_strict_lets_unknown_fields_pass() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert crdschema.validate({"b": 1}, schema, strict=False) == []


def test_deployment_env_is_accepted_by_the_server(objects: dict, tmp_path: pathlib.Path) -> None:
    """The values the manifest sets parse with the server's own settings readers (no cluster needed)."""
    env = {e["name"]: e["value"] for e in hooks_container(objects)["env"] if "value" in e}
    env["KUBECONFIG"] = str(tmp_path / "no-such-kubeconfig")
    try:
        from hooks.server.config import Settings
        from podread import from_environment
    except ImportError as exc:
        pytest.skip(f"hooks.server.config or podread does not import yet: {exc}")
    settings = Settings.from_env(env)
    assert settings.port == 8080
    assert settings.hook_token_file == env["NVCRE_HOOK_TOKEN_FILE"]
    assert settings.hook_previous_token_file == env["NVCRE_HOOK_PREVIOUS_TOKEN_FILE"]
    assert settings.metrics_port == 9090
    assert from_environment(env) is not None


# ---- manifests-kueue: the overlay for queue-managed Jobs --------------------------------------------

KUEUE_OVERLAY = MANIFESTS.parent / "manifests-kueue"


def overlaid_compositecontroller(objects: Mapping[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """The base CompositeController with the overlay's patch applied as kustomize applies a patch to
    a custom resource: a JSON merge patch (RFC 7386: maps merge, lists are replaced)."""
    def merge(base: Any, patch: Any) -> Any:
        if not isinstance(patch, dict) or not isinstance(base, dict):
            return copy.deepcopy(patch)
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            merged[key] = merge(base.get(key), value) if value is not None else None
        return {k: v for k, v in merged.items() if v is not None}
    patch = load_one(KUEUE_OVERLAY / "compositecontroller-patch.yaml")
    return merge(objects[("CompositeController", "nvcre-jobs")], patch)


def test_the_kueue_overlay_adds_workloads_and_the_customize_hook(objects: dict, composite_schema: dict) -> None:
    kustomization = load_one(KUEUE_OVERLAY / "kustomization.yaml")
    assert kustomization["resources"] == ["../manifests", "kueue-rbac.yaml"]
    controller = overlaid_compositecontroller(objects)
    assert crdschema.validate(controller, composite_schema, strict=True) == []
    spec = controller["spec"]
    assert spec["childResources"] == [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "resource": "jobsets", "updateStrategy": {"method": "OnDelete"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "resource": "workloads", "updateStrategy": {"method": "OnDelete"}},
        {"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}}]
    assert set(spec["hooks"]) == {"sync", "finalize", "customize"}
    customize = spec["hooks"]["customize"]
    assert customize["version"] == "v2", "cluster-scoped related objects need hook version v2"
    assert customize["webhook"]["path"] == "/customize"
    assert customize["webhook"]["service"] == spec["hooks"]["sync"]["webhook"]["service"]
    assert customize["webhook"]["authorization"] == spec["hooks"]["sync"]["webhook"]["authorization"]


def test_the_kueue_overlay_lets_kueue_read_nvcre_jobs_only() -> None:
    role, binding = load_all(KUEUE_OVERLAY / "kueue-rbac.yaml")
    assert role["rules"] == [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["jobs"],
                              "verbs": ["get", "list", "watch"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


# ---- manifests-large: the sizing of a large install (issue 24) --------------------------------------

LARGE_OVERLAY = MANIFESTS.parent / "manifests-large"


def test_the_large_install_overlay_gives_each_replica_a_thread_per_metacontroller_worker(objects: dict) -> None:
    from bench.cluster_scale import PASSES

    kustomization = load_one(LARGE_OVERLAY / "kustomization.yaml")
    assert kustomization["resources"] == ["../manifests"]
    patch_ref, _ = kustomization["patches"]
    assert patch_ref["target"] == {"group": "apps", "version": "v1", "kind": "Deployment", "name": "nvcre-hooks"}
    patch = load_one(LARGE_OVERLAY / patch_ref["path"])
    base = objects[("Deployment", "nvcre-hooks")]
    assert (patch["metadata"]["name"], patch["metadata"]["namespace"]) == (base["metadata"]["name"],
                                                                           base["metadata"]["namespace"])
    [container] = patch["spec"]["template"]["spec"]["containers"]
    assert container["name"] == base["spec"]["template"]["spec"]["containers"][0]["name"]
    env = {e["name"]: e["value"] for e in container["env"]}
    threads = int(env["GUNICORN_CMD_ARGS"].split("--threads")[1].split()[0])
    measured = PASSES["large-install"]
    assert threads == measured.hook_threads, "the overlay ships what make bench-cluster measured"
    flags = (LARGE_OVERLAY / "kustomization.yaml").read_text()  # Metacontroller's, named in its comment
    assert f"--workers={measured.mc_workers}" in flags and f"--client-go-qps={measured.mc_qps:g}" in flags \
        and f"--client-go-burst={measured.mc_burst}" in flags
    assert measured.hook_workers * threads >= measured.mc_workers, "a thread per Metacontroller worker"
    assert "--workers" not in env["GUNICORN_CMD_ARGS"] and "WEB_CONCURRENCY" not in env, \
        "the pod's one worker (the conf's default): one pod watch"
    assert measured.hook_workers == 1


def test_a_hooks_pod_runs_one_gunicorn_worker_so_it_keeps_one_pod_watch(
        objects: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36 item 2: each gunicorn worker builds its own Reader, pod watch and cache, so the
    production default is one worker with threads (at least one per Metacontroller worker, 5 by
    default), and nothing in the manifests asks for more; ``WEB_CONCURRENCY`` still overrides it."""
    import runpy

    from bench.cluster_scale import PASSES
    from hooks.server.config import GUNICORN_THREADS, GUNICORN_WORKERS

    conf_path = str(ROOT / "hooks" / "server" / "gunicorn.conf.py")
    for name in ("WEB_CONCURRENCY", "GUNICORN_CMD_ARGS"):
        monkeypatch.delenv(name, raising=False)
    conf = runpy.run_path(conf_path)
    assert (conf["workers"], conf["threads"]) == (GUNICORN_WORKERS, GUNICORN_THREADS) == (1, 8)
    assert conf["worker_class"] == "gthread" and conf["preload_app"] is False
    defaults = PASSES["defaults"]
    assert (defaults.hook_workers, defaults.hook_threads) == (1, 8), "make bench-cluster measures the default"
    assert conf["threads"] >= defaults.mc_workers, "a thread per call of Metacontroller's default 5 workers"
    [container] = objects[("Deployment", "nvcre-hooks")]["spec"]["template"]["spec"]["containers"]
    names = {e["name"] for e in container["env"]}
    assert not names & {"WEB_CONCURRENCY", "GUNICORN_CMD_ARGS"}, "the base runs the conf's layout"
    assert not any("--workers" in arg for arg in container.get("args", []) + container.get("command", []))
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    assert runpy.run_path(conf_path)["workers"] == 3


def test_the_large_install_overlay_sets_the_resync_a_bench_pass_measures(objects: dict) -> None:
    """manifests-large/ lengthens Metacontroller's resync (issue 36 item 5) to the value the pass
    ``large-install-resync120`` runs with, which differs from ``large-install`` in nothing else, and
    keeps its client QPS above what that resync alone needs at 1,000 Jobs with room for transitions."""
    from bench.cluster_scale import PASSES

    kustomization = load_one(LARGE_OVERLAY / "kustomization.yaml")
    [patch_ref] = [p for p in kustomization["patches"] if p["target"]["kind"] == "CompositeController"]
    assert patch_ref["target"] == {"group": "metacontroller.k8s.io", "version": "v1alpha1",
                                   "kind": "CompositeController", "name": "nvcre-jobs"}
    patch = load_one(LARGE_OVERLAY / patch_ref["path"])
    assert patch["metadata"]["name"] == objects[("CompositeController", "nvcre-jobs")]["metadata"]["name"]
    assert patch["spec"] == {"resyncPeriodSeconds": 120}
    measured = PASSES["large-install-resync120"]
    assert measured.resync_period == patch["spec"]["resyncPeriodSeconds"]
    assert replace(measured, name="large-install", resync_period=PASSES["large-install"].resync_period,
                   about=PASSES["large-install"].about) == PASSES["large-install"]
    assert 1000 / measured.resync_period < measured.mc_qps / 4, "the resync of 1,000 Jobs takes under a quarter"
