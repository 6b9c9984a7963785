"""A whole Node as the API server has it, for the tests of what podread reads of Nodes (the TTL
``NodeCache``, the ``NodeWatch``)."""

from __future__ import annotations

from typing import Any


def node(name: str, ready: str = "True", taints: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Node named ``name`` whose ``Ready`` condition is ``ready`` and that carries ``taints``
    (``NoExecute``), with more than ``node_state`` reads or the watch keeps (kind, uid, labels,
    another condition, images, addresses)."""
    return {"kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"gpu": "h100"}},
            "spec": {"taints": [{"key": t, "effect": "NoExecute"} for t in taints]},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": ready,
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                       "images": [{"names": ["nvcr.io/big:1"], "sizeBytes": 10**10}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}
