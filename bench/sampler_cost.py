"""The availability sampler's monthly cost model, before and after blocks (``make bench`` prints it).

Measured, not assumed: the sampler runs a whole day, minute by minute, over the in-memory AWS for a
fleet of ``--target-groups`` ALB services (``handlers.availability.sample_minute``, the Lambda's own
recipe), and counts its GetMetricData calls, the metrics it requested and every item it wrote, sized
as DynamoDB sizes items (attribute names + values; 1 write request unit per started KB, once for the
table and once for the timeline index that projects it). "Before" replays the recipe this release
replaced on the same fleet: one GetMetricData metric (HealthyHostCount) per target group per minute,
and one item per target group per minute in the layout it wrote.

List prices (us-east-1, on-demand): GetMetricData $0.01 per 1,000 metrics requested (CloudWatch
pricing: per metric requested, not per datapoint); DynamoDB $0.625 per million write request units
and $0.25 per GB-month stored (items live HISTORY_TTL_DAYS, 90). Lambda and ECS/ELB reads are the same
before and after (one invocation a minute; the describe calls are free) and are left out.

Usage: ``python bench/sampler_cost.py [--target-groups 20] [--fleet 200]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

GET_METRIC_DATA_PER_METRIC = 0.01 / 1000
WRU = 0.625 / 1_000_000
STORAGE_GB_MONTH = 0.25
TTL_DAYS = 90
DAY = 1440


def _value_bytes(v: Any) -> int:
    """DynamoDB's item size rules (Developer Guide, "Item sizes"): strings UTF-8 bytes, numbers about one
    byte per two significant digits plus one, booleans and nulls one byte, lists and maps 3 bytes plus one
    per element plus the elements (map keys counted as names)."""
    if v is None or isinstance(v, bool):
        return 1
    if isinstance(v, int | float | Decimal):
        digits = len(str(v).replace("-", "").replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if isinstance(v, str):
        return len(v.encode())
    if isinstance(v, dict):
        return 3 + sum(len(k.encode()) + 1 + _value_bytes(x) for k, x in v.items())
    if isinstance(v, list | tuple):
        return 3 + sum(1 + _value_bytes(x) for x in v)
    raise TypeError(type(v))


def item_bytes(item: dict[str, Any]) -> int:
    return sum(len(k.encode()) + _value_bytes(v) for k, v in item.items() if v is not None)


class _Recording:
    """A table port that records what the sampler writes (and stores it, as the memory table does)."""

    def __init__(self, table: Any) -> None:
        self._t = table
        self.items: list[dict[str, Any]] = []
        self.name, self.region = table.name, table.region

    def put(self, item: dict[str, Any], cond: Any = None) -> None:
        self.items.append({k: v for k, v in item.items() if v is not None})
        self._t.put(item, cond)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._t, name)


def _fleet(folder: Path, n: int) -> Path:
    services = [{"name": f"svc{i:03d}", "desiredCount": 2, "targetGroups": [f"tg{i:03d}"]} for i in range(n)]
    (folder / "fleet.json").write_text(json.dumps({"account": "111122223333", "region": "eu-west-1",
                                                   "clusters": [{"name": "prod", "services": services}]}))
    (folder / "events.jsonl").write_text("")
    return folder


def measure(target_groups: int) -> dict[str, dict[str, float]]:
    """One simulated day of the sampler for ``target_groups`` ALB target groups: per target group per day."""
    from ecs_guardrail.adapters.cloudwatch import HealthyHostCount, Series, queries_for
    from ecs_guardrail.adapters.ecs import EcsFleet
    from ecs_guardrail.adapters.elb import TargetGroups
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.core.records import iso
    from ecs_guardrail.handlers.availability import sample_minute
    from ecs_guardrail.replay.engine import make_aws
    from ecs_guardrail.replay.scenario import TABLE, load_scenario

    t0 = datetime(2025, 8, 21, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(_fleet(Path(tmp), target_groups))
        with make_aws("fast", scenario) as aws:
            cw = aws.client("cloudwatch")
            data = []
            for tg in aws.target_groups.values():
                dims = Series(tg["dimension"], tg["lb_dimension"]).dimensions()
                for m in range(DAY + 60):
                    t = t0 + timedelta(minutes=m - 30)
                    data.append({"MetricName": "HealthyHostCount", "Timestamp": t, "Value": 2.0, "Dimensions": dims})
                    data.append({"MetricName": "RequestCount", "Timestamp": t, "Value": 480.0, "Dimensions": dims})
                    data.append({"MetricName": "HTTPCode_Target_2XX_Count", "Timestamp": t, "Value": 479.0,
                                 "Dimensions": dims})
            for i in range(0, len(data), 1000):
                cw.put_metric_data(Namespace="AWS/ApplicationELB", MetricData=data[i:i + 1000])
            table = _Recording(MemoryTable(TABLE, scenario.region))
            store = HistoryStore.on(table)
            healthy = HealthyHostCount(cw)
            fleet, tgs = EcsFleet(aws.client("ecs")), TargetGroups(aws.client("elbv2"))
            for m in range(DAY):  # the schedule fires at M + 5 for every minute M of the day
                sample_minute(t0 + timedelta(minutes=m + 5), fleet=fleet, target_groups=tgs, healthy=healthy,
                              store=store, lookback_minutes=5)
            after_calls = healthy.calls
            after_metrics = healthy.metrics_requested
            after_items = table.items
            # before: the replaced recipe, one HealthyHostCount metric per series and one item per minute
            series = [Series(tg["dimension"], tg["lb_dimension"]) for tg in aws.target_groups.values()]
            before_metrics_per_call = len(queries_for(series, requests=False))
            before_items = []
            for name, tg in aws.target_groups.items():
                t = t0 + timedelta(minutes=17)
                pk, sk = keys.sample("prod", f"svc{name[2:]}", tg["dimension"], t)
                before_items.append({
                    "pk": pk, "sk": sk, "gsi1pk": keys.timeline_partition("prod", t),
                    "gsi1sk": keys.timeline_sort(t, "healthy_hosts", f"svc{name[2:]}", name),
                    "type": "healthy_hosts", "time": iso(t), "t": int(t.timestamp()), "cluster": "prod",
                    "service": f"svc{name[2:]}", "target_group": name, "target_group_dimension": tg["dimension"],
                    "load_balancers": 1, "healthy_host_count": 2, "no_data": False, "desired_count": 2,
                    "running_count": 2, "sampled_at": iso(t + timedelta(minutes=5)),
                    "expires_at": int(t.timestamp()) + TTL_DAYS * 86400})
    n = target_groups

    def per_tg(items: list[dict[str, Any]], per_day_factor: float) -> dict[str, float]:
        sizes = [item_bytes(i) for i in items]
        wru = sum(2 * math.ceil(s / 1024) for s in sizes)  # the table and the timeline index
        return {"items": len(items) * per_day_factor / n, "bytes": sum(sizes) * per_day_factor / n,
                "wru": wru * per_day_factor / n}

    before = {"calls": DAY * math.ceil(before_metrics_per_call / 500) / n,
              "metrics": DAY * before_metrics_per_call / n, **per_tg(before_items, DAY)}
    after = {"calls": after_calls / n, "metrics": after_metrics / n, **per_tg(after_items, 1)}
    return {"before": before, "after": after}


def monthly(per_tg_day: dict[str, float], fleet: int) -> dict[str, float]:
    """Dollars a month (30 days) for ``fleet`` target groups at the list prices above."""
    cw = per_tg_day["metrics"] * GET_METRIC_DATA_PER_METRIC * fleet * 30
    writes = per_tg_day["wru"] * WRU * fleet * 30
    stored_gb = per_tg_day["bytes"] * 2 * TTL_DAYS * fleet / 1e9  # table + index, 90 days kept
    storage = stored_gb * STORAGE_GB_MONTH
    return {"get_metric_data": cw, "dynamodb_writes": writes, "dynamodb_storage": storage,
            "total": cw + writes + storage}


def report(target_groups: int = 20, fleet: int = 200) -> str:
    r = measure(target_groups)
    out = [f"availability sampler cost model (measured over a simulated day, {target_groups} ALB target groups; "
           f"dollars for {fleet} target groups at list prices, 30 days)",
           f"  {'':8} {'calls/TG/day':>12} {'metrics/TG/day':>14} {'items/TG/day':>12} {'bytes/TG/day':>12} "
           f"{'WRU/TG/day':>10} {'GetMetricData':>13} {'DDB writes':>10} {'DDB storage':>11} {'total':>9}"]
    money = {}
    for label in ("before", "after"):
        x = r[label]
        m = money[label] = monthly(x, fleet)
        out.append(f"  {label:8} {x['calls']:>12.1f} {x['metrics']:>14.0f} {x['items']:>12.1f} {x['bytes']:>12.0f} "
                   f"{x['wru']:>10.0f} {m['get_metric_data']:>12.2f}$ {m['dynamodb_writes']:>9.2f}$ "
                   f"{m['dynamodb_storage']:>10.2f}$ {m['total']:>8.2f}$")
    ratio = money["after"]["total"] / money["before"]["total"]
    out.append(f"  after / before: {ratio:.1%} of the monthly cost (target: at most 20 %), while reading 5 metrics "
               "per target group instead of 1")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--target-groups", type=int, default=20)
    p.add_argument("--fleet", type=int, default=200)
    a = p.parse_args(argv)
    print(report(a.target_groups, a.fleet))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
