"""``kubectl nvjob why`` and the drain view explain the phases and transitions from the lifecycle table
(``hooks.core.lifecycle``: ``PHASES``, ``ARROWS`` and their words), not from copies of their own
(issue 32): every arrow of the table is said for its phase, and a phase or an arrow added to the
table is explained by the plugin without editing it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks.core import lifecycle
from hooks.tools.nvjob import drain, why
from tests.tools.test_nvjob import Recorded, nvjob, run


def why_of(job: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run(Recorded([job]), "why", job["metadata"]["name"], "-o", "json", capsys=capsys)
    assert (code, err) == (0, "")
    return str(json.loads(out)["why"])


@pytest.mark.parametrize("phase", [str(phase) for phase in lifecycle.PHASES])
def test_every_arrow_out_of_a_phase_is_said_in_the_tables_words(phase: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """For a Job in each phase of the table (not deleted: a deleted Job is said by its own arrow),
    ``why`` names every target the table lets it move to, with every arrow's words for this Job."""
    status = {"phase": phase, "attempt": 1, "restarts": 0, "workload": "llama-1", "conditions": []}
    deadline = phase == "Terminating"
    if deadline:  # a Terminating Job not deleted: past its deadline
        status["conditions"] = [{"type": "DeadlineExceeded", "status": "True", "reason": "ActiveDeadlineSeconds"}]
    text = why_of(nvjob("llama", status=status), capsys)
    ways = why.ways_on(phase, but=frozenset({lifecycle.START}) if deadline else frozenset())
    assert ways or lifecycle.PHASES[phase].terminal is False
    for target, words in ways:
        said = f"to {target} when " + " or when ".join(why._fill(w, "llama", 2) for w in words)
        assert said in text, (phase, said, text)
    assert ("The phase is final" in text) == lifecycle.PHASES[phase].terminal


@pytest.fixture
def table_with_a_new_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lifecycle table as a change to hooks/core would make it: a phase ``Checkpointing``
    (Running goes there when asked; it waits for the drain barrier, then Suspended) and a terminal
    phase ``Archived`` after Succeeded."""
    phases = {**lifecycle.PHASES,
              "Checkpointing": lifecycle.PhaseRule("Checkpointing", terminal=False,  # type: ignore[arg-type]
                                                   jobset=lifecycle.Coexist.ANY),
              "Archived": lifecycle.PhaseRule("Archived", terminal=True,  # type: ignore[arg-type]
                                              jobset=lifecycle.Coexist.ANY)}
    arrows = (*lifecycle.ARROWS,
              lifecycle.Arrow("Running", "Checkpointing", "spec.checkpoint set", (lifecycle.Move.SUSPEND,)),
              lifecycle.Arrow("Checkpointing", "Suspended", "checkpoint saved, drain barrier passed",
                              (lifecycle.Move.SUSPEND,)),
              lifecycle.Arrow("Succeeded", "Archived", "archived by the operator", (lifecycle.Move.DELETE,)),
              lifecycle.Arrow("Archived", "Terminating", "deleted", (lifecycle.Move.DELETE,)))
    monkeypatch.setattr(lifecycle, "PHASES", phases)
    monkeypatch.setattr(lifecycle, "ARROWS", arrows)


@pytest.mark.usefixtures("table_with_a_new_phase")
def test_a_phase_and_arrows_added_to_the_table_are_explained_without_editing_the_plugin(
        capsys: pytest.CaptureFixture[str]) -> None:
    checkpointing = {"phase": "Checkpointing", "attempt": 0, "restarts": 0, "workload": "llama-0",
                     "message": "waiting for the checkpoint of JobSet llama-0", "conditions": []}
    text = why_of(nvjob("llama", status=checkpointing), capsys)
    assert text.startswith("Job llama is Checkpointing: waiting for the checkpoint of JobSet llama-0. "
                           "From Checkpointing it moves to Suspended when checkpoint saved, drain barrier "
                           "passed."), text
    running = {"phase": "Running", "attempt": 0, "restarts": 0, "workload": "llama-0", "conditions": []}
    assert "to Checkpointing when spec.checkpoint set" in why_of(nvjob("llama", status=running), capsys)
    assert "Checkpointing" in drain.draining_phases(), "its arrow waits for the drain barrier: it drains"
    code, out, _ = run(Recorded([nvjob("llama", status=checkpointing)]), "describe", "llama", "-o", "json",
                       capsys=capsys)
    assert code == 0 and json.loads(out)["drain"]["draining"] is True
    archived = {"phase": "Archived", "attempt": 0, "restarts": 0, "workload": "llama-0", "conditions": []}
    text = why_of(nvjob("llama", status=archived), capsys)
    assert "The phase is final" in text and "to Terminating when deleted" in text, text
    succeeded = {**archived, "phase": "Succeeded"}
    assert "to Archived when archived by the operator" in why_of(nvjob("llama", status=succeeded), capsys)


def test_the_draining_phases_are_the_tables() -> None:
    """Today's table: the phases with an arrow that waits for the drain barrier."""
    waiting = {str(a.source) for a in lifecycle.ARROWS if "drain barrier passed" in a.words} - {lifecycle.START}
    assert drain.draining_phases() == waiting == {"Restarting", "Suspending", "Terminating"}
