"""from_environment(): the production Reader, wired from the process environment."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from podread.access import AccessClient
from podread.cache import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_SECONDS, PodCache
from podread.jobs import JobClient
from podread.live import DEFAULT_TIMEOUT_SECONDS, LiveClient
from podread.nodes import DEFAULT_NODE_TTL_SECONDS, MAX_NODE_TTL_SECONDS, NodeCache, NodeClient
from podread.nodewatch import DEFAULT_NODE_WATCH_STALENESS, NodeWatch, NodeWatchClient, WatchedNodes
from podread.reader import Reader
from podread.watch import PodWatch, WatchedPods

log = logging.getLogger("podread")

HOOK_TIMEOUT_SECONDS = 10.0
"""Metacontroller's default hook timeout: a live read must give up well before it."""
CACHE_MODES = ("watch", "ttl", "live")
WATCH_LIST_TIMEOUT_SECONDS = 120.0
"""How long the watch's own list (of every NVCRE pod in its scope) may take: it runs in the watch's
thread, not in a hook call, and the cache answers from TTL fills meanwhile."""
API_CONNECTIONS = 32
"""The connections each ApiClient keeps open to the API server (``NVCRE_API_CONNECTIONS``): at least as
many as one process sends at once (the large install's 20 gunicorn threads, the effects thread, the
helper thread of the barrier's second batch Job list, the watches). urllib3's pool never waits for a
connection: past its size it opens one more for the request and closes it after, so every request
over the size pays a new TCP and TLS handshake on both ends, on an API server that is already the
slow part (issue 36 item 8). The kubernetes client's own default is 5 per core the process *sees*,
which in a container is the node's count: 10 on 2 cores, 320 on 64."""


def cache_mode(env: Mapping[str, str]) -> str:
    """``NVCRE_CACHE_MODE``: ``watch`` (default), ``ttl`` or ``live`` (no cache: every read goes to the
    API server, the baseline the benchmarks measure the cache against); raises ``ValueError`` otherwise."""
    mode = env.get("NVCRE_CACHE_MODE", "").strip().lower() or "watch"
    if mode not in CACHE_MODES:
        raise ValueError(f"NVCRE_CACHE_MODE={env.get('NVCRE_CACHE_MODE')!r} must be one of {', '.join(CACHE_MODES)}")
    return mode


def watch_namespaces(env: Mapping[str, str]) -> tuple[str | None, ...]:
    """``NVCRE_WATCH_NAMESPACES``: comma-separated namespaces, one watch each; empty (the default)
    is one watch over every namespace, written ``(None,)``."""
    names = tuple(dict.fromkeys(part.strip() for part in env.get("NVCRE_WATCH_NAMESPACES", "").split(",")
                                if part.strip()))
    return names or (None,)


def _number(env: Mapping[str, str], name: str, default: float, *, integer: bool, below: float | None = None) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ValueError(f"{name}={raw!r} is not {kind}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{name}={raw!r} must be greater than 0")
    if below is not None and value >= below:
        raise ValueError(f"{name}={raw!r} must be less than {below:g}")
    return value


def node_cache(env: Mapping[str, str]) -> NodeCache | None:
    """``NVCRE_NODE_CACHE_TTL_SECONDS``: how long the stuck-pod check's Node states are kept
    (default ``DEFAULT_NODE_TTL_SECONDS``), a number from 0 up to ``MAX_NODE_TTL_SECONDS``; 0
    keeps none (every node read is a GET): ``None``. Raises ``ValueError`` naming the variable
    otherwise."""
    name = "NVCRE_NODE_CACHE_TTL_SECONDS"
    raw = env.get(name, "").strip()
    try:
        ttl = float(raw) if raw else DEFAULT_NODE_TTL_SECONDS
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not 0 <= ttl <= MAX_NODE_TTL_SECONDS:  # NaN fails too
        raise ValueError(f"{name}={raw!r} must be from 0 to {MAX_NODE_TTL_SECONDS:g}")
    return NodeCache(ttl_seconds=ttl) if ttl > 0 else None


def node_watch_enabled(env: Mapping[str, str], mode: str) -> bool:
    """``NVCRE_NODE_WATCH``: ``on`` or ``off``; unset or empty follows the cache mode (on in ``watch``
    mode, off in ``ttl`` and ``live``). Raises ``ValueError`` for any other value."""
    raw = env.get("NVCRE_NODE_WATCH", "").strip().lower()
    if not raw:
        return mode == "watch"
    if raw not in ("on", "off"):
        raise ValueError(f"NVCRE_NODE_WATCH={env.get('NVCRE_NODE_WATCH')!r} must be on or off")
    return raw == "on"


def _kubeconfig_paths(env: Mapping[str, str]) -> list[Path]:
    """The kubeconfig files to try: ``KUBECONFIG``'s, else ``$HOME/.kube/config``. Without a home
    directory (``HOME`` unset and the user unknown to the system, as for an arbitrary container
    uid) there is no default file: the server still starts, rather than failing to boot on
    ``Path.expanduser``'s RuntimeError."""
    listed = env.get("KUBECONFIG", "")
    if listed:
        return [_expanded(p) for p in listed.split(os.pathsep) if p]
    home = env.get("HOME", "")
    if home:
        return [Path(home) / ".kube" / "config"]
    try:
        return [Path("~").expanduser() / ".kube" / "config"]
    except RuntimeError:
        return []


def _expanded(path: str) -> Path:
    """``path`` with a leading ``~`` expanded, or as written when there is no home directory."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def load_api_client(env: Mapping[str, str]) -> tuple[k8s.ApiClient | None, str]:
    """The kubernetes ApiClient for this process, and where its configuration came from.

    Tries the kubeconfig first (``KUBECONFIG``, or ``~/.kube/config``), then the in-cluster service
    account. Returns ``(None, reason)`` when neither is there or loads, so the server can still
    start and every read fails clearly. The client makes no retries of its own: a failed request
    fails the read at once (the hook holds and Metacontroller calls again).
    """
    connections = int(_number(env, "NVCRE_API_CONNECTIONS", API_CONNECTIONS, integer=True))  # a bad value raises
    configuration = k8s.Configuration()
    reasons: list[str] = []
    existing = [path for path in _kubeconfig_paths(env) if path.is_file()]
    if existing:
        try:
            k8s_config.load_kube_config(config_file=str(existing[0]), client_configuration=configuration,
                                        persist_config=False)
            return _client(configuration, connections), f"kubeconfig {existing[0]}"
        except (k8s_config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
            reasons.append(f"kubeconfig {existing[0]} did not load: {exc}")
    else:
        paths = _kubeconfig_paths(env)
        reasons.append("no kubeconfig at " + ", ".join(str(p) for p in paths) if paths else
                       "no kubeconfig (KUBECONFIG unset and no home directory)")
    if env.get("KUBERNETES_SERVICE_HOST"):
        try:
            loader = k8s_config.incluster_config.InClusterConfigLoader(
                token_filename=k8s_config.incluster_config.SERVICE_TOKEN_FILENAME,
                cert_filename=k8s_config.incluster_config.SERVICE_CERT_FILENAME,
                environ=dict(env),
            )
            loader.load_and_set(configuration)
            return _client(configuration, connections), "in-cluster service account"
        except (k8s_config.ConfigException, OSError) as exc:
            reasons.append(f"in-cluster configuration did not load: {exc}")
    else:
        reasons.append("not in a cluster (KUBERNETES_SERVICE_HOST unset)")
    return None, "; ".join(reasons)


def _client(configuration: k8s.Configuration, connections: int) -> k8s.ApiClient:
    """The ApiClient of a loaded ``configuration``: no retries of its own, a pool of ``connections``
    kept open, and its proxy (the one the
    environment named for its host when it loaded, or none) kept as it is. Both config loaders
    re-assign the host before every request (``refresh_api_key_hook``), and a proxy still "from the
    environment" is then looked up again in ``os.environ`` (``urllib.request.getproxies``) on every
    read: about a sixth of a parent read under cProfile (issue 32 item 4). The process's environment does not
    change after start-up, so the proxy it names does not either."""
    configuration.retries = False
    configuration.connection_pool_maxsize = connections
    configuration.proxy = configuration.proxy  # the setter marks it as given: never looked up again
    return k8s.ApiClient(configuration)


def from_environment(env: Mapping[str, str] | None = None, *, watch: bool | None = None) -> Reader:
    """Builds the production Reader from the environment.

    Reads ``NVCRE_CACHE_TTL_SECONDS`` (default 5), ``NVCRE_CACHE_MAX_ENTRIES`` (default 10000, the
    number of job and node keys kept), ``NVCRE_API_TIMEOUT_SECONDS`` (default 3, must be under
    Metacontroller's 10 s hook timeout), ``NVCRE_CACHE_MODE`` (``watch``, the default, ``ttl`` or ``live``;
    the ``watch`` argument, when given, decides instead: a one-shot command passes ``False``),
    ``NVCRE_WATCH_NAMESPACES`` (default: every namespace), ``NVCRE_NODE_CACHE_TTL_SECONDS`` (default 5,
    ``node_cache``), ``NVCRE_NODE_WATCH`` (``node_watch_enabled``: a ``NodeWatch`` of every Node,
    started by the first node read, stopped by ``Reader.close``; on by default in watch mode) and the
    cluster configuration (kubeconfig, then in-cluster).
    Returns ``Reader(PodCache(live), live)`` with a ``NodeClient`` and a ``JobClient`` (the
    barrier's Node and batch Job reads, live, same timeout) and a ``NodeCache`` of the Node states
    that license nothing (none in live mode); in watch mode the cache also has one ``PodWatch`` per
    watched scope, started by the cache's first read in that scope (so after gunicorn's fork) and
    stopped by ``Reader.close``; in live mode ``Reader(live, live)``: no cache at all. With no cluster
    configuration the live client is ``None`` and the
    cache has no source and no watch: the Reader is still built, and every read raises a
    ``PodReadError`` that says why (logged once here). Raises ``ValueError`` naming the variable
    when one of the variables has a bad value.
    """
    env = os.environ if env is None else env
    mode = cache_mode(env) if watch is None else ("watch" if watch else "ttl")
    scopes = watch_namespaces(env)
    ttl = _number(env, "NVCRE_CACHE_TTL_SECONDS", DEFAULT_TTL_SECONDS, integer=False)
    max_entries = int(_number(env, "NVCRE_CACHE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES, integer=True))
    timeout = _number(env, "NVCRE_API_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS, integer=False,
                      below=HOOK_TIMEOUT_SECONDS)
    states = node_cache(env)
    watch_nodes = node_watch_enabled(env, mode) and watch is not False  # a one-shot command never watches
    api_client, where = load_api_client(env)
    if api_client is None:
        log.warning("no cluster configuration found (%s): the hooks will start, and every pod read "
                    "will fail until the process is restarted with a configuration", where)
        cache = PodCache(None, ttl_seconds=ttl, max_entries=max_entries,
                         no_source_reason=f"no cluster configuration ({where})")
        return Reader(cache, None)
    log.info("reading pods from the API server via %s (cache %s, TTL %gs, API timeout %gs)", where, mode, ttl,
             timeout)
    live = LiveClient(api_client, timeout_seconds=timeout)
    nodes = NodeClient(api_client, timeout_seconds=timeout)  # node reads: live, by name
    access = AccessClient(api_client, timeout_seconds=timeout)  # may the hooks delete pods
    jobs = JobClient(api_client, timeout_seconds=timeout)  # batch Job reads: live, by JobSet label
    node_watch = NodeWatch(NodeWatchClient(api_client), WatchedNodes(max_staleness=DEFAULT_NODE_WATCH_STALENESS)) \
        if watch_nodes else None  # the stuck-pod check's healthy nodes, no GET
    if mode == "live":  # no cache: every read lists live (the benchmarks' baseline)
        return Reader(live, live, nodes=nodes, access=access, jobs=jobs, node_watch=node_watch)
    watches: list[PodWatch] = []
    if mode == "watch":
        watch_live = LiveClient(api_client, timeout_seconds=WATCH_LIST_TIMEOUT_SECONDS)
        watches = [PodWatch(watch_live, WatchedPods(namespace, ttl_seconds=ttl), peers=[live]) for namespace in scopes]
    return Reader(PodCache(live, ttl_seconds=ttl, max_entries=max_entries, watches=watches), live, nodes=nodes,
                  access=access, jobs=jobs, node_cache=states, node_watch=node_watch)
