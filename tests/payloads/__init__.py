"""Golden hook payloads: one folder per scenario (see tests/payloads/_build.py)."""
