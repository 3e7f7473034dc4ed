"""The validation library's candidates side by side (issue 36): what each adds to ``import boto3``.

Paired CPU of fresh processes (``bench/cpu.py``), in the venv with its bytecode kept, each against
``import boto3`` alone:

- msgspec: the import alone, then this project's models on it (``core.events`` and ``settings``) with
  what a cold start does with them: one event parsed, the settings read;
- pydantic: ``BaseModel``'s import alone, then the same models in pydantic (the oracle,
  ``tests/oracle/``: what the project shipped before issue 23) with ``defer_build`` (set on ``BaseModel``
  before they are defined, so each schema is built on its first use: only the models that event and the
  settings use), imported only and with the same first event and settings; and built at import, as
  before.

The handlers' cold start with the chosen library, as the zip ships it, is ``bench/run.py``'s cold-start
rows (the same ``<= 1.5x`` target).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import cpu

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "events" / "ecs" / "task-fargate-stopped-essential-oom-exit137.derived.json"
_EVENT = f"import json; raw = json.load(open({str(SAMPLE)!r}))"
_DEFER = "import pydantic; pydantic.BaseModel.model_config['defer_build'] = True"
#: label -> the Python that runs after ``import boto3`` (``None``: nothing, the baseline)
CANDIDATES: dict[str, str | None] = {
    "boto3": None,
    "msgspec: import": "import msgspec",
    "msgspec: the project's models, first event parsed, settings read":
        f"{_EVENT}; from ecs_guardrail.core.events import parse_event; from ecs_guardrail.settings import "
        "load_settings; parse_event(raw); load_settings({})",
    "pydantic: import BaseModel": "from pydantic import BaseModel",
    "pydantic, defer_build: the models imported":
        f"{_DEFER}; from tests.oracle import pydantic_events, pydantic_settings",
    "pydantic, defer_build: the models, first event parsed, settings read":
        f"{_DEFER}; {_EVENT}; from tests.oracle import pydantic_events as e, pydantic_settings as s; "
        "e.parse_event(raw); s.load_settings({})",
    "pydantic, built at import (before issue 23): first event parsed, settings read":
        f"{_EVENT}; from tests.oracle import pydantic_events as e, pydantic_settings as s; "
        "e.parse_event(raw); s.load_settings({})",
}
#: the candidate chosen (issue 36's closing note says why)
CHOSEN = "msgspec: the project's models, first event parsed, settings read"


def measure(rounds: int, cache: Path, progress: Any = None) -> dict[str, cpu.Runs]:
    """Paired runs of every candidate (``cwd`` the checkout, so ``tests.oracle`` imports)."""
    commands = {label: [sys.executable, "-c", "import boto3" + (f"; {code}" if code else "")]
                for label, code in CANDIDATES.items()}
    return cpu.paired(commands, rounds, env=cpu.bytecode_env(cache), cwd=ROOT, progress=progress, warmup=True)


def report(runs: dict[str, cpu.Runs], target: float) -> list[str]:
    """The candidates' table: each against ``import boto3``, the chosen one against ``target``."""
    base = runs["boto3"]
    lines = ["## Validation library candidates (issue 36)", "",
             "`import boto3` and then each candidate, against `import boto3` alone (venv, bytecode kept; "
             "min / median / max CPU s of paired rounds). The handlers' cold start with the chosen one, as the "
             "zip ships it, is in the table above.", "",
             "| candidate | CPU s | added to `import boto3` | / `import boto3` | target |",
             "| --- | --- | --- | --- | --- |",
             f"| `import boto3` alone | {base.spread()} | - | 1.00x | - |"]
    for label, r in runs.items():
        if label == "boto3":
            continue
        ratio = r.median / base.median
        mark = f"<= {target}x: {'met' if ratio <= target else 'MISSED'} (chosen)" if label == CHOSEN else "-"
        lines.append(f"| {label} | {r.spread()} | {1000 * (r.median - base.median):+.0f} ms | {ratio:.2f}x "
                     f"| {mark} |")
    return [*lines, ""]
