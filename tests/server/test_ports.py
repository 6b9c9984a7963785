"""``tests.support.ports.free_port``: the ports handed to the test servers stay out of the kernel's ephemeral
range (where outgoing connections could take them before the server binds), are never handed out twice
and can be bound when returned. ``hold_default_ports``: the hook server's default ports stay busy for the
whole test session, so no test server can take them."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from tests.support import ports


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    low, _ = ports.ephemeral_range()
    chosen = [ports.free_port() for _ in range(300)]
    assert len(set(chosen)) == len(chosen)
    assert all(ports.LOWEST <= port < low for port in chosen)
    for port in chosen[:20]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_something_listens_on_is_never_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the candidates narrowed to 1,000 ports of which one is taken, 2,000 choices never return it
    (and the rest are handed out once each before the kernel's choice takes over)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        monkeypatch.setattr(ports, "LOWEST", taken - 500)
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (taken + 500, 60_999))
        monkeypatch.setattr(ports, "_handed_out", set())
        chosen = [ports.free_port() for _ in range(2_000)]
    assert taken not in chosen
    assert len(set(chosen)) == len(chosen)


def test_falls_back_to_the_kernel_when_there_is_no_room_below(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel_low, kernel_high = ports.ephemeral_range()
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (ports.LOWEST + 10, 60_999))
    port = ports.free_port()
    assert kernel_low <= port <= kernel_high
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_the_ephemeral_range_is_read_from_the_kernel_or_defaults(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t50000\n")
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", tmp_path / "range")
    assert ports.ephemeral_range() == (40_000, 50_000)
    monkeypatch.setattr(ports, "_EPHEMERAL_RANGE", tmp_path / "missing")
    assert ports.ephemeral_range() == (32_768, 60_999)


def _bind_error(host: str, port: int) -> int | None:
    """The errno of binding ``host:port`` as gunicorn and ``http.server`` do (``SO_REUSEADDR``), or None."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.errno
    return None


def test_the_default_ports_are_busy_for_the_whole_session(default_ports_held: dict[int, str]) -> None:
    """tests/conftest.py holds 8080 and 9090 (or finds them held by another worker or a make run): a
    test server bound to either, on loopback or on every address, fails to start."""
    assert ports.default_ports() == (8080, 9090)
    assert set(default_ports_held) == {8080, 9090}
    assert set(default_ports_held.values()) <= {"held", "busy"}
    for port in ports.default_ports():
        for host in ("127.0.0.1", "0.0.0.0"):
            assert _bind_error(host, port) == errno.EADDRINUSE, f"{host}:{port} could be bound"


def test_hold_default_ports_holds_what_is_free_and_lets_go_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """A free port is held ("held") until the block ends; one something else listens on is "busy"."""
    free, taken = ports.free_port(), ports.free_port()
    monkeypatch.setattr(ports, "default_ports", lambda: (free, taken))
    with socket.socket() as other:
        other.bind(("127.0.0.1", taken))
        other.listen()
        with ports.hold_default_ports() as states:
            assert states == {free: "held", taken: "busy"}
            assert _bind_error("127.0.0.1", free) == errno.EADDRINUSE
    assert _bind_error("127.0.0.1", free) is None
    assert _bind_error("127.0.0.1", taken) is None


def test_a_held_port_refuses_connections_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held, a port is bound and not listened on: a client trying it (kubectl without a kubeconfig
    tries 127.0.0.1:8080) is refused at once instead of waiting for an answer that never comes."""
    free = ports.free_port()
    monkeypatch.setattr(ports, "default_ports", lambda: (free,))
    with ports.hold_default_ports() as states:
        assert states == {free: "held"}
        with socket.socket() as client:
            client.settimeout(5)
            with pytest.raises(ConnectionRefusedError):
                client.connect(("127.0.0.1", free))
