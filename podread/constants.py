"""Label keys and index names that every Pod read in this project is built on."""

from typing import Final

JOB_LABEL: Final = "nvcre.nvidia.com/job"
"""Injected into the pod template of an NVCRE Job's workers and names the Job.

The Pod cache holds only Pods that carry it."""

LAUNCHER_LABEL: Final = "nvcre.nvidia.com/launcher"
"""Injected into the pod template of an MPI workload's launcher instead of JOB_LABEL; names the Job.

The Pod cache does not hold these pods: a launcher is read live, through ``Reader.workload_pods``."""

ATTEMPT_LABEL: Final = "nvcre.nvidia.com/attempt"
"""Put on every JobSet and pod template this controller emits; the attempt number as a string."""

JOB_INDEX_FIELD: Final = "metadata.labels." + JOB_LABEL
"""Indexes cached Pods by JOB_LABEL's value."""

NODE_NAME_INDEX_FIELD: Final = "spec.nodeName"
"""Indexes cached Pods by spec.nodeName."""

JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
"""Written by JobSet on every pod of a workload: the JobSet's name."""

REPLICATED_JOB_LABEL: Final = "jobset.sigs.k8s.io/replicatedjob-name"
"""Written by JobSet on every pod of a workload: the replicated job the pod belongs to."""

FINISHED_PHASES: Final = frozenset({"Succeeded", "Failed"})
"""Pod phases after which a pod holds no node resources. Every other phase counts as active."""

DEPARTED_ANNOTATION: Final = "podread.nvcre.nvidia.com/departed"
"""Written by podread (never by the API server) on a pod ``Reader.attempt_failure_pods`` returns
that the pod watch saw deleted: the RFC3339 time (UTC, seconds) the watch saw the deletion. The pod
is as the watch last saw it (``podread.slim.evidence``), no longer on the server."""
