"""hooks.core.specpin: the workload a Job was created with, pinned in its status."""

from __future__ import annotations

import pytest

from hooks.core import specpin
from hooks.core.jobset import InvalidSpec
from hooks.core.request import read_spec
from tests.core.test_decide import condition, names, run, status
from tests.support import FakeReader, job_spec, jobset_child, make_pod

SPEC = job_spec(max_restarts=1)


def digest(spec: dict) -> str:
    """``specpin.digest`` of the raw ``spec``, read as a request's spec is."""
    return specpin.digest(read_spec(spec))


def edited_spec() -> dict:
    """SPEC with one value changed in the worker's template (another image)."""
    spec = job_spec(max_restarts=1)
    spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    return spec


def test_the_digest_is_of_the_content_not_of_its_serialization() -> None:
    reordered = {"replicatedJobs": [dict(reversed(list(job.items()))) for job in SPEC["replicatedJobs"]]}
    assert digest(reordered) == digest(SPEC)
    assert digest(SPEC).startswith("sha256:") and len(digest(SPEC)) == 7 + specpin.HEX_DIGITS
    edited = edited_spec()
    assert digest(edited) != digest(SPEC)
    assert digest({**SPEC, "maxRestarts": 5, "suspend": True}) == digest(SPEC)


def test_check_refuses_only_a_recorded_digest_that_differs() -> None:
    specpin.check(read_spec(SPEC), "")
    specpin.check(read_spec(SPEC), digest(SPEC))
    with pytest.raises(InvalidSpec) as changed:
        specpin.check(read_spec(edited_spec()), digest(SPEC))
    assert changed.value.code == "ReplicatedJobsChanged"
    assert digest(SPEC) in changed.value.reason


def test_the_first_answer_pins_and_a_fed_back_pin_stays() -> None:
    first = run(FakeReader([]), spec=SPEC, status={})
    pin = status(first)["replicatedJobsDigest"]
    assert pin == digest(SPEC)
    again = run(FakeReader([]), spec=SPEC, status=status(first))
    assert status(again) == status(first)


def test_a_changed_spec_keeps_the_running_jobset_and_builds_nothing() -> None:
    pinned = {"phase": "Running", "attempt": 0, "restarts": 0, "workload": "train-0",
              "replicatedJobsDigest": digest(SPEC)}
    d = run(FakeReader([make_pod("w", job="train")]), spec=edited_spec(),
            status=pinned, jobsets=[jobset_child("train", 0)])
    assert names(d) == ["train-0"] and d.kind == "invalid-spec"
    assert condition(d, "InvalidSpec")["reason"] == "ReplicatedJobsChanged"
    assert status(d)["replicatedJobsDigest"] == digest(SPEC), "the pin is never moved to the edit"
    failed = run(FakeReader([]), spec=edited_spec(), status=status(d),
                 jobsets=[jobset_child("train", 0, state="Failed")])
    assert names(failed) == ["train-0"] and status(failed)["restarts"] == 0, "no restart from the edited spec"


def test_a_changed_spec_whose_jobset_then_failed_says_so() -> None:
    """The phase stays Running (nothing is judged from an edited spec), 0 active; the message
    says that the JobSet failed and why nothing follows."""
    pinned = {"phase": "Running", "attempt": 0, "replicatedJobsDigest": digest(SPEC)}
    failed = run(FakeReader([make_pod("w", job="train", phase="Failed")]), spec=edited_spec(), status=pinned,
                 jobsets=[jobset_child("train", 0, state="Failed")])
    assert (status(failed)["phase"], status(failed)["activePods"], names(failed)) == ("Running", 0, ["train-0"])
    assert status(failed)["message"].startswith(
        "JobSet train-0 failed; not judged (no restart, no end) until the spec is valid: spec.replicatedJobs ")
    again = run(FakeReader([make_pod("w", job="train", phase="Failed")]), spec=edited_spec(),
                status=status(failed), jobsets=[jobset_child("train", 0, state="Failed")])
    assert status(again) == status(failed)
