"""manifests/samples/invalid-spec/: Jobs the API server accepts and the hooks answer with ``InvalidSpec``.
Every file in manifests/samples/invalid/ is refused by the API server (its schema and CEL
rules, tests/contract/test_manifests.py), so most ``InvalidSpec`` reasons cannot be seen with those; these can.

Each sample says ``# INVALID-SPEC <Reason>:`` on its first line. The test checks that the CRD schema
accepts it (with its CEL rules, by their Python equivalents, as test_manifests does) and that the hooks,
given it the way Metacontroller would (behind Kueue when the sample says ``manifests-kueue/``), answer
InvalidSpec with that reason and create nothing.
"""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from tests.contract.test_manifests import MANIFESTS, cel_holds, with_defaults
from tests.core.test_decide import condition, run, status
from tests.support import FakeReader, crdschema

SAMPLES = sorted((MANIFESTS / "samples" / "invalid-spec").glob("*.yaml"))
HEADER = re.compile(r"# INVALID-SPEC (\w+): ")

# The InvalidSpec reasons a Job the API server accepts can reach by its spec alone. The others need
# more than a spec: ReplicatedJobsChanged an edit of spec.replicatedJobs after the first JobSet,
# ManagedElsewhere a JobSet whose managedBy was changed or a Workload Kueue dispatched to another
# cluster, an admission conflict Kueue's admission (docs/operations.md, section 4).
REACHABLE = {"QueueingUnavailable", "TooManyPodSets"}


@pytest.fixture(scope="module")
def job_schema() -> dict:
    return crdschema.crd_schema(MANIFESTS / "crd-job.yaml", "v1alpha1")


def test_every_reachable_reason_has_a_sample() -> None:
    reasons = [HEADER.match(path.read_text()) for path in SAMPLES]
    assert all(reasons), [p.name for p, m in zip(SAMPLES, reasons, strict=True) if not m]
    assert {m.group(1) for m in reasons if m} == REACHABLE


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_api_server_accepts_it_and_the_hooks_answer_its_reason(path: pathlib.Path, job_schema: dict) -> None:
    text = path.read_text()
    match = HEADER.match(text)
    assert match, f"{path.name}: say the reason on the first line"
    job = yaml.safe_load(text)
    assert crdschema.validate(job, job_schema) == []
    assert cel_holds(job) == []
    job = with_defaults(job, job_schema)
    kueue = "(kubectl apply -k manifests-kueue/)" in text.split("apiVersion:")[0]
    d = run(FakeReader([]), name=job["metadata"]["name"], namespace=job["metadata"]["namespace"],
            spec=job["spec"], labels=job["metadata"].get("labels"), workloads=[] if kueue else None)
    invalid = condition(d, "InvalidSpec")
    assert invalid is not None and (invalid["status"], invalid["reason"]) == ("True", match.group(1)), invalid
    assert d.response["children"] == [] and status(d)["message"].startswith("waiting for a valid spec: ")
