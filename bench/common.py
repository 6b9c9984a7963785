"""Shared pieces of the benchmarks: figures with their baselines, timing helpers, tables.

Every figure is printed with its absolute value, the baseline it is compared with (measured in the
same run, on the same noisy 2-core machine) and their ratio, so that a slow machine moves both.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Figure:
    """One measured figure, its baseline and (optionally) a target on their ratio.

    ``ratio`` is ``value / baseline`` unless given. ``target`` is a human sentence such as
    ``"<= 1.05 x floor"``; ``met`` is True/False when a target exists, else None.
    """

    name: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.ratio is None and self.baseline not in (None, 0):
            self.ratio = self.value / self.baseline  # type: ignore[operator]

    def as_dict(self) -> dict[str, Any]:
        """The figure as a JSON-ready dict."""
        return asdict(self)


@dataclass
class BenchResult:
    """What one benchmark module returns: its figures, extra tables, the scale it ran at."""

    name: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    scale: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return {
            "name": self.name,
            "title": self.title,
            "seconds": round(self.seconds, 2),
            "scale": self.scale,
            "figures": [figure.as_dict() for figure in self.figures],
            "tables": self.tables,
            "notes": self.notes,
        }


def fmt(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` significant digits (thousands kept whole), or ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain-text table of ``rows`` (dicts) with aligned columns."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    cells = [[c for c in columns]]
    for row in rows:
        cells.append([fmt(row.get(c)) if isinstance(row.get(c), float) else str(row.get(c, "")) for c in columns])
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def figure_rows(figures: Sequence[Figure]) -> list[dict[str, Any]]:
    """Rows for ``render_table`` from figures."""
    rows = []
    for f in figures:
        verdict = "" if f.met is None else ("met" if f.met else "MISSED")
        rows.append({
            "figure": f.name,
            "value": f"{fmt(f.value)} {f.unit}".strip(),
            "baseline": f"{fmt(f.baseline)} ({f.baseline_name})" if f.baseline is not None else "-",
            "ratio": fmt(f.ratio),
            "target": f.target or "-",
            "verdict": verdict,
        })
    return rows


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Runs ``fn`` ``repeat`` times; returns (min, median) wall seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def per_call(fn: Callable[[], object], *, min_seconds: float = 0.2, max_calls: int = 100_000) -> float:
    """Mean seconds per call of ``fn`` over at least ``min_seconds`` (best of three such batches)."""
    calls = 1
    while True:
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds / 3 or calls >= max_calls:
            break
        calls *= 4
    best = elapsed / calls
    for _ in range(2):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disables the cyclic garbage collector inside the block (restored after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
