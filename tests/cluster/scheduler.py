"""The real kube-scheduler on the cluster tier's API server: it binds the pods, not the tests.

The binary comes from the same ``k8s.io/kubernetes`` v1.37.2 wrapper module as the rest of the
control plane (``tests/cluster/controlplane/build.sh``). ``Scheduler`` runs it as a subprocess with
the admin's kubeconfig, no leader election, no serving port (``--secure-port=0``) and the ``GenericWorkload`` gate (gang
scheduling through PodGroups, issue 22: its ``GangScheduling`` plugin); its log is
``<logs_dir>/kube-scheduler.log``. It schedules onto the nodes kwok manages (tests/cluster/kwokctl.py).
"""

from __future__ import annotations

import os
import time

from tests.cluster.controlplane import GANG_FLAGS, ControlPlane, ControlPlaneError, _Process


class Scheduler:
    """kube-scheduler against ``plane``. Use as a context manager."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        binary = plane.binaries / "kube-scheduler"
        if not os.access(binary, os.X_OK):
            raise ControlPlaneError(f"{plane.binaries} lacks kube-scheduler (run make control-plane)")
        kubeconfig = plane.write_kubeconfig(plane.workdir / "scheduler.kubeconfig")
        self.log_path = plane.logs_dir / "kube-scheduler.log"
        self._process = _Process("kube-scheduler", [
            str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0", "--v=1",
            *GANG_FLAGS],
            self.log_path)

    def start(self) -> Scheduler:
        """Starts the scheduler; raises ``ControlPlaneError`` with its log's tail if it exits at once."""
        self._process.start()
        time.sleep(0.5)
        if not self._process.alive():
            raise ControlPlaneError(f"kube-scheduler exited; log {self.log_path}:\n{self._process.tail(40)}")
        return self

    def alive(self) -> bool:
        return self._process.alive()

    def close(self) -> None:
        self._process.stop()

    def __enter__(self) -> Scheduler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
