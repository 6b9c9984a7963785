"""The composition root: the production hook server, built from the environment in this one place.

``gunicorn --config hooks/server/gunicorn.conf.py 'hooks.wsgi:production_app()'`` calls
``production_app`` once in every worker process (no preload), so every worker builds its own
Reader and cache. The parts and where each comes from: the settings (``Settings.from_env``), the
Reader (``podread.from_environment``: kubeconfig or in-cluster, ``NVCRE_CACHE_*``, ...), the
writer of the hooks' own writes (``writer_from_environment``, the same cluster configuration), the
PodGroup discovery (``PodGroupDiscovery.from_environment``, issue 22), the live version of a Job
(``parents_from_environment``: a request is checked against it before an answer acts,
``hooks.server.freshness``) and the recorder (``Recorder.from_env``: ``NVCRE_RECORD_DIR``, off
unless set), given to the app as middleware.
``hooks.server.app.create_app`` reads no environment, and the server and the recorder
(``hooks.tools.record``) do not import each other both ways: only this module knows both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from flask import Flask

import podread
from hooks.server import logs
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.discovery import PodGroupDiscovery
from hooks.server.freshness import parents_from_environment
from hooks.server.writer import writer_from_environment
from hooks.tools.record import Recorder


def production_app(env: Mapping[str, str] | None = None) -> Flask:
    """The hook server from ``env`` (``os.environ`` by default). Raises ``ValueError`` naming the
    variable on a bad value, so a misconfigured worker fails at start-up."""
    env = os.environ if env is None else env
    settings = Settings.from_env(env)
    logs.configure(settings.log_level)  # before the parts, which log how they were built
    reader = podread.from_environment(env)
    writer = writer_from_environment(env)
    recorder = Recorder.from_env(env)
    discovery = PodGroupDiscovery.from_environment(env)
    return create_app(reader, settings=settings, writer=writer, middleware=() if recorder is None else (recorder,),
                      discovery=discovery, parents=parents_from_environment(env))
