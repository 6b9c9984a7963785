"""The faults of the fault-injection suite (issue 34 item 6): what each one is, how the suite provokes
it on the real control plane, and the class its attempt's end must be given.

Data only (no cluster), so that ``tests/contract/test_docs_faults.py`` can check the table in
``tests/cluster/README.md`` against it in the fast suite. ``tests/cluster/test_faults.py`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hooks.core.vocab import FailureClass

USER, PREEMPTED, NODE, INFRASTRUCTURE = "user", "preempted", "node", "infrastructure"
CLASSES = tuple(klass.value for klass in FailureClass)
"""The classes of issue 34 (``hooks.core.vocab.FailureClass``)."""

NCCL_MESSAGE = "NCCL WARN NET/IB - Got completion from peer with error 12, opcode 32753"
"""The termination message the mapped-message fault's container ends with (no ``": "``: kwok's stage
writes it into YAML unquoted)."""
NCCL_RULE = {"name": "nccl-network", "action": "RestartJob", "class": "infrastructure",
             "onTerminationMessage": {"contains": "NCCL WARN NET/IB"}}
"""The rule that maps it (``spec.failurePolicy.rules[]``): its class is the expected one."""


@dataclass(frozen=True)
class Fault:
    """One fault: ``job`` is the NVCRE Job it hits (its name in the suite's namespace), ``expected``
    the class its attempt's end must get, ``provoked_by`` what does it (the README's words),
    ``blames_nodes`` whether the class names nodes (``failedNodes``, ``excludedNodes``)."""

    job: str
    title: str
    provoked_by: str
    expected: str
    assumption: str = ""

    @property
    def blames_nodes(self) -> bool:
        return self.expected in (NODE, INFRASTRUCTURE)


FAULTS: tuple[Fault, ...] = (
    Fault("user-exit", "a user exit code",
          "kwok's `pod-container-running-failed` stage, exit code 3", USER),
    Fault("oom", "an OOMKilled container",
          "kwok's `pod-container-running-failed` stage, exit code 137, reason `OOMKilled`", USER,
          "the container outgrew the memory limit its own spec set: the user's to fix, and a retry on "
          "another node fails the same way (issue 34: OOMKilled -> user)"),
    Fault("node-lost", "a node set NotReady then deleted",
          "the Node set `Ready=Unknown` (kwok stops managing it), then deleted; the pod GC controller "
          "fails and deletes its pod (`DeletionByPodGC`)", NODE),
    Fault("noexecute", "a NoExecute taint",
          "a `NoExecute` taint on the pod's node; the taint eviction controller deletes the pod "
          "(`DeletionByTaintManager`)", NODE),
    Fault("eviction", "an eviction through the Eviction API",
          "`POST pods/<pod>/eviction`; the API server writes `EvictionByEvictionAPI` and deletes the pod", PREEMPTED,
          "an eviction is someone else's decision to take the pod away (a drain, a descheduler), neither the "
          "user's failure nor the node's: `preempted` (docs/failure-classes.md says why not `infrastructure`)"),
    Fault("kueue-victim", "a Kueue preemption by a higher-priority Job",
          "a Job of `WorkloadPriorityClass` high in a ClusterQueue the victim fills; Kueue evicts the "
          "victim's Workload (`Preempted`)", PREEMPTED),
    Fault("gang", "the scheduler preempting a gang",
          "a pod of a higher `PriorityClass` that needs a node the gang holds; kube-scheduler preempts a "
          "gang pod (`PreemptionByScheduler`)", PREEMPTED),
    Fault("admission", "a pod failed with UnexpectedAdmissionError",
          "the pod's status written as the kubelet writes it when the device plugin cannot allocate the "
          "GPUs: `Failed`, reason `UnexpectedAdmissionError` (kwok has no such stage)", INFRASTRUCTURE),
    Fault("nccl", "a termination message that a rule maps",
          "kwok's `pod-container-running-failed` stage, exit code 1, the message `NCCL WARN NET/IB ...`; the "
          "rule `onTerminationMessage.contains` with `class: infrastructure`", INFRASTRUCTURE),
)
