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
import math
import os
import random
import statistics
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


def profile(services: int) -> dict[str, Any]:
    """Replay the storm in process on the fast engine, instrumented:

    - per watchdog invocation: its CPU (``time.process_time``), whether it decided, the history
      table's items read (GetItem answers and Query rows) and its table calls (reads, writes);
    - writes per partition key over the whole storm, the recorder's and the timeline index's keys
      included (every item stored counts once for its ``pk`` and once for its ``gsi1pk``);
    - AWS calls other than DynamoDB per decision (ECS, Application Auto Scaling, CloudWatch, SNS).
    """
    import time

    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers import watchdog
    from ecs_guardrail.replay import run as replay_run
    from ecs_guardrail.replay.scenario import load_scenario

    tally = {"items": 0, "reads": 0, "writes": 0}
    writes: Counter[str] = Counter()
    index_writes: Counter[str] = Counter()
    saved = {n: getattr(MemoryTable, n) for n in ("get", "query", "put", "transact_put", "add_to_set",
                                                    "delete_from_set", "_store")}

    def get(self: Any, *a: Any, **k: Any) -> Any:
        out = saved["get"](self, *a, **k)
        tally["items"] += out is not None
        tally["reads"] += 1
        return out

    def query(self: Any, *a: Any, **k: Any) -> Any:
        rows = list(saved["query"](self, *a, **k))
        tally["items"] += len(rows)
        tally["reads"] += 1
        return iter(rows)

    def writer(name: str) -> Any:
        def call(self: Any, *a: Any, **k: Any) -> Any:
            tally["writes"] += 1
            return saved[name](self, *a, **k)
        return call

    def store(self: Any, pk: str, sk: str, row: bytes, index: tuple[str, str] | None) -> None:
        writes[pk] += 1
        if index is not None:
            index_writes[index[0]] += 1
        saved["_store"](self, pk, sk, row, index)

    rows: list[tuple[bool, float, int, int, int]] = []  # decided, cpu s, items, reads, writes
    original = watchdog.process

    def counted(raw: Any, rt: Any, context: Any = None, **kw: Any) -> Any:
        before = dict(tally)
        t = time.process_time()
        outcome, wd = original(raw, rt, context, **kw)
        cpu_s = time.process_time() - t
        decided = bool(wd.decisions) or outcome.get("status") == "re_evaluated"
        rows.append((decided, cpu_s, tally["items"] - before["items"], tally["reads"] - before["reads"],
                     tally["writes"] - before["writes"]))
        return outcome, wd

    with tempfile.TemporaryDirectory() as tmp:
        folder = scenario(Path(tmp) / f"storm-{services}", services)
        watchdog.process = counted  # type: ignore[assignment]
        MemoryTable.get, MemoryTable.query, MemoryTable._store = get, query, store  # type: ignore[method-assign]
        for name in ("put", "transact_put", "add_to_set", "delete_from_set"):
            setattr(MemoryTable, name, writer(name))
        try:
            with contextlib.redirect_stdout(io.StringIO()), replay_run.quiet_logs():
                result = replay_run.replay(load_scenario(folder))
        finally:
            watchdog.process = original  # type: ignore[assignment]
            for name, f in saved.items():
                setattr(MemoryTable, name, f)
    dec = [r for r in rows if r[0]]
    filing = [r for r in rows if not r[0]]
    other = sum(n for (svc, _), n in result.calls.items() if svc != "dynamodb")

    def stats(values: list[float]) -> tuple[float, float, float]:
        v = sorted(values)
        return (v[0], v[len(v) // 2], v[-1]) if v else (0.0, 0.0, 0.0)

    return {"services": services, "events": services * CRASHES, "decisions": len(result.decisions),
            "actions": dict(Counter(d["action"] for d in result.decisions)),
            "items_per_decision": stats([r[2] for r in dec]),
            "items_per_filing": stats([r[2] for r in filing]),
            "cpu_decision_s": statistics.mean(r[1] for r in dec) if dec else 0.0,
            "cpu_filing_s": statistics.mean(r[1] for r in filing) if filing else 0.0,
            "reads_decision": statistics.mean(r[3] for r in dec) if dec else 0.0,
            "writes_decision": statistics.mean(r[4] for r in dec) if dec else 0.0,
            "reads_filing": statistics.mean(r[3] for r in filing) if filing else 0.0,
            "writes_filing": statistics.mean(r[4] for r in filing) if filing else 0.0,
            "aws_calls_decision": other / max(1, len(dec)),
            "writes_by_key": writes.most_common(4), "index_writes_by_key": index_writes.most_common(2),
            # the timeline index's keys (issue 32 item 2: sharded, keys.TIMELINE_SHARDS a cluster-hour)
            "index_writes": sum(index_writes.values()), "index_keys": len(index_writes),
            "index_hours": len({k.split("#")[2] for k in index_writes}),
            "failures": services * CRASHES}


def items_per_decision(services: int) -> dict[str, Any]:
    """:func:`profile`'s figures (the tests' entry point)."""
    return profile(services)


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
#: the model's assumptions (stated in docs/benchmarks.md with the figures)
ASSUME = {
    "lambda_overhead_ms": 25.0,  # warm async invocation: Lambda's queue to the handler and back, per event
    "ddb_ms": 6.0,               # one DynamoDB call (GetItem, Query page, PutItem, UpdateItem), same region
    "aws_call_ms": 40.0,         # one ECS / Application Auto Scaling / CloudWatch / SNS call
    "cpu_factor": 1.0,           # Lambda's CPU at 1,769 MB (one vCPU) against this machine's: taken as equal
    "decision_share": 0.2,       # decisions per stopped task in a storm: one per CRASH_THRESHOLD (5) crashes
    "storm_minutes": 30.0,       # how long the overload lasts (p95 of a backlog is read at 95 % of it)
}
#: the settings compared: (label, reserved concurrency of one watchdog, share of the organisation's
#: stopped tasks that one watchdog sees)
SETTINGS = (("default: one central watchdog, reserved concurrency 5", 5, 1.0),
            ("recommended: one stack per account (StackSets), reserved concurrency 20, busiest account "
             "25 % of the organisation", 20, 0.25))


def service_times(fig: dict[str, Any]) -> tuple[float, float]:
    """Service time (s) of a filing invocation and of a deciding one, from :func:`profile`'s figures:
    the measured CPU plus each call's round trip (calls are serial in one invocation). A filing in a
    cold execution environment adds one GetItem (the summary is not cached): counted here."""
    a = ASSUME
    filing = (a["lambda_overhead_ms"] / 1000 + fig["cpu_filing_s"] * a["cpu_factor"]
              + (fig["reads_filing"] + 1 + fig["writes_filing"]) * a["ddb_ms"] / 1000)
    decision = (a["lambda_overhead_ms"] / 1000 + fig["cpu_decision_s"] * a["cpu_factor"]
                + (fig["reads_decision"] + fig["writes_decision"]) * a["ddb_ms"] / 1000
                + fig["aws_calls_decision"] * a["aws_call_ms"] / 1000)
    return filing, decision


def _erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits in M/M/c (``load`` = arrival rate x mean service time < c)."""
    term, total = 1.0, 1.0
    for k in range(1, servers):
        term *= load / k
        total += term
    top = term * load / servers * servers / (servers - load)
    return top / (total + top)


def p95_latency_s(per_min: float, filing_s: float, decision_s: float, servers: int) -> float:
    """p95 of a decision's latency (s: delivery to the decision's end) when ``per_min`` stopped tasks a
    minute reach one watchdog of ``servers`` reserved concurrency: M/M/c with the mean service time
    below saturation (the 95th percentile of the wait, plus a decision's service time); past it, the
    backlog a FIFO queue holds at 95 % of :data:`ASSUME`'s storm, drained at the watchdog's capacity.
    Lambda's asynchronous queue is taken as FIFO (its retries of throttled events back off, so this is
    a lower bound of the lateness past saturation)."""
    share = ASSUME["decision_share"]
    mean = (1 - share) * filing_s + share * decision_s
    rate = per_min / 60
    load = rate * mean
    if load < servers:
        pw = _erlang_c(servers, load)
        wait = 0.0 if pw <= 0.05 else math.log(pw / 0.05) / (servers / mean - rate)
        return wait + decision_s
    capacity = servers / mean
    backlog = (rate - capacity) * 0.95 * ASSUME["storm_minutes"] * 60
    return backlog / capacity + decision_s


def minute_threshold(filing_s: float, decision_s: float, servers: int, share: float) -> float:
    """The organisation's stopped tasks a minute at which p95 decision latency passes 60 s."""
    lo, hi = 1.0, 1e8
    for _ in range(100):
        mid = (lo + hi) / 2
        if p95_latency_s(mid * share, filing_s, decision_s, servers) > 60:
            hi = mid
        else:
            lo = mid
    return lo


def _fit(points: list[tuple[int, float]], n: int) -> float:
    """Least-squares line through ``(services, value)`` points, read at ``n`` (CPU per decision grows
    with the failing services a decision names)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs) or 1.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return max(ys[0], my + slope * (n - mx))


def report(figs: list[dict[str, Any]], cpu_runs: dict[int, cpu.Runs], pair: list[int]) -> list[str]:
    """The storm's section of docs/benchmarks.md."""
    lines = ["## Storm: one cluster whose services all crash-loop at once (issue 32)", "",
             f"`python bench/storm.py` (`make bench` runs it). Each service crashes {CRASHES} times, once a minute, "
             "the services shuffled within each minute; each gets one decision, a hold (`mass_unhealthy`). "
             "CPU: fresh `ecs-guardrail replay DIR --json` processes, user + system, min / median / max of "
             f"paired, alternated rounds (`bench/cpu.py`); load average {os.getloadavg()[0]:.1f} at the end. "
             "Items and calls: the same replay in process, counted at the table port. The fleet test reads each "
             "shard's minute *names* (one string set of the services that failed in the minute, one of those that "
             "failed twice), never a member: a service's members are a small item of their own, read only where "
             "the window cuts a minute for a service the whole minutes left undecided (core/fleet_minutes.py; the "
             "release before's one-attribute-per-service minute items are still read until the table's TTL "
             "removes them). What still grows with the cluster is C-speed set work over the failing services' "
             "names and the hold's record, which names every one of them.", "",
             "| services | replay CPU (s) | CPU per decision (ms, in process) | items read per decision "
             "(min / median / max) | table calls per decision (reads, writes) | other AWS calls per decision |",
             "| --- | --- | --- | --- | --- | --- |"]
    by_n = {f["services"]: f for f in figs}
    for n in sorted(set(by_n) | set(cpu_runs)):
        f, r = by_n.get(n), cpu_runs.get(n)
        cpu_text = r.spread() if r else "-"
        if f is None:
            lines.append(f"| {n:,} | {cpu_text} | - | - | - | - |")
            continue
        lo, med, hi = f["items_per_decision"]
        lines.append(f"| {n:,} | {cpu_text} | {f['cpu_decision_s'] * 1000:.2f} | {lo} / {med} / {hi} | "
                     f"{f['reads_decision']:.1f}, {f['writes_decision']:.1f} | {f['aws_calls_decision']:.1f} |")
    if len(pair) == 2 and all(n in cpu_runs for n in pair):
        small, large = (cpu_runs[n].median for n in pair)
        ratio = large / small
        lines += ["", f"Paired measurement: {pair[1]:,} services cost {ratio:.1f}x what {pair[0]:,} cost "
                  f"({large:.2f} s against {small:.2f} s; target at most 12x; before this change 40x, "
                  f"0.87 s and 35 s): {'met' if ratio <= 12 else 'MISSED'}."]
    big = max(figs, key=lambda f: f["services"])
    rate_note = ("writes per stopped task of the storm (the share of one key), and at 10,000 stopped tasks "
                 "a minute in this one cluster")
    lines += ["", f"Writes per partition key, {big['services']:,}-service storm ({big['failures']:,} stopped tasks; "
              f"{rate_note}):", "", "| key | writes | per stopped task | writes/s at 10,000 stopped tasks/min |",
              "| --- | --- | --- | --- |"]
    for key, n in big["writes_by_key"] + [(f"{k} (index gsi1)", n) for k, n in big["index_writes_by_key"]]:
        per = n / big["failures"]
        lines.append(f"| `{key}` | {n:,} | {per:.3f} | {per * 10_000 / 60:.0f} |")
    if big.get("index_keys"):
        per_hour = big["index_writes"] / big["failures"]  # the storm fits in its hours; one hour's keys at a time
        busiest = big["index_writes_by_key"][0][1] / big["failures"]
        lines += ["", f"Timeline index (`gsi1`): {big['index_writes']:,} writes over {big['index_keys']} keys "
                  f"({big['index_hours']} cluster-hour(s) x {big['index_keys'] // max(1, big['index_hours'])} "
                  f"shards, CRC-32 of the sort key). At 10,000 stopped tasks a minute in this one cluster the "
                  f"busiest key takes {busiest * 10_000 / 60:.0f} writes/s; one unsharded cluster-hour key "
                  f"(before) would take {per_hour * 10_000 / 60:.0f}/s. A DynamoDB partition sustains "
                  "1,000 write units a second."]
    lines += ["", _lane_line(big["services"] * CRASHES)]
    a = ASSUME
    lines += ["", "Decision latency model (`bench/storm.py`: M/M/c below saturation, the backlog past it), from "
              "the measured CPU per invocation and these assumptions: warm Lambda invocation "
              f"{a['lambda_overhead_ms']:.0f} ms, each DynamoDB call {a['ddb_ms']:.0f} ms, each ECS / Auto Scaling / "
              f"CloudWatch / SNS call {a['aws_call_ms']:.0f} ms, calls serial within an invocation, Lambda CPU equal "
              f"to this machine's, {a['decision_share']:.0%} of stopped tasks are decisions (one per "
              f"`CRASH_THRESHOLD`), an overload lasting {a['storm_minutes']:.0f} minutes, Lambda's async queue "
              "FIFO (its backoff on throttles only makes it later). One stopped task is one watchdog "
              "invocation (rule B); the recorder is unreserved and not in this queue.", "",
              "| settings | cluster size | filing / decision service time (ms) | stopped tasks/min (organisation) "
              "at which p95 decision latency passes 1 minute |", "| --- | --- | --- | --- |"]
    points = [(f["services"], f["cpu_decision_s"]) for f in figs]
    for label, servers, share in SETTINGS:
        for n in (100, 1000):
            ref = dict(min(figs, key=lambda f: abs(f["services"] - n)))
            ref["cpu_decision_s"] = _fit(points, n)
            ref["aws_calls_decision"] = ref["aws_calls_decision"] - math.ceil(ref["services"] / 100) \
                + math.ceil(n / 100)  # ListServices: one page per 100 services
            filing, decision = service_times(ref)
            t = minute_threshold(filing, decision, servers, share)
            lines.append(f"| {label} | {n:,} services | {filing * 1000:.0f} / {decision * 1000:.0f} | {t:,.0f} |")
    lines.append("")
    return lines


def _lane_line(backlog: int, slots: int = 5) -> str:
    """The crash path's own lane (issue 32 item 3) on the queue model of ``replay/lanes.py``: the round in
    which the one-minute sweep runs with ``backlog`` task events queued before it, in its own lane and
    in one shared queue (before)."""
    from ecs_guardrail.handlers.lane import RESERVED_CONCURRENCY
    from ecs_guardrail.replay.lanes import AsyncLanes

    sweep = {"source": "aws.events", "detail-type": "Scheduled Event"}
    task = {"source": "aws.ecs", "detail-type": "ECS Task State Change", "detail": {"lastStatus": "STOPPED"}}
    rounds = []
    for lanes in (AsyncLanes({"watchdog": slots, "sweep": RESERVED_CONCURRENCY}),
                  AsyncLanes({"watchdog": slots}, route=lambda e: "watchdog")):
        lanes.deliver([task] * backlog + [sweep])
        name = "sweep" if "sweep" in lanes.lanes else "watchdog"
        while lanes.rounds_until(name, sweep) is None:
            lanes.step(lambda f, e: None)
        rounds.append(lanes.rounds_until(name, sweep))
    return (f"The sweep's own lane (`replay/lanes.py`, rounds of the watchdog's {slots} reserved slots): with the "
            f"storm's {backlog:,} task events queued first, the one-minute sweep runs in round {rounds[0]} of the "
            f"sweep function; in one shared queue (before) it ran in round {rounds[1]:,}.")


def write_section(lines: list[str], out: Path) -> None:
    """Replace (or append) the storm's section of ``out`` (from its heading to the next ``## ``)."""
    text = out.read_text() if out.exists() else "# Benchmarks\n"
    head = lines[0]
    start = text.find(head)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
    else:
        end = text.find("\n## ", start + len(head))
        text = text[:start] + "\n".join(lines) + ("\n" + text[end + 1:] if end >= 0 else "")
    out.write_text(text if text.endswith("\n") else text + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--services", default="100,400,1600", help="storm sizes: CPU and items (services in a cluster)")
    ap.add_argument("--reads", default="20,2000", help="further sizes for items read per decision only")
    ap.add_argument("--pair", default="100,800", help="the paired measurement (two sizes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--write", action="store_true", help="also write the section into --out")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.services.split(",") if x]
    pair = [int(x) for x in args.pair.split(",") if x]
    extra = [int(x) for x in args.reads.split(",") if x]
    figs = []
    for n in sorted(set(sizes) | set(extra)):
        print(f"storm: {n} services in process (items, calls, CPU per invocation)", file=sys.stderr, flush=True)
        figs.append(profile(n))
    runs = cpu_of(sorted(set(sizes) | set(pair)), args.rounds)
    lines = report(figs, runs, pair)
    print("\n".join(lines))
    if args.write:
        write_section(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
