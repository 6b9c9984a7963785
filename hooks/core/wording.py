"""Status wording shared by the rows: bounded messages and pod lists.

Pure. Every ``status.message`` and condition message is cut to ``MAX_MESSAGE`` characters; pods are
named up to five, sorted, a terminating one marked "(terminating, grace period ends ...)": a pod's
``deletionTimestamp`` is the delete time plus its grace period (the moment the kubelet may kill it),
not when its deletion started, so it is named as what it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hooks.core.evidence import (
    list_names,
)

MAX_MESSAGE = 1024
"""The longest ``status.message`` (and condition message) written, whatever the input."""


def pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def bounded(text: str) -> str:
    """``text`` cut to ``MAX_MESSAGE`` characters."""
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def list_pods(pods: list[Mapping[str, Any]]) -> str:
    """Names up to five pods (already sorted), marking terminating ones, then "and N more"."""
    names = []
    for pod in pods:
        ends = (pod.get("metadata") or {}).get("deletionTimestamp")
        names.append(f"{pod_name(pod)} (terminating, grace period ends {ends})" if ends else pod_name(pod))
    return list_names(names, cut=None)
