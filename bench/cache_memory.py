"""Benchmark 4: what the pod cache retains per pod, and how its reads and fills grow.

The cache's source here is an in-memory lister that parses a job's PodList JSON on every list
(fresh dicts each time, as ``LiveClient`` hands them over, without the HTTP round trip, which
benchmark 3 measures). The clock is fixed, so nothing expires while we measure.

- Retained bytes per cached pod (tracemalloc), for realistic pods (``bench.pods``): what the cache
  keeps (slim, ``podread.slim``) against the parsed pods and the JSON size.
- The watch-fed store (``NVCRE_CACHE_MODE=watch``) holding every NVCRE pod of a cluster: 64,000
  realistic pods (1,000 Jobs of 64) decoded page by page, made slim and indexed by job and node as
  the watch's list does: retained bytes per pod (target <= 3 KB) and in all (target < 250 MB per
  worker), and the compact JSON size the ``podread_watch_bytes`` metric reports.
- Departed pods (issue 34): a store holding ``podread.watch.MAX_DEPARTED`` realistic workers seen
  deleted after a preemption (``DisruptionTarget``, a container killed with 137), as
  ``WatchedPods.departed`` keeps them (``podread.slim.evidence``): retained bytes per pod and in all,
  and the same with a 4 KiB termination message per pod (the kubelet's bound per container). The
  8,000-pod figures do not move: nothing is kept until a failing pod is deleted.
- Per hooks pod (issue 36 item 2): the real gunicorn (``hooks/server/gunicorn.conf.py``, as the image
  runs it) against the wire-level fake API server (``tests.fakekube.FakeKubeServer``) holding 8,000
  realistic pods (125 Jobs of 64) in the watched namespace, once with the shipped layout and once with
  the old one (2 workers x 4 threads): once every worker's watch has listed them all and answered
  syncs for a while, the PSS of the master and of every worker (``/proc/<pid>/smaps_rollup``), summed:
  what the pod's cgroup is charged, each page once (a page master and worker share split between
  them), with its anonymous part; beside it their VmRSS summed (``/proc/<pid>/status``: a shared page
  counted in each) and the pages resident in the pod counted once by frame number (``unique_kib``:
  the shared libraries' pages in full, which PSS shares with other processes on the machine).
  Target: a PSS sum of at most 120 MiB per hooks pod at 8,000 pods (``hooks_pod_memory``;
  ``python -m bench.cache_memory pod`` runs only this part). Its options set a heavier ``Load``, a
  reproduction of a large install under load in about a minute: 20 callers on 20 threads, held
  drains that decode live pod and batch Job lists, the pods created and written again during the
  calls, the fake API server over TLS (BENCHMARKS.md section 4, "What the load adds").
- Growth: the cost of one cached read (``Reader.job_pods`` on a warm entry) and of one fill
  (a miss: list, strip, store) from 10 to 10,000 pods per job (100 other jobs of 64 pods cached),
  and from 10 to 1,000 jobs of 64 pods. Both should grow with the pods of the job read only.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.common import BenchResult, Figure, per_call
from bench.pods import realistic_job_pods, realistic_pod
from bench.raw_json import retained_bytes
from hooks.server.config import MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD
from podread import JOB_LABEL, PodCache, PodSelector, Reader, ReadMetrics
from podread.slim import evidence, slim
from podread.watch import MAX_DEPARTED, WatchedPods
from tests.fakekube import make_job_pods

NAMESPACE = "bench"
POD_TARGET_MIB = 120.0
"""Issue 36 item 2: a whole hooks pod (gunicorn master and workers) holding 8,000 pods."""
IMAGE_ENV = {"MALLOC_ARENA_MAX": str(MALLOC_ARENA_MAX), "MALLOC_MMAP_THRESHOLD_": str(MALLOC_MMAP_THRESHOLD)}
"""What the image's environment adds (the Dockerfile's ``ENV``) that bears on memory."""
LAYOUTS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "as shipped": ((), IMAGE_ENV),
    "2 workers x 4 threads, glibc's default arenas (the layout before issue 36)": (("--workers", "2", "--threads", "4"),
                                                                                 {}),
}
"""The gunicorn options and environment ``hooks_pod_memory`` is run with in ``run``: what the image
runs, and the old default layout (with today's podread: the watch's smaller pages are not undone)."""


class RawLister:
    """A PodLister over pre-serialized PodList items per job: every list parses the JSON anew."""

    def __init__(self) -> None:
        self.raw: dict[str, bytes] = {}
        self.lists = 0

    def add(self, job: str, pods: list[dict[str, Any]]) -> None:
        self.raw[job] = orjson.dumps(pods)

    def list_pods(self, selector: PodSelector) -> list[dict[str, Any]]:
        self.lists += 1
        return orjson.loads(self.raw.get(selector.labels.get(JOB_LABEL, ""), b"[]"))


def _name(index: int) -> str:
    return f"job-{index:06d}"


def _template(count: int) -> bytes:
    """``count`` lean pods of job ``job-000000`` as JSON; other jobs are made by renaming the bytes."""
    return orjson.dumps(make_job_pods(_name(0), count, NAMESPACE))


def _reader(lister: RawLister) -> tuple[Reader, PodCache]:
    metrics = ReadMetrics(registry=_registry())
    cache = PodCache(lister, ttl_seconds=3600, max_entries=100_000, clock=lambda: 0.0, metrics=metrics)
    return Reader(cache, None, metrics=metrics), cache


def _registry() -> Any:
    from prometheus_client import CollectorRegistry

    return CollectorRegistry()


def _fill_seconds(reader: Reader, jobs: list[str]) -> float:
    """Median seconds of one fill (a first read) over ``jobs``."""
    times = []
    for job in jobs:
        started = time.perf_counter()
        reader.job_pods(NAMESPACE, job)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def growth_row(pods_per_job: int, jobs: int, probe_jobs: int, *, other_pods: int = 64) -> dict[str, Any]:
    """One row: a cache holding ``jobs`` jobs (the first ``probe_jobs`` have ``pods_per_job`` pods, the
    rest ``other_pods``); the hit and fill cost of a job of ``pods_per_job`` pods."""
    lister = RawLister()
    probe_raw = _template(pods_per_job)
    other_raw = probe_raw if other_pods == pods_per_job else _template(other_pods)
    old = _name(0).encode()
    for index in range(jobs + probe_jobs):
        raw = probe_raw if index < probe_jobs or index >= jobs else other_raw
        lister.raw[_name(index)] = raw.replace(old, _name(index).encode())
    reader, cache = _reader(lister)
    for index in range(probe_jobs, jobs):
        reader.job_pods(NAMESPACE, _name(index))
    gc.collect()
    fill = _fill_seconds(reader, [_name(i) for i in range(probe_jobs)]
                         + [_name(i) for i in range(jobs, jobs + probe_jobs)])
    hit = per_call(lambda: reader.job_pods(NAMESPACE, _name(0)), min_seconds=0.1)
    cached_pods = sum(len(entry.pods) for entry in cache._entries.values())
    return {"pods_per_job": pods_per_job, "jobs": len(cache), "cached_pods": cached_pods,
            "hit_us": round(hit * 1e6, 1), "fill_ms": round(fill * 1000, 3),
            "hit_ns_per_pod_of_job": round(hit * 1e9 / pods_per_job, 1)}


def watched_store(jobs: int, pods_per_job: int = 64) -> tuple[int, int, int, WatchedPods]:
    """(retained bytes, pods, JSON bytes of the slim pods, the store) of a WatchedPods holding
    ``jobs`` Jobs of realistic pods, filled as the watch's list fills it (each page decoded, made
    slim, then stored)."""
    template = orjson.dumps(realistic_job_pods(_name(0), pods_per_job, NAMESPACE))
    old = _name(0).encode()

    def fill() -> WatchedPods:
        store = WatchedPods(None, ttl_seconds=5.0, clock=lambda: 0.0, metrics=ReadMetrics(registry=_registry()))
        pods = [slim(pod) for index in range(jobs)
                for pod in orjson.loads(template.replace(old, _name(index).encode()))]
        store.replace(pods, "1")
        return store

    retained, store = retained_bytes(fill)
    return retained, len(store), store.bytes, store


def _preempted(pod: dict[str, Any], index: int, message: str) -> dict[str, Any]:
    """``pod`` as the DELETED event of its preemption shows it."""
    pod["metadata"]["resourceVersion"] = str(10 + index)
    pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = f"{_name(index // 64)}-0"
    status = pod.setdefault("status", {})
    status["phase"] = "Failed"
    status.setdefault("conditions", []).append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
         "message": "Preempted by pod 5f0c0a5e-0d4e-4b41-9a77-2c1e0f1e6a11 on node kwok-node-3",
         "lastTransitionTime": "2026-12-06T12:00:00Z"})
    for number, container in enumerate(status.get("containerStatuses") or ()):
        text = f"{index:06d}{number}{message}"[:len(message)]  # each container's own string, as decoded
        container["state"] = {"terminated": {"exitCode": 137, "reason": "Error", "message": text,
                                             "finishedAt": "2026-12-06T12:00:01Z", "containerID": "containerd://ab"}}
    return pod


def departed_store(count: int, message: str = "") -> tuple[int, int]:
    """(retained bytes, departed pods) of a WatchedPods that saw ``count`` realistic preempted workers
    deleted (``count`` at most ``MAX_DEPARTED`` are kept), each terminated with ``message``."""
    raw = orjson.dumps(realistic_job_pods(_name(0), 64, NAMESPACE))

    def fill() -> WatchedPods:
        store = WatchedPods(None, ttl_seconds=5.0, clock=lambda: 0.0, metrics=ReadMetrics(registry=_registry()))
        store.replace([], "1")
        for index in range(count):
            pod = _preempted(orjson.loads(raw)[index % 64], index, message)
            pod["metadata"]["name"] = f"{pod['metadata']['name']}-{index}"
            store.apply("DELETED", slim(pod), last_seen=evidence(pod))
        return store

    retained, store = retained_bytes(fill)
    return retained, store.departed_count()


@dataclass(frozen=True)
class ProcessMemory:
    """One process of a hooks pod: its role (``master`` or ``worker``), VmRSS and PSS in KiB (PSS
    ``None`` where ``/proc/<pid>/smaps_rollup`` cannot be read)."""

    pid: int
    role: str
    rss_kib: int
    pss_kib: int | None
    pss_anon_kib: int | None = None
    """The anonymous part of ``pss_kib`` (heap, stacks): shared only among the pod's own processes."""


@dataclass
class PodMemory:
    """What ``hooks_pod_memory`` measured: every process of the pod and the pods each worker's watch held."""

    layout: tuple[str, ...]
    pods: int
    processes: list[ProcessMemory] = field(default_factory=list)
    watched_pods: float = 0.0
    """``podread_watch_pods`` summed over the workers (each worker's cache counts its own pods)."""
    syncs: int = 0
    drains: int = 0
    """Held drains posted (``Load.drain_every``); ``syncs`` counts the Running syncs."""
    load: Load | None = None
    unique_kib: int | None = None
    """The pages resident in the pod's processes, each physical page once (``unique_kib``)."""

    @property
    def workers(self) -> int:
        return sum(p.role == "worker" for p in self.processes)

    @property
    def rss_mib(self) -> float:
        return sum(p.rss_kib for p in self.processes) / 1024

    @property
    def pss_mib(self) -> float | None:
        sizes = [p.pss_kib for p in self.processes]
        return None if not sizes or None in sizes else sum(s or 0 for s in sizes) / 1024

    @property
    def pss_anon_mib(self) -> float | None:
        sizes = [p.pss_anon_kib for p in self.processes]
        return None if not sizes or None in sizes else sum(s or 0 for s in sizes) / 1024

    def row(self) -> dict[str, Any]:
        """The table row: the pod's PSS sum first (what its cgroup is charged, each page once), its
        anonymous part, the RSS sum beside it, then PSS / RSS by process."""
        def mib(kib: int | None) -> str:
            return "-" if kib is None else f"{kib / 1024:.1f}"

        def by_role(role: str) -> str:
            return ", ".join(f"{mib(p.pss_kib)} / {mib(p.rss_kib)}" for p in self.processes if p.role == role)

        pss, anon = self.pss_mib, self.pss_anon_mib
        return {"layout": " ".join(self.layout) or "as shipped", "workers": self.workers, "pods": self.pods,
                "pods watched (sum)": int(self.watched_pods), "syncs": self.syncs, "held drains": self.drains,
                "PSS MiB (pod)": "-" if pss is None else round(pss, 1),
                "PSS anon MiB": "-" if anon is None else round(anon, 1),
                "RSS MiB (pod)": round(self.rss_mib, 1),
                "pages once MiB (pod)": "-" if self.unique_kib is None else round(self.unique_kib / 1024, 1),
                "master PSS / RSS MiB": by_role("master"), "worker PSS / RSS MiB": by_role("worker")}


def process_memory(pid: int, role: str) -> ProcessMemory | None:
    """``pid``'s VmRSS (``/proc/<pid>/status``) and PSS (``/proc/<pid>/smaps_rollup``), or ``None``
    when the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    try:
        rollup = dict(line.split()[:2] for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    except (OSError, ValueError):
        rollup = {}
    pss, anon = rollup.get("Pss:"), rollup.get("Pss_Anon:")
    return ProcessMemory(pid, role, rss, None if pss is None else int(pss), None if anon is None else int(anon))


_PFN_MASK = (1 << 55) - 1
_PAGE_PRESENT = 1 << 63


def resident_pages(pid: int) -> set[int] | None:
    """The physical page frames ``pid`` has resident (``/proc/<pid>/pagemap``: the present bit and the
    frame number of every page of every mapping in ``/proc/<pid>/maps``), or ``None`` when the process
    is gone or the frame numbers are hidden (the kernel shows them only to CAP_SYS_ADMIN: all zero)."""
    frames: set[int] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb", buffering=0) as pagemap:
            for line in maps:
                start, end = (int(part, 16) // 4096 for part in line.split(None, 1)[0].split("-"))
                if line.rstrip().endswith("[vsyscall]"):
                    continue
                pagemap.seek(start * 8)
                entries = memoryview(pagemap.read((end - start) * 8)).cast("Q")
                frames.update(entry & _PFN_MASK for entry in entries if entry & _PAGE_PRESENT)
    except OSError:
        return None
    return None if frames == {0} else frames


def unique_kib(pids: Sequence[int]) -> int | None:
    """The pages resident in any of ``pids``, each physical page once (the union of their frames):
    what a cgroup holding only these processes is charged for their mapped memory, the shared
    libraries' pages included however many other processes on the machine map them. ``None`` when a
    process is gone or the frame numbers are hidden."""
    union: set[int] = set()
    for pid in pids:
        frames = resident_pages(pid)
        if frames is None:
            return None
        union |= frames
    return len(union) * 4


def pod_processes(master: int, workers: Sequence[int]) -> list[ProcessMemory]:
    """The memory of a hooks pod's processes: gunicorn's ``master`` and its ``workers``."""
    found = [process_memory(master, "master"), *(process_memory(pid, "worker") for pid in workers)]
    return [p for p in found if p is not None]


@dataclass(frozen=True)
class Load:
    """What ``hooks_pod_memory`` posts once the watches are full: ``clients`` callers on keep-alive
    connections for ``seconds``, each cycling through the Jobs; of every ``drain_every`` calls of a
    caller, one is a held drain (0: none) and the rest Running syncs; then ``settle_seconds`` with no
    call before the memory is read.

    A Running sync reads the pod cache only (its count matches). A held drain is a ``/finalize`` of a
    Job whose JobSet is gone while all its pods are still active, as at a restart's or an end's
    drain at scale: the barrier's live reads (``hooks.core.barrier.drain_reads``): the Job's pods by
    JobSet's label, whole, decoded from the API server's answer, its launcher pods and its batch
    Jobs (two lists), and the live Job GET; it answers "not finalized" (``Drained=False``,
    ``PodsActive``), checked for every call."""

    clients: int = 5
    seconds: float = 10.0
    drain_every: int = 0
    settle_seconds: float = 0.0
    tls: bool = False
    """The fake API server answers over TLS (``tls_fake``), as a real one does: the hooks' client
    makes an ``SSLContext`` and a handshake for each connection it opens."""
    start: bool = False
    """The pods come while the callers post, as when the Jobs start: the API server holds none when
    the watch lists; in the first 80 % of ``seconds`` every Job's pods are created Pending, then
    made Running (two watch events a pod, interleaved with the calls), so the watch builds its store
    among the calls' garbage, and a sync whose count differs reads live. Only the status code of an
    answer is checked then (a drain with no pod yet passes)."""

    churn: int = 0
    """How many times every pod is written again during the calls (each write a ``MODIFIED`` watch
    event: the watch replaces the pod's slim copy), spread over ``seconds`` (with ``start``, over
    the last 20 %)."""

    def describe(self) -> str:
        drains = f", 1 call in {self.drain_every} a held drain" if self.drain_every else ""
        settle = f", read {self.settle_seconds:g} s after the last call" if self.settle_seconds else ""
        start = ", the pods created during the calls" if self.start else ""
        tls = ", over TLS" if self.tls else ""
        churn = f", every pod written {self.churn} more times" if self.churn else ""
        return f"{self.clients} callers for {self.seconds:g} s{drains}{start}{churn}{tls}{settle}"


QUIET = Load()
"""The load ``run`` measures with: 5 callers of Running syncs (cache reads only) for 10 s."""


def hooks_pod_memory(pods: int = 8000, layout: Sequence[str] = (), extra_env: dict[str, str] | None = None, *,
                     pods_per_job: int = 64, load: Load = QUIET, timeout: float = 120.0) -> PodMemory:
    """Starts the real gunicorn with ``hooks/server/gunicorn.conf.py`` and the extra options ``layout``
    (``tests.e2e.server.HookServer``, watch mode, one watched namespace, ``extra_env``) against a ``FakeKubeServer``
    holding ``pods`` realistic pods (Jobs of ``pods_per_job``, each with its live Job), posts Running
    syncs of those Jobs from ``load.clients`` callers until every worker's watch holds every pod
    (``podread_watch_pods`` = pods x workers), then ``load`` (``Load``), and reads the memory of the
    master and every worker. Raises ``RuntimeError`` when the watches do not fill in ``timeout``, or
    when an answer is not what its call must get (a Running Job kept, a held drain held)."""
    from tests.e2e.server import HookServer
    from tests.fakekube import FakeKubeServer
    from tests.server.test_load import NAMESPACE as LOAD_NAMESPACE
    from tests.server.test_load import running_request

    jobs = max(1, pods // pods_per_job)
    env = {"NVCRE_CACHE_MODE": "watch", "NVCRE_WATCH_NAMESPACES": LOAD_NAMESPACE, "NVCRE_CACHE_TTL_SECONDS": "5",
           "NVCRE_RESYNC_SECONDS": "5", "NVCRE_API_TIMEOUT_SECONDS": "3", "NVCRE_LOG_LEVEL": "WARNING",
           **(extra_env or {})}
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(tls_fake(stack) if load.tls else FakeKubeServer())
        for index in range(jobs):
            if not load.start:
                fake.put_pods(realistic_job_pods(f"job-{index}", pods_per_job, LOAD_NAMESPACE))
            fake.put_job(orjson.loads(running_request(index, pods_per_job))["parent"])
        bodies = [running_request(index, pods_per_job) for index in range(jobs)]
        drains = [held_drain_request(body) for body in bodies]
        with HookServer(fake, env=env, args=list(layout), startup_timeout=60.0) as server:
            workers = server.worker_pids()
            result = PodMemory(tuple(layout), jobs * pods_per_job, load=load)
            sent = [0, 0]
            failed: list[str] = []

            def post_for(seconds: float, drain_every: int = 0, strict: bool = True) -> None:
                def client(offset: int) -> None:
                    ends = time.monotonic() + seconds
                    index, calls = offset, 0
                    while time.monotonic() < ends and not failed:
                        calls += 1
                        drain = drain_every > 0 and calls % drain_every == 0
                        path, body = ("/finalize", drains[index % jobs]) if drain else ("/sync", bodies[index % jobs])
                        code, answer = server.post(path, body, timeout=30.0)
                        if problem := _wrong_answer(code, answer, drain if strict else None):
                            failed.append(f"job-{index % jobs} {path}: {problem}")
                        sent[drain] += 1
                        index += load.clients
                callers = [threading.Thread(target=client, args=(n,)) for n in range(load.clients)]
                for thread in callers:
                    thread.start()
                for thread in callers:
                    thread.join()
                if failed:
                    raise RuntimeError(f"{len(failed)} wrong answers, the first: {failed[0]}")

            def write_pods() -> None:
                if load.start:
                    _start_pods(fake, jobs, pods_per_job, load.seconds * 0.8)
                for _ in range(load.churn):
                    _start_pods(fake, jobs, pods_per_job, load.seconds * (0.2 if load.start else 1.0) / load.churn,
                                pending=False)

            writing = threading.Thread(target=write_pods)
            if load.start:
                writing.start()
                post_for(load.seconds, load.drain_every, strict=False)
                writing.join()
            deadline = time.monotonic() + timeout
            while _watched(server) < result.pods * len(workers):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the watches hold {_watched(server)} pods, not {result.pods} x {len(workers)}")
                post_for(1.0)
            if not load.start:
                writing.start()
                post_for(load.seconds, load.drain_every)
                writing.join()
            time.sleep(load.settle_seconds)
            gc.collect()
            result.watched_pods = _watched(server)
            result.syncs, result.drains = sent
            result.processes = pod_processes(server.pid, server.worker_pids())
            result.unique_kib = unique_kib([p.pid for p in result.processes])
    return result


def tls_fake(stack: contextlib.ExitStack) -> Any:
    """A ``FakeKubeServer`` that answers over TLS, with a self-signed certificate for 127.0.0.1 made
    by the ``openssl`` command in a temporary directory (removed by ``stack``), which the
    kubeconfig it writes trusts (``certificate-authority``)."""
    import ssl
    import subprocess
    import tempfile

    from tests.fakekube import FakeKubeServer

    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nvcre-bench-tls-")))
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)

    class TlsFakeKubeServer(FakeKubeServer):
        def __init__(self) -> None:
            super().__init__()
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)

        @property
        def url(self) -> str:
            return "https" + super().url[len("http"):]

        def kubeconfig_dict(self, namespace: str = "default") -> dict[str, Any]:
            config = super().kubeconfig_dict(namespace)
            config["clusters"][0]["cluster"]["certificate-authority"] = str(cert)
            return config

    return TlsFakeKubeServer()


def _start_pods(fake: Any, jobs: int, pods_per_job: int, seconds: float, *, pending: bool = True) -> None:
    """Creates the pods of ``jobs`` Jobs in ``fake`` over ``seconds`` (``Load.start``), Job after Job:
    each Job's pods Pending, and those of the Job created a few Jobs before made Running; with
    ``pending`` false, only writes every pod Running again (``Load.churn``)."""
    from tests.server.test_load import NAMESPACE as LOAD_NAMESPACE

    lag = 5 if pending else 0
    begun = time.monotonic()
    for index in range(jobs + lag):
        if index < jobs and pending:
            fake.put_pods([realistic_pod(f"job-{index}", pod, LOAD_NAMESPACE, phase="Pending")
                           for pod in range(pods_per_job)])
        if index >= lag:
            fake.put_pods(realistic_job_pods(f"job-{index - lag}", pods_per_job, LOAD_NAMESPACE))
        time.sleep(max(0.0, begun + seconds * (index + 1) / (jobs + lag) - time.monotonic()))


def held_drain_request(sync: bytes) -> bytes:
    """The ``/finalize`` request of the Job of Running ``sync`` once its JobSet is gone (deleted by
    Metacontroller) while its pods are all still active: a drain that holds (``Load``)."""
    request = orjson.loads(sync)
    request["finalizing"] = True
    request["children"] = {group: {} for group in request["children"]}
    return orjson.dumps(request)


def _wrong_answer(code: int, body: bytes, drain: bool | None) -> str:
    """What is wrong with an answer of ``hooks_pod_memory``'s load, or ``""``: a Running sync keeps
    its JobSet and stays Running; a held drain answers not finalized, held by its active pods;
    with ``drain`` ``None`` (the pods still coming) only that it is a 200."""
    if code != 200:
        return f"{code} {body[:200]!r}"
    if drain is None:
        return ""
    answer = orjson.loads(body)
    status = answer.get("status") or {}
    if drain:
        held = [c for c in status.get("conditions", []) if c.get("type") == "Drained" and c.get("status") == "False"]
        return "" if answer.get("finalized") is False and held else f"not held: {body[:200]!r}"
    return "" if status.get("phase") == "Running" and len(answer.get("children") or []) == 1 else (
        f"not kept Running: {body[:200]!r}")


def _watched(server: Any) -> float:
    """``podread_watch_pods`` summed over the workers, from the master's metrics port."""
    from bench.cluster_measures import HookMetrics

    return HookMetrics.parse(server.metrics()).watch_pods


def pod_memory_figures(measured: Sequence[PodMemory]) -> list[Figure]:
    """One figure per layout: the whole pod's PSS sum (what its cgroup is charged: each physical page
    once, a page the master and a worker share split between them) against the target, or the RSS
    sum where PSS cannot be read; the RSS sum and the split by process in the note."""
    figures = []
    for memory in measured:
        pss = memory.pss_mib
        value, kind = (memory.rss_mib, "RSS") if pss is None else (pss, "PSS")
        figures.append(Figure(
            f"hooks pod, {memory.pods:,} pods watched, {' '.join(memory.layout) or 'as shipped'}: {kind} of "
            f"master + {memory.workers} worker(s)", value, "MiB", POD_TARGET_MIB, "target",
            target=f"<= {POD_TARGET_MIB:g} MiB" if memory.pods >= 8000 else "",
            met=value <= POD_TARGET_MIB if memory.pods >= 8000 else None,
            note=(f"RSS {memory.rss_mib:.1f} MiB; PSS / RSS by process: "
                  + ", ".join(f"{p.role} {'-' if p.pss_kib is None else f'{p.pss_kib / 1024:.1f}'}"
                              f" / {p.rss_kib / 1024:.1f}" for p in memory.processes))))
    return figures


def run(quick: bool = False) -> BenchResult:
    """Retained bytes per cached pod, then the two growth tables."""
    result = BenchResult("cache_memory", "Cache memory and growth")
    jobs = 3 if quick else 20
    lister = RawLister()
    for index in range(jobs):
        lister.add(_name(index), realistic_job_pods(_name(index), 64, NAMESPACE))
    pods = jobs * 64
    json_bytes = sum(len(raw) for raw in lister.raw.values())

    def fill() -> PodCache:
        reader, cache = _reader(lister)
        for index in range(jobs):
            reader.job_pods(NAMESPACE, _name(index))
        return cache

    cached, cache = retained_bytes(fill)
    parsed, _ = retained_bytes(lambda: [lister.list_pods(PodSelector(labels={JOB_LABEL: _name(i)}))
                                        for i in range(jobs)])
    del cache
    watched_jobs = 3 if quick else 1000
    watched, watched_pods, watched_json, store = watched_store(watched_jobs)
    del store
    per_pod = watched / watched_pods
    result.figures += [
        Figure("retained bytes per cached pod (TTL entries, slim)", cached / pods, "B/pod", parsed / pods,
               "parsed pod, whole", note=f"JSON {json_bytes / pods:.0f} B/pod; {pods} realistic pods"),
        Figure("retained bytes per watched pod (slim, indexed by job and node)", per_pod, "B/pod", parsed / pods,
               "parsed pod, whole", target="<= 3 KB/pod", met=per_pod <= 3 * 1024,
               note=f"{watched_pods} realistic pods; their slim JSON {watched_json / watched_pods:.0f} B/pod "
                    f"(podread_watch_bytes)"),
        Figure(f"retained by the watch-fed store, {watched_pods:,} pods", watched / 1e6, "MB", 250.0,
               "250 MB per worker", target="< 250 MB for 64,000 pods" if not quick else "",
               met=(watched / 1e6 < 250.0) if not quick else None,
               note=f"64,000 pods at this rate: {per_pod * 64_000 / 1e6:.0f} MB"),
    ]
    result.tables["watched_store"] = [{
        "pods": watched_pods, "jobs": watched_jobs, "retained_mb": round(watched / 1e6, 1),
        "bytes_per_pod": round(per_pod), "slim_json_bytes_per_pod": round(watched_json / watched_pods),
        "x_slim_json": round(watched / max(watched_json, 1), 2)}]
    departed_count = 200 if quick else MAX_DEPARTED
    departed, kept = departed_store(departed_count)
    departed_long, _ = departed_store(departed_count, "x" * 4096)
    result.figures += [
        Figure(f"retained by the departed pods, {kept:,} (MAX_DEPARTED) preempted workers", departed / 1e6, "MB",
               watched / 1e6, f"the store of {watched_pods:,} pods",
               note=f"{departed / kept:.0f} B/pod; with a 4 KiB termination message each "
                    f"{departed_long / kept:.0f} B/pod, {departed_long / 1e6:.1f} MB"),
    ]
    result.tables["departed"] = [{"pods": kept, "retained_mb": round(departed / 1e6, 2),
                                  "bytes_per_pod": round(departed / kept),
                                  "bytes_per_pod_4k_message": round(departed_long / kept)}]
    sizes = (10, 100, 1000) if quick else (10, 100, 1000, 10_000)
    by_pods = [growth_row(size, 100 if not quick else 10, 3 if size >= 10_000 else 5) for size in sizes]
    job_counts = (10, 100) if quick else (10, 100, 1000)
    by_jobs = [growth_row(64, count, 5, other_pods=64) for count in job_counts]
    result.tables["by_pods_per_job"] = by_pods
    result.tables["by_jobs"] = by_jobs
    small, large = by_pods[0], by_pods[-1]
    few, many = by_jobs[0], by_jobs[-1]
    result.figures += [
        Figure(f"cached read, {large['pods_per_job']} vs {small['pods_per_job']} pods per job",
               large["hit_us"], "us", small["hit_us"], f"{small['pods_per_job']} pods",
               note=f"pods ratio {large['pods_per_job'] / small['pods_per_job']:.0f}x: grows with the job's pods"),
        Figure(f"fill, {large['pods_per_job']} vs {small['pods_per_job']} pods per job", large["fill_ms"], "ms",
               small["fill_ms"], f"{small['pods_per_job']} pods"),
        Figure(f"cached read, {many['jobs']} vs {few['jobs']} jobs cached (64 pods each)", many["hit_us"], "us",
               few["hit_us"], f"{few['jobs']} jobs", target="~1x (independent of other jobs)",
               met=many["hit_us"] <= 1.5 * few["hit_us"]),
        Figure(f"fill, {many['jobs']} vs {few['jobs']} jobs cached (64 pods each)", many["fill_ms"], "ms",
               few["fill_ms"], f"{few['jobs']} jobs", target="~1x (independent of other jobs)",
               met=many["fill_ms"] <= 1.5 * few["fill_ms"]),
    ]
    result.scale = {"memory_pods": pods, "memory_jobs": jobs, "pod_sizes": list(sizes), "job_counts": list(job_counts),
                    "growth_pods": "tests.fakekube.make_job_pods (lean, ~2.3 KB JSON)",
                    "memory_pods_kind": "bench.pods.realistic_pod (~8 KB JSON)"}
    result.notes.append("the source parses JSON in memory (no HTTP): fill times are parse + strip + store")
    pod_memory = [hooks_pod_memory(800 if quick else 8000, layout, env) for layout, env in LAYOUTS.values()]
    result.figures += pod_memory_figures(pod_memory)
    result.tables["per_hooks_pod"] = [memory.row() for memory in pod_memory]
    return result


LOAD_OPTIONS = {"--clients": "clients", "--seconds": "seconds", "--drain-every": "drain_every",
                "--settle": "settle_seconds", "--churn": "churn"}
"""``main``'s options that set the ``Load`` (each followed by its value; ``--start`` alone sets
``Load.start``); ``--pods-per-job`` sets the Jobs' size."""


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.cache_memory pod [pods] [--pods-per-job N] [--clients N] [--seconds S]
    [--drain-every K] [--settle S] [--start] [--churn N] [--tls] [gunicorn options ...]``: only the
    per-pod memory, printed (the layouts of ``LAYOUTS`` unless gunicorn options are given). The load
    options set ``Load``: e.g. under load as a large install starts and drains, ``pod 8000
    --pods-per-job 8 --clients 20 --drain-every 2 --seconds 60 --start --churn 3 --tls --workers 1
    --threads 20``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "pod":
        print(main.__doc__)
        return 2
    pods = int(args[1]) if len(args) > 1 and not args[1].startswith("-") else 8000
    rest = args[2:] if len(args) > 1 and not args[1].startswith("-") else args[1:]
    load: dict[str, Any] = {}
    pods_per_job = 64
    options: list[str] = []
    while rest:
        option = rest.pop(0)
        if option == "--pods-per-job":
            pods_per_job = int(rest.pop(0))
        elif option in ("--start", "--tls"):
            load[option[2:]] = True
        elif option in LOAD_OPTIONS:
            field_name = LOAD_OPTIONS[option]
            load[field_name] = (int if field_name in ("clients", "drain_every", "churn") else float)(rest.pop(0))
        else:
            options.append(option)
    layouts = [(tuple(options), IMAGE_ENV)] if options else list(LAYOUTS.values())
    for layout, env in layouts:
        memory = hooks_pod_memory(pods, layout, env, pods_per_job=pods_per_job, load=Load(**load))
        print(memory.row(), flush=True)
        for figure in pod_memory_figures([memory]):
            print(f"  {figure.name}: {figure.value:.1f} {figure.unit} ({figure.note})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
