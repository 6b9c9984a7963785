"""The decision tests' old import path: ``FakeReader`` and the pod builders are in
``tests.support.reader``, the request builders in ``tests.support.requests``."""

from tests.support.reader import FakeReader, make_batch_job, make_pod
from tests.support.requests import (
    FLAVOR_GROUP,
    JOB_CREATED,
    JOBSET_GROUP,
    PRIORITY_CLASS_GROUP,
    WORKLOAD_GROUP,
    job_request,
    job_spec,
    jobset_child,
    workload_child,
)

__all__ = ["FLAVOR_GROUP", "JOBSET_GROUP", "JOB_CREATED", "PRIORITY_CLASS_GROUP", "WORKLOAD_GROUP", "FakeReader",
           "job_request", "job_spec", "jobset_child", "make_batch_job", "make_pod", "workload_child"]
