"""Shared pytest wiring: the wire-level fake API server's fixtures, and the default ports held busy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.ports import hold_default_ports

pytest_plugins = ["tests.fakekube.fixtures"]


@pytest.fixture(scope="session", autouse=True)
def default_ports_held() -> Iterator[dict[int, str]]:
    """The hook server's default ports (8080, 9090) stay busy for the whole session
    (``tests.support.ports.hold_default_ports``): a test that starts a server without giving it free
    ports fails here on every machine, not only where ``make run`` is serving beside ``make test``.
    Every server a test starts takes ``tests.support.ports.free_port()`` for its hook and metrics ports."""
    with hold_default_ports() as states:
        yield states
