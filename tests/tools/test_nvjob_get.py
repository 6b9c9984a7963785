"""``kubectl nvjob get`` behaves as ``kubectl get``: ``-o json|yaml`` print the Job objects, ``-o
wide|name|jsonpath=...``, ``-l``, ``--no-headers``, ``-w``/``--watch-only`` (over the recorded
cluster's watch; the real watch is the cluster tier's, tests/cluster/test_nvjob.py), a STUCK marker
for a stuck drain; ``history`` prints the attempts table alone; and bad input gets kubectl's words
and exit code 1. Run end to end through ``commands.run`` over ``Recorded`` objects.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from hooks.tools.nvjob import commands, jsonpath
from tests.tools.test_nvjob import ATTEMPTS, NS, RUNNING, Recorded, nvjob, ok, run, stuck_cluster


def labelled(name: str, labels: dict[str, str], **status: Any) -> dict[str, Any]:
    job = nvjob(name, status={**RUNNING, "workload": f"{name}-0", **status})
    job["metadata"]["labels"] = labels
    job["metadata"]["resourceVersion"] = "5"
    return job


def cluster() -> Recorded:
    return Recorded([labelled("bert", {"team": "nlp"}), labelled("gpt", {"team": "nlp", "size": "xl"}),
                     labelled("vit", {"team": "vision"})])


# -- -o json|yaml|name|jsonpath|wide, --no-headers, -l ----------------------------------------------------


def test_json_and_yaml_print_the_job_objects_as_kubectl_get_does(capsys: pytest.CaptureFixture[str]) -> None:
    jobs = cluster().jobs
    single = ok(cluster(), "get", "bert", "-o", "json", capsys=capsys)
    assert json.loads(single) == jobs[0], "one name: the object itself"
    assert single.startswith('{\n    "apiVersion": "nvcre.nvidia.com/v1alpha1",\n    "kind": "Job",'), \
        "four spaces, keys sorted: Go's MarshalIndent of an unstructured object"
    listed = json.loads(ok(cluster(), "get", "-o", "json", capsys=capsys))
    assert listed == {"apiVersion": "v1", "items": jobs, "kind": "List", "metadata": {"resourceVersion": ""}}
    assert yaml.safe_load(ok(cluster(), "get", "gpt", "-o", "yaml", capsys=capsys)) == jobs[1]
    assert yaml.safe_load(ok(cluster(), "get", "bert", "gpt", "-o", "yaml", capsys=capsys))["items"] == jobs[:2]


def test_name_wide_and_no_headers(capsys: pytest.CaptureFixture[str]) -> None:
    assert ok(cluster(), "get", "-o", "name", capsys=capsys) == (
        "job.nvcre.nvidia.com/bert\njob.nvcre.nvidia.com/gpt\njob.nvcre.nvidia.com/vit\n")
    queued = labelled("q", {"kueue.x-k8s.io/queue-name": "team"}, conditions=[
        {"type": "GangScheduled", "status": "True", "reason": "Scheduled"}],
        message="waiting for " + "x" * 80)
    wide = ok(Recorded([queued]), "get", "-o", "wide", capsys=capsys).splitlines()
    assert wide[0].split() == ["NAME", "PHASE", "ATTEMPT", "RESTARTS", "ACTIVE", "WORKLOAD", "QUEUE", "GANG", "WAITING",
                               "FOR", "AGE"]
    assert wide[1].split()[:8] == ["q", "Running", "0", "0", "2", "q-0", "team", "Scheduled"]
    assert "x" * 80 in wide[1], "wide shows WAITING FOR whole"
    assert "x" * 80 not in ok(Recorded([queued]), "get", capsys=capsys)
    rows = ok(cluster(), "get", "--no-headers", capsys=capsys).splitlines()
    assert [row.split()[0] for row in rows] == ["bert", "gpt", "vit"]


def test_a_label_selector_lists_the_jobs_whose_labels_match(capsys: pytest.CaptureFixture[str]) -> None:
    names = ok(cluster(), "get", "-l", "team=nlp,size!=xl", "-o", "name", capsys=capsys)
    assert names == "job.nvcre.nvidia.com/bert\n"
    assert ok(cluster(), "get", "--selector", "team in (vision)", "-o", "name", capsys=capsys) == \
        "job.nvcre.nvidia.com/vit\n"
    code, out, err = run(cluster(), "get", "-l", "team=nobody", capsys=capsys)
    assert (code, out, err) == (0, "", f"No resources found in {NS} namespace.\n")
    code, out, err = run(cluster(), "get", "bert", "-l", "team=nlp", capsys=capsys)
    assert (code, out, err) == (1, "", "error: name cannot be provided when a selector is specified\n")
    code, out, err = run(cluster(), "get", "-l", "team in (", capsys=capsys)
    assert code == 1 and out == "" and err.startswith("Error from server (BadRequest): "), "the API server's refusal"


@pytest.mark.parametrize(("template", "printed"), [
    ("{.items[*].metadata.name}", "bert gpt vit"),
    ('{range .items[*]}{.metadata.name}={.status.phase}{"\\n"}{end}', "bert=Running\ngpt=Running\nvit=Running\n"),
    ("{.items[?(@.metadata.labels.size==\"xl\")].metadata.name}", "gpt"),
    ("{.items[0].metadata.labels}", '{"team":"nlp"}'),
    ("{.items[-1:].metadata.name}", "vit"),
    ("{.items[0].status.activePods} pods, missing: {.items[0].status.nothing}.", "2 pods, missing: ."),
])
def test_jsonpath_runs_kubectls_templates_over_the_objects(template: str, printed: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert ok(cluster(), "get", "-o", f"jsonpath={template}", capsys=capsys) == printed


def test_jsonpath_of_one_name_runs_over_the_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert ok(cluster(), "get", "gpt", "-o", "jsonpath={.metadata.labels.size}", capsys=capsys) == "xl"


@pytest.mark.parametrize(("output", "error"), [
    ("jsonpath={.items[", "error: error parsing jsonpath {.items[, unterminated array\n"),
    ("jsonpath={.a", "error: error parsing jsonpath {.a, unclosed action\n"),
    ("jsonpath", "error: template format specified but no template given\n"),
    ("jsonpath=", "error: template format specified but no template given\n"),
    ("table", 'error: unable to match a printer suitable for the output format "table", allowed formats are: '
              "json,jsonpath,name,wide,yaml\n"),
    ("jsonpath={.items[7]}", 'error: error executing jsonpath "{.items[7]}": array index out of bounds: index 7, '
                             "length 3\n"),
])
def test_a_bad_output_is_kubectls_error_and_exit_1(output: str, error: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(cluster(), "get", "-o", output, capsys=capsys)
    assert (code, out, err) == (1, "", error)


def test_the_other_commands_print_json_or_yaml_only(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("describe", "why", "history"):
        code, out, err = run(cluster(), command, "bert", "-o", "name", capsys=capsys)
        assert (code, out) == (1, "")
        assert err == ('error: unable to match a printer suitable for the output format "name", allowed formats '
                       "are: json,yaml\n")


@pytest.mark.parametrize(("args", "error"), [
    (["get", "--bogus"], "error: unknown flag: --bogus\n"),
    (["get", "-Z"], "error: unknown shorthand flag: 'Z' in -Z\n"),
    (["frobnicate"], 'error: unknown command "frobnicate" for "kubectl nvjob"\n'),
    (["get", "a", "b", "-w"], "error: watch is only supported on individual resources and resource collections, but "
                              "2 resources were found\n"),
    (["get", "--request-timeout", "soon"], "error: Invalid timeout value. Timeout must be a single integer in "
                                           "seconds, or an integer followed by a corresponding time unit (e.g. 1s | "
                                           "2m | 3h)\n"),
])
def test_bad_input_reads_as_kubectls_words(args: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(cluster(), *args, capsys=capsys)
    assert (code, out) == (1, "")
    assert err.splitlines(keepends=True)[0] == error.splitlines(keepends=True)[0]
    assert err.startswith(error)


@pytest.mark.parametrize(("value", "seconds"), [(None, None), ("0", None), ("5", 5), ("5s", 5), ("2m", 120),
                                                ("1h30m", 5400)])
def test_request_timeout_reads_as_kubectls(value: str | None, seconds: int | None) -> None:
    assert commands.request_timeout(value) == seconds


# -- STUCK --------------------------------------------------------------------------------------------------


def test_get_marks_a_stuck_drain_and_for_how_long(capsys: pytest.CaptureFixture[str]) -> None:
    stuck = stuck_cluster()
    code = commands.run(["get"], connector=lambda _: (stuck, NS), clock=lambda: datetime(2026, 1, 1, 0, 17, tzinfo=UTC))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines()[1].split()[:3] == ["llama", "Restarting,STUCK", "12m"], "DrainStuck=True since 00:05"
    code = commands.run(["summary"], connector=lambda _: (stuck, NS),
                        clock=lambda: datetime(2026, 1, 1, 0, 17, tzinfo=UTC))
    row = json.loads(capsys.readouterr().out)["items"][0]
    assert (row["stuck"], row["stuckSince"], row["stuckFor"]) == (True, "2026-01-01T00:05:00Z", "12m")
    assert "STUCK" not in ok(cluster(), "get", capsys=capsys), "a drain not stuck is not marked"


# -- -w -----------------------------------------------------------------------------------------------------


def changed(job: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**job, "status": {**job["status"], **status}}


def test_watch_lists_then_prints_each_change_as_a_row(capsys: pytest.CaptureFixture[str]) -> None:
    watched = cluster()
    bert, gpt, vit = watched.jobs
    watched.changes = [("MODIFIED", changed(bert, phase="Restarting", attempt=1, restarts=1)),
                       ("MODIFIED", changed(vit, phase="Succeeded")), ("DELETED", changed(bert, phase="Terminating"))]
    out = ok(watched, "get", "-w", "-l", "team", "--request-timeout", "30s", capsys=capsys)
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["NAME", "PHASE"] and sum("NAME" in line for line in lines) == 1, "one header"
    assert [line.split()[:4] for line in lines[1:]] == [
        ["bert", "Running", "0", "0"], ["gpt", "Running", "0", "0"], ["vit", "Running", "0", "0"],
        ["bert", "Restarting", "1", "1"], ["vit", "Succeeded", "0", "0"], ["bert", "Terminating", "0", "0"]]
    assert watched.watches == [(NS, "team", "", "7", 30)], "from the list's resourceVersion, its selector"
    assert gpt["metadata"]["name"] == "gpt"


def test_watch_only_prints_the_changes_alone_in_the_format_asked(capsys: pytest.CaptureFixture[str]) -> None:
    watched = cluster()
    watched.changes = [("MODIFIED", changed(watched.jobs[1], phase="Failed"))]
    assert ok(watched, "get", "--watch-only", "-o", "name", capsys=capsys) == "job.nvcre.nvidia.com/gpt\n"
    assert watched.watches == [(NS, "", "", "", None)], "no list first: from now"
    out = ok(watched, "get", "gpt", "-w", "-o", "json", capsys=capsys)
    first, second = out.split("\n}\n", 1)
    assert json.loads(first + "}")["status"]["phase"] == "Running"
    assert json.loads(second)["status"]["phase"] == "Failed"
    assert watched.watches[-1] == (NS, "", "gpt", "5", None), "one Job: watched by name from its resourceVersion"


# -- history -------------------------------------------------------------------------------------------------


def test_history_prints_the_attempts_table_alone(capsys: pytest.CaptureFixture[str]) -> None:
    status = {**RUNNING, "attempt": 2, "workload": "llama-2", "attempts": ATTEMPTS, "attemptsDropped": 5}
    recorded = Recorded([nvjob("llama", status=status)])
    code = commands.run(["history", "llama"], connector=lambda _: (recorded, NS),
                        clock=lambda: datetime(2026, 1, 1, 6, tzinfo=UTC))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["#", "JOBSET", "CREATED"] and not lines[0].startswith(" ")
    assert [line.split()[:2] for line in lines[1:4]] == [["0", "llama-0"], ["1", "llama-1"], ["2", "llama-2"]]
    assert lines[4] == "attempt 0: class user: pod llama-0-worker-3-0: exit code 137 (OOMKilled)"
    assert lines[5] == "(5 earlier attempts counted, not kept)" and len(lines) == 7
    # attempt 0's user-class restart (its cause, in the history) spent one of the user budget, as the
    # hooks count it (hooks.core.budget.floor), though this status' restarts says 0
    assert lines[6] == ("budgets left: user 1 of 2, preempted unlimited, node 10 of 10, infrastructure 10 of 10, "
                        "unknown 1 of 2 (shared with user)")
    assert "Pods" not in out and "Drain barrier" not in out
    bare = ok(recorded, "history", "llama", "--no-headers", capsys=capsys).splitlines()
    assert bare[0].split()[:2] == ["0", "llama-0"]
    document = json.loads(ok(recorded, "history", "llama", "-o", "json", capsys=capsys))
    assert [row["jobSet"] for row in document["attempts"]] == ["llama-0", "llama-1", "llama-2"]
    assert (document["name"], document["attemptsDropped"]) == ("llama", 5)
    assert document["attempts"][0]["class"] == "user" and document["budgets"][2] == {
        "class": "node", "budget": 10, "spent": 0, "left": 10, "shares": ""}
    code, out, err = run(Recorded([nvjob("old", status=RUNNING)]), "history", "old", capsys=capsys)
    assert (code, out) == (0, "")
    assert err == "No attempt history recorded for job.nvcre.nvidia.com/old (status.attempts is absent).\n"
    code, out, err = run(Recorded(), "history", "nope", capsys=capsys)
    assert (code, err) == (1, 'Error from server (NotFound): jobs.nvcre.nvidia.com "nope" not found\n')


def test_the_jsonpath_port_reads_kubectls_examples() -> None:
    """A few of kubectl's documented examples (kubectl get --help, the JSONPath reference page)."""
    pods = {"kind": "List", "items": [
        {"metadata": {"name": "a"}, "status": {"capacity": {"cpu": "4"}, "addresses": [
            {"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "a"}]}},
        {"metadata": {"name": "b"}, "status": {"capacity": {"cpu": "8"}, "addresses": [
            {"type": "InternalIP", "address": "10.0.0.2"}]}}]}

    def run_template(text: str) -> str:
        return jsonpath.execute(jsonpath.parse(text), pods)

    assert run_template("{.items[*]['metadata.name', 'status.capacity']}") == 'a b {"cpu":"4"} {"cpu":"8"}'
    assert run_template('{.items[*].status.addresses[?(@.type=="InternalIP")].address}') == "10.0.0.1 10.0.0.2"
    assert run_template("{..name}") == "a b"
    assert run_template("{$.kind}") == "List"
    assert run_template("{.items[0:1].metadata.name}{.items[::2].metadata.name}") == "aa"
    assert run_template('{range .items[*]}[{.metadata.name}, {.status.capacity.cpu}] {end}') == "[a, 4] [b, 8] "
    with pytest.raises(jsonpath.JSONPathError, match="not in range, nothing to end"):
        run_template("{end}")
    with pytest.raises(jsonpath.JSONPathError, match="incompatible types for comparison"):
        run_template("{.items[?(@.status.capacity.cpu==4)]}")
