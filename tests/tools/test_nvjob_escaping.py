"""``kubectl nvjob`` shows no control character it read from the cluster (issue 31, item 3).

Anyone who may create an Event in the namespace writes its note; a status message, a condition's
reason, a pod or node name are text from the API server too. Printed raw, an ``ESC [2J`` clears the
screen, ``ESC ]52;c;... BEL`` writes the user's clipboard, a CR followed by ``Drained=True`` forges a
line, an 8-bit CSI (U+009B) or a bidi override (U+202E) does the same on terminals that honour them.
The commands run end to end over ``tests.tools.test_nvjob``'s ``Recorded`` cluster, with such text
in every field they show; a character is unsafe by ``unicodedata`` here, not by the plugin's own list.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import Any

import pytest
import yaml

from hooks.tools.nvjob import client, rendering
from tests.support import make_batch_job, make_pod
from tests.tools.test_nvjob import NS, Recorded, event, node, nvjob, run

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
FORGED = "\rDrained=True\n"
CSI8 = "\x9b31m"
REORDER = "\u202eevil\x7f\x08"
HOSTILE = CLEAR + CLIPBOARD + FORGED + CSI8 + REORDER
"""A screen clear, an OSC 52 clipboard write, a CR and a forged ``Drained=True`` line, an 8-bit CSI, a
right-to-left override, DEL and BS."""
SHOWN = ["^[[2J", "^[]52;c;cm0gLXJmIH4=\\x07", "\\rDrained=True\\n", "\\u009b31m", "\\u202eevil\\x7f\\x08"]
"""``HOSTILE`` as the plugin shows it, piece by piece."""

EXPLICIT_BIDI = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` a terminal acts on instead of showing, other than the plugin's own
    line breaks: controls (C0 with TAB and CR, DEL, C1), surrogates, line and paragraph separators,
    and the explicit bidi embeddings, overrides and isolates."""
    return [char for char in text if char != "\n" and (
        unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") or unicodedata.bidirectional(char) in EXPLICIT_BIDI)]


def hostile_cluster(text: str = HOSTILE) -> Recorded:
    """Job ``llama`` Restarting after attempt 1 failed, with ``text`` in every string the plugin shows
    that the cluster wrote: the status message, the conditions' reasons and messages, ``lastFailure``,
    ``status.attempts`` (with its failure class's evidence and nodes), ``status.excludedNodes``, the
    image and the queue label, a pod and node name, and the Events' type,
    reason, reporter and note; and, in namespace ``text``, a Job named ``text``."""
    status = {"phase": "Restarting", "attempt": 1, "restarts": 2, "workload": "", "activePods": 1,
              "message": "waiting for " + text,
              "lastFailure": {"attempt": 1, "cause": "default", "action": "RestartJob", "message": "failed " + text},
              "attempts": [{"attempt": 1, "jobSet": "llama-1" + text, "outcome": "Failed",
                            "failedReplicatedJob": "worker" + text, "failedPod": "pod" + text, "node": "gpu" + text,
                            "exitCode": None, "reason": "Reason" + text, "cause": "cause" + text,
                            "class": "node", "classEvidence": "evidence " + text, "failedNodes": ["bad" + text]}],
              "excludedNodes": [{"node": "bad" + text, "class": "node", "attempt": 1, "until": "2026-01-01T01:00:00Z"}],
              "conditions": [{"type": "Drained", "status": "False", "reason": "PodsActive" + text,
                              "message": "drained " + text, "lastTransitionTime": "2020-01-01T00:00:00Z"},
                             {"type": "DrainStuck", "status": "True", "reason": "Stuck" + text,
                              "message": "stuck " + text, "lastTransitionTime": "2020-01-01T00:00:00Z"}]}
    job = nvjob("llama", status=status, launcher="launcher", max_restarts=3)
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "queue" + text
    job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "image" + text
    pods = [make_pod("llama-1-worker-0-0" + text, job="llama", namespace=NS, workload="llama-1",
                     replicated_job="worker", node="gpu-7" + text, deleting="2026-01-01T00:00:30Z")]
    note = event("llama", "Restarting" + text, "note " + text, "2026-01-01T00:00:10Z", type_="Warning" + text)
    note["reportingController"] = "reporter" + text
    stranger = nvjob("evil" + text, namespace="ns" + text, status={"phase": "Running", "message": "running " + text})
    return Recorded([job, stranger], pods=pods, batch_jobs=[make_batch_job("llama-1", namespace=NS)],
                    nodes=[node("gpu-7" + text, "True")], events=[note])


def shown(cluster: Recorded, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run(cluster, *args, capsys=capsys)
    assert (code, err) == (0, "")
    return out


COMMANDS = [("get",), ("get", "-A"), ("describe", "llama"), ("why", "llama")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_control_character_from_the_cluster_reaches_the_terminal(command: tuple[str, ...],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = shown(hostile_cluster(), *command, capsys=capsys)
    assert unsafe(out) == []
    assert "^[[2J^[]52;c;cm0gLXJmIH4=\\x07\\rDrained=True\\n" in out
    if command[0] != "why":  # why wraps its paragraph: longer words, more lines
        plain = shown(hostile_cluster("x"), *command, capsys=capsys)
        assert len(out.splitlines()) == len(plain.splitlines()), "no line but the layout's"


def test_describe_shows_each_field_visibly_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    out = shown(hostile_cluster(), "describe", "llama", capsys=capsys)
    whole = "".join(SHOWN)
    for field in ("Message:              waiting for ", "IMAGE", "Queue:", "Pods (JobSet llama-1):", "Drain barrier:",
                  "Attempts:", "Conditions:", "Events:"):
        assert field in out
    assert f"Message:              waiting for {whole}\n" in out
    assert f"Queue:                      queue{whole}\n" in out
    assert f"image{whole}" in out and f"llama-1-worker-0-0{whole}" in out and f"gpu-7{whole}" in out
    assert f"attempt 1: class node: evidence {whole} (failed nodes: bad{whole})" in out
    assert f"bad{whole}" in out.split("Excluded nodes (status.excludedNodes):")[1].split("Pods (")[0]
    headings = ["Spec:", "Attempts:", "Excluded nodes", "Pods (", "Drain barrier:", "Conditions:", "Events:"]
    for heading, following in zip(headings, [*headings[1:], None], strict=True):
        section = out.split(heading, 1)[1]
        assert "^[[2J" in (section.split(following, 1)[0] if following else section), heading
    assert f"reporter{whole}" in out.split("Events:")[1]


def test_get_all_namespaces_shows_names_and_namespaces_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    whole = "".join(SHOWN)
    rows = shown(hostile_cluster(), "get", "-A", capsys=capsys).splitlines()
    assert rows[2].startswith(f"ns{whole}   evil{whole}   Running")
    assert rows[0].index("NAME ") == rows[1].index("llama") == len(f"ns{whole}   "), \
        "the columns are aligned on the escaped text, as it is shown"


def test_why_shows_the_cluster_text_escaped_and_wraps_only_at_spaces(capsys: pytest.CaptureFixture[str]) -> None:
    out = shown(hostile_cluster(), "why", "llama", capsys=capsys)
    paragraph = out.rstrip("\n").replace("\n", " ")
    exact = json.loads(shown(hostile_cluster(), "why", "llama", "-o", "json", capsys=capsys))["why"]
    assert paragraph == rendering.escape(exact), "the paragraph, escaped, broken at its spaces only"
    assert f"attempt 1 failed (failed {''.join(SHOWN)})" in paragraph
    assert f"2020-01-01T00:00:00Z): stuck {''.join(SHOWN)}. First confirm" in paragraph
    assert f"ended in failure class node (evidence {''.join(SHOWN)})" in paragraph
    assert f"status.excludedNodes, spec.failurePolicy.excludeNodesSeconds): bad{''.join(SHOWN)} (until" in paragraph
    assert all(len(line) <= rendering.WHY_WIDTH or " " not in line for line in out.splitlines())


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_json_and_yaml_keep_the_exact_strings_and_stay_terminal_safe(output: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    load = json.loads if output == "json" else yaml.safe_load
    cluster = hostile_cluster()
    listed = shown(cluster, "get", "-A", "-o", output, capsys=capsys)
    assert unsafe(listed) == []
    objects = {item["metadata"]["name"]: item for item in load(listed)["items"]}
    assert objects["llama"]["status"]["message"] == "waiting for " + HOSTILE, "the Job objects, exact"
    assert objects["evil" + HOSTILE]["metadata"]["namespace"] == "ns" + HOSTILE
    rows = shown(cluster, "summary", "-A", "-o", output, capsys=capsys)
    assert unsafe(rows) == []
    items = {item["name"]: item for item in load(rows)["items"]}
    assert items["llama"]["waitingFor"] == "waiting for " + HOSTILE
    assert items["evil" + HOSTILE]["namespace"] == "ns" + HOSTILE
    described = shown(cluster, "describe", "llama", "-o", output, capsys=capsys)
    assert unsafe(described) == []
    document = load(described)
    assert document["job"]["waitingFor"] == "waiting for " + HOSTILE
    assert [c["message"] for c in document["conditions"]] == ["drained " + HOSTILE, "stuck " + HOSTILE]
    assert [(e["type"], e["reason"], e["from"], e["note"]) for e in document["events"]] == [
        ("Warning" + HOSTILE, "Restarting" + HOSTILE, "reporter" + HOSTILE, "note " + HOSTILE)]
    assert document["attempts"][0]["reason"] == "Reason" + HOSTILE
    assert [(p["name"], p["node"]) for p in document["pods"]] == [("llama-1-worker-0-0" + HOSTILE, "gpu-7" + HOSTILE)]
    assert document["spec"]["queue"] == "queue" + HOSTILE
    said = shown(cluster, "why", "llama", "-o", output, capsys=capsys)
    assert unsafe(said) == []
    assert f"attempt 1 failed (failed {HOSTILE})" in load(said)["why"]


def test_names_history_and_jsonpath_show_the_cluster_text_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    whole = "".join(SHOWN)
    cluster = hostile_cluster()
    assert shown(cluster, "get", "-A", "-o", "name", capsys=capsys).splitlines() == [
        "job.nvcre.nvidia.com/llama", f"job.nvcre.nvidia.com/evil{whole}"]
    template = '{range .items[*]}{.metadata.name}{"\\t"}{.status.message}{"\\n"}{end}'
    out = shown(cluster, "get", "-A", "-o", f"jsonpath={template}", capsys=capsys)
    assert out == f"llama\twaiting for {whole}\nevil{whole}\trunning {whole}\n", \
        "the objects' strings escaped, the template's own tab and line breaks kept"
    history = shown(cluster, "history", "llama", capsys=capsys)
    assert unsafe(history) == [] and f"Reason{whole}" in history and f"gpu{whole}" in history
    table = shown(cluster, "get", "llama", "-o", "wide", capsys=capsys)
    assert unsafe(table) == [] and f"queue{whole}" in table and "StuckSince" not in table


def test_an_error_that_quotes_the_server_is_escaped_with_kubectls_words_and_exit_code(
        capsys: pytest.CaptureFixture[str]) -> None:
    class Refusing(Recorded):
        def get_job(self, namespace: str, name: str) -> dict[str, Any]:
            raise client.CommandError(f"Error from server (Forbidden): {HOSTILE}")

    for command in (("get", "llama"), ("describe", "llama"), ("why", "llama")):
        code, out, err = run(Refusing(), *command, capsys=capsys)
        assert (code, out) == (1, "")
        assert err == f"Error from server (Forbidden): {''.join(SHOWN)}\n"
    code, out, _ = run(Recorded(hostile_cluster().jobs, jobsets_fail=HOSTILE), "describe", "llama", capsys=capsys)
    assert code == 0 and unsafe(out) == []
    assert f"unknown: the JobSet read failed: {''.join(SHOWN)}" in out


# -- the function ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "visible"), [
    ("\x1b", "^["), ("\r", "\\r"), ("\n", "\\n"), ("\t", "\\t"), ("\x07", "\\x07"), ("\x08", "\\x08"),
    ("\x00", "\\x00"), ("\x1f", "\\x1f"), ("\x7f", "\\x7f"), ("\x80", "\\u0080"), ("\x85", "\\u0085"),
    ("\x9b", "\\u009b"), ("\x9d", "\\u009d"), ("\x9f", "\\u009f"), ("\u202e", "\\u202e"), ("\u2066", "\\u2066"),
    ("\u2069", "\\u2069"), ("\u200f", "\\u200f"), ("\u2028", "\\u2028"), ("\ud800", "\\ud800"),
    ("ok é 中 🙂 \xa0 ^ \\ ~", "ok é 中 🙂 \xa0 ^ \\ ~"),
])
def test_escape_shows_each_control_character_as_text(raw: str, visible: str) -> None:
    assert rendering.escape(raw) == visible
    assert rendering.escape(rendering.escape(raw)) == visible


def test_escape_leaves_no_unsafe_character_of_all_unicode() -> None:
    everything = "".join(chr(point) for point in range(sys.maxunicode + 1))
    unsafe_set = set(unsafe(everything)) | {"\n"}
    assert not set(rendering.escape(everything)) & unsafe_set
    printable = "".join(char for char in everything if char not in unsafe_set and char not in "\u061c\u200e\u200f")
    assert rendering.escape(printable) == printable, "what a terminal shows as it is stays as it is"


def test_terminal_safe_escapes_every_string_of_a_document_and_keeps_the_rest() -> None:
    document = {"a": CLEAR, "b": [1, None, True, {"c": (FORGED,)}], "d": 2.5}
    assert rendering.terminal_safe(document) == {"a": "^[[2J", "b": [1, None, True, {"c": ["\\rDrained=True\\n"]}],
                                                 "d": 2.5}


def test_yaml_quotes_a_string_with_a_bidi_control_and_keeps_other_text_as_it_is() -> None:
    document = {"bidi": "a\u202eb é", "plain": "é 中", "controls": HOSTILE}
    text = rendering.dump(document, "yaml")
    assert unsafe(text) == []
    assert 'bidi: "a\\u202Eb \\xE9"' in text and "plain: é 中" in text
    assert yaml.safe_load(text) == document
