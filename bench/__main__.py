"""``python -m bench [--quick] [name ...]``: run the benchmarks, print every figure, write results.json.

Without names every benchmark runs (``make bench``) but ``cluster_scale`` and ``parent_read``, which
bring up the real control plane and run only when named (``make bench-cluster`` runs the first);
``--quick`` runs each at a small size. The full run writes ``bench/results.json``; a quick or partial
run writes only with ``--out``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import BenchResult, figure_rows, render_table

BENCHMARKS = {
    "api_calls": "bench.api_calls",
    "sync_http": "bench.sync_http",
    "sync_profile": "bench.sync_profile",
    "raw_json": "bench.raw_json",
    "cache_memory": "bench.cache_memory",
    "cluster_scale": "bench.cluster_scale",
    "parent_read": "bench.parent_read",
}
ON_A_CLUSTER = ("cluster_scale", "parent_read")
"""Benchmarks that bring up the real control plane (``make bench-cluster``): run only when named."""
RESULTS = Path(__file__).resolve().parent / "results.json"


def run_one(name: str, quick: bool) -> BenchResult:
    """Runs benchmark ``name`` and times it."""
    module = importlib.import_module(BENCHMARKS[name])
    started = time.perf_counter()
    result: BenchResult = module.run(quick=quick)
    result.seconds = time.perf_counter() - started
    return result


def report(result: BenchResult) -> str:
    """The printed section of one benchmark: figures, then its tables and notes."""
    lines = [f"== {result.name}: {result.title} ({result.seconds:.1f} s)", render_table(figure_rows(result.figures))]
    for table, rows in result.tables.items():
        lines += ["", f"-- {table}", render_table(rows)]
    for note in result.notes:
        lines.append(f"note: {note}")
    lines.append(f"scale: {json.dumps(result.scale, default=str)}")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
            "date": datetime.now(UTC).isoformat(timespec="seconds")}


def main(argv: list[str] | None = None) -> int:
    """Parses the arguments, runs the benchmarks, prints and writes the results."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", choices=[*BENCHMARKS, []], help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="run each benchmark at a small size")
    parser.add_argument("--out", type=Path, help="write the results here (default: bench/results.json for a "
                                                 "full run of every benchmark, nowhere otherwise)")
    args = parser.parse_args(argv)
    names = args.names or [name for name in BENCHMARKS if name not in ON_A_CLUSTER]
    out = args.out or (RESULTS if not args.quick and not args.names else None)
    started = time.perf_counter()
    results = []
    for name in names:
        print(f"running {name}{' (quick)' if args.quick else ''} ...", flush=True)
        result = run_one(name, args.quick)
        results.append(result)
        print(report(result), end="\n\n", flush=True)
    total = time.perf_counter() - started
    every = [figure for result in results for figure in result.figures]
    print(f"== summary ({total:.0f} s in all)")
    print(render_table(figure_rows(every)))
    missed = [figure.name for figure in every if figure.met is False]
    print(f"targets missed: {len(missed)}" + (f" ({'; '.join(missed)})" if missed else ""))
    if out is not None:
        document = {"machine": machine(), "quick": args.quick, "total_seconds": round(total, 1),
                    "benchmarks": [result.as_dict() for result in results]}
        out.write_text(json.dumps(document, indent=2, default=str) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
