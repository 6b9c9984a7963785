"""The order the tier's files are handed to its pytest-xdist workers: longest first.

``make test-cluster`` runs the tier in several workers with ``--dist loadfile`` (each file whole on one
worker) and ``--no-loadscope-reorder``, so xdist hands the files out in collection order, and a worker
takes its next file once at most two tests of its current one are left. xdist's own order (the files
with the most tests first) handed out the long single-test files (the scale benchmark's smoke, the
kubectl plugin, the install commands) last, and the tier waited on one worker while the others idled.
Longest first (``ordered``, called by ``conftest.pytest_collection_modifyitems``) keeps the
workers' sums within a file or two of each other.

``FILE_SECONDS`` is only an order: a stale figure costs time, never a test.
``tests/contract/test_tier_order.py`` checks that every tier file is listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

FILE_SECONDS: dict[str, int] = {
    "test_kueue.py": 74,
    "test_batch_jobs.py": 72,
    "test_faults.py": 70,
    "test_checkpoint_kueue.py": 69,
    "test_checkpoint.py": 65,
    "test_lifecycle.py": 64,
    "test_policies.py": 62,
    "test_nvjob.py": 61,
    "test_lifecycle_outages.py": 59,
    "test_watch.py": 45,
    "test_gang.py": 39,
    "test_metacontroller.py": 35,
    "test_api.py": 33,
    "test_bench_scale.py": 32,
    "test_live_errors.py": 29,
    "test_docs_commands.py": 25,
    "test_install_commands.py": 22,
    "test_dev_commands.py": 21,
    "test_rotation.py": 21,
    "test_api_load.py": 15,
    "test_helm.py": 15,
    "test_status_times.py": 15,
    "test_bench_parent_read.py": 10,
    "test_claims.py": 14,
    "test_force_delete_rbac.py": 5,
    "test_node_cache.py": 1,
}
"""About how many seconds each tier file takes in one worker of ``make test-cluster`` (its module
fixtures included, the session's start left out; measured 2026-12-06 with ``--durations=0``, four
workers on a shared 2-core machine)."""

TIER = Path(__file__).resolve().parent


class Item(Protocol):
    """What ``ordered`` reads of a collected test: the file it is in."""

    @property
    def path(self) -> Path: ...


T = TypeVar("T", bound=Item)


def ordered(items: Sequence[T]) -> list[T]:
    """``items`` with the tier's tests (those of a file directly in this folder) in ``FILE_SECONDS``
    order, longest first (a file not listed after the listed ones; ties and the tests of one file in
    the order given), in the places the tier's tests held; every other test keeps its place."""
    places = [index for index, item in enumerate(items) if Path(item.path).parent == TIER]
    tier = sorted((items[index] for index in places), key=lambda item: -FILE_SECONDS.get(Path(item.path).name, 0))
    result = list(items)
    for index, item in zip(places, tier, strict=True):
        result[index] = item
    return result
