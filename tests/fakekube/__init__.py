"""A wire-level fake Kubernetes API server (pods, read-only) for tests that use the real client.

from tests.fakekube import FakeKubeServer, Fault, make_pod

with FakeKubeServer() as server:
    server.put_pods([make_pod("p1", labels={"app": "a"}, node="n1")])
    api = kubernetes.client.CoreV1Api(server.api_client(timeout=5))
"""

from tests.fakekube.faults import Fault
from tests.fakekube.pods import make_job_pods, make_pod
from tests.fakekube.selectors import SelectorError, parse_field_selector, parse_label_selector
from tests.fakekube.server import FakeKubeServer, RecordedRequest, status_body

__all__ = [
    "FakeKubeServer",
    "Fault",
    "RecordedRequest",
    "SelectorError",
    "make_job_pods",
    "make_pod",
    "parse_field_selector",
    "parse_label_selector",
    "status_body",
]
