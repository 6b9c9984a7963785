"""``kubectl nvjob get|describe|why``: the commands, their flags, and kubectl's errors and exit codes.

Flags as kubectl's: ``--kubeconfig``, ``--context``, ``-n/--namespace`` (default: the context's
namespace), ``-A/--all-namespaces`` (``get``), ``-o/--output`` (``json`` or ``yaml``; a table or text
by default), accepted before or after the command name. Exit 0 on success; 1 for anything that
fails, as kubectl: a missing Job (``Error from server (NotFound): jobs.nvcre.nvidia.com "x" not
found``), a server that cannot be reached or refuses, a bad flag or argument (the error and the
usage on stderr). What comes from the cluster is printed through ``rendering``'s human renderers and
``rendering.error_line``, which escape it (control characters, bidi controls); ``-o json|yaml`` keep it exact.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import click

from hooks.tools.nvjob import client, drain, rendering, view
from hooks.tools.nvjob.why import why as why_paragraph
from podread.errors import PodReadError

OUTPUTS = ("json", "yaml")
PROG = "kubectl nvjob"


@dataclasses.dataclass
class Options:
    """The flags shared by every command, from the group and the command (the command's win)."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    output: str | None = None
    connector: Connector | None = None
    """Builds the cluster to read and the namespace to read in, from the flags (default: ``kube_connector``)."""
    clock: Callable[[], datetime] | None = None
    """What "now" is, for ages and the barrier's stuck check (default: the current time)."""


Connector = Callable[[Options], tuple[client.Cluster, str]]


def kube_connector(options: Options) -> tuple[client.Cluster, str]:
    """The real cluster of the user's kubeconfig (``client.connect``)."""
    target = client.connect(kubeconfig=options.kubeconfig, context=options.context, namespace=options.namespace)
    return client.KubeCluster(target), target.namespace


def _merge(ctx: click.Context, **given: Any) -> Options:
    options: Options = ctx.ensure_object(Options)
    for name, value in given.items():
        if value is not None:
            setattr(options, name, value)
    return options


def shared_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--kubeconfig``, ``--context``, ``-n/--namespace``, ``-o/--output`` on a group or a command."""
    func = click.option("-o", "--output", type=click.Choice(OUTPUTS), default=None,
                        help="json or yaml for scripts (default: a table or text).")(func)
    func = click.option("-n", "--namespace", default=None, help="The namespace (default: the context's).")(func)
    func = click.option("--context", default=None, help="The kubeconfig context to use.")(func)
    func = click.option("--kubeconfig", default=None, metavar="PATH",
                        help="The kubeconfig file (default: KUBECONFIG, then ~/.kube/config).")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@shared_options
@click.pass_context
def cli(ctx: click.Context, kubeconfig: str | None, context: str | None, namespace: str | None,
        output: str | None) -> None:
    """What NVCRE Jobs are doing and what they wait for.

    Reads the Jobs, their JobSets and Events with your kubeconfig, and pods and batch Jobs through
    podread, live (ADR-102). Writes nothing.
    """
    _merge(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output)


def _connect(ctx: click.Context) -> tuple[client.Cluster, str, Options]:
    options: Options = ctx.ensure_object(Options)
    cluster, namespace = (options.connector or kube_connector)(options)
    return cluster, namespace, options


def _now(options: Options) -> datetime:
    return options.clock() if options.clock is not None else datetime.now(UTC)


@cli.command("get")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="List the Jobs of every namespace.")
@shared_options
@click.pass_context
def get_command(ctx: click.Context, names: tuple[str, ...], all_namespaces: bool, kubeconfig: str | None,
                context: str | None, namespace: str | None, output: str | None) -> None:
    """List NVCRE Jobs: phase, attempt, restarts, active pods, what each waits for, age.

    ACTIVE is status.activePods, the hooks' last count; WAITING FOR is status.message (the drain
    barrier's sentence while it waits), cut to 60 characters (whole in describe and -o json).
    """
    _merge(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output)
    if all_namespaces and names:
        raise client.CommandError("error: a resource cannot be retrieved by name across all namespaces")
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    failed: list[str] = []
    if names:
        jobs = []
        for name in names:
            try:
                jobs.append(cluster.get_job(ns, name))
            except client.CommandError as exc:
                failed.append(exc.message)
    else:
        jobs = cluster.list_jobs(None if all_namespaces else ns)
    rows = [view.summary(job, now) for job in jobs]
    if options.output:
        click.echo(rendering.dump({"apiVersion": "v1", "kind": "List", "items": rows}, options.output))
    elif rows:
        click.echo(rendering.get_table(rows, all_namespaces))
    elif not failed:
        click.echo(rendering.error_line("No resources found" + ("" if all_namespaces else f" in {ns} namespace") + "."),
                   err=True)
    for message in failed:
        click.echo(rendering.error_line(message), err=True)
    if failed:
        sys.exit(1)


def describe_document(cluster: client.Cluster, namespace: str, name: str, now: datetime) -> dict[str, Any]:
    """Everything ``describe`` shows, as one document: the Job's summary, the spec in short, the
    attempts (``None`` without ``status.attempts``), the current attempt's pods (``Reader.workload_pods``,
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
    except client.CommandError as exc:
        events_error = exc.message
    return {
        "job": view.summary(job, now),
        "workload": workload,
        "spec": view.spec_summary(job),
        "attempts": view.attempt_rows(job),
        "attemptsDropped": view.attempts_dropped(job),
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
    except client.CommandError as exc:
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
def describe_command(ctx: click.Context, name: str, kubeconfig: str | None, context: str | None,
                     namespace: str | None, output: str | None) -> None:
    """Show one Job: the spec in short, its attempts, the current attempt's pods, what the drain
    barrier waits for now, its conditions and recent Events."""
    _merge(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output)
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    document = describe_document(cluster, ns, name, now)
    if options.output:
        click.echo(rendering.dump(document, options.output))
    else:
        click.echo(rendering.describe_text(document, now))


@cli.command("why")
@click.argument("name")
@shared_options
@click.pass_context
def why_command(ctx: click.Context, name: str, kubeconfig: str | None, context: str | None,
                namespace: str | None, output: str | None) -> None:
    """One paragraph: why the Job is in its phase and what would move it on."""
    _merge(ctx, kubeconfig=kubeconfig, context=context, namespace=namespace, output=output)
    cluster, ns, options = _connect(ctx)
    now = _now(options)
    job = cluster.get_job(ns, name)
    summary = view.summary(job, now)
    draining = drain.is_draining(summary["phase"], summary["deleting"])
    barrier = drain_of(cluster, job, ns, now) if draining else None
    paragraph = why_paragraph(job, barrier, now)
    if options.output:
        click.echo(rendering.dump({"namespace": summary["namespace"], "name": summary["name"],
                                   "phase": summary["phase"], "why": paragraph}, options.output))
    else:
        click.echo(rendering.why_text(paragraph))


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
    except client.CommandError as exc:
        click.echo(rendering.error_line(exc.message), err=True)
        return exc.code
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else PROG
        click.echo(rendering.error_line(f"error: {exc.format_message()}"), err=True)
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
