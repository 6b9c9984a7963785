"""``python -m hooks``: operator tools. Replay a decision offline, list the jobs on a node, run the demo.

Exit codes: 0 success; 1 the answer differs from response.json (``--diff``, ``demo``) or a pod read
failed; 2 bad input or usage (the request's error text is the one the HTTP API answers).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

import podread
from hooks.core.observed import HOOKS
from hooks.server.config import Settings
from hooks.tools import cli_format, replay, scenario

EXIT_DIFFERS = 1
EXIT_BAD_INPUT = 2
DEFAULT_DEMO_DIR = "tests/payloads"


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Prints ``error: <message>`` to stderr and exits with ``code``."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def configure_logging(level: str) -> None:
    """Plain one-line logs on stderr at ``level`` (the server's JSON logs are for machines), unless
    the process already set up logging (a test runner): that is left alone."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              default="error", show_default=True, help="Level of the logs printed on stderr.")
def cli(log_level: str) -> None:
    """Operator tools for the nvcre-hooks server.

    Every command runs the server's own code: replay and demo call hooks.server.handler.handle, the one
    path from request bytes to answer; node-pods reads through podread.Reader.
    """
    configure_logging(log_level.upper())


@cli.command("replay")
@click.argument("source", type=click.Path(exists=True, path_type=Path), metavar="SCENARIO_DIR_OR_REQUEST.json")
@click.option("--pods", "pods_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Pod snapshot to read from: `kubectl get pods -o json` output, or a scenario's pods.json.")
@click.option("--jobs", "jobs_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Batch Jobs the barrier reads: `kubectl get jobs -o json` output (an empty list: none are left).")
@click.option("--live", is_flag=True, help="Read pods from the cluster (KUBECONFIG, then in-cluster config).")
@click.option("--hook", type=click.Choice(list(HOOKS)),
              help="Hook to run. Default: meta.json's hook, else finalize if the request says finalizing, else sync.")
@click.option("--now", "now_text", metavar="RFC3339",
              help="Freeze the clock here. Default: meta.json's now, else the current time.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Compare with the scenario's response.json; exit 1 with a unified diff if they differ.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: an explanation, then the response JSON; json: one JSON document.")
def replay_command(source: Path, pods_file: Path | None, jobs_file: Path | None, live: bool, hook: str | None,
                   now_text: str | None, show_diff: bool, output: str) -> None:
    """Replay one hook call offline and explain the decision.

    SCENARIO_DIR_OR_REQUEST.json is a scenario folder (request.json, pods.json, meta.json,
    response.json: the layout of tests/payloads and of NVCRE_RECORD_DIR), or a request body file.
    The pods come from --pods, --live, or the scenario's pods.json, in that order; the batch Jobs
    from --jobs, else from the snapshot (a List printed by kubectl get pods,jobs that holds none
    cannot say whether they were read: the barrier's batch Job reads then fail). Settings are
    read from the environment as the server reads them; a recorded scenario's own settings
    (resync, limits) win.

    Exit 0 when answered (and, with --diff, equal to response.json); 1 when --diff found a
    difference; 2 for bad input (with the HTTP API's error text), options or configuration. A pod
    read that fails is answered as the server answers it (the decision holds), not an exit code.
    """
    if pods_file is not None and live:
        fail("--pods and --live are exclusive: give one pod source")
    if jobs_file is not None and live:
        fail("--jobs and --live are exclusive: --live reads the batch Jobs from the cluster")
    try:
        loaded = scenario.load(source)
        now = scenario.parse_time(now_text) if now_text else loaded.now or datetime.now(UTC)
        settings = replay.scenario_settings(loaded, Settings.from_env())
        reader, pods_from = _reader(source, loaded, pods_file, jobs_file, live)
    except ValueError as exc:
        fail(str(exc))
    if show_diff and loaded.expected is None:
        fail(f"--diff needs a response.json next to the request; {source} has none")
    replayed = replay.run(loaded, reader=reader, hook=replay.choose_hook(loaded, hook), now=now, settings=settings)
    if replayed.result.status_code != 200 and not show_diff:
        fail(str(replayed.body.get("error", f"answered {replayed.result.status_code}")))
    if output == "json":
        document = cli_format.replay_json(replayed, pods_from)
        if show_diff:
            document["diff"] = replayed.diff()
        click.echo(json.dumps(document, indent=2, sort_keys=True))
    else:
        click.echo(cli_format.replay_text(replayed, pods_from))
    if show_diff:
        if replayed.matches:
            click.echo(f"same as {scenario.RESPONSE}", err=True)
        else:
            if output == "text":
                click.echo(replayed.diff(), nl=False)
            click.echo(f"differs from {scenario.RESPONSE}", err=True)
            sys.exit(EXIT_DIFFERS)


def _reader(source: Path, loaded: scenario.Scenario, pods_file: Path | None, jobs_file: Path | None,
            live: bool) -> tuple[podread.Reader, str]:
    """The Reader a replay reads through (``replay.snapshot`` of the pods and the batch Jobs), and a
    few words on where its pods and batch Jobs come from. Raises ValueError naming ``source`` when
    there is no pod source."""
    if live:
        return podread.from_environment(watch=False), "the cluster (live)"
    if pods_file is not None:
        document, name = scenario.read_json(pods_file), str(pods_file)
    elif loaded.pods is not None:
        document, name = loaded.pods, scenario.PODS
    else:
        raise ValueError(f"no pods for {source}: give --pods PODS.json (kubectl get pods -o json) "
                         "and --jobs JOBS.json (kubectl get jobs -o json), or --live")
    jobs = replay.batch_jobs(scenario.read_json(jobs_file), str(jobs_file)) if jobs_file is not None else None
    shown = replay.snapshot(document, name, jobs)
    reader = podread.reader_from_snapshot(shown)
    if jobs_file is not None:
        return reader, f"{name}, batch Jobs from {jobs_file}"
    failing = isinstance(shown, dict) and isinstance(shown.get("jobs"), dict) and "error" in shown["jobs"]
    return reader, f"{name} (it holds no batch Job: give --jobs)" if failing and shown is not document else name


@cli.command("node-pods")
@click.argument("node")
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="A table, or JSON with every field.")
@click.option("--all-namespaces-pods", "namespace", metavar="NAMESPACE",
              help="Also list the other pods of NAMESPACE on the node (e.g. an installer in kube-system).")
def node_pods_command(node: str, output: str, namespace: str | None) -> None:
    """List the NVCRE workload pods bound to NODE: what to check before draining it.

    Reads through podread (Reader.job_pods_on_node; with --all-namespaces-pods, also
    Reader.namespace_pods) from the cluster of KUBECONFIG or the in-cluster configuration.
    Columns: NAMESPACE, JOB, ATTEMPT, POD, PHASE (Terminating when being deleted), AGE.
    Exit 1 when a pod read fails (the podread error is printed), 2 on bad configuration.
    """
    try:
        reader = podread.from_environment(watch=False)
    except ValueError as exc:
        fail(str(exc))
    try:
        pods = list(reader.job_pods_on_node(node))
        if namespace:
            seen = {podread.pod_key(pod) for pod in pods}
            pods += [
                pod for pod in reader.namespace_pods(namespace)
                if (pod.get("spec") or {}).get("nodeName") == node and podread.pod_key(pod) not in seen
            ]
    except podread.PodReadError as exc:
        fail(f"pod read failed: {exc}", code=1)
    now = datetime.now(UTC)
    rows = cli_format.sort_rows(cli_format.pod_row(pod, now) for pod in pods)
    if output == "json":
        document: dict[str, Any] = {"node": node, "namespace": namespace, "pods": rows}
        click.echo(json.dumps(document, indent=2, sort_keys=True))
    elif rows:
        click.echo(cli_format.node_table(rows))
    else:
        where = f" (nor other pods of {namespace})" if namespace else ""
        click.echo(f"no NVCRE workload pods on node {node}{where}")


@cli.command("demo")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path),
                required=False, metavar="[DIR]")
def demo_command(directory: Path | None) -> None:
    """Replay every scenario folder under DIR (default tests/payloads of a clone) without a cluster.

    Prints one line per scenario: its name, the phase before -> after, the decision, and whether
    the answer equals its response.json. Exit 1 if any differs or cannot be replayed. The recorded
    scenarios ship with the repository, not with the installed package: run it from a clone, or
    give DIR (a folder of scenarios, e.g. what ``nvcre-hooks record`` wrote).
    """
    if directory is None:
        directory = Path(DEFAULT_DEMO_DIR)
        if not directory.is_dir():
            fail(f"no {DEFAULT_DEMO_DIR} here: the demo replays the scenarios recorded in the repository; "
                 "run it from a clone of nvcre-hooks, or give a folder of scenarios as DIR")
    folders = scenario.scenario_dirs(directory)
    if not folders:
        fail(f"no scenario folders (with a {scenario.REQUEST}) under {directory}")
    width = max(len(folder.name) for folder in folders)
    bad = 0
    for folder in folders:
        try:
            loaded = scenario.load(folder)
            if loaded.pods is None:
                raise ValueError(f"no {scenario.PODS}")
            replayed = replay.run(
                loaded, reader=podread.reader_from_snapshot(loaded.pods), hook=replay.choose_hook(loaded, None),
                now=loaded.now or datetime.now(UTC), settings=replay.scenario_settings(loaded, Settings()),
            )
        except ValueError as exc:
            bad += 1
            click.echo(cli_format.demo_line(folder.name, None, str(exc), width))
            continue
        bad += replayed.matches is not True
        click.echo(cli_format.demo_line(folder.name, replayed, width=width))
    click.echo(f"{len(folders) - bad} of {len(folders)} scenarios answer as recorded")
    if bad:
        sys.exit(EXIT_DIFFERS)


def program_name(argv0: str) -> str:
    """The name the usage lines give: ``python -m hooks`` when run as a module, else the command's
    own name as it was invoked (``nvcre-hooks`` once installed)."""
    name = Path(argv0).name
    return "python -m hooks" if name in {"__main__.py", ""} else name


def main() -> None:
    """The console entry point: its usage names the command as it was invoked."""
    cli(prog_name=program_name(sys.argv[0]))
