"""End-to-end harness: the real gunicorn server, a cluster simulator, a Metacontroller-shaped driver
and the safety invariants checked after every step (see ``tests/e2e/test_e2e_*.py`` and ``tests/soak.py``)."""
