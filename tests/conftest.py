"""Shared pytest wiring: the wire-level fake API server's fixtures, and the default ports held busy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.support.ports import hold_default_ports

pytest_plugins = ["tests.fakekube.fixtures"]


_PORTS = pytest.StashKey[contextlib.ExitStack]()


def pytest_configure(config: pytest.Config) -> None:
    """The controlling process (the only one without xdist, xdist's controller with it) holds the
    default ports from before the first test until the last worker is done: a worker that finishes
    early must not free them while another still runs tests."""
    if not hasattr(config, "workerinput"):
        stack = contextlib.ExitStack()
        stack.enter_context(hold_default_ports())
        config.stash[_PORTS] = stack


def pytest_unconfigure(config: pytest.Config) -> None:
    stack = config.stash.get(_PORTS, None)
    if stack is not None:
        stack.close()


@pytest.fixture(scope="session", autouse=True)
def default_ports_held() -> Iterator[dict[int, str]]:
    """The hook server's default ports (8080, 9090) stay busy for the whole session
    (``tests.support.ports.hold_default_ports``): a test that starts a server without giving it free
    ports fails here on every machine, not only where ``make run`` is serving beside ``make test``.
    Every server a test starts takes ``tests.support.ports.free_port()`` for its hook and metrics ports."""
    with hold_default_ports() as states:
        yield states
