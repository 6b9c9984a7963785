"""The parent-read benchmark (bench/parent_read.py) at a tiny size on the tier's control plane: a smoke test.

No timing is asserted (the machine is shared): that every source was read as often as asked, each
GET answered the Job the benchmark created (a failed or forbidden read raises and fails the test),
and the figures are well formed. The namespace it made is gone afterwards.
"""

from __future__ import annotations

import json

import kubernetes
import pytest

from bench import parent_read
from bench.__main__ import ON_A_CLUSTER, report
from tests.cluster.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def test_the_parent_read_benchmark_times_every_source_on_the_real_api_server(
        control_plane: ControlPlane, hooks_token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parent_read, "BATCH", 20)
    result = parent_read.run(quick=True, plane=control_plane, service_token=hooks_token)
    rows = result.tables["gets"]
    assert [row["count"] for row in rows[1:]] == [40, 40, 40]  # two batches of 20 from each source
    assert rows[0]["count"] > 0 and all(row["p50_ms"] > 0 for row in rows)
    quorum = next(f for f in result.figures if "real kube-apiserver" in f.name)
    assert quorum.baseline == pytest.approx(rows[0]["p50_ms"], abs=1e-3)
    assert quorum.ratio == pytest.approx(quorum.value / quorum.baseline)
    assert quorum.met is (quorum.value <= 0.5 * quorum.baseline)
    json.dumps(result.as_dict())
    assert "live Job GET" in report(result)
    assert "parent_read" in ON_A_CLUSTER  # brings up a control plane: never in a plain ``make bench``
    namespaces = kubernetes.client.CoreV1Api(control_plane.api_client()).list_namespace().items
    assert not [n for n in namespaces if n.metadata.name.startswith("bench-parent-read-")
                and n.status.phase == "Active"]
