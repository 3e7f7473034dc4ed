"""The floor of a replay that keeps its evidence: decode each line of ``events.jsonl`` and write it, as
delivered, with one PutItem per event into the table the fast engine's replay writes
(:class:`~ecs_guardrail.adapters.store.memory.MemoryTable`, in process). Nothing else: no validation,
no routing, no watchdog, no sampler. Decoded and written with msgspec, as the replay decodes a line and
the recorder writes an event's text since round 8 (``replay.lines.loads``, ``core.events.canonical_json``).
``make bench`` sets the replay's events per CPU second against it (issue 33 item 5: "one DynamoDB write
per event").

Usage: ``python bench/floor_model.py SCENARIO_DIR``; prints one JSON line (events read and written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from ecs_guardrail.adapters.store.memory import MemoryTable

_DECODE = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder(order="sorted", enc_hook=str).encode


def _text(raw: object) -> str:
    try:
        return _ENCODE(raw).decode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (the recorder rejects the event; the floor keeps it)
        return json.dumps(raw, sort_keys=True)


def floor(folder: Path) -> dict[str, int]:
    """Decode and PutItem every event of ``folder/events.jsonl``; the counts."""
    table = MemoryTable("ecs-guardrail-history", "eu-west-1")
    read = written = 0
    with (folder / "events.jsonl").open("rb") as fh:
        for n, line in enumerate(fh):
            if not line.strip():
                continue
            read += 1
            try:
                raw = _DECODE(line)
            except msgspec.DecodeError:
                try:
                    raw = json.loads(line)  # NaN, 1e400 ...: what the replay's decoder falls back to
                except ValueError:
                    continue
            table.put({"pk": f"FLOOR#{n}", "sk": str(raw.get("id") if isinstance(raw, dict) else n),
                       "raw": _text(raw)})
            written += 1
    return {"events_read": read, "written": written}


if __name__ == "__main__":
    print(json.dumps(floor(Path(sys.argv[1]))))
