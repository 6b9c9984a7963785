"""The floor for ``/sync``: a no-op Flask app served by the same gunicorn config as the hooks.

It reads and parses the request body exactly as the hook does (``orjson.loads``) and answers a
constant, so ``/sync`` minus this is what deciding costs: the request parsing, the pod read from
the warm cache, the decision, the response encoding, the metrics and the log line.

    gunicorn --config hooks/server/gunicorn.conf.py 'bench.floor_app:create_app()'
"""

from __future__ import annotations

import orjson
from flask import Flask, Response, request

CONSTANT = orjson.dumps({"status": {"phase": "Running"}, "children": []})


def create_app() -> Flask:
    """A Flask app with ``POST /sync`` (parse the body, answer a constant) and ``GET /readyz``."""
    app = Flask("floor")

    @app.post("/sync")
    def sync() -> Response:
        """Parses the JSON body and answers a constant 200."""
        body = orjson.loads(request.get_data(cache=False))
        status = 200 if isinstance(body, dict) else 400
        return Response(CONSTANT, status=status, mimetype="application/json")

    @app.get("/readyz")
    def readyz() -> Response:
        """Ready as soon as the worker serves."""
        return Response(b'{"status":"ready"}', mimetype="application/json")

    return app
