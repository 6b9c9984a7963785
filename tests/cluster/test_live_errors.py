"""``LiveClient`` against the real API server's error answers: an expired continue token (410),
a path the server does not serve (404), options it refuses as invalid (422). Each must end in a
``PodReadError`` carrying the server's own words, or, for a continued list that expired, in a
fresh list from the first page (a list stitched across two resourceVersions would not be
consistent).

The 410 needs compaction past the continue token's resourceVersion. The real server compacts etcd
itself every ``--etcd-compaction-interval`` (5 min by default) and serves continued lists from its
watch cache's snapshots until then, so compacting etcd from outside changes nothing; a control plane
of its own with a 1 s interval lets the server expire a token the way it does in production, only
sooner."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest
from kubernetes.client import ApiException

from podread import JOB_LABEL, ApiError, LiveClient, PodReadError, PodSelector
from tests.cluster.controlplane import ControlPlane, binaries_dir
from tests.cluster.kube import REQUEST_TIMEOUT, create_pods, ensure_namespace

pytestmark = pytest.mark.cluster

NAMESPACE = "live-410"
SELECTOR = PodSelector(namespace=NAMESPACE, labels={JOB_LABEL: "paged"})
EXPIRY_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def compacting_plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """A second control plane whose API server compacts etcd every second (``control_plane`` is
    asked for first so that the tier's skip-or-fail rule applies here too)."""
    plane = ControlPlane(binaries_dir(), apiserver_args=["--etcd-compaction-interval=1s"])
    with plane:
        ensure_namespace(plane.api_client(), NAMESPACE)
        create_pods(plane.api_client(), NAMESPACE, 12, {JOB_LABEL: "paged"})
        yield plane


def _wait_until_expired(plane: ControlPlane, token: str) -> None:
    """Writes (so that revisions move on) and retries ``token`` until the server answers 410."""
    core = kubernetes.client.CoreV1Api(plane.api_client())
    began = time.monotonic()
    for round_ in range(10_000):
        core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": f"tick-{time.monotonic_ns()}-{round_}"}},
                                          _request_timeout=REQUEST_TIMEOUT)
        try:
            core.list_namespaced_pod(NAMESPACE, limit=5, label_selector=SELECTOR.label_selector(), _continue=token,
                                     _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as exc:
            if exc.status == 410:
                return
            raise
        if time.monotonic() - began > EXPIRY_TIMEOUT:
            break
        time.sleep(0.5)
    raise AssertionError(f"the continue token did not expire within {EXPIRY_TIMEOUT:g}s")


_ORIGINAL_SEND = LiveClient._send
"""The live client's one list request (``PagedList._send``: ``podread.rest``), wrapped below."""


def _expire_continuations(monkeypatch: pytest.MonkeyPatch, plane: ControlPlane, times: int) -> list[str]:
    """Makes the first ``times`` continued requests wait until their token has expired on the
    server; returns the log of requests, ``first`` or ``continued``."""
    requests: list[str] = []
    left = [times]

    def send(self: Any, selector: Any, query: Any, timeout: Any) -> Any:
        token = dict(query).get("continue")
        requests.append("continued" if token else "first")
        if token and left[0] > 0:
            left[0] -= 1
            _wait_until_expired(plane, token)
        return _ORIGINAL_SEND(self, selector, query, timeout)

    monkeypatch.setattr(LiveClient, "_send", send)
    return requests


def test_an_expired_continue_token_restarts_the_list(compacting_plane: ControlPlane,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _expire_continuations(monkeypatch, compacting_plane, times=1)
    live = LiveClient(compacting_plane.api_client(), page_size=5, timeout_seconds=EXPIRY_TIMEOUT * 2)
    pods = live.list_pods(SELECTOR)
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(f"pod-{i}" for i in range(12))
    # 12 pods in pages of 5: the first page, a continuation that met 410, then a whole new list
    assert requests == ["first", "continued", "first", "continued", "continued"]


def test_continue_tokens_that_keep_expiring_end_in_the_servers_410(compacting_plane: ControlPlane,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _expire_continuations(monkeypatch, compacting_plane, times=100)
    live = LiveClient(compacting_plane.api_client(), page_size=5, timeout_seconds=EXPIRY_TIMEOUT * 4)
    with pytest.raises(ApiError) as expired:
        live.list_pods(SELECTOR)
    assert (expired.value.status, expired.value.code) == (410, "expired")
    assert "Expired" in str(expired.value) and "too old to display a consistent list" in str(expired.value)


def _client_at(plane: ControlPlane, prefix: str) -> kubernetes.client.ApiClient:
    """An admin client whose every request path starts with ``prefix`` (a path the server does not serve)."""
    kubeconfig = plane.kubeconfig_dict()
    for cluster in kubeconfig["clusters"]:  # type: ignore[union-attr]
        cluster["cluster"]["server"] = plane.url + prefix  # type: ignore[index]
    configuration = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config_from_dict(kubeconfig, client_configuration=configuration)
    configuration.retries = False
    return kubernetes.client.ApiClient(configuration)


def test_a_path_the_server_does_not_serve_is_a_404_with_its_words(control_plane: ControlPlane) -> None:
    with pytest.raises(PodReadError) as json_404:  # under /api: a Status body
        LiveClient(_client_at(control_plane, "/api/v9")).list_pods(SELECTOR)
    assert isinstance(json_404.value, ApiError) and json_404.value.status == 404
    assert "(NotFound): the server could not find the requested resource" in str(json_404.value)
    with pytest.raises(ApiError) as text_404:  # anywhere else: text/plain
        LiveClient(_client_at(control_plane, "/not-kubernetes")).list_pods(SELECTOR)
    assert text_404.value.status == 404 and "404 page not found" in str(text_404.value)


def test_list_options_the_server_refuses_are_a_422_with_its_words(control_plane: ControlPlane,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_namespace(control_plane.api_client(), NAMESPACE)

    def send(self: Any, selector: Any, query: Any, timeout: Any) -> Any:
        return _ORIGINAL_SEND(self, selector, [*query, ("resourceVersionMatch", "NotOlderThan")], timeout)

    monkeypatch.setattr(LiveClient, "_send", send)
    with pytest.raises(ApiError) as invalid:
        LiveClient(control_plane.api_client()).list_pods(SELECTOR)
    assert (invalid.value.status, invalid.value.code) == (422, "http-422")
    assert "(Invalid): " in str(invalid.value) and "resourceVersionMatch is forbidden" in str(invalid.value)
