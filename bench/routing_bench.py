"""The routing's compiled pattern check against the plain interpreter of the same patterns (issue 36).

``routing.targets`` runs each EventBridge pattern compiled once into one generated boolean expression
(``compile_pattern``, ``exec``); ``routing.matches`` walks the pattern for every event. Both answer the
same (``tests`` compare them); this prints what each costs per event over every bundled scenario's
events (CPU, best of 3 rounds), what compiling the two patterns costs (once per process that imports
``routing``: the replay and the audit, not the Lambda handlers), and the difference over a 100,000-event
fleet-day. Usage: ``python bench/routing_bench.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ecs_guardrail import routing

ROOT = Path(__file__).resolve().parents[1]


def _events() -> list[object]:
    out: list[object] = []
    for path in sorted((ROOT / "events" / "scenarios").glob("*/events.jsonl")):
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # the scenarios' deliberately broken lines
                continue
    return out


def _per_event_us(fn, events: list[object], repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for _ in range(repeat):
            for e in events:
                fn(e)
        best = min(best, time.process_time() - t)
    return best / (repeat * len(events)) * 1e6


def main() -> None:
    events = _events()

    def interpreted(e: object) -> set[str]:
        return {name for name, p in routing.PATTERNS.items() if routing.matches(p, e)}

    assert all(interpreted(e) == routing.targets(e) for e in events)
    compiled_us = _per_event_us(routing.targets, events)
    plain_us = _per_event_us(interpreted, events)
    t = time.process_time()
    for _ in range(100):
        [routing.compile_pattern(p) for p in routing.PATTERNS.values()]
    compile_ms = (time.process_time() - t) / 100 * 1e3
    print(f"{len(events)} events of events/scenarios, CPU per event (best of 3):")
    print(f"  compiled (exec, routing.targets): {compiled_us:.2f} us")
    print(f"  interpreted (routing.matches):    {plain_us:.2f} us ({plain_us / compiled_us:.1f}x)")
    print(f"  compiling both patterns, once per process: {compile_ms:.2f} ms")
    print(f"  over a 100,000-event fleet-day: {0.1 * (plain_us - compiled_us):.2f} s saved by compiling")


if __name__ == "__main__":
    main()
