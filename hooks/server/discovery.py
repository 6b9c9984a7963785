"""Whether the API server serves ``scheduling.k8s.io/v1beta1`` PodGroups: one discovery read, cached
(issue 22, ``hooks.core.gang``).

The core learns from the request itself whether an answer may hold a PodGroup (the
CompositeController lists the type only where Metacontroller found it in discovery). When a request
holds no PodGroup children, the app asks ``PodGroupDiscovery.note()`` why, so that the Job's
``GangScheduled`` condition can say it: the group version not served (the API server's
``--runtime-config``, its ``GenericWorkload`` gate), served without ``podgroups``, or served (then
the CompositeController is the reason: the manifests-gang overlay is not installed). The answer is
words, data for the core; a failed read is words too, never an exception.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

GROUP_VERSION = "scheduling.k8s.io/v1beta1"
RESOURCE = "podgroups"
TTL_SECONDS = 60.0
TIMEOUT_SECONDS = 2.0

NOT_SERVED = (f"discovery: the API server does not serve {GROUP_VERSION} (kube-apiserver needs "
              f"--runtime-config={GROUP_VERSION}=true and --feature-gates=GenericWorkload=true)")
NO_RESOURCE = f"discovery: the API server serves {GROUP_VERSION} without {RESOURCE} (the GenericWorkload gate is off)"
SERVED = f"discovery: the API server serves {GROUP_VERSION} {RESOURCE}"


class PodGroupDiscovery:
    """``note()``: what discovery says of PodGroups, read at most once per ``ttl`` seconds.

    ``fetch`` returns the resource names the group version serves, ``None`` when it is not served
    (a 404), or raises on any other failure; production's reads ``/apis/scheduling.k8s.io/v1beta1``
    through the kubernetes client (``from_api_client``)."""

    def __init__(self, fetch: Callable[[], list[str] | None], *, ttl: float = TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._note = ""
        self._read_at: float | None = None

    def note(self) -> str:
        """The words for the ``GangScheduled`` condition (module doc)."""
        with self._lock:
            now = self._clock()
            if self._read_at is not None and now - self._read_at < self._ttl:
                return self._note
            self._note, self._read_at = self._read(), now
            return self._note

    def _read(self) -> str:
        try:
            resources = self._fetch()
        except Exception as exc:  # any failure is words: the Job waits either way
            return f"discovery of {GROUP_VERSION} failed: {type(exc).__name__}: {str(exc)[:200]}"
        if resources is None:
            return NOT_SERVED
        return SERVED if RESOURCE in resources else NO_RESOURCE

    @classmethod
    def from_api_client(cls, api_client: Any) -> PodGroupDiscovery:
        """Reads ``/apis/scheduling.k8s.io/v1beta1`` with ``api_client`` (a
        ``kubernetes.client.ApiClient``), ``TIMEOUT_SECONDS`` at most."""
        import orjson
        from kubernetes.client.exceptions import ApiException

        from podread import rest

        group, version = GROUP_VERSION.split("/")

        def fetch() -> list[str] | None:
            try:
                raw = rest.send(api_client, "GET", rest.GROUP_VERSION_PATH, params={"group": group, "version": version},
                                timeout=TIMEOUT_SECONDS)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise
            found = orjson.loads(raw)
            resources = found.get("resources") if isinstance(found, dict) else None
            if not isinstance(resources, list):
                raise ValueError(f"/apis/{GROUP_VERSION} answered no resource list")
            return [str(resource.get("name")) for resource in resources if isinstance(resource, dict)]

        return cls(fetch)

    @classmethod
    def from_environment(cls, env: Any) -> PodGroupDiscovery:
        """Over the cluster configuration podread loads (kubeconfig, then in-cluster); without one,
        every ``note()`` says so."""
        from podread.environment import load_api_client

        api_client, where = load_api_client(env)
        if api_client is None:
            return cls(lambda: _raise(RuntimeError(f"no cluster configuration ({where})")))
        return cls.from_api_client(api_client)


def _raise(exc: Exception) -> list[str] | None:
    raise exc
