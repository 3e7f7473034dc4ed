"""The storm of issue 32: one cluster whose N services all crash-loop at once (a shared dependency).

Every service crashes :data:`CRASHES` times, once a minute, the services shuffled within each minute;
each reaches ``CRASH_THRESHOLD`` (5) in the fifth minute and gets one decision, a hold
(``mass_unhealthy``: every other service already has two failures in the window). N decisions, all
holds, as the issue measured (0.87 s of CPU at 100 services, 35 s at 800 on main before it).

Figures (``python bench/storm.py [--services 100,400,1600] [--rounds 3] [--pair 100,800] [--model]``):

- CPU of ``ecs-guardrail replay DIR --json`` (fresh processes, paired and alternated: ``bench/cpu.py``)
  for each N, and per decision;
- the history table's items read per decision (in process, fast engine: items returned by GetItem
  and Query during each decision's invocation), and the writes per partition key over the storm;
- the paired measurement 800 against 100 services (target: at most 12x);
- a model of decision latency against the organisation's stopped tasks per minute (:func:`model`),
  from the measured CPU per invocation and stated Lambda and DynamoDB latencies.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu  # noqa: E402
import ecsgen  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "storm"
#: crashes per service, one a minute: the fifth decides, the sixth is counted inside the episode
CRASHES = 6


def scenario(folder: Path, services: int, seed: int = 32) -> Path:
    """Write the storm scenario of ``services`` services to ``folder`` (``fleet.json``, ``events.jsonl``,
    ``settings.env``: ``ALERT_ONLY_CLUSTERS=none``, so the cap and the fleet test are what hold)."""
    rnd = random.Random(seed)
    names = [f"svc{i:04d}" for i in range(services)]
    fleet = ecsgen.fleet({CLUSTER: [(s, 2, {}) for s in names]})
    events: list[dict[str, Any]] = []
    n = 0
    for minute in range(CRASHES):
        order = names[:]
        rnd.shuffle(order)
        step = 60.0 / len(order)
        for i, svc in enumerate(order):
            n += 1
            t = ecsgen.T0 + timedelta(minutes=minute, seconds=int(i * step))
            events.append(ecsgen.task_event(CLUSTER, svc, f"{n:032x}", "crash_exit", t))
    return ecsgen.write_scenario(folder, fleet, events, {"ALERT_ONLY_CLUSTERS": "none"})


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "ecs-guardrail"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ecs_guardrail.cli"]


class Reads:
    """Wraps a table port: counts the items each read returned and the writes per partition key."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.name, self.region = table.name, table.region
        self.items_read = 0
        self.writes: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        inner = getattr(self.table, name)
        if not callable(inner) or name.startswith("_"):
            return inner

        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "get":
                out = inner(*args, **kwargs)
                self.items_read += out is not None
                return out
            if name == "query":
                rows = list(inner(*args, **kwargs))
                self.items_read += len(rows)
                return iter(rows)
            if name == "put":
                self.writes[args[0]["pk"]] += 1
            elif name == "transact_put":
                for item, _ in args[0]:
                    self.writes[item["pk"]] += 1
            elif name in ("add_to_set", "delete_from_set"):
                self.writes[args[0]] += 1
            return inner(*args, **kwargs)

        return call


def items_per_decision(services: int) -> dict[str, Any]:
    """Replay the storm in process on the fast engine, counting the history table's items read during
    each invocation that recorded a decision, and the writes per partition key over the whole storm."""
    from ecs_guardrail.handlers import watchdog
    from ecs_guardrail.replay import run as replay_run
    from ecs_guardrail.replay.scenario import load_scenario

    per_decision: list[int] = []
    counter: dict[str, Reads] = {}
    original = watchdog.process

    def counted(raw: Any, rt: Any, context: Any = None, **kw: Any) -> Any:
        table = rt.history.state.table
        if not isinstance(table, Reads):
            wrapped = counter.setdefault("t", Reads(table))
            wrapped.table = table
            rt.history.state.table = wrapped
            table = wrapped
        before = table.items_read
        outcome, wd = original(raw, rt, context, **kw)
        if wd.decisions or outcome.get("status") == "re_evaluated":
            per_decision.append(table.items_read - before)
        return outcome, wd

    with tempfile.TemporaryDirectory() as tmp:
        folder = scenario(Path(tmp) / f"storm-{services}", services)
        watchdog.process = counted  # type: ignore[assignment]
        try:
            with contextlib.redirect_stdout(io.StringIO()), replay_run.quiet_logs():
                result = replay_run.replay(load_scenario(folder))
        finally:
            watchdog.process = original  # type: ignore[assignment]
    reads = counter.get("t")
    writes = reads.writes if reads else Counter()
    actions = Counter(d["action"] for d in result.decisions)
    return {"services": services, "decisions": len(result.decisions), "actions": dict(actions),
            "items_per_decision": (min(per_decision), max(per_decision),
                                   sorted(per_decision)[len(per_decision) // 2]) if per_decision else (0, 0, 0),
            "writes_by_key": writes.most_common(3), "events": services * CRASHES}


def cpu_of(sizes: list[int], rounds: int) -> dict[int, cpu.Runs]:
    """CPU of fresh ``replay DIR --json`` processes for each storm size, paired and alternated."""
    with tempfile.TemporaryDirectory() as tmp:
        env = cpu.bytecode_env(Path(tmp) / "pycache")
        cmds = {}
        for n in sizes:
            folder = scenario(Path(tmp) / f"storm-{n}", n)
            cmds[str(n)] = [*_cli(), "replay", str(folder), "--json"]
        runs = cpu.paired(cmds, rounds, env=env, warmup=True,
                          progress=lambda s: print(f"storm: {s}", file=sys.stderr, flush=True))
    return {int(k): v for k, v in runs.items()}


# ------------------------------------------------------------------ the latency model
#: the model's assumptions (stated in docs/benchmarks.md)
ASSUME = {
    "lambda_overhead_ms": 20.0,   # Lambda invoke + EventBridge async delivery overhead per invocation, warm
    "ddb_read_ms": 5.0,           # one GetItem / Query page, strongly consistent, same region
    "ddb_write_ms": 8.0,          # one PutItem / UpdateItem; TransactWriteItems counts as two
    "ecs_call_ms": 40.0,          # DescribeServices, ListServices, Application Auto Scaling, CloudWatch
    "alert_ms": 150.0,            # SNS Publish / Slack webhook (only the first hold of a mass event sends one)
    "cpu_speed": 1.0,             # Lambda's CPU at 1,769 MB (one vCPU) against this machine's: taken as equal
}


def invocation_ms(cpu_s_per_event: float, reads: float, writes: float, aws_calls: float) -> float:
    """Service time of one watchdog invocation (ms): its CPU plus its serial API round trips."""
    a = ASSUME
    return (a["lambda_overhead_ms"] + cpu_s_per_event * 1000 / a["cpu_speed"] + reads * a["ddb_read_ms"]
            + writes * a["ddb_write_ms"] + aws_calls * a["ecs_call_ms"])


def p95_wait_s(rate_per_s: float, service_s: float, servers: int) -> float:
    """p95 of the time from delivery to the end of an invocation in an M/D/c-like queue, approximated
    as M/M/c (Erlang C) waiting plus the service time; ``inf`` at or past saturation.

    EventBridge retries a throttled asynchronous invocation (Lambda's own queue) for up to 24 hours,
    so an overloaded watchdog decides late rather than never: the backlog grows by ``rate - capacity``
    a second, and a storm of ``D`` seconds ends with ``(rate - capacity) * D`` events queued.
    """
    if rate_per_s <= 0:
        return service_s
    a = rate_per_s * service_s  # offered load (Erlangs)
    if a >= servers:
        return math.inf
    # Erlang C: probability of waiting
    s = sum(a ** k / math.factorial(k) for k in range(servers))
    top = a ** servers / math.factorial(servers) * servers / (servers - a)
    pw = top / (s + top)
    mu = 1 / service_s
    if pw <= 0.05:
        return service_s
    # P(W > t) = pw * exp(-(c mu - lambda) t): the t at which it falls to 5 %
    t = math.log(pw / 0.05) / (servers * mu - rate_per_s)
    return t + service_s


def backlog_p95_s(rate_per_s: float, service_s: float, servers: int, storm_s: float) -> float:
    """p95 decision latency (s) over a storm of ``storm_s`` seconds: the queueing figure below
    saturation; past it, the backlog's wait of the event delivered at 95 % of the storm."""
    steady = p95_wait_s(rate_per_s, service_s, servers)
    if math.isfinite(steady):
        return steady
    capacity = servers / service_s
    return (rate_per_s - capacity) * 0.95 * storm_s / capacity + service_s


def threshold(service_s: float, servers: int, storm_s: float, limit_s: float = 60.0) -> float:
    """Stopped tasks per minute at which p95 decision latency passes ``limit_s`` (bisection)."""
    lo, hi = 1.0, 1e7
    for _ in range(80):
        mid = (lo + hi) / 2
        if backlog_p95_s(mid / 60, service_s, servers, storm_s) > limit_s:
            hi = mid
        else:
            lo = mid
    return lo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--services", default="100,400,1600", help="storm sizes (services in one cluster)")
    ap.add_argument("--reads", default="20,100,400,2000", help="sizes for items read per decision")
    ap.add_argument("--pair", default="100,800", help="the paired measurement (two sizes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.services.split(",") if x]
    pair = [int(x) for x in args.pair.split(",") if x]
    out: dict[str, Any] = {"reads": [items_per_decision(n) for n in (int(x) for x in args.reads.split(",") if x)]}
    runs = cpu_of(sorted(set(sizes) | set(pair)), args.rounds)
    out["cpu"] = {n: r.cpu_s for n, r in runs.items()}
    print(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
