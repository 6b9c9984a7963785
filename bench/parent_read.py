"""What the parent check's live Job GET costs on the real API server, against the floor app's call.

Issue 32 item 4 asks for ``/sync`` p50 at concurrency 1 within 1.5x the floor app's p50
(``bench sync_http``: gunicorn, one keep-alive client). A ``/sync`` whose answer changes the Job's
status reads the whole Job live first (the parent check, ``hooks.server.freshness``, ADR-107): a
quorum GET, never a cache's copy. ``sync_http`` makes that GET to its wire-level fake API server;
this benchmark says what the same GET costs against the real one, so that the target can be read
against a fact: the 1.5x leaves 0.5x the floor's p50 for everything a ``/sync`` adds, the GET
included.

Measured in one run, nothing else in the process: the floor app's p50 over HTTP (as ``sync_http``
does); then ``LiveParentVersions.live_job`` (the production check, through the production client
``podread.environment.load_api_client``) in alternating batches against the fake API server and
against the real kube-apiserver (with etcd and kube-controller-manager, the hooks' own
ServiceAccount token: TLS, token review and RBAC as in production). For scale only, a GET with
``resourceVersion=0`` (answered from the API server's watch cache: any copy it holds, so not what
the check may send) shows how much of the GET is the quorum read.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import kubernetes
import orjson

from bench.common import BenchResult, Figure, percentile
from bench.sync_http import JOB, NAMESPACE, gunicorn, load, sync_body
from hooks.server.freshness import GROUP, PLURAL, VERSION, LiveParentVersions
from podread import rest
from podread.environment import load_api_client
from tests.fakekube import FakeKubeServer

BATCH = 200
"""GETs per batch; the sources alternate batch by batch, so a machine loaded by other work moves both alike."""


def job_object() -> dict[str, Any]:
    """The typical ``/sync``'s Job (``bench.sync_http.sync_body``) as it is created: its spec, no status."""
    parent = orjson.loads(sync_body())["parent"]
    return {"apiVersion": parent["apiVersion"], "kind": parent["kind"],
            "metadata": {"name": JOB, "namespace": NAMESPACE}, "spec": parent["spec"]}


def _client(kubeconfig: str) -> kubernetes.client.ApiClient:
    client, where = load_api_client({"KUBECONFIG": kubeconfig})
    if client is None:
        raise RuntimeError(f"no API client: {where}")
    return client


def timed_gets(get: Callable[[], object], count: int) -> list[float]:
    """The seconds each of ``count`` calls of ``get`` took."""
    seconds = []
    for _ in range(count):
        began = time.perf_counter()
        get()
        seconds.append(time.perf_counter() - began)
    return seconds


def alternate(sources: dict[str, Callable[[], object]], batches: int,
              per_batch: int | None = None) -> dict[str, list[float]]:
    """Every source's GET timings, the sources taken in turn batch by batch, ``per_batch`` GETs
    each (default ``BATCH``), after a warm-up of a quarter batch each (not kept)."""
    per_batch = BATCH if per_batch is None else per_batch
    for get in sources.values():
        timed_gets(get, per_batch // 4)
    timings: dict[str, list[float]] = {name: [] for name in sources}
    for _ in range(batches):
        for name, get in sources.items():
            timings[name] += timed_gets(get, per_batch)
    return timings


@contextmanager
def real_api_server(plane: Any = None, service_token: str | None = None) -> Iterator[tuple[Any, str]]:
    """The real control plane and a token of the hooks' ServiceAccount: the ones given, else a control
    plane started here with what ``make dev`` installs (``tests.cluster.dev.install``), stopped on exit."""
    if plane is not None and service_token is not None:
        yield plane, service_token
        return
    from tests.cluster.controlplane import ControlPlane
    from tests.cluster.dev import install

    with ControlPlane() as started:
        yield started, install(started).service_token


def _create_job(admin: kubernetes.client.ApiClient, namespace: str) -> None:
    core, custom = kubernetes.client.CoreV1Api(admin), kubernetes.client.CustomObjectsApi(admin)
    core.create_namespace({"metadata": {"name": namespace}})
    job = {**job_object(), "metadata": {"name": JOB, "namespace": namespace}}
    deadline = time.monotonic() + 30
    while True:  # the CRD may still be being established
        try:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, job)
            return
        except kubernetes.client.ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run(quick: bool = False, *, plane: Any = None, service_token: str | None = None) -> BenchResult:
    """The floor's p50, then the live Job GET on the fake and on the real API server, alternating."""
    result = BenchResult("parent_read", "The parent check's live Job GET: fake and real API server, and the floor")
    batches, seconds = (2, 0.5) if quick else (8, 3.0)
    body = sync_body()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nvcre-bench-")))
        with gunicorn("bench.floor_app:create_app()", {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                      tmp / "floor.log") as port:
            load(port, body, 1, 0.3)
            floor = load(port, body, 1, seconds)
        fake = stack.enter_context(FakeKubeServer())
        fake.put_job(orjson.loads(body)["parent"])
        fake_check = LiveParentVersions(_client(fake.write_kubeconfig(tmp / "fake-kubeconfig")))
        real, token = stack.enter_context(real_api_server(plane, service_token))
        namespace = f"bench-parent-read-{int(time.time() * 1000) % 10**9}"
        admin = real.api_client()
        _create_job(admin, namespace)
        stack.callback(kubernetes.client.CoreV1Api(admin).delete_namespace, namespace)
        hooks_client = _client(real.write_kubeconfig(tmp / "hooks-kubeconfig", token=token, user="nvcre-hooks"))
        real_check = LiveParentVersions(hooks_client)
        params = {"group": GROUP, "version": VERSION, "namespace": namespace, "plural": PLURAL, "name": JOB}
        timings = alternate({
            "fake API server (bench sync_http's)": lambda: fake_check.live_job(NAMESPACE, JOB),
            "real kube-apiserver, quorum read (what the check sends)": lambda: real_check.live_job(namespace, JOB),
            "real kube-apiserver, resourceVersion=0 (its watch cache; scale only)": lambda: rest.send(
                hooks_client, "GET", rest.CUSTOM_OBJECT_PATH, params=params, query=[("resourceVersion", "0")],
                accept="application/json", timeout=(10, 10)),
        }, batches)
    floor_ms = floor["p50_ms"]
    rows = [{"what": "floor app: one /sync over HTTP (gunicorn, concurrency 1)", "count": floor["requests"],
             "p50_ms": round(floor_ms, 3), "p99_ms": round(floor["p99_ms"], 3), "x_floor_p50": 1.0}]
    for name, values in timings.items():
        p50 = percentile(values, 0.5) * 1000
        rows.append({"what": f"live Job GET, {name}", "count": len(values), "p50_ms": round(p50, 3),
                     "p99_ms": round(percentile(values, 0.99) * 1000, 3), "x_floor_p50": round(p50 / floor_ms, 2)})
    result.tables["gets"] = rows
    quorum = percentile(next(v for k, v in timings.items() if "quorum" in k), 0.5) * 1000
    fake_p50 = percentile(next(v for k, v in timings.items() if k.startswith("fake")), 0.5) * 1000
    result.figures += [
        Figure("live Job GET p50, real kube-apiserver (the parent check's read)", quorum, "ms", floor_ms,
               "floor app p50", target="<= 0.5 x floor (what 1.5x leaves a /sync)", met=quorum <= 0.5 * floor_ms,
               note="a /sync that makes it cannot meet issue 32's 1.5x p50 when this is over 0.5x"),
        Figure("live Job GET p50, fake API server (bench sync_http's)", fake_p50, "ms", floor_ms, "floor app p50"),
    ]
    result.notes.append("the GETs run in this process, one at a time, as the hooks' worker thread sends them; the "
                        "API server and etcd share the same 2 cores")
    result.scale = {"gets_per_source": len(next(iter(timings.values()))), "batches": batches, "floor_seconds": seconds}
    return result
