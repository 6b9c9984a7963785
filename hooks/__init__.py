"""Metacontroller hooks for NVCRE Jobs, in three parts, each a sub-package:
``hooks.core``: the decisions, pure (observed state and pod reads in, desired children and status out);
``hooks.server``: the HTTP edge (Flask app, gunicorn config, auth, logs, metrics, settings, writes);
``hooks.tools``: the operator tools (``python -m hooks``: replay, node-pods, demo; recording scenario folders).
"""
