"""The child that keeps an observed JobSet: rebuilt from the spec, or as observed.

Pure: reads the observed JobSet and the spec. ``keep`` rebuilds it (the same object the spec gives,
``hooks.core.built``);
``as_observed`` keeps identity, labels, annotations (without Metacontroller's last-applied one) and
spec exactly, for the rows that must not change a JobSet they did not make or cannot rebuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core import built
from hooks.core.jobset import API_VERSION as JOBSET_API_VERSION
from hooks.core.jobset import KIND as JOBSET_KIND
from hooks.core.jobset import InvalidSpec, json_copy
from hooks.core.work import Context

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def keep(ctx: Context, observed: Mapping[str, Any], attempt: int) -> dict[str, Any]:
    """The child that keeps an observed JobSet: rebuilt from the spec, or, when the spec cannot be
    built, the observed object's identity, labels, annotations and spec.
    """
    try:
        return built.jobset(ctx, attempt)
    except InvalidSpec:
        return as_observed(observed)


def as_observed(observed: Mapping[str, Any]) -> dict[str, Any]:
    """The child that keeps an observed JobSet as it is: identity, labels, annotations and spec."""
    metadata = observed["metadata"]
    kept: dict[str, Any] = {"name": metadata["name"], "namespace": metadata["namespace"]}
    if metadata.get("labels"):
        kept["labels"] = dict(metadata["labels"])
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        kept["annotations"] = annotations
    return {
        "apiVersion": observed.get("apiVersion") or JOBSET_API_VERSION,
        "kind": observed.get("kind") or JOBSET_KIND,
        "metadata": kept,
        "spec": json_copy(observed.get("spec") or {}),
    }
