"""The README's podread example runs and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_podread_example_runs_and_prints_what_it_says() -> None:
    text = README.read_text()
    section = text.split("## podread", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "the README's podread section has no python example"
    source = code.group(1)
    expected = [line.split("#", 1)[1].strip().split("  ")[0] for line in source.splitlines()
                if line.startswith("# [")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), {})
    assert out.getvalue().split("\n")[:-1] == expected


def test_the_readme_shows_both_commands() -> None:
    text = README.read_text()
    assert "make test" in text and "make run" in text
