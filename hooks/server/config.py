"""Settings of the hook server, read once from the environment at start-up.

podread reads its own variables (``NVCRE_CACHE_*``, ``NVCRE_API_TIMEOUT_SECONDS``, ``NVCRE_NODE_CACHE_TTL_SECONDS``) in
``podread.from_environment()``; this module reads the ones the HTTP layer and the decisions need.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from hooks.core.vocab import GangPolicy

T = TypeVar("T")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
GANG_POLICIES = tuple(policy.value for policy in GangPolicy)
READ_DEADLINE_SECONDS = 7.5
"""The deadline of all pod reads of one hook call: Metacontroller gives up at 10 s, and the answer
still has to be decided, encoded and sent after the last read."""
GUNICORN_WORKERS = 1
"""gunicorn worker processes per hooks pod (``hooks/server/gunicorn.conf.py``; ``WEB_CONCURRENCY``,
``--workers`` or ``GUNICORN_CMD_ARGS`` set more): one, so a pod keeps one pod watch and one cache
(issue 36 item 2; docs/operations.md, "One worker per pod")."""
GUNICORN_THREADS = 8
"""Threads of each worker: calls it answers at once, at least Metacontroller's 5 workers by default
(``manifests-large/`` gives 20, one per ``--workers=20``)."""
MALLOC_ARENA_MAX = 2
"""glibc's malloc arenas in the hook server (the image's ``MALLOC_ARENA_MAX``; glibc reads it at
process start, so it is set in the Dockerfile, not here): one worker's threads share 2 arenas instead
of opening up to 8 per core, each keeping the memory it once held. Measured with 8,000 realistic pods
watched and 5 clients (``python -m bench.cache_memory pod``): the worker 119 MiB instead of 131."""
MALLOC_MMAP_THRESHOLD = 131072
"""glibc's mmap threshold in the hook server, in bytes (the image's ``MALLOC_MMAP_THRESHOLD_``, read at
process start like ``MALLOC_ARENA_MAX``): a block this large or larger (a list page's body, a large
request or answer) gets pages of its own and gives them back when freed. glibc's default starts at
the same 128 KiB but raises itself to the largest block freed so far (up to 32 MiB), after which such
blocks come from the heap and their pages stay with the process once freed. Measured with 8,000
realistic pods watched and 5 clients (``python -m bench.cache_memory pod``, BENCHMARKS.md section 4):
``malloc_trim(0)`` in the worker gave back 7 MiB with the default and nothing with this set; the
pod's PSS sum 119-126 MiB against 121-130 over three runs each."""
RECENT_STATUS_SECONDS = 30.0
"""How long after a status write every answer is checked against the live Job
(``hooks.server.freshness.needs_check``): longer than any informer lag the hooks expect, so both
versions of a status in flight are caught. The default of ``recent_status_seconds``
(``NVCRE_RECENT_STATUS_SECONDS``); only a test's own server sets it shorter, to reach "settled"
without waiting half a minute (``tests/cluster/test_api_load.py``)."""
ORJSON_MAX_DEPTH = 1024
"""orjson refuses documents nested deeper than this, so a configured depth above it would be a lie."""


@dataclass(frozen=True)
class Settings:
    """What the hook server is configured with; every field has a default.

    - ``resync_seconds``: ``resyncAfterSeconds`` while a decision waits (``NVCRE_RESYNC_SECONDS``).
    - ``max_body_bytes``: the largest request body accepted, else 413 (``NVCRE_MAX_BODY_BYTES``).
    - ``log_level``: the level of the server's own logs (``NVCRE_LOG_LEVEL``).
    - ``hook_token_file``: a file holding the bearer token hook requests must carry, or ``None``
      for no authentication (``NVCRE_HOOK_TOKEN_FILE``).
    - ``hook_previous_token_file``: a file that may hold a second token also accepted, the previous
      one during a rotation; missing or empty means none (``NVCRE_HOOK_PREVIOUS_TOKEN_FILE``; only
      with ``hook_token_file``).
    - ``max_json_depth``: the deepest JSON nesting a request may have, else 400 (``NVCRE_MAX_JSON_DEPTH``).
    - ``port``: the TCP port gunicorn binds when no ``--bind`` is given (``PORT``).
    - ``metrics_port``: the TCP port the gunicorn master serves ``/metrics`` on, apart from the
      hooks (``NVCRE_METRICS_PORT``), on the host of the hook port's bind address.
    - ``gang_policy``: the ``spec.gang.policy`` of a Job that sets none, ``Gang`` or ``None``
      (``NVCRE_GANG_POLICY``, default ``None``; issue 22, ``hooks.core.gang``).
    - ``gang_api_note``: what discovery said of ``scheduling.k8s.io/v1beta1`` PodGroups, set per
      call by the app from ``hooks.server.discovery`` (not from the environment; ``""``: not asked).
    - ``recent_status_seconds``: how long after the parent's last status write every answer is
      checked against the live Job (``NVCRE_RECENT_STATUS_SECONDS``, default
      ``RECENT_STATUS_SECONDS``; ``hooks.server.freshness``).
    - ``read_deadline_seconds``: the one deadline all pod reads of a hook call share (not from the
      environment: ``READ_DEADLINE_SECONDS``, below Metacontroller's 10 s hook timeout, so that a
      call whose reads are slow still answers, and holds, in time).
    """

    resync_seconds: float = 5.0
    max_body_bytes: int = 4 * 1024 * 1024
    log_level: str = "INFO"
    hook_token_file: str | None = None
    max_json_depth: int = 64
    port: int = 8080
    read_deadline_seconds: float = 0.0
    hook_previous_token_file: str | None = None
    metrics_port: int = 9090
    gang_policy: str = "None"
    gang_api_note: str = ""
    recent_status_seconds: float = RECENT_STATUS_SECONDS

    def __post_init__(self) -> None:
        if not self.read_deadline_seconds > 0:
            object.__setattr__(self, "read_deadline_seconds", READ_DEADLINE_SECONDS)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Reads the settings from ``env`` (``os.environ`` by default); unset or empty means default.

        Raises ``ValueError`` naming the variable and its bad value, so a misconfigured server
        fails at start-up instead of on its first request.
        """
        env = os.environ if env is None else env
        defaults = cls()
        token_file = env.get("NVCRE_HOOK_TOKEN_FILE", "").strip()
        previous_file = env.get("NVCRE_HOOK_PREVIOUS_TOKEN_FILE", "").strip()
        if previous_file and not token_file:
            raise ValueError("NVCRE_HOOK_PREVIOUS_TOKEN_FILE is set without NVCRE_HOOK_TOKEN_FILE: "
                             "a previous token means nothing without the current one")
        return cls(
            resync_seconds=_read(env, "NVCRE_RESYNC_SECONDS", _positive_seconds, defaults.resync_seconds),
            max_body_bytes=_read(env, "NVCRE_MAX_BODY_BYTES", _int_between(1, None), defaults.max_body_bytes),
            log_level=_read(env, "NVCRE_LOG_LEVEL", _log_level, defaults.log_level),
            hook_token_file=token_file or None,
            hook_previous_token_file=previous_file or None,
            max_json_depth=_read(
                env, "NVCRE_MAX_JSON_DEPTH", _int_between(1, ORJSON_MAX_DEPTH), defaults.max_json_depth
            ),
            port=_read(env, "PORT", _int_between(1, 65535), defaults.port),
            metrics_port=_read(env, "NVCRE_METRICS_PORT", _int_between(1, 65535), defaults.metrics_port),
            gang_policy=_read(env, "NVCRE_GANG_POLICY", _gang_policy, defaults.gang_policy),
            recent_status_seconds=_read(env, "NVCRE_RECENT_STATUS_SECONDS", _positive_seconds,
                                        defaults.recent_status_seconds),
        )


def _read(env: Mapping[str, str], name: str, parse: Callable[[str], T], default: T) -> T:
    """The parsed value of ``env[name]``, ``default`` when unset or blank; ``ValueError`` naming both."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not valid: {exc}") from None


def _positive_seconds(raw: str) -> float:
    """A finite number of seconds greater than zero."""
    value = float(raw)
    if not math.isfinite(value) or value <= 0:
        raise ValueError("must be a number of seconds greater than 0")
    return value


def _int_between(low: int, high: int | None) -> Callable[[str], int]:
    """A parser for a decimal integer in ``[low, high]`` (no upper bound when ``high`` is None)."""

    def parse(raw: str) -> int:
        try:
            value = int(raw, 10)
        except ValueError:
            raise ValueError("must be a whole number") from None
        if value < low or (high is not None and value > high):
            bound = f"at least {low}" if high is None else f"between {low} and {high}"
            raise ValueError(f"must be {bound}")
        return value

    return parse


def _gang_policy(raw: str) -> str:
    """``Gang`` or ``None``, as the CRD spells ``spec.gang.policy``."""
    if raw not in GANG_POLICIES:
        raise ValueError(f"must be one of {', '.join(GANG_POLICIES)}")
    return raw


def _log_level(raw: str) -> str:
    """One of the standard logging level names, any case; returned upper-case."""
    level = raw.upper()
    if level not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
    return level
