"""Benchmark: replay speed on both engines, and an event storm through the handlers on the embedded AWS.

Prints the figures; writes ``docs/benchmarks.md`` only with ``--write`` (``make bench-docs``). Figures:

- replay speed: the seed-sized bundled scenario (``events/scenarios/shared-cache-brownout``) on the
  ``fast`` and ``moto`` engines (wall seconds, events/s, the speed-up), and a generated 100,000-event
  fleet-day (``ecsgen.fleet_day``) on the ``fast`` engine. Targets: fast >= 10x moto on the seed
  scenario; the fleet-day under 60 s;

- events/s end to end (each event routed as EventBridge would: recorder, and the watchdog for stops);
- the floor: one bare ``PutItem`` per event on the same embedded DynamoDB, and the ratio product/floor;
- peak memory (``ru_maxrss``);
- AWS calls per event by event kind (``local.CallCounter`` per handler invocation);
- cold start: import time of each handler module vs ``import boto3`` in fresh subprocesses (median of 5).

Targets: <= 1 AWS write for a non-stop task event; <= 4 AWS calls for a genuine crash before any alert or
action; throughput >= half the floor; handler import <= 1.5x boto3.
Usage: ``python bench/run.py [--services 1000] [--events 2000] [--fleet-day-events 100000] [--replay-only]
[--write [--out docs/benchmarks.md]]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ecsgen  # noqa: E402

WRITES = {"PutItem", "UpdateItem", "TransactWriteItems", "DeleteItem", "BatchWriteItem",
          "UpdateService", "TagResource", "Publish"}
ROOT = Path(__file__).resolve().parents[1]


def storm(services: int, events: int, seed: int = 7) -> list[tuple[str, dict[str, Any]]]:
    """``(kind, event)`` pairs: mostly task lifecycle noise, some Spot/deploy/ELB stops, a few crash loops."""
    rnd = random.Random(seed)
    names = [f"svc{i:04d}" for i in range(services)]
    loopers = names[: max(1, services // 100)]
    out: list[tuple[str, dict[str, Any]]] = []
    n = 0
    while len(out) < events:
        n += 1
        t = ecsgen.T0 + timedelta(seconds=len(out) * 2)
        r = rnd.random()
        tid = f"{n:032x}"
        if r < 0.1:
            svc = rnd.choice(loopers)
            out.append(("crash", ecsgen.task_event("storm", svc, tid, "crash_exit", t)))
        elif r < 0.7:
            out.append(("running", ecsgen.task_event("storm", rnd.choice(names), tid, "running", t, version=3)))
        else:
            kind = rnd.choice(["spot", "deploy", "elb"])
            out.append((kind, ecsgen.task_event("storm", rnd.choice(names), tid, kind, t)))
        if rnd.random() < 0.03:  # at-least-once delivery
            out.append(("duplicate", out[-1][1]))
    return out[:events]


def measure(services: int, events: int) -> dict[str, Any]:
    from ecs_guardrail.handlers import record, watchdog
    from ecs_guardrail.handlers import runtime as lambda_runtime
    from ecs_guardrail.handlers.runtime import LambdaContextStub, default_client
    from ecs_guardrail.local import TABLE, EmbeddedAws, _environ, _quiet_logs, load_scenario
    from ecs_guardrail.routing import targets

    stream = storm(services, events)
    fleet = ecsgen.fleet({"storm": [(f"svc{i:04d}", 2, {}) for i in range(services)]})
    result: dict[str, Any] = {"services": services, "events": len(stream)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = ecsgen.write_scenario(Path(tmp), fleet, [], {})
        t_build = time.perf_counter()
        with EmbeddedAws(load_scenario(folder)) as aws, \
                _environ({"HISTORY_TABLE": TABLE, "ALERT_ONLY_CLUSTERS": "none", "ALERT_TOPIC_ARN": aws.topic_arn}), \
                contextlib.redirect_stdout(io.StringIO()) as sink, _quiet_logs():
            result["fleet_build_s"] = time.perf_counter() - t_build
            # the handlers run on the Lambda path, whose clients come from its own factory: count them there
            lambda_runtime.set_client_factory(lambda service: aws.counter.attach(default_client(service)))
            try:
                ctx = LambdaContextStub()
                per_kind: dict[str, list[tuple[int, int]]] = defaultdict(list)  # kind -> [(calls, writes)]
                crash_phases: list[tuple[int, int, str]] = []
                began = time.perf_counter()
                for kind, raw in stream:
                    before = dict(aws.counter.calls)
                    routes = targets(raw)
                    record.handler(raw, ctx)
                    status = ""
                    if "watchdog" in routes:
                        try:
                            status = watchdog.handler(raw, ctx).get("status", "")
                        except watchdog.AlertDeliveryError:
                            status = "alert_failed"
                    diff = {k: v - before.get(k, 0) for k, v in aws.counter.calls.items() if v != before.get(k, 0)}
                    calls = sum(diff.values())
                    writes = sum(v for (_, op), v in diff.items() if op in WRITES)
                    label = kind
                    if kind == "crash":
                        label = "crash (counted, no decision)" if status == "counted" else f"crash ({status})"
                    per_kind[label].append((calls, writes))
                    sink.seek(0)
                    sink.truncate()  # EMF metrics lines
                elapsed = time.perf_counter() - began
            finally:
                lambda_runtime.set_client_factory(None)
            result["product_s"] = elapsed
            result["product_eps"] = len(stream) / elapsed
            result["calls_per_event"] = sum(c for v in per_kind.values() for c, _ in v) / len(stream)
            result["per_kind"] = {k: {"n": len(v), "calls_max": max(c for c, _ in v),
                                      "calls_mean": statistics.mean(c for c, _ in v),
                                      "writes_max": max(w for _, w in v)} for k, v in sorted(per_kind.items())}
            result["desired_zero"] = sum(1 for v in aws.desired_counts().values() if v == 0)
            # the floor: one bare PutItem per event, same embedded DynamoDB
            ddb = aws.client("dynamodb")
            began = time.perf_counter()
            for i, (_, raw) in enumerate(stream):
                # the event as delivered, keyed by its id: what storing the evidence costs at the least
                ddb.put_item(TableName=TABLE, Item={"pk": {"S": f"FLOOR#{i}"}, "sk": {"S": raw["id"]},
                                                    "raw": {"S": json.dumps(raw, sort_keys=True)}})
            floor = time.perf_counter() - began
            result["floor_eps"] = len(stream) / floor
            del crash_phases
    result["ratio"] = result["product_eps"] / result["floor_eps"]
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


SEED_SCENARIO = ROOT / "events" / "scenarios" / "shared-cache-brownout"
#: the moto replay of the seed scenario before the one-clock engine, measured on the bench machine under
#: load (issue 10's "today": about 40 s); the same run's moto figure is the fair comparison
SEED_MOTO_BEFORE_S = 40.0


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "ecs-guardrail"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ecs_guardrail.cli"]


def _timed_replay(folder: Path, engine: str) -> dict[str, Any]:
    """``ecs-guardrail replay FOLDER --json --engine ENGINE`` in a fresh process, as a user runs it (imports,
    fleet build, events, availability report): wall seconds, events, decisions, peak memory."""
    began = time.perf_counter()
    proc = subprocess.run([*_cli(), "replay", str(folder), "--json", "--engine", engine], capture_output=True,
                          text=True, check=True, env={**os.environ, "COLUMNS": "200"})
    wall = time.perf_counter() - began
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    n = summary["events_read"]
    return {"engine": engine, "events": n, "wall_s": wall, "eps": n / wall if wall else 0.0,
            "decisions": summary["decisions"], "output": proc.stdout,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def replay_speed(fleet_day_events: int) -> dict[str, Any]:
    """The replay speed figures (see the module docstring): each replay a fresh CLI process."""
    out: dict[str, Any] = {"seed": SEED_SCENARIO.name}
    out["seed_fast"] = _timed_replay(SEED_SCENARIO, "fast")
    out["seed_moto"] = _timed_replay(SEED_SCENARIO, "moto")
    out["same_output"] = out["seed_fast"].pop("output") == out["seed_moto"].pop("output")
    out["speedup"] = out["seed_moto"]["wall_s"] / out["seed_fast"]["wall_s"]
    if fleet_day_events:
        with tempfile.TemporaryDirectory() as tmp:
            folder = ecsgen.fleet_day(Path(tmp) / "fleet-day", events=fleet_day_events)
            out["fleet_day"] = _timed_replay(folder, "fast")
            out["fleet_day"].pop("output")
    return out


def replay_lines(r: dict[str, Any]) -> list[str]:
    f, m = r["seed_fast"], r["seed_moto"]
    lines = [
        "## Replay speed (`ecs-guardrail replay DIR --json`, a fresh process each)",
        "",
        "| run | events | wall s | events/s |",
        "| --- | --- | --- | --- |",
        f"| {r['seed']}, engine fast | {f['events']} | {f['wall_s']:.1f} | {f['eps']:.0f} |",
        f"| {r['seed']}, engine moto | {m['events']} | {m['wall_s']:.1f} | {m['eps']:.0f} |",
        f"| {r['seed']}, moto before the one-clock engine (reference) | {m['events']} | {SEED_MOTO_BEFORE_S:.0f} | "
        f"{m['events'] / SEED_MOTO_BEFORE_S:.0f} |",
    ]
    if "fleet_day" in r:
        d = r["fleet_day"]
        lines.append(f"| generated fleet-day, engine fast | {d['events']} | {d['wall_s']:.1f} | {d['eps']:.0f} |")
    lines += ["", "| target | measured | status |", "| --- | --- | --- |",
              f"| seed scenario: fast >= 10x the moto engine of the same run | {r['speedup']:.1f}x | "
              f"{'met' if r['speedup'] >= 10 else 'MISSED'} |",
              f"| seed scenario: fast >= 10x the moto replay before (reference {SEED_MOTO_BEFORE_S:.0f} s) | "
              f"{SEED_MOTO_BEFORE_S / f['wall_s']:.1f}x | "
              f"{'met' if SEED_MOTO_BEFORE_S / f['wall_s'] >= 10 else 'MISSED'} |",
              f"| both engines print the same `--json` | {'yes' if r['same_output'] else 'NO'} | "
              f"{'met' if r['same_output'] else 'MISSED'} |"]
    if "fleet_day" in r:
        d = r["fleet_day"]
        ok = d["events"] >= 100_000 and d["wall_s"] < 60
        lines.append(f"| 100,000-event fleet-day under 60 s | {d['events']} events in {d['wall_s']:.1f} s | "
                     f"{'met' if ok else 'MISSED'} |")
    lines += ["", "The fast engine runs the same handlers and adapters over an in-memory history table "
              "(`MemoryTable`) and an in-memory AWS (`ecs_guardrail/replay/memory_aws.py`: ECS, ELBv2, "
              "CloudWatch, Application Auto Scaling, SNS), so it never imports moto; `tests/contract` runs one "
              "suite against both implementations of each port. The moto engine's time is mostly moto: "
              "importing it, building the fleet's VPC and load balancers, and serialising every call.", ""]
    return lines


def import_times(repeats: int = 5) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = {}
    for module in ("boto3", "ecs_guardrail.handlers.record", "ecs_guardrail.handlers.watchdog",
                   "ecs_guardrail.handlers.availability"):
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        samples = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                        text=True, timeout=60).stdout.strip()) for _ in range(repeats)]
        out[module] = statistics.median(samples)
    return out


def report(r: dict[str, Any], imports: dict[str, float], speed: dict[str, Any] | None = None) -> str:
    boto3_s = imports["boto3"]
    non_stop = r["per_kind"].get("running", {"writes_max": 0, "calls_max": 0})
    counted = r["per_kind"].get("crash (counted, no decision)", {"calls_max": 0})
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `make bench` (`bench/run.py --services {r['services']} --events {r['events']}`), "
        f"embedded AWS (moto, in process), Python {sys.version.split()[0]}, {os.cpu_count()} CPUs.",
        "",
        *(replay_lines(speed) if speed else []),
        "## Event storm, end to end (recorder + watchdog handlers as routed by EventBridge)",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| fleet | 1 cluster, {r['services']} services (built in {r['fleet_build_s']:.1f} s) |",
        f"| events | {r['events']} |",
        f"| throughput | {r['product_eps']:.1f} events/s ({r['product_s']:.1f} s) |",
        f"| floor (bare PutItem per event, same DynamoDB) | {r['floor_eps']:.1f} events/s |",
        f"| ratio product / floor | {r['ratio']:.2f} |",
        f"| peak memory (ru_maxrss, whole process) | {r['peak_rss_mb']:.0f} MB |",
        f"| services scaled to 0 | {r['desired_zero']} |",
        "",
        "## AWS calls per event, by kind (per handler invocation, both handlers)",
        "",
        "| kind | events | calls max | calls mean | writes max |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {k} | {v['n']} | {v['calls_max']} | {v['calls_mean']:.2f} | {v['writes_max']} |"
          for k, v in r["per_kind"].items()],
        "",
        "## Cold start (import time, fresh subprocess, median of 5)",
        "",
        "| module | seconds | x boto3 |",
        "| --- | --- | --- |",
        *[f"| `{m}` | {s:.3f} | {s / boto3_s:.2f} |" for m, s in imports.items()],
        "",
        "## Targets",
        "",
        "| target | measured | status |",
        "| --- | --- | --- |",
        f"| <= 1 AWS write per non-stop task event | {non_stop['writes_max']} (calls {non_stop['calls_max']}) "
        f"| {'met' if non_stop['writes_max'] <= 1 else 'MISSED'} |",
        f"| <= 4 AWS calls for a genuine crash before any alert/action | {counted['calls_max']} "
        f"| {'met' if counted['calls_max'] <= 4 else 'MISSED'} |",
        f"| throughput >= half the floor | ratio {r['ratio']:.2f} | {'met' if r['ratio'] >= 0.5 else 'MISSED'} |",
        *[f"| `{m}` import <= 1.5x boto3 | {s / boto3_s:.2f}x | {'met' if s <= 1.5 * boto3_s else 'MISSED'} |"
          for m, s in imports.items() if m != "boto3"],
        "",
        "The crash that crosses the threshold costs more before acting (DescribeServices, ListServices, "
        "the cluster Query, the episode claim and the decision record); see the `crash (decided)` row. "
        "Throughput is moto's, not DynamoDB's: read the ratio, not the absolute figure.",
        "",
        f"AWS calls per event over the whole storm: {r['calls_per_event']:.2f} (the floor makes 1), so in calls "
        f"the product runs at {1 / r['calls_per_event']:.2f} of the floor; the rest of the throughput gap is "
        "moto's cost per call for the product's items (conditional writes into partitions that grow per task "
        "and per service, a GSI, 20 attributes) against the floor's three-attribute PutItem into fresh "
        "partitions. DynamoDB prices and limits writes by size, not by those costs.",
        "",
        "Import time: boto3 is about half of each handler's import; pydantic, pydantic-settings and the event "
        "models' schema build (about 45 ms, `python -X importtime`) and Powertools are the rest. Deferring the "
        "schema build would only move that cost into the first invocation of a cold start, so it is not done; "
        "Powertools' parser models (170 ms) and slack_sdk (120 ms, now imported on first Slack alert) were "
        "removed from the import path.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--services", type=int, default=1000)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--fleet-day-events", type=int, default=100_000,
                    help="events of the generated fleet-day replayed on the fast engine (0: skip)")
    ap.add_argument("--replay-only", action="store_true", help="only the replay speed figures")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--write", action="store_true", help="also write --out (make bench-docs); default: print only")
    args = ap.parse_args(argv)
    speed = replay_speed(args.fleet_day_events)
    if args.replay_only:
        text = "\n".join(["# Benchmarks", "", *replay_lines(speed)])
    else:
        text = report(measure(args.services, args.events), import_times(), speed)
    import state_bench

    text = text + "\n\n" + state_bench.report() + "\n"
    print(text)
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
