"""What the tests share: request builders (``requests``) and ``FakeReader``, the real podread Reader over
in-memory sources (``reader``), exported here for the tests that import them all at once; the wire-level
fake API server's lister (``fake_lister``), CRD schema checks (``crdschema``), ports, uids, the slim guard."""


from tests.support.reader import FakeReader, make_batch_job, make_pod
from tests.support.requests import (
    FLAVOR_GROUP,
    JOB_CREATED,
    JOBSET_GROUP,
    PODGROUP_GROUP,
    PRIORITY_CLASS_GROUP,
    WORKLOAD_GROUP,
    job_request,
    job_spec,
    jobset_child,
    podgroup_child,
    workload_child,
)

__all__ = ["FLAVOR_GROUP", "JOBSET_GROUP", "JOB_CREATED", "PODGROUP_GROUP", "PRIORITY_CLASS_GROUP", "WORKLOAD_GROUP",
           "FakeReader",
           "job_request", "job_spec", "jobset_child", "make_batch_job", "make_pod", "podgroup_child",
           "workload_child"]
