"""Test objects' UIDs: what the API server gives every object (a UUID), made deterministic from a name
so that recorded payloads and Event names stay the same from run to run."""

from __future__ import annotations

import uuid

_ROOT = uuid.UUID("6f1d2c3b-4a59-4e68-8f70-9a1b2c3d4e5f")


def uid(name: str) -> str:
    """The UUID a test gives the object it calls ``name`` (the same name, the same UUID)."""
    return str(uuid.uuid5(_ROOT, name))
