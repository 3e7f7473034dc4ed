"""``replay --jobs`` on the generated fleet-day (issue 32 item 6): wall time at ``--jobs 1`` and ``--jobs 2``.

Generates the 100,000-event fleet-day (``bench/ecsgen.py``: four clusters, 200 services, 24 h, a
``healthy_hosts.csv``), then replays it with ``ecs-guardrail replay DAY --json --jobs N`` in fresh
processes, alternating the two settings over ``--rounds`` rounds, and prints per setting the median wall
time, the CPU of the process and its workers (``RUSAGE_CHILDREN``), and whether the output is the serial
one byte for byte. Prints only: the figures depend on the machine's free cores (another load halves a
two-core machine's gain).

Usage: ``python bench/jobs.py [--events 100000] [--rounds 1] [--jobs 1,2] [--write]`` (``--write`` replaces its
section of docs/benchmarks.md, as ``bench/storm.py --write`` does; ``make bench-docs`` runs both)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "ecs-guardrail"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ecs_guardrail.cli"]


def _run(day: Path, jobs: int) -> tuple[float, float, bytes]:
    """One replay: (wall seconds, CPU seconds of it and its workers, its stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([*_cli(), "replay", str(day), "--json", "--jobs", str(jobs)], capture_output=True,
                         check=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000, help="events of the fleet-day (default 100000)")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each setting, alternated (default 1)")
    ap.add_argument("--jobs", default="1,2", help="settings of --jobs to time (default 1,2)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md")
    ap.add_argument("--write", action="store_true", help="also write the section into --out")
    args = ap.parse_args()
    settings = [int(j) for j in args.jobs.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        day = Path(tmp) / "fleet-day"
        print(f"jobs: generating the {args.events:,}-event fleet-day", file=sys.stderr, flush=True)
        gen = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import ecsgen; "
               "ecsgen.fleet_day(Path(sys.argv[2]), events=int(sys.argv[3]))")
        subprocess.run([sys.executable, "-c", gen, str(Path(__file__).resolve().parent), str(day),
                        str(args.events)], check=True)
        walls: dict[int, list[float]] = {j: [] for j in settings}
        cpus: dict[int, list[float]] = {j: [] for j in settings}
        outs: dict[int, bytes] = {}
        for r in range(args.rounds):
            for j in settings:
                print(f"jobs: round {r + 1}/{args.rounds}, --jobs {j}", file=sys.stderr, flush=True)
                wall, cpu, out = _run(day, j)
                walls[j].append(wall)
                cpus[j].append(cpu)
                outs.setdefault(j, out)
    base = outs[settings[0]]
    lines = ["## A replay past one machine: `replay --jobs` (issue 32 item 6)", "",
             f"`python bench/jobs.py` (`make bench` runs it): the {args.events:,}-event fleet-day (4 clusters, fast "
             f"engine), `ecs-guardrail replay DAY --json --jobs N` in fresh processes, {args.rounds} round(s) "
             "alternated; CPU is the process's and its workers' (user + system); load average "
             f"{os.getloadavg()[0]:.1f} at the end (another load takes most of a two-core machine's gain).", "",
             "| --jobs | wall (s) | speed-up | CPU with workers (s) | output |", "| --- | --- | --- | --- | --- |"]
    for j in settings:
        w, c = statistics.median(walls[j]), statistics.median(cpus[j])
        speed = statistics.median(walls[settings[0]]) / w if w else float("nan")
        same = "identical to --jobs " + str(settings[0]) if outs[j] == base else "DIFFERENT"
        lines.append(f"| {j} | {w:.1f} | {speed:.2f}x | {c:.1f} | {same} |")
    print("\n".join(lines))
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from storm import write_section  # one writer of docs/benchmarks.md's sections

        write_section(lines, args.out)
    return 0 if all(o == base for o in outs.values()) else 1

if __name__ == "__main__":
    sys.exit(main())
