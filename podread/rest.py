"""The one home of the requests the hooks send to the API server: a method, a path, its query and a
body, sent through the kubernetes client's ``ApiClient`` and answered raw.

``send`` builds the request with ``ApiClient.param_serialize`` and sends it with ``call_api``: the
client's configuration (host, token and its refresh, TLS, proxy), its connection pool and its
timeouts, exactly as the generated API methods use them. It does not go through the generated
``CoreV1Api``, ``BatchV1Api`` or ``CustomObjectsApi`` classes: the hooks read and write raw JSON
only, and those classes import 274 model modules and a pydantic validator for each of their
methods, about 24 MiB in every worker for nothing the hooks use (issue 36 item 2), and validate
every call's arguments once more (10-20 µs a call). What a generated method does besides sending is
done here the same way: the path's parameters quoted as the client quotes them, the query's values
serialized by the client (booleans as ``true``/``false``), the ``BearerToken`` auth setting, JSON
as the content type of a body, and an answer outside 2xx raised as ``ApiException`` with its body
read, as a generated method raises it under ``_preload_content=False``.

The paths are named here (``PODS_PATH``, ``BATCH_JOBS_PATH``, ...); a module outside podread that
names a pods path is a pod read outside podread (``tests/contract/test_layout.py`` looks for them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

PODS_PATH = "/api/v1/namespaces/{namespace}/pods"
"""The pods of a namespace: a list, or with ``watch=true`` a watch."""
ALL_PODS_PATH = "/api/v1/pods"
"""The pods of every namespace."""
POD_PATH = "/api/v1/namespaces/{namespace}/pods/{name}"
"""One pod (the force delete)."""
BATCH_JOBS_PATH = "/apis/batch/v1/namespaces/{namespace}/jobs"
"""The batch Jobs of a namespace."""
NODES_PATH = "/api/v1/nodes"
"""Every Node: a list, or with ``watch=true`` a watch."""
NODE_PATH = "/api/v1/nodes/{name}"
"""One Node."""
CUSTOM_OBJECT_PATH = "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}"
"""One namespaced custom object (the NVCRE Job)."""
EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"
"""The ``events.k8s.io/v1`` Events of a namespace."""
ACCESS_REVIEWS_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
"""The hooks' own ``SelfSubjectAccessReview``."""
GROUP_VERSION_PATH = "/apis/{group}/{version}"
"""The discovery document of an API group version (its resources)."""

Query = Sequence[tuple[str, Any]]
"""The query's parameters by their API names (``labelSelector``, ``continue``, ...), in order."""


def send(api_client: k8s.ApiClient, method: str, path: str, *, params: Mapping[str, str] | None = None,
         query: Query = (), body: Any = None, accept: str = "application/json",
         timeout: float | tuple[float, float] | None = None) -> bytes:
    """Sends ``method`` ``path`` (its ``{placeholders}`` filled from ``params``, quoted) with
    ``query`` and a JSON ``body`` through ``api_client``, asking for ``accept``; ``timeout`` is the
    client's ``_request_timeout`` (connect and read, or in all). Returns the whole answer's body,
    read (the connection goes back to the pool).

    Raises ``ApiException`` (``status``, ``reason``, ``body``) when the API server answers outside
    2xx, and urllib3's ``HTTPError`` or ``OSError`` when the request fails on its way, as the client
    raises them."""
    return _response(api_client, method, path, params, query, body, accept, timeout).data


def open_stream(api_client: k8s.ApiClient, path: str, *, params: Mapping[str, str] | None = None,
                query: Query = (), timeout: float | tuple[float, float] | None = None) -> Any:
    """``GET path`` as ``send`` sends it, for a watch (``watch=true`` in ``query``): returns the
    urllib3 response unread, its events streamed from it as they come. Raises as ``send``."""
    return _response(api_client, "GET", path, params, query, None, "application/json", timeout)


def _response(api_client: k8s.ApiClient, method: str, path: str, params: Mapping[str, str] | None, query: Query,
              body: Any, accept: str, timeout: float | tuple[float, float] | None) -> Any:
    headers = {"Accept": accept}
    if body is not None:
        headers["Content-Type"] = "application/json"
    request = api_client.param_serialize(method, path, path_params=dict(params) if params else None,
                                         query_params=list(query), header_params=headers, body=body,
                                         auth_settings=["BearerToken"])
    response = api_client.call_api(*request, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response
