"""What the scale benchmark reads off the running parts: the API server's audit log of the hooks, the
hooks' own metrics, the workers' memory.

- ``count_requests``: the hooks' requests as the API server counts them, from its audit log of the
  hooks' ServiceAccount (``ControlPlane.audit_events``; the tier's audit policy logs that user
  only). ``apiserver_request_total`` on the API server's ``/metrics`` has no label for the user or
  the user agent, so it cannot tell the hooks from the JobSet controller, the scheduler and kwok on
  the same server; the audit log is the API server's own record, one event per request.
- ``HookMetrics``: one scrape of the hooks' ``/metrics`` (gunicorn's master, every worker summed):
  the hook calls answered and their latency histogram (``nvcre_hook_request_duration_seconds``),
  and the pods the watch-fed caches hold (``podread_watch_pods``).
- ``server_seconds``: the API server's own time of each of the hooks' requests, from the same audit
  log (``requestReceivedTimestamp`` to the ``ResponseComplete`` stage's ``stageTimestamp``): what a
  read cost on the server, against what the hooks waited for it (issue 36 item 8).
- ``ApiServerMetrics``: one scrape of the API server's ``/metrics`` (admin): the time requests waited
  in API Priority and Fairness's queues and their execution time, by priority level.
- ``quantile``: a quantile of a Prometheus histogram, interpolated in its bucket as PromQL's
  ``histogram_quantile`` does.
- ``Usage`` / ``usage_of``: the CPU seconds (user and system, every thread) and the resident memory
  of the processes of each part (the hooks, the JobSet controller, kube-controller-manager, ...), read
  from ``/proc/<pid>/stat`` and ``/proc/<pid>/status`` as the kernel accounts them.
"""

from __future__ import annotations

import os
import ssl
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client.parser import text_string_to_metric_families

HOOK_DURATION = "nvcre_hook_request_duration_seconds"
TAIL_SERIES = {
    "nvcre_hook_outcome_duration_seconds": ("answer", ("hook", "outcome")),
    "nvcre_parent_read_duration_seconds": ("live Job GET", ("read",)),
    "podread_read_duration_seconds": ("read", ("method", "source")),
    "nvcre_write_duration_seconds": ("write (effects thread)", ("kind",)),
}
"""The histograms ``HookMetrics.series`` keeps, each series named by its kind and its labels' values
(``answer sync/steady``, ``live Job GET version``, ``read active_attempt_pods/live``, ``write
(effects thread) event``): where the slow calls of a pass are (issue 36 item 8)."""
HOOK_REQUESTS = "nvcre_hook_requests_total"
WATCH_PODS = "podread_watch_pods"


def request_key(event: Mapping[str, Any]) -> str:
    """``verb resource`` of one audit event, ``(all namespaces)`` added to a request that names no
    namespace; ``nvcre.nvidia.com``'s Jobs are ``nvjobs``, ``batch``'s are ``jobs``. A pod list is
    ``list pods`` when it reads one Job's pods (a label selector with a value: the per-Job reads of
    the cache fills and the drain barrier) and ``list pods (watch)`` otherwise (the watch's own list
    and its one-pod nudges, of every NVCRE pod of its scope)."""
    ref = event.get("objectRef") or {}
    resource = "nvjobs" if ref.get("apiGroup") == "nvcre.nvidia.com" else str(ref.get("resource") or "?")
    if ref.get("subresource"):
        resource += f"/{ref['subresource']}"
    if event.get("verb") == "list" and resource == "pods" and not _selects_one_job(str(event.get("requestURI", ""))):
        resource += " (watch)"
    scope = "" if ref.get("namespace") else " (all namespaces)"
    return f"{event.get('verb')} {resource}{scope}"


def _selects_one_job(uri: str) -> bool:
    """Whether a request's label selector compares a label with a value (``key=value``, ``key in (...)``)."""
    selectors = parse_qs(urlsplit(uri).query).get("labelSelector", [])
    return any("=" in s or " in " in s for s in selectors)


def count_requests(events: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """The hooks' requests by ``request_key`` (audit events of the stage ``ResponseComplete`` only,
    so a long watch is one request, counted when it ends)."""
    counted: Counter[str] = Counter()
    for event in events:
        if event.get("stage", "ResponseComplete") == "ResponseComplete":
            counted[request_key(event)] += 1
    return counted


def server_seconds(events: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """The API server's own seconds for each of the hooks' requests, by ``request_key``: from the
    request received to its response complete, as the audit log stamps them (microseconds; the
    ``ResponseComplete`` stage only, watches left out: their time is how long they stayed open)."""
    seconds: dict[str, list[float]] = {}
    for event in events:
        if event.get("stage", "ResponseComplete") != "ResponseComplete" or event.get("verb") == "watch":
            continue
        received, completed = event.get("requestReceivedTimestamp"), event.get("stageTimestamp")
        if not received or not completed:
            continue
        taken = (datetime.fromisoformat(str(completed)) - datetime.fromisoformat(str(received))).total_seconds()
        seconds.setdefault(request_key(event), []).append(taken)
    return seconds


APF_WAIT = "apiserver_flowcontrol_request_wait_duration_seconds"
APF_EXECUTION = "apiserver_flowcontrol_request_execution_seconds"


@dataclass
class ApiServerMetrics:
    """One scrape of the API server's ``/metrics``: the cumulative buckets of API Priority and
    Fairness's queue wait (``APF_WAIT``, the executed requests only) and execution time, by priority
    level (every flow schema and request kind of a level summed)."""

    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """``"APF wait <level>"`` and ``"APF execution <level>"`` by name."""

    @classmethod
    def scrape(cls, url: str, token: str, ca_file: str, timeout: float = 10.0) -> ApiServerMetrics:
        context = ssl.create_default_context(cafile=ca_file)
        request = urllib.request.Request(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            return cls.parse(response.read().decode())

    @classmethod
    def parse(cls, text: str) -> ApiServerMetrics:
        series: dict[str, dict[float, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == f"{APF_WAIT}_bucket" and sample.labels.get("execute") != "false":
                    name = f"APF wait {sample.labels.get('priority_level', '?')}"
                elif sample.name == f"{APF_EXECUTION}_bucket":
                    name = f"APF execution {sample.labels.get('priority_level', '?')}"
                else:
                    continue
                counts = series.setdefault(name, {})
                bound = float(sample.labels["le"])
                counts[bound] = counts.get(bound, 0.0) + sample.value
        return cls({name: sorted(counts.items()) for name, counts in sorted(series.items())})

    def minus(self, earlier: ApiServerMetrics) -> ApiServerMetrics:
        """What happened between ``earlier`` and this scrape."""
        return ApiServerMetrics({name: _minus(buckets, earlier.series.get(name, []))
                                 for name, buckets in self.series.items()})


@dataclass
class HookMetrics:
    """One scrape of the hooks' metrics (module doc)."""

    calls: float = 0.0
    buckets: list[tuple[float, float]] = field(default_factory=list)
    """The latency histogram's cumulative buckets, every hook summed: (upper bound, count)."""
    watch_pods: float = 0.0
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    """The cumulative buckets of each series of ``TAIL_SERIES`` (every worker summed), by name."""

    @classmethod
    def scrape(cls, url: str, timeout: float = 10.0) -> HookMetrics:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return cls.parse(response.read().decode())

    @classmethod
    def settled(cls, url: str, tries: int = 10, pause: float = 0.05) -> HookMetrics:
        """A scrape in which every call counted is also in the latency histogram (``calls ==
        observed``), taken up to ``tries`` times ``pause`` apart: a call that ends while a scrape
        reads the counter and the histogram one after the other is in one and not yet the other, and
        a window cut there would miscount by it. The last scrape when none agrees (calls never pause)."""
        scraped = cls.scrape(url)
        for _ in range(tries - 1):
            if scraped.calls == scraped.observed:
                break
            time.sleep(pause)
            scraped = cls.scrape(url)
        return scraped

    @classmethod
    def parse(cls, text: str) -> HookMetrics:
        calls = 0.0
        buckets: dict[float, float] = {}
        watch_pods = 0.0
        series: dict[str, dict[float, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                tail = TAIL_SERIES.get(sample.name.removesuffix("_bucket"))
                if tail is not None and sample.name.endswith("_bucket"):
                    kind, labels = tail
                    name = f"{kind} {'/'.join(sample.labels.get(label, '?') for label in labels)}"
                    counts = series.setdefault(name, {})
                    bound = float(sample.labels["le"])
                    counts[bound] = counts.get(bound, 0.0) + sample.value
                elif sample.name == HOOK_REQUESTS:
                    calls += sample.value
                elif sample.name == f"{HOOK_DURATION}_bucket":
                    bound = float(sample.labels["le"])
                    buckets[bound] = buckets.get(bound, 0.0) + sample.value
                elif sample.name == WATCH_PODS:
                    watch_pods += sample.value
        return cls(calls, sorted(buckets.items()), watch_pods,
                   {name: sorted(counts.items()) for name, counts in sorted(series.items())})

    def minus(self, earlier: HookMetrics) -> HookMetrics:
        """What happened between ``earlier`` and this scrape (the gauge kept as now)."""
        return HookMetrics(self.calls - earlier.calls, _minus(self.buckets, earlier.buckets), self.watch_pods,
                           {name: _minus(buckets, earlier.series.get(name, []))
                            for name, buckets in self.series.items()})

    @property
    def observed(self) -> float:
        """Calls in the histogram (its ``+Inf`` bucket)."""
        return self.buckets[-1][1] if self.buckets else 0.0

    def quantile(self, q: float) -> float | None:
        return quantile(self.buckets, q)

    def share_over(self, seconds: float) -> float | None:
        """The share of calls slower than ``seconds`` (a bucket bound), or ``None`` with no calls."""
        total = self.observed
        if not total:
            return None
        within = dict(self.buckets).get(seconds)
        if within is None:
            raise ValueError(f"{seconds} s is not a bucket bound of {HOOK_DURATION}")
        return (total - within) / total


def _minus(later: Sequence[tuple[float, float]], earlier: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The cumulative buckets ``later`` less ``earlier`` (a bucket absent before counts from 0)."""
    before = dict(earlier)
    return [(bound, count - before.get(bound, 0.0)) for bound, count in later]


def add_buckets(*histograms: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The cumulative buckets of ``histograms`` summed bound by bound."""
    summed: dict[float, float] = {}
    for buckets in histograms:
        for bound, count in buckets:
            summed[bound] = summed.get(bound, 0.0) + count
    return sorted(summed.items())


def over(buckets: Sequence[tuple[float, float]], seconds: float) -> float:
    """How many observations of cumulative ``buckets`` were above ``seconds`` (a bucket bound;
    the total when it is not one)."""
    total = buckets[-1][1] if buckets else 0.0
    return total - dict(buckets).get(seconds, 0.0)


def quantile(buckets: Sequence[tuple[float, float]], q: float) -> float | None:
    """The ``q`` quantile of a cumulative histogram, interpolated linearly within its bucket (the
    first bucket from 0; a quantile in ``+Inf`` is the highest finite bound); ``None`` when empty."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """What a part's processes had used when sampled: ``cpu_seconds`` (user + system time, summed
    over the processes; cumulative since each started) and ``rss_kib`` (VmRSS, summed)."""

    cpu_seconds: float = 0.0
    rss_kib: int = 0

    def since(self, earlier: Usage) -> Usage:
        """The CPU used between ``earlier`` and this sample (a process that restarted in between
        counts from zero), with this sample's memory."""
        return Usage(max(0.0, self.cpu_seconds - earlier.cpu_seconds), self.rss_kib)


def usage_of(pids: Iterable[int]) -> Usage:
    """The summed ``Usage`` of ``pids`` now; a process gone meanwhile counts as nothing."""
    cpu, rss = 0.0, 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        cpu += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14 and 15)
        rss += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return Usage(cpu, rss)
