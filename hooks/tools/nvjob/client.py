"""The cluster ``kubectl nvjob`` reads, found as kubectl finds it, and kubectl's words for what fails.

``connect`` loads the user's kubeconfig the way kubectl does (``--kubeconfig``, else ``KUBECONFIG``,
a list of files, else ``$HOME/.kube/config``; ``--context``, else the current context; the namespace
from ``-n``, else the context's, else ``default``), or the in-cluster service account when there is
no kubeconfig. ``KubeCluster`` then reads, all live:

- the NVCRE Jobs, their JobSets and the Events regarding a Job through the kubernetes client, as raw
  JSON (the objects as the API server holds them);
- pods and batch Jobs only through a podread ``Reader`` (ADR-102: every pod read goes through it) built
  on podread's ``LiveClient``, ``JobClient`` and ``NodeClient``, with no watch: a one-shot command.

Every failure is a ``CommandError`` holding the line kubectl would print, e.g.
``Error from server (NotFound): jobs.nvcre.nvidia.com "x" not found``; the command exits 1 with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from podread.cache import PodCache
from podread.jobs import JobClient
from podread.live import LiveClient
from podread.nodes import NodeClient
from podread.reader import Reader

GROUP, VERSION, PLURAL = "nvcre.nvidia.com", "v1alpha1", "jobs"
JOB_RESOURCE = f"{PLURAL}.{GROUP}"
JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
TIMEOUT_SECONDS = 10.0
"""How long one read may take (a connect or a read of the answer): a one-shot command, not a hook call."""
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class CommandError(Exception):
    """A failure as kubectl reports it: ``message`` is the whole line for stderr; exit ``code`` (1)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Listed:
    """NVCRE Jobs as one list answered them: the ``items`` (sorted by namespace and name) and the
    list's ``resource_version``, where a watch of the changes after it starts."""

    items: list[dict[str, Any]] = field(default_factory=list)
    resource_version: str = ""


class Cluster(Protocol):
    """What the commands read. ``KubeCluster`` reads a real API server; a test passes recorded objects."""

    @property
    def reader(self) -> Reader:
        """The podread Reader every pod and batch Job read goes through."""
        ...

    def get_job(self, namespace: str, name: str) -> dict[str, Any]: ...

    def list_jobs(self, namespace: str | None, selector: str = "") -> Listed: ...

    def watch_jobs(self, namespace: str | None, *, selector: str = "", name: str = "", resource_version: str = "",
                   timeout_seconds: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def list_jobsets(self, namespace: str) -> list[dict[str, Any]]: ...

    def list_events(self, namespace: str, name: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Target:
    """Where to read: the API client, the namespace the flags and the context name, and the server."""

    api_client: k8s.ApiClient
    namespace: str
    server: str


def kubeconfig_files(flag: str | None, env: Mapping[str, str]) -> list[str]:
    """The kubeconfig files to merge, in kubectl's order: ``--kubeconfig``, else every file
    ``KUBECONFIG`` lists, else ``$HOME/.kube/config`` (none without a home directory). Only
    files that exist are kept, except the flag's: a missing ``--kubeconfig`` is an error, as in kubectl."""
    if flag:
        if not Path(flag).is_file():
            raise CommandError(f'error: stat {flag}: no such file or directory')
        return [flag]
    listed = [path for path in env.get("KUBECONFIG", "").split(os.pathsep) if path]
    if not listed and env.get("HOME"):
        listed = [str(Path(env["HOME"]) / ".kube" / "config")]
    return [path for path in listed if Path(path).is_file()]


def connect(*, kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None,
            env: Mapping[str, str] | None = None) -> Target:
    """Loads the configuration kubectl would use and returns the ``Target``. Reads the kubeconfig
    files (``kubeconfig_files``) or, with none and ``KUBERNETES_SERVICE_HOST`` set, the in-cluster
    service account. Raises ``CommandError`` with kubectl's words for a context that does not exist,
    a kubeconfig that does not load, or no configuration at all."""
    env = os.environ if env is None else env
    files = kubeconfig_files(kubeconfig, env)
    configuration = k8s.Configuration()
    if files:
        merged = os.pathsep.join(files)
        try:
            contexts, current = k8s_config.list_kube_config_contexts(config_file=merged)
        except (k8s_config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"error: loading the kubeconfig {merged}: {exc}") from exc
        chosen = context or (current or {}).get("name")
        found = next((c for c in contexts or () if c.get("name") == chosen), None)
        if found is None:
            raise CommandError(f'error: context "{chosen}" does not exist' if chosen else
                               "error: the kubeconfig names no current context: give --context")
        try:
            k8s_config.load_kube_config(config_file=merged, context=chosen, client_configuration=configuration,
                                        persist_config=False)
        except (k8s_config.ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
            raise CommandError(f"error: loading context {chosen}: {exc}") from exc
        default_namespace = str((found.get("context") or {}).get("namespace") or "default")
    elif env.get("KUBERNETES_SERVICE_HOST"):
        try:
            k8s_config.incluster_config.InClusterConfigLoader(
                token_filename=k8s_config.incluster_config.SERVICE_TOKEN_FILENAME,
                cert_filename=k8s_config.incluster_config.SERVICE_CERT_FILENAME, environ=dict(env),
            ).load_and_set(configuration)
        except (k8s_config.ConfigException, OSError) as exc:
            raise CommandError(f"error: in-cluster configuration: {exc}") from exc
        try:
            default_namespace = IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
        except OSError:
            default_namespace = "default"
    else:
        raise CommandError("error: no configuration: give --kubeconfig, set KUBECONFIG or write ~/.kube/config")
    configuration.retries = False
    return Target(k8s.ApiClient(configuration), namespace or default_namespace, configuration.host)


class KubeCluster:
    """The cluster behind ``target``: the Job, JobSets and Events by the kubernetes client, the pods
    and batch Jobs through ``reader`` (podread on its live clients). Read only."""

    def __init__(self, target: Target, *, timeout_seconds: float = TIMEOUT_SECONDS) -> None:
        self._target = target
        self._custom = k8s.CustomObjectsApi(target.api_client)
        self._events = k8s.EventsV1Api(target.api_client)
        self._timeout = (timeout_seconds, timeout_seconds)
        live = LiveClient(target.api_client, timeout_seconds=timeout_seconds)
        # the cache only makes one command's repeated reads of a Job's pods one list: it has no watch
        self._reader = Reader(PodCache(live, ttl_seconds=60.0), live,
                              nodes=NodeClient(target.api_client, timeout_seconds=timeout_seconds),
                              jobs=JobClient(target.api_client, timeout_seconds=timeout_seconds))

    @property
    def reader(self) -> Reader:
        return self._reader

    def get_job(self, namespace: str, name: str) -> dict[str, Any]:
        """The NVCRE Job ``name`` as the API server holds it; ``CommandError`` (NotFound) when there is none."""
        return self._call(lambda: self._custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name, _preload_content=False, _request_timeout=self._timeout),
            JOB_RESOURCE, name)

    def list_jobs(self, namespace: str | None, selector: str = "") -> Listed:
        """The NVCRE Jobs in ``namespace`` (every namespace for ``None``) whose labels match ``selector``
        (a label selector, as ``kubectl get -l``; the API server judges it), sorted by namespace and
        name, with the list's resourceVersion."""
        options: dict[str, Any] = {"_preload_content": False, "_request_timeout": self._timeout}
        if selector:
            options["label_selector"] = selector
        if namespace is None:
            body = self._call(lambda: self._custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, **options),
                              JOB_RESOURCE)
        else:
            body = self._call(lambda: self._custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, **options), JOB_RESOURCE)
        items = sorted(_items(body), key=lambda job: (str(job["metadata"].get("namespace", "")),
                                                      str(job["metadata"].get("name", ""))))
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        return Listed(items, str(metadata.get("resourceVersion") or ""))

    def watch_jobs(self, namespace: str | None, *, selector: str = "", name: str = "", resource_version: str = "",
                   timeout_seconds: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """The changes to the NVCRE Jobs of ``namespace`` (every namespace for ``None``) after
        ``resource_version``, as the kubernetes client's ``Watch`` streams them: ``(type, object)``,
        type ``ADDED``, ``MODIFIED`` or ``DELETED``. ``selector`` keeps the Jobs whose labels match,
        ``name`` one Job (``metadata.name`` field selector). Without ``timeout_seconds`` it goes on
        for as long as the caller reads (the client watches again from the last resourceVersion when
        the server ends a watch); with it, the server ends the watch after that long and so does the
        iterator. A failure is a ``CommandError`` (an expired resourceVersion: ``Error from server
        (Expired): ...``)."""
        options: dict[str, Any] = {}
        if timeout_seconds is not None:  # the server ends the watch then; without it, reads wait (a watch is quiet)
            options["_request_timeout"] = (self._timeout[0], timeout_seconds + self._timeout[1])
        if selector:
            options["label_selector"] = selector
        if name:
            options["field_selector"] = f"metadata.name={name}"
        if resource_version:
            options["resource_version"] = resource_version
        if timeout_seconds is not None:
            options["timeout_seconds"] = timeout_seconds
        args: tuple[Any, ...] = (GROUP, VERSION, PLURAL) if namespace is None else (GROUP, VERSION, namespace, PLURAL)
        func = self._custom.list_cluster_custom_object if namespace is None \
            else self._custom.list_namespaced_custom_object
        watcher = k8s_watch.Watch()
        try:
            for event in watcher.stream(func, *args, **options):
                raw = event.get("raw_object")
                obj = raw if isinstance(raw, dict) else event.get("object")
                if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
                    yield str(event.get("type", "")), obj
        except ApiException as exc:
            raise api_error(exc, JOB_RESOURCE) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise connection_error(self._target.server, exc) from exc
        except ValueError as exc:
            raise CommandError(f"error: the server's watch event is not JSON: {exc}") from exc
        finally:
            watcher.stop()

    def list_jobsets(self, namespace: str) -> list[dict[str, Any]]:
        """Every JobSet in ``namespace`` (the caller keeps a Job's own, by owner UID)."""
        body = self._call(lambda: self._custom.list_namespaced_custom_object(
            JOBSET_GROUP, JOBSET_VERSION, namespace, JOBSET_PLURAL, _preload_content=False,
            _request_timeout=self._timeout), f"{JOBSET_PLURAL}.{JOBSET_GROUP}")
        return _items(body)

    def list_events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The events.k8s.io Events in ``namespace`` regarding an object named ``name`` (the caller
        keeps those regarding the Job)."""
        body = self._call(lambda: self._events.list_namespaced_event(
            namespace, field_selector=f"regarding.name={name}", _preload_content=False,
            _request_timeout=self._timeout), "events.events.k8s.io")
        return _items(body)

    def _call(self, call: Any, resource: str, name: str | None = None) -> dict[str, Any]:
        """Sends one request and decodes its JSON; every failure becomes kubectl's ``CommandError``."""
        try:
            response = call()
            body = json.loads(response.data)
        except ApiException as exc:
            raise api_error(exc, resource, name) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise connection_error(self._target.server, exc) from exc
        except ValueError as exc:
            raise CommandError(f"error: the server's answer is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise CommandError("error: the server's answer is not a JSON object")
        return body


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = body.get("items")
    if not isinstance(items, list):
        raise CommandError("error: the server's answer is not a list")
    return [item for item in items if isinstance(item, dict) and isinstance(item.get("metadata"), dict)]


def api_error(exc: ApiException, resource: str, name: str | None = None) -> CommandError:
    """kubectl's line for an API error: ``Error from server (NotFound): <resource> "<name>" not
    found``; for a 404 without a named object, the resource type is not served (the CRD is not
    installed); otherwise ``Error from server (<reason>): <message>`` from the server's Status."""
    try:
        status = json.loads(exc.body or b"{}")
    except ValueError:
        status = {}
    status = status if isinstance(status, dict) else {}
    if not status and isinstance(exc.reason, str) and ": " in exc.reason:  # a watch's ERROR event: "Reason: message"
        reason, _, message = exc.reason.partition(": ")
        status = {"reason": reason, "message": message}
    reason = str(status.get("reason") or exc.reason or exc.status)
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    if exc.status == 404 and name is not None and details.get("name"):
        return CommandError(f'Error from server (NotFound): {resource} "{name}" not found')
    if exc.status == 404:
        return CommandError(f'error: the server doesn\'t have a resource type "{resource}"')
    message = str(status.get("message") or exc.reason or "")
    return CommandError(f"Error from server ({reason}): {message}")


def connection_error(server: str, exc: BaseException) -> CommandError:
    """kubectl's line for a server it cannot reach: refused, else "Unable to connect"."""
    text = str(exc)
    host = urlparse(server).netloc or server
    if "refused" in text.lower():
        return CommandError(f"The connection to the server {host} was refused - "
                            "did you specify the right host or port?")
    return CommandError(f"Unable to connect to the server: {text}")
