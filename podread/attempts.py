"""How a Job's workloads are named: the one rule that podread's reads and the decision core share.

Attempt ``n`` of NVCRE Job ``job`` runs as JobSet ``<job>-<n>`` (``n`` in decimal, no leading zero),
which JobSet writes on every pod and batch Job it makes (``jobset.sigs.k8s.io/jobset-name``); the
hooks also label the JobSet and its pods with ``n`` (``nvcre.nvidia.com/attempt``). Pure: no imports
beyond ``re``, so the core can use it without loading any client.
"""

from __future__ import annotations

import re

ATTEMPT_NUMBER = re.compile(r"0|[1-9][0-9]*")
"""An attempt number as a name or a label writes it. Unbounded on purpose: a read that looks for a
Job's workloads must find every one, whatever its number; the hooks never create one past
``hooks.core.jobset.MAX_ATTEMPT``."""


def workload_name(job: str, attempt: int) -> str:
    """The JobSet name of ``attempt`` of Job ``job``: ``<job>-<attempt>``."""
    return f"{job}-{attempt}"


def attempt_number(text: str) -> int | None:
    """The attempt ``text`` writes (a label value such as ``"3"``), or ``None`` for anything else."""
    return int(text) if isinstance(text, str) and ATTEMPT_NUMBER.fullmatch(text) else None


def attempt_in_name(job: str, name: str) -> int | None:
    """The attempt a workload name ``<job>-<attempt>`` names, or ``None`` for any other name."""
    prefix = f"{job}-"
    if isinstance(name, str) and name.startswith(prefix):
        return attempt_number(name[len(prefix):])
    return None


_REPLICATED_JOB = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
"""A replicated job name as the CRD admits it (a DNS-1123 label, which may start with a digit)."""


def batch_job_of(workload: str, name: str) -> bool:
    """Whether ``name`` is a batch Job name JobSet gives in ``workload``: ``<workload>-<replicatedJob>-<index>``."""
    return isinstance(name, str) and re.fullmatch(
        re.escape(workload) + f"-{_REPLICATED_JOB}-({ATTEMPT_NUMBER.pattern})", name) is not None
