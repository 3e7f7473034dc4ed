"""The recorder's own CPU over a scenario (issue 33 item 2): ``record_event`` of every line of
``events.jsonl``, decoded as the replay decodes it, into the fast engine's table
(:class:`~ecs_guardrail.adapters.store.memory.MemoryTable`), inside ``parsed_once`` with metrics off as the
replay runs it. Lines are streamed (each decoded and recorded, then dropped); the figure is the CPU of
decoding and recording minus that of decoding alone, the best of ``--rounds``.

Usage: ``python bench/record_cost.py [SCENARIO_DIR] [--rounds N]``; prints one JSON line (seconds of CPU,
microseconds per event, the recorder's verdicts).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import time
from pathlib import Path
from typing import Any

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.events import parsed_once
from ecs_guardrail.handlers import record
from ecs_guardrail.handlers.runtime import metrics_enabled
from ecs_guardrail.replay.lines import decode_line, loads


def _run(lines: list[bytes], recording: bool) -> tuple[float, dict[str, int]]:
    store = HistoryStore.on(MemoryTable("ecs-guardrail-history", "eu-west-1"))
    verdicts: dict[str, int] = {}
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), metrics_enabled(False), parsed_once():
        start = time.process_time()
        for line in lines:
            try:
                raw: Any = loads(decode_line(line)[0])
            except ValueError:
                continue
            if recording:
                status = record.record_event(raw, store)["status"]
                verdicts[status] = verdicts.get(status, 0) + 1
        return time.process_time() - start, verdicts


def measure(folder: Path, rounds: int = 3) -> dict[str, Any]:
    """The best of ``rounds`` of (decode and record) minus (decode), in seconds of CPU."""
    with (folder / "events.jsonl").open("rb") as fh:
        lines = [line for line in fh if line.strip()]
    best = float("inf")
    verdicts: dict[str, int] = {}
    for _ in range(rounds):
        decode, _ = _run(lines, False)
        both, verdicts = _run(lines, True)
        gc.collect()
        best = min(best, both - decode)
    return {"events": len(lines), "record_cpu_s": round(best, 3),
            "us_per_event": round(best / max(len(lines), 1) * 1e6, 1), "verdicts": verdicts}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path, nargs="?", default=Path("/work/bd/day"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(measure(args.folder, args.rounds)))
