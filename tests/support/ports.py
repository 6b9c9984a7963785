"""Loopback ports for the servers the tests start as subprocesses (gunicorn, etcd, kube-apiserver, Kueue).

A port a child process will bind later cannot be reserved: between the test choosing it and the child
binding it, something else may take it. The usual trick, ``bind(("127.0.0.1", 0))``, makes that likely
on a busy test: the kernel answers with a port from the *ephemeral* range
(``/proc/sys/net/ipv4/ip_local_port_range``), the same range every outgoing TCP connection takes its
local port from, and the cluster tier opens thousands of them (clients to kube-apiserver, kube-apiserver
to etcd, Kueue to kube-apiserver). CI saw exactly that: Kueue died on ``bind: address already in use``.

``free_port`` therefore chooses below the ephemeral range, where no outgoing connection ever lands, at
random (so two test processes rarely pick alike), never hands out the same port twice in one process,
and checks the port can be bound right now. When the range below is too small it falls back to the
kernel's choice.

``hold_default_ports`` keeps the hook server's default ports (8080 and 9090) busy for a whole test
session (``tests/conftest.py``): no test may bind them, since ``make run`` may be serving on them beside
``make test``, so a test server started on a default port fails at once instead of only on such a machine.
"""

from __future__ import annotations

import contextlib
import errno
import random
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from hooks.server.config import Settings

LOWEST = 20_000
"""Below this are well-known and registered ports local services use (the kubelet and control plane
listen on 10250-10259, for one)."""

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.SystemRandom()


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux default when unreadable)."""
    try:
        low, high = (int(part) for part in _EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32_768, 60_999
    return low, high


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_choice() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, outside the ephemeral range and not
    returned before by this process (module doc)."""
    low, _ = ephemeral_range()
    candidates = low - LOWEST
    with _lock:
        if candidates >= 1_000:
            for _ in range(200):
                port = LOWEST + _random.randrange(candidates)
                if port not in _handed_out and _bindable(port):
                    _handed_out.add(port)
                    return port
        while True:
            port = _kernel_choice()
            if port not in _handed_out:
                _handed_out.add(port)
                return port


def default_ports() -> tuple[int, int]:
    """The ports a hook server binds when told none: the hook port (``PORT``) and the metrics port
    (``NVCRE_METRICS_PORT``), as ``hooks.server.config.Settings`` defaults them."""
    defaults = Settings()
    return defaults.port, defaults.metrics_port


@contextlib.contextmanager
def hold_default_ports() -> Iterator[dict[int, str]]:
    """Binds ``127.0.0.1`` at each of ``default_ports()`` until the block ends, so anything else
    binding one of them (on 127.0.0.1 or on every address) fails with "address already in use".

    Bound, not listening: a listener that never accepts lets a client's connection in and leaves it
    waiting for an answer, and a client that tries the default port meanwhile waits for its own
    timeout instead of being refused at once (kubectl without a kubeconfig tries 127.0.0.1:8080: the
    Google Cloud SDK's kubectl asks that server its version before it dispatches even ``kubectl
    kustomize``, which took 5 s instead of 0.1 s in each of a dozen tests).

    Yields, for each port, ``"held"`` (this process listens) or ``"busy"`` (another process does:
    another pytest-xdist worker holding it too, or a ``make run``; it is busy either way). Any other
    failure to bind is raised."""
    holders: list[socket.socket] = []
    states: dict[int, str] = {}
    try:
        for port in default_ports():
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as exc:
                sock.close()
                if exc.errno != errno.EADDRINUSE:
                    raise
                states[port] = "busy"
                continue
            holders.append(sock)
            states[port] = "held"
        yield states
    finally:
        for sock in holders:
            sock.close()
