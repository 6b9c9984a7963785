"""podread.from_environment(): configuration from the environment, and a clear failure without a cluster."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
from kubernetes import client as k8s
from kubernetes.client import configuration as k8s_configuration

import podread
from podread import NoLiveReaderError, NoSourceError, PodReadError
from podread.cached import Uncached
from podread.environment import API_CONNECTIONS, load_api_client
from podread.live import LiveClient

NO_CLUSTER = {"HOME": "/nonexistent-home"}


@pytest.mark.parametrize(("name", "value", "says"), [
    ("NVCRE_CACHE_TTL_SECONDS", "soon", "is not a number"),
    ("NVCRE_CACHE_TTL_SECONDS", "0", "greater than 0"),
    ("NVCRE_CACHE_TTL_SECONDS", "-3", "greater than 0"),
    ("NVCRE_CACHE_TTL_SECONDS", "nan", "greater than 0"),
    ("NVCRE_CACHE_MAX_ENTRIES", "1.5", "whole number"),
    ("NVCRE_CACHE_MAX_ENTRIES", "0", "greater than 0"),
    ("NVCRE_API_TIMEOUT_SECONDS", "x", "is not a number"),
    ("NVCRE_API_TIMEOUT_SECONDS", "12", "less than 10"),
    ("NVCRE_CACHE_MODE", "informer", "must be one of watch, ttl, live"),
    ("NVCRE_API_CONNECTIONS", "many", "whole number"),
    ("NVCRE_API_CONNECTIONS", "0", "greater than 0"),
])
def test_a_bad_value_is_a_startup_error_naming_the_variable(name: str, value: str, says: str) -> None:
    with pytest.raises(ValueError, match=name) as raised:
        podread.from_environment({**NO_CLUSTER, name: value})
    assert says in str(raised.value)


def test_without_any_cluster_configuration_the_reader_is_built_and_every_read_fails_clearly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="podread"):
        reader = podread.from_environment(NO_CLUSTER)
    assert "no cluster configuration" in caplog.text
    assert not reader.has_live
    with pytest.raises(NoSourceError, match="no cluster configuration"):
        reader.job_pods("team-a", "llama")
    with pytest.raises(PodReadError):
        reader.active_job_pods("team-a", "llama")
    with pytest.raises(NoLiveReaderError):
        reader.namespace_pods("kube-system")


def test_without_home_the_reader_is_built_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """HOME unset and a uid the system does not know (an arbitrary container user):
    ``Path("~").expanduser()`` raises RuntimeError; the hooks must still start."""
    import pwd

    def unknown(uid: int) -> None:
        raise KeyError(uid)

    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    with caplog.at_level("WARNING", logger="podread"):
        reader = podread.from_environment({})
    assert not reader.has_live
    assert "no kubeconfig (KUBECONFIG unset and no home directory)" in caplog.text
    assert not podread.from_environment({"KUBECONFIG": "~/missing"}).has_live


def test_the_proxy_the_environment_names_is_looked_up_once_not_on_every_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32 item 4: the config loaders assign the host again before every request, and a proxy
    still "from the environment" was then looked up in ``os.environ`` again each time. The client
    keeps the proxy it loaded with (the environment's, for its host) and never looks again."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(orjson.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}).decode())
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("https_proxy", raising=False)
    api_client, where = load_api_client({"KUBECONFIG": str(kubeconfig)})
    assert api_client is not None, where
    configuration = api_client.configuration
    assert configuration.proxy == "http://proxy.example:3128"
    looked: list[int] = []
    monkeypatch.setattr(k8s_configuration, "getproxies", lambda: looked.append(1) or {})
    for _ in range(3):
        configuration.refresh_api_key_hook(configuration)  # what every request runs first
        configuration.get_api_key_with_prefix("BearerToken")
    assert looked == []
    assert configuration.proxy == "http://proxy.example:3128"
    assert configuration.host == "https://10.0.0.1:6443"


class _HeldServer(ThreadingHTTPServer):
    """An HTTP/1.1 API server stand-in that counts the TCP connections it accepts and answers no
    request until ``held`` requests wait at once (so that many are in flight together)."""

    daemon_threads = True

    def __init__(self, held: int) -> None:
        super().__init__(("127.0.0.1", 0), _HeldHandler)
        self.connections = 0
        self.barrier = threading.Barrier(held, timeout=10)

    def get_request(self):  # type: ignore[no-untyped-def]
        accepted = super().get_request()
        self.connections += 1
        return accepted


class _HeldHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.barrier.wait()  # type: ignore[attr-defined]
        body = b'{"kind": "PodList", "items": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_the_client_keeps_a_connection_for_every_request_in_flight(tmp_path: Path) -> None:
    """Issue 36 item 8: 20 requests at once (the large install's threads), twice: the second round
    reuses the first round's 20 connections. With the kubernetes client's default pool (5 per core
    seen: 10 here) half of them are closed after each round and opened again, a TCP and TLS
    handshake each on an API server that is the slow part."""
    server = _HeldServer(held=20)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(orjson.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}).decode())
        api_client, where = load_api_client({"KUBECONFIG": str(kubeconfig), "NO_PROXY": "*"})
        assert api_client is not None, where
        assert api_client.configuration.connection_pool_maxsize == API_CONNECTIONS
        pods = k8s.CoreV1Api(api_client)
        with ThreadPoolExecutor(20) as pool:
            for _ in range(2):
                answers = list(pool.map(lambda _: pods.list_namespaced_pod("ns", _preload_content=False,
                                                                            _request_timeout=10).data,
                                        range(20)))  # read as podread reads: the raw JSON
                assert answers == [b'{"kind": "PodList", "items": []}'] * 20
        assert server.connections == 20
        api_client.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_kubeconfig_named_by_kubeconfig_is_no_configuration(tmp_path: Path) -> None:
    reader = podread.from_environment({"KUBECONFIG": str(tmp_path / "missing")})
    assert not reader.has_live


def test_a_broken_kubeconfig_is_reported_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with caplog.at_level("WARNING", logger="podread"):
        reader = podread.from_environment({"KUBECONFIG": str(broken)})
    assert not reader.has_live
    assert "did not load" in caplog.text


def test_in_cluster_configuration_without_its_token_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    env = {**NO_CLUSTER, "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with caplog.at_level("WARNING", logger="podread"):
        reader = podread.from_environment(env)
    assert not reader.has_live
    assert "in-cluster configuration did not load" in caplog.text


def test_the_cache_mode_is_watch_by_default_and_ttl_on_request(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: "
                      "{server: 'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {token: t}}]\n"
                      "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    env = {"KUBECONFIG": str(config)}
    default = podread.from_environment(env)
    assert [w.store.namespace for w in default._cached.watches] == [None]
    assert not any(w.running for w in default._cached.watches)  # started by the first read, after a fork
    assert podread.from_environment({**env, "NVCRE_CACHE_MODE": "ttl"})._cached.watches == ()
    assert podread.from_environment(env, watch=False)._cached.watches == ()
    live = podread.from_environment({**env, "NVCRE_CACHE_MODE": "live"})
    # no cache: the cached side is the live client itself, adapted once (every read is live)
    assert isinstance(live._cached, Uncached) and live._cached.lister is live._live
    assert isinstance(live._live, LiveClient)
    scoped = podread.from_environment({**env, "NVCRE_WATCH_NAMESPACES": "team-a, team-b,team-a"})
    assert [w.store.namespace for w in scoped._cached.watches] == ["team-a", "team-b"]
    assert default._cached.watches[0].watch_seconds == 3  # TTL 5 s: a bookmark every ~3 s
