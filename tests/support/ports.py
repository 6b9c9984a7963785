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
"""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

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
