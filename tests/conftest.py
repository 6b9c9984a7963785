"""Shared pytest wiring: the wire-level fake Kubernetes API server's fixtures."""

pytest_plugins = ["tests.fakekube.fixtures"]
