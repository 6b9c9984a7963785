"""``kubectl nvjob get|describe|why|history|summary``: the commands, their flags, and kubectl's errors and exit codes.

Flags as kubectl's: ``--kubeconfig``, ``--context``, ``-n/--namespace`` (default: the context's
namespace), ``-o/--output``, ``--request-timeout``, accepted before or after the command name;
``get`` also takes ``-A``, ``-l/--selector``, ``-w/--watch``, ``--watch-only``, ``--no-headers`` and
prints ``-o wide|name|json|yaml|jsonpath=TEMPLATE`` as ``kubectl get`` does (the Job objects
themselves for json, yaml and jsonpath: ``JobPrinter``; the template run as client-go runs it:
``jsonpath``); the other commands print ``-o json|yaml`` documents of their own. Exit 0 on success;
1 for anything that fails, as kubectl: a missing Job (``Error from server (NotFound):
jobs.nvcre.nvidia.com "x" not found``), a server that cannot be reached or refuses, a bad flag,
argument or output format (kubectl's ``error: ...`` line, and for a flag or argument the usage, on
stderr). What comes from the cluster is printed through ``rendering``'s human renderers and
``rendering.error_line``, which escape it (control characters, bidi controls); ``-o json|yaml``
keep it exact, ``-o jsonpath`` escapes what it reads from the objects.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import click

from hooks.tools.nvjob import client, drain, jsonpath, rendering, view
from hooks.tools.nvjob.client import CommandError
from hooks.tools.nvjob.why import why as why_paragraph
from podread.errors import PodReadError

OUTPUTS = ("json", "yaml")
"""The formats of ``describe``, ``why``, ``history`` and ``summary`` (a table or text by default)."""
GET_OUTPUTS = ("json", "jsonpath", "name", "wide", "yaml")
"""The formats of ``get``, as ``kubectl get``'s: ``jsonpath`` is ``jsonpath=TEMPLATE``."""
PROG = "kubectl nvjob"
_TIMEOUT = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


@dataclasses.dataclass
class Options:
    """The flags shared by every command, from the group and the command (the command's win)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    output: str | None = None
    request_timeout: str | None = None
    connector: Connector | None = None
    """Builds the cluster to read and the namespace to read in, from the flags (default: ``kube_connector``)."""
    clock: Callable[[], datetime] | None = None
    """What "now" is, for ages and the barrier's stuck check (default: the current time)."""


Connector = Callable[[Options], tuple[client.Cluster, str]]


def request_timeout(value: str | None) -> int | None:
    """``--request-timeout`` in whole seconds, read as kubectl reads it: an integer (seconds), or
    integers with units (``30s``, ``2m``, ``1h30m``); ``None`` for ``0`` or no flag (no limit).
    Raises ``CommandError`` with kubectl's words for anything else."""
    if value is None or value.strip() in ("", "0"):
        return None
    text = value.strip()
    if text.isdigit():
        return int(text)
    found = _TIMEOUT.match(text)
    if found is None or not any(found.groups()):
        raise CommandError("error: Invalid timeout value. Timeout must be a single integer in seconds, or an integer "
                           "followed by a corresponding time unit (e.g. 1s | 2m | 3h)")
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds or None


def kube_connector(options: Options) -> tuple[client.Cluster, str]:
    """The real cluster of the user's kubeconfig (``client.connect``); ``--request-timeout`` bounds each read."""
    target = client.connect(kubeconfig=options.kubeconfig, context=options.context, namespace=options.namespace)
    limit = request_timeout(options.request_timeout)
    return client.KubeCluster(target, timeout_seconds=float(limit or client.TIMEOUT_SECONDS)), target.namespace


@dataclasses.dataclass(frozen=True)
class Output:
    """What ``-o`` asks for: ``format`` (``""``: a table or text), and for ``jsonpath`` the parsed
    ``template`` and its ``text``."""

    format: str = ""
    template: jsonpath.ListNode | None = None
    text: str = ""


def parse_output(value: str | None, allowed: Sequence[str]) -> Output:
    """``-o``'s value for a command that prints ``allowed`` formats. Raises ``CommandError`` with
    kubectl's words: a format it does not print (``unable to match a printer suitable for the
    output format "X", allowed formats are: ...``), ``jsonpath`` without a template, a template
    that does not parse (``error parsing jsonpath T, <why>``)."""
    if not value:
        return Output()
    kind, equals, template = value.partition("=")
    if kind == "jsonpath" and "jsonpath" in allowed:
        if not equals or not template:
            raise CommandError("error: template format specified but no template given")
        try:
            return Output("jsonpath", jsonpath.parse(template), template)
        except jsonpath.JSONPathError as exc:
            raise CommandError(f"error: error parsing jsonpath {template}, {exc}") from exc
    if value in allowed and value != "jsonpath":
        return Output(value)
    raise CommandError(f'error: unable to match a printer suitable for the output format "{value}", allowed formats '
                       f"are: {','.join(sorted(allowed))}")


def _merge(ctx: click.Context, **given: Any) -> Options:
    options: Options = ctx.ensure_object(Options)
    for name, value in given.items():
        if value is not None:
            setattr(options, name, value)
    return options


def shared_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--kubeconfig``, ``--context``, ``-n/--namespace``, ``-o/--output``, ``--request-timeout`` on a
    group or a command (each command says which ``-o`` formats it prints)."""
    func = click.option("--request-timeout", "request_timeout", default=None, metavar="DURATION",
                        help="How long to wait for one answer, and for how long -w watches (30s, 2m; 0: no "
                             "limit).")(func)
    func = click.option("-o", "--output", default=None, metavar="FORMAT",
                        help="get: json, yaml, wide, name or jsonpath=TEMPLATE; describe, why, history, summary: "
                             "json or yaml (default: a table or text).")(func)
    func = click.option("-n", "--namespace", default=None, help="The namespace (default: the context's).")(func)
    func = click.option("--context", default=None, help="The kubeconfig context to use.")(func)
    func = click.option("--kubeconfig", default=None, metavar="PATH",
                        help="The kubeconfig file (default: KUBECONFIG, then ~/.kube/config).")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@shared_options
@click.pass_context
def cli(ctx: click.Context, **flags: str | None) -> None:
    """What NVCRE Jobs are doing and what they wait for.

    Reads the Jobs, their JobSets and Events with your kubeconfig, and pods and batch Jobs through
    podread, live (ADR-102). Writes nothing.
    """
    _merge(ctx, **flags)


def _connect(ctx: click.Context) -> tuple[client.Cluster, str, Options]:
    options: Options = ctx.ensure_object(Options)
    request_timeout(options.request_timeout)  # a bad value is refused before anything is read
    cluster, namespace = (options.connector or kube_connector)(options)
    return cluster, namespace, options


def _now(options: Options) -> datetime:
    return options.clock() if options.clock is not None else datetime.now(UTC)


class JobPrinter:
    """Prints NVCRE Jobs as ``kubectl get`` does in the format ``output`` asks for: the table (``-o
    wide``: more columns; ``headers`` False: none), ``-o name``, the objects as JSON or YAML, or a
    JSONPath template over them. ``jobs`` prints what one read found; ``one`` a Job a watch reported
    (the table's header only before the first row printed)."""

    def __init__(self, output: Output, all_namespaces: bool, headers: bool, clock: Callable[[], datetime]) -> None:
        self.output, self.all_namespaces, self.headers, self.clock = output, all_namespaces, headers, clock

    def jobs(self, jobs: Sequence[dict[str, Any]], single: bool) -> None:
        """What one read found: one object alone when one name was asked for (``single``), else a
        ``List`` (JSON, YAML, JSONPath), or a line per Job (table, names)."""
        if self.output.format in ("json", "yaml", "jsonpath"):
            document: Any = jobs[0] if single and len(jobs) == 1 else {
                "apiVersion": "v1", "items": list(jobs), "kind": "List", "metadata": {"resourceVersion": ""}}
            self._document(document)
        elif self.output.format == "name":
            for job in jobs:
                click.echo(rendering.name_line(view.summary(job, self.clock())["name"]))
        elif jobs:
            self._rows([view.summary(job, self.clock()) for job in jobs])

    def one(self, job: dict[str, Any]) -> None:
        """A Job a watch reported, on its own."""
        if self.output.format in ("json", "yaml", "jsonpath"):
            self._document(job)
            if self.output.format == "yaml":
                click.echo("---")
        elif self.output.format == "name":
            click.echo(rendering.name_line(view.summary(job, self.clock())["name"]))
        else:
            self._rows([view.summary(job, self.clock())])

    def _rows(self, rows: list[dict[str, Any]]) -> None:
        click.echo(rendering.get_table(rows, self.all_namespaces, wide=self.output.format == "wide",
                                       headers=self.headers))
        self.headers = False

    def _document(self, document: Any) -> None:
        if self.output.format != "jsonpath":
            click.echo(rendering.dump_objects(document, self.output.format))
            return
        assert self.output.template is not None
        try:
            click.echo(jsonpath.execute(self.output.template, document, rendering.escape), nl=False)
        except jsonpath.JSONPathError as exc:
            # kubectl's first sentence; the object it then dumps (Go syntax, every field) is left out
            raise CommandError(f"error: error executing jsonpath {json.dumps(self.output.text)}: {exc}") from exc


def read_jobs(cluster: client.Cluster, namespace: str | None, names: Sequence[str],
              selector: str) -> tuple[list[dict[str, Any]], list[str], str]:
    """The Jobs ``get`` shows: each of ``names`` in ``namespace``, else every Job there (every
    namespace for ``None``) whose labels match ``selector``. Returns them, the NotFound lines of
    the names not found (the others are still shown, as kubectl does), and the resourceVersion a
    watch of them starts from."""
    if not names:
        listed = cluster.list_jobs(namespace, selector)
        return listed.items, [], listed.resource_version
    jobs, failed = [], []
    for name in names:
        try:
            jobs.append(cluster.get_job(namespace or "", name))
        except CommandError as exc:
            failed.append(exc.message)
    version = str(view.as_map(jobs[0].get("metadata")).get("resourceVersion") or "") if len(jobs) == 1 else ""
    return jobs, failed, version


@cli.command("get")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="List the Jobs of every namespace.")
@click.option("-l", "--selector", default=None, metavar="SELECTOR",
              help="A label selector, as kubectl's (-l app=llama,tier!=test, 'env in (a,b)').")
@click.option("-w", "--watch", is_flag=True, help="After listing, watch for changes and print each changed Job.")
@click.option("--watch-only", is_flag=True, help="Watch for changes without listing first.")
@click.option("--no-headers", is_flag=True, help="Print the table without its header line.")
@shared_options
@click.pass_context
def get_command(ctx: click.Context, names: tuple[str, ...], all_namespaces: bool, selector: str | None, watch: bool,
                watch_only: bool, no_headers: bool, **flags: str | None) -> None:
    """List NVCRE Jobs: phase, attempt, restarts, active pods, what each waits for, age.

    ACTIVE is status.activePods, the hooks' last count; WAITING FOR is status.message (the drain
    barrier's sentence while it waits), cut to 60 characters (whole with -o wide, in describe and
    -o json). PHASE says ",STUCK <for how long>" while the drain is stuck on pods on lost nodes
    (DrainStuck). -o json|yaml print the Job objects as kubectl get does (the summary rows: the
    summary command); -o wide adds WORKLOAD, QUEUE and GANG.
    """
    options = _merge(ctx, **flags)
    output = parse_output(options.output, GET_OUTPUTS)
    _check_names(names, all_namespaces, selector)
    if (watch or watch_only) and len(names) > 1:
        raise CommandError("error: watch is only supported on individual resources and resource collections, but "
                           f"{len(names)} resources were found")
    cluster, ns, options = _connect(ctx)
    printer = JobPrinter(output, all_namespaces, not no_headers, lambda: _now(options))
    namespace = None if all_namespaces else ns
    version = ""
    if not watch_only:
        jobs, failed, version = read_jobs(cluster, namespace, names, selector or "")
        if watch:
            for job in jobs:
                printer.one(job)
        else:
            printer.jobs(jobs, single=len(names) == 1)
        if not jobs and not failed and not watch:
            click.echo(rendering.error_line("No resources found" + ("" if all_namespaces else
                                                                  f" in {ns} namespace") + "."), err=True)
        for message in failed:
            click.echo(rendering.error_line(message), err=True)
        if failed:
            sys.exit(1)
    if watch or watch_only:
        for _, job in cluster.watch_jobs(namespace, selector=selector or "", name=names[0] if names else "",
                                         resource_version=version,
                                         timeout_seconds=request_timeout(options.request_timeout)):
            printer.one(job)


def _check_names(names: tuple[str, ...], all_namespaces: bool, selector: str | None) -> None:
    """kubectl's refusals of names beside ``-A`` or ``-l`` (its words), for get and summary."""
    if all_namespaces and names:
        raise CommandError("error: a resource cannot be retrieved by name across all namespaces")
    if selector and names:
        raise CommandError("error: name cannot be provided when a selector is specified")


@cli.command("summary")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="The Jobs of every namespace.")
@click.option("-l", "--selector", default=None, metavar="SELECTOR", help="A label selector, as kubectl's.")
@shared_options
@click.pass_context
def summary_command(ctx: click.Context, names: tuple[str, ...], all_namespaces: bool, selector: str | None,
                    **flags: str | None) -> None:
    """The rows get shows, as a document for scripts (-o json, the default, or yaml): namespace,
    name, phase, attempt, restarts, activePods, waitingFor (whole), stuck, stuckSince, stuckFor,
    workload, queue, gang, age."""
    options = _merge(ctx, **flags)
    output = parse_output(options.output, OUTPUTS)
    _check_names(names, all_namespaces, selector)
    cluster, ns, options = _connect(ctx)
    jobs, failed, _ = read_jobs(cluster, None if all_namespaces else ns, names, selector or "")
    now = _now(options)
    click.echo(rendering.dump({"apiVersion": "v1", "kind": "List", "items": [view.summary(job, now) for job in jobs]},
                              output.format or "json"))
    for message in failed:
        click.echo(rendering.error_line(message), err=True)
    if failed:
        sys.exit(1)


def describe_document(cluster: client.Cluster, namespace: str, name: str, now: datetime) -> dict[str, Any]:
    """Everything ``describe`` shows, as one document: the Job's summary, the spec in short, the
    attempts (``None`` without ``status.attempts``), the budgets left per failure class and the
    nodes kept out of the next attempts (issue 34), the current attempt's pods (``Reader.workload_pods``,
    live), the drain barrier's view now (``drain.drain_view``), the conditions, the recent Events and
    the ``why`` paragraph. Raises ``CommandError`` when the Job cannot be read; a failed read of the
    rest is said in its section (``podsError``, ``drain.error``, ``eventsError``), never "none"."""
    job = cluster.get_job(namespace, name)
    workload = view.current_workload(job)
    pods: list[dict[str, Any]] = []
    pods_error = ""
    try:
        pods = view.pod_rows(cluster.reader.workload_pods(namespace, workload), now)
    except PodReadError as exc:
        pods_error = f"the pod read failed: {exc.cause}"
    barrier = drain_of(cluster, job, namespace, now)
    events: list[dict[str, Any]] = []
    events_error = ""
    try:
        events = view.event_rows(job, cluster.list_events(namespace, name), now)
    except CommandError as exc:
        events_error = exc.message
    return {
        "job": view.summary(job, now),
        "workload": workload,
        "spec": view.spec_summary(job),
        "attempts": view.attempt_rows(job),
        "attemptsDropped": view.attempts_dropped(job),
        "budgets": view.budget_rows(job),
        "excludedNodes": view.excluded_rows(job, now),
        "pods": pods,
        "podsError": pods_error,
        "drain": drain_document(barrier),
        "conditions": view.condition_rows(job, now),
        "events": events,
        "eventsError": events_error,
        "why": why_paragraph(job, barrier, now),
    }


def drain_of(cluster: client.Cluster, job: dict[str, Any], namespace: str, now: datetime) -> drain.DrainView:
    """The barrier's view of ``job`` now; a failed JobSet read is a view that says so (unknown)."""
    deleting = bool((job.get("metadata") or {}).get("deletionTimestamp"))
    draining = drain.is_draining(str(view.status_of(job).get("phase") or ""), deleting)
    try:
        jobsets = drain.owned_jobsets(job, cluster.list_jobsets(namespace))
    except CommandError as exc:
        return drain.DrainView(draining, None, "ReadFailed", "", error=f"the JobSet read failed: {exc.message}")
    return drain.drain_view(job, jobsets, cluster.reader, now)


def drain_document(barrier: drain.DrainView) -> dict[str, Any]:
    """The barrier's view with camelCase keys, as JSON shows it."""
    document = dataclasses.asdict(barrier)
    document["batchJobs"] = document.pop("batch_jobs")
    document["stuckSince"] = document.pop("stuck_since")
    return document


@cli.command("describe")
@click.argument("name")
@shared_options
@click.pass_context
def describe_command(ctx: click.Context, name: str, **flags: str | None) -> None:
    """Show one Job: the spec in short, its attempts, the current attempt's pods, what the drain
    barrier waits for now, its conditions and recent Events."""
    output = parse_output(_merge(ctx, **flags).output, OUTPUTS)
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    document = describe_document(cluster, ns, name, now)
    if output.format:
        click.echo(rendering.dump(document, output.format))
    else:
        click.echo(rendering.describe_text(document, now))


@cli.command("why")
@click.argument("name")
@shared_options
@click.pass_context
def why_command(ctx: click.Context, name: str, **flags: str | None) -> None:
    """One paragraph: why the Job is in its phase and what would move it on (the lifecycle table's
    arrows out of its phase, hooks/core/lifecycle.py)."""
    output = parse_output(_merge(ctx, **flags).output, OUTPUTS)
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    job = cluster.get_job(ns, name)
    summary = view.summary(job, now)
    draining = drain.is_draining(summary["phase"], summary["deleting"])
    barrier = drain_of(cluster, job, ns, now) if draining else None
    paragraph = why_paragraph(job, barrier, now)
    if output.format:
        click.echo(rendering.dump({"namespace": summary["namespace"], "name": summary["name"],
                                   "phase": summary["phase"], "why": paragraph}, output.format))
    else:
        click.echo(rendering.why_text(paragraph))


@cli.command("history")
@click.argument("name")
@click.option("--no-headers", is_flag=True, help="Print the table without its header line.")
@shared_options
@click.pass_context
def history_command(ctx: click.Context, name: str, no_headers: bool, **flags: str | None) -> None:
    """The Job's attempts alone (status.attempts): attempt, JobSet, created, started, ended,
    outcome, failing replicated job, pod, node, exit code or reason, restart cause, failure class and its
    evidence, drain time; then the restart budget left per failure class."""
    output = parse_output(_merge(ctx, **flags).output, OUTPUTS)
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    job = cluster.get_job(ns, name)
    rows, dropped = view.attempt_rows(job), view.attempts_dropped(job)
    if output.format:
        summary = view.summary(job, now)
        click.echo(rendering.dump({"namespace": summary["namespace"], "name": summary["name"], "attempts": rows,
                                   "attemptsDropped": dropped, "budgets": view.budget_rows(job)}, output.format))
    elif rows is None:
        click.echo(rendering.error_line(f"No attempt history recorded for job.nvcre.nvidia.com/{name} "
                                        "(status.attempts is absent)."), err=True)
    elif not rows:
        click.echo(rendering.error_line(f"No attempt yet for job.nvcre.nvidia.com/{name}."), err=True)
    else:
        click.echo(rendering.history_text(rows, dropped, now, headers=not no_headers, budgets=view.budget_rows(job)))


def usage_words(exc: click.UsageError) -> str:
    """kubectl's words for a bad flag or argument: ``unknown flag: --x``, ``unknown shorthand flag:
    'x' in -x``, ``unknown command "x" for "kubectl nvjob"``; click's own message otherwise."""
    if isinstance(exc, click.NoSuchOption):
        name = exc.option_name
        if name.startswith("--") or len(name) <= 1:
            return f"unknown flag: {name}"
        return f"unknown shorthand flag: '{name[1]}' in {name}"
    found = re.match(r"No such command '(.*)'\.", exc.format_message())
    if found:
        return f'unknown command "{found.group(1)}" for "{PROG}"'
    return exc.format_message()


def run(args: Sequence[str], connector: Connector | None = None,
        clock: Callable[[], datetime] | None = None) -> int:
    """Runs the command line ``args``; returns the exit code. Prints kubectl's error lines on
    stderr: a ``CommandError``'s message; for a bad flag or argument the error, the usage and
    where the help is. ``connector`` replaces the real cluster and ``clock`` the current time (tests)."""
    options = Options(connector=connector, clock=clock)
    if not args:
        click.echo(cli.get_help(click.Context(cli, info_name=PROG)))
        return 0
    try:
        cli.main(list(args), prog_name=PROG, standalone_mode=False, obj=options)
    except CommandError as exc:
        click.echo(rendering.error_line(exc.message), err=True)
        return exc.code
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else PROG
        click.echo(rendering.error_line(f"error: {usage_words(exc)}"), err=True)
        if exc.ctx is not None:
            click.echo(exc.ctx.get_usage(), err=True)
        click.echo(f"See '{command} --help' for usage.", err=True)
        return 1
    except click.ClickException as exc:
        click.echo(rendering.error_line(f"error: {exc.format_message()}"), err=True)
        return 1
    except click.Abort:
        return 1
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def main() -> None:
    """The console entry point ``kubectl-nvjob``."""
    logging.getLogger("podread").setLevel(logging.CRITICAL)  # a failed read is said in the output, once
    sys.exit(run(sys.argv[1:]))
