"""Every check of a Job's spec the sync hook makes before it acts on it, in one place.

Pure. ``check_spec`` is the JobSet (``build_jobset``) and then ``check_policies``. The decision
(``rows.current.steady``) makes the same two steps, with the JobSet the call builds once
(``hooks.core.built``); the CRD cross-check (``tests/contract/test_manifests.py``: the hook refuses what the
CRD refuses) calls ``check_spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import checkpoint, deadlines, exclusion, failurepolicy, gang
from hooks.core.jobset import build_jobset, spec_of
from hooks.core.request import Spec


def check_spec(job: Mapping[str, Any], attempt: int) -> tuple[dict[str, Any], list[Mapping[str, Any]]]:
    """The JobSet of ``attempt`` of ``job`` (``hooks.core.jobset.build_jobset``; ``job["spec"]`` a
    typed ``Spec`` or a raw mapping, read by ``hooks.core.jobset.spec_of``) and the checked
    failure-policy rules (``hooks.core.failurepolicy.rules_of``), after the time limits are checked
    (``hooks.core.deadlines.check``). Raises ``InvalidSpec`` from the first check that refuses."""
    jobset = build_jobset(job, attempt)
    return jobset, check_policies(spec_of(job))


def check_policies(spec: Spec) -> list[Mapping[str, Any]]:
    """The checks of ``check_spec`` after the JobSet is built, for a caller that has it already
    (``hooks.core.built``): the failure-policy rules, returned checked, then the time limits and
    ``spec.gang`` (``hooks.core.gang.check``), ``spec.checkpoint`` (``hooks.core.checkpoint.check``) and
    ``spec.failurePolicy.excludeNodesSeconds`` (``hooks.core.exclusion.check``).
    Raises ``InvalidSpec`` from the first check that refuses."""
    rules = failurepolicy.rules_of(spec)
    deadlines.check(spec)
    gang.check(spec)
    checkpoint.check(spec)
    exclusion.check(spec)
    return rules
