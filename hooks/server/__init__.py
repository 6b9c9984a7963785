"""The HTTP edge: the Flask app (``app``), one call's handling (``handler``), bearer auth, settings
from the environment (``config``), logs, metrics, the gunicorn config, and the writes a decision asks
for (``effects`` over ``writer``). It calls ``hooks.core`` and reads pods only through podread.
"""
