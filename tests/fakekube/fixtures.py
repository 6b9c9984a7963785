"""Pytest fixtures for the fake API server; register with ``pytest_plugins = ["tests.fakekube.fixtures"]``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakekube.server import FakeKubeServer


@pytest.fixture
def fake_kube() -> Iterator[FakeKubeServer]:
    """A started fake API server with no pods, stopped after the test."""
    with FakeKubeServer() as server:
        yield server


@pytest.fixture(scope="module")
def fake_kube_module() -> Iterator[FakeKubeServer]:
    """A started fake API server shared by one module's tests (they share its pods and faults)."""
    with FakeKubeServer() as server:
        yield server


@pytest.fixture
def kubeconfig(fake_kube: FakeKubeServer, tmp_path: Path) -> str:
    """The path of a kubeconfig file whose current context is ``fake_kube``."""
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
