"""The naming rule of a Job's workloads (``podread.attempts``): one home, used by the reads and the core."""

from __future__ import annotations

import pathlib

import pytest

from podread.attempts import attempt_in_name, attempt_number, workload_name

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "number"), [("0", 0), ("7", 7), ("9999", 9999), ("12345678901", 12345678901),
                                              ("", None), ("01", None), ("-1", None), ("1a", None), (" 1", None),
                                              ("٣", None)])
def test_an_attempt_number_is_decimal_without_a_leading_zero(text: str, number: int | None) -> None:
    assert attempt_number(text) == number


def test_a_workload_name_round_trips_and_names_only_its_own_job() -> None:
    assert workload_name("llama", 3) == "llama-3"
    assert attempt_in_name("llama", workload_name("llama", 3)) == 3
    assert attempt_in_name("llama", "llama-3-worker") is None
    assert attempt_in_name("llama", "llama3") is None
    assert attempt_in_name("llama-3", "llama-3-0") == 0  # a Job named like another's attempt is its own
    assert attempt_in_name("llama", "llama-3-0") is None


def test_no_other_module_spells_the_rule() -> None:
    """The attempt pattern is written once: a second spelling is how two bounds came to differ."""
    spelled = [str(path.relative_to(ROOT)) for folder in ("hooks", "podread") for path in (ROOT / folder).rglob("*.py")
               if "[1-9][0-9]" in path.read_text() and path.name != "attempts.py"]
    assert spelled == []


def test_a_batch_job_name_belongs_to_its_workload() -> None:
    from podread.attempts import batch_job_of

    assert batch_job_of("llama-3", "llama-3-worker-0")
    assert batch_job_of("llama-3", "llama-3-my-launcher-12")
    assert not batch_job_of("llama-3", "llama-3-worker")
    assert not batch_job_of("llama-3", "llama-30-worker-0") and batch_job_of("llama-30", "llama-30-worker-0")
    assert not batch_job_of("llama-3", "llama-4-worker-0")
    assert not batch_job_of("llama-3", "llama-3-Worker-0")
