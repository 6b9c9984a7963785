"""Rules with one home: "a restart that spends no restart" is decided by ``failurepolicy.spends_no_restart``
alone, and the modules that need it (the restart row, the status check, the Restarting Event) ask it;
the ``<job>-<attempt>`` naming rule is ``podread.attempts``, shared by podread and the core; the server
imports no tool (the recorder is given to it)."""

from __future__ import annotations

import ast
from pathlib import Path

from hooks.core import failurepolicy, lifecycle
from hooks.core.events import transition_events
from hooks.core.observed import parse_request
from tests.support import job_request

ROOT = Path(__file__).resolve().parents[2]
UNCOUNTED = "RestartJobIgnoreMaxRestarts"


def mentions_of_the_uncounted_action(path: Path) -> list[int]:
    """The lines of ``path`` whose code (not a docstring) names the uncounted action: the literal
    ``RestartJobIgnoreMaxRestarts`` or the name ``RESTART_IGNORE``."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    named = {"RESTART_IGNORE"}
    lines = []
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Constant) and node.value == UNCOUNTED and id(node) not in docstrings
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else "")
        if literal or name in named:
            lines.append(node.lineno)
    return lines


def test_the_uncounted_restart_is_decided_in_one_place() -> None:
    found = {str(path.relative_to(ROOT)): lines for path in sorted((ROOT / "hooks").rglob("*.py"))
             if (lines := mentions_of_the_uncounted_action(path))}
    assert list(found) == ["hooks/core/failurepolicy.py"], found
    for module in ("hooks/core/evidence.py", "hooks/core/events.py"):
        source = (ROOT / module).read_text()
        assert "spends_no_restart" in source, module
    # the restart row takes the verdict's charge (``Verdict.charge``: ``counted`` from the rule) and asks the budget
    row = (ROOT / "hooks/core/rows/current.py").read_text()
    assert "verdict.charge" in row and "budget.spend" in row


def test_the_planted_second_spelling_is_found(tmp_path: Path) -> None:
    planted = tmp_path / "events.py"
    planted.write_text(f'"""{UNCOUNTED} in words is fine."""\nCOUNTED = action != "{UNCOUNTED}"\n')
    assert mentions_of_the_uncounted_action(planted) == [2]


def test_only_the_disruption_action_spends_no_restart() -> None:
    assert [failurepolicy.spends_no_restart(a) for a in failurepolicy.ACTIONS] == [False, False, True]
    assert not failurepolicy.spends_no_restart(None)
    verdicts = [failurepolicy.Verdict(action, "c", "m") for action in failurepolicy.ACTIONS]
    assert [(v.restarts, v.counted) for v in verdicts] == [(False, False), (True, True), (True, False)]


def test_the_restarting_event_says_whether_it_counts() -> None:
    prior = parse_request(job_request(status={"phase": "Running", "attempt": 0}), "sync").status
    for action, words in ((UNCOUNTED, "does not count against maxRestarts"), ("RestartJob", "counts against")):
        status = {"phase": "Restarting", "attempt": 0, "lastFailure": {"action": action, "cause": "c", "message": "m"}}
        failing = lifecycle.path(("Running", 0), ("Running", 0), lifecycle.Move.FAIL, ("Restarting", 0), False)
        (event,) = transition_events(prior, status, transitions=failing)
        assert words in event.note and (action == UNCOUNTED) == ("does not count" in event.note)


def imported_modules(path: Path) -> set[str]:
    """The modules ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_server_imports_no_tool_and_the_recorder_is_given_to_it() -> None:
    """``hooks.tools.record`` wraps the server's ``handle`` (``hooks.server.app.Middleware``), given to
    ``create_app`` by the composition root: the server never imports a tool, so the two cannot
    import each other."""
    found = {str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.startswith("hooks.tools"))
             for path in sorted((ROOT / "hooks" / "server").rglob("*.py"))}
    assert {path: tools for path, tools in found.items() if tools} == {}
    assert "hooks.tools.record" in imported_modules(ROOT / "hooks" / "wsgi.py")


def test_the_attempt_naming_rule_is_the_one_podread_and_the_core_share() -> None:
    """``<job>-<attempt>`` is read and written by ``podread.attempts`` alone: the Reader that selects an
    attempt's pods and the core's barrier, evidence and Context all import it."""
    for module in ("podread/reader.py", "hooks/core/barrier.py", "hooks/core/evidence.py", "hooks/core/work.py",
                   "hooks/tools/cli_format.py"):
        assert "podread.attempts" in imported_modules(ROOT / module), module


def attempt_spellings(path: Path) -> list[str]:
    """Every f-string of ``path`` that spells ``<job>-<attempt>`` by hand: a formatted value naming a
    job, ``-``, then one naming an attempt (``f"{ctx.job}-{work.attempt}"``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for first, dash, second in zip(parts, parts[1:], parts[2:], strict=False):
            if (isinstance(first, ast.FormattedValue) and isinstance(second, ast.FormattedValue)
                    and isinstance(dash, ast.Constant) and dash.value == "-"
                    and "job" in ast.unparse(first.value).lower() and "attempt" in ast.unparse(second.value).lower()):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_spells_the_attempt_naming_rule_by_hand() -> None:
    """The rule's spelling, not only its import: outside ``podread.attempts`` no source of the hooks
    or podread writes ``<job>-<attempt>`` itself (``workload_name`` does)."""
    sources = [path for folder in ("hooks", "podread") for path in sorted((ROOT / folder).rglob("*.py"))
               if path != ROOT / "podread" / "attempts.py"]
    assert [spelling for path in sources for spelling in attempt_spellings(path)] == []
    assert attempt_spellings(ROOT / "podread" / "attempts.py"), "the check finds the rule where it lives"
