"""The soak (``make soak``, ``python -m tests.soak``): long randomized safety runs, in process.

- at least ``--schedules`` (10,000) random event schedules (tests/e2e/schedules.py) against the
  Flask app with a podread Reader over the simulated cluster, every invariant checked after every
  step and liveness at the end of each schedule;
- at least ``--fuzz`` (10,000) broken requests (tests/e2e/fuzz.py) and random byte strings.

Both stop early at ``--budget`` seconds each (printing how far they got). Prints the counts and
the violations; exits 1 on any violation (or if fewer than the asked number ran), else 0.
A failing schedule is printed with its seed: ``python -m tests.soak --seed N --schedules 1``
replays it.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from datetime import UTC, datetime

from hooks.server.app import create_app
from hooks.server.config import Settings
from tests.e2e.fuzz import MISSING, check_answer, encode, fuzz_reader, random_mutation
from tests.e2e.harness import Harness
from tests.e2e.schedules import World, random_schedule


def soak_schedules(count: int, budget: float, seed: int, length: int) -> tuple[int, int, list[str]]:
    """Runs up to ``count`` schedules; returns (ran, hook calls, violations)."""
    started = time.monotonic()
    violations: list[str] = []
    calls = 0
    ran = 0
    for number in range(count):
        if time.monotonic() - started > budget:
            break
        schedule_seed = seed + number
        rng = random.Random(schedule_seed)
        harness = Harness.fast(namespace=f"soak-{number}", version=rng.choice(["v1", "v2"]))
        harness.driver.keep_calls = False
        world = World(harness)
        world.run(random_schedule(rng, rng.randint(10, 30)))
        problems = world.settle()
        calls += harness.invariants.checks
        found = harness.invariants.violations + problems
        if found:
            violations.append(f"schedule seed {schedule_seed}: {found[:3]} actions={world.actions}")
        ran += 1
        if ran % 1000 == 0:
            print(f"  schedules: {ran} ran, {len(violations)} violating, {time.monotonic() - started:.0f}s",
                  flush=True)
    return ran, calls, violations


def soak_fuzz(count: int, budget: float, seed: int) -> tuple[int, list[str]]:
    """Posts up to ``count`` broken requests; returns (ran, violations)."""
    started = time.monotonic()
    app = create_app(fuzz_reader(), clock=lambda: datetime(2025, 1, 1, tzinfo=UTC), settings=Settings())
    client = app.test_client()
    rng = random.Random(seed)
    violations: list[str] = []
    ran = 0
    for number in range(count):
        if time.monotonic() - started > budget:
            break
        if number % 10 == 9:
            request, data, hook = MISSING, rng.randbytes(rng.randint(0, 200)), "sync"
        else:
            mutation = random_mutation(rng)
            request, hook = mutation.request(), mutation.hook
            data = encode(request)
        response = client.post(f"/{hook}", data=data, content_type="application/json")
        problems = check_answer(request, response.status_code, response.get_data())
        if problems:
            violations.append(f"fuzz #{number}: {problems[:2]} request={str(request)[:300]}")
        ran += 1
        if ran % 5000 == 0:
            print(f"  fuzz: {ran} ran, {len(violations)} violating, {time.monotonic() - started:.0f}s", flush=True)
    return ran, violations


def main(argv: list[str] | None = None) -> int:
    """Runs the soak; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--fuzz", type=int, default=10_000)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds for each of the two parts")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--length", type=int, default=30, help="longest schedule, in actions")
    args = parser.parse_args(argv)
    logging.getLogger().addHandler(logging.NullHandler())
    logging.getLogger().setLevel(logging.CRITICAL)
    started = time.monotonic()
    print(f"soak: {args.schedules} schedules and {args.fuzz} fuzz requests (seed {args.seed})", flush=True)
    ran, checks, schedule_violations = soak_schedules(args.schedules, args.budget, args.seed, args.length)
    print(f"schedules: {ran} ran, {checks} invariant checks, {len(schedule_violations)} violating", flush=True)
    fuzzed, fuzz_violations = soak_fuzz(args.fuzz, args.budget, args.seed)
    print(f"fuzz: {fuzzed} requests, {len(fuzz_violations)} violating", flush=True)
    for violation in (schedule_violations + fuzz_violations)[:20]:
        print(f"VIOLATION {violation}")
    print(f"soak took {time.monotonic() - started:.0f}s")
    short = ran < args.schedules or fuzzed < args.fuzz
    if short:
        print("soak: the time budget ran out before the asked numbers ran")
    return 1 if schedule_violations or fuzz_violations or short else 0


if __name__ == "__main__":
    sys.exit(main())
