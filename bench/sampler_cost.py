"""The availability sampler's monthly cost, per component, from the requests the real handler sends (``make
bench`` prints it; issue 33).

Measured, not assumed: the Lambda's entry point (:func:`ecs_guardrail.handlers.availability.handler`,
Powertools' decorators and all, on a runtime over the engine's clients) runs once for every minute of a
simulated day over the fast engine's in-memory AWS (``--engine moto``: over moto, slower, the same counts),
for a fleet of ``--target-groups`` ALB services of which ``--restart-policies`` have a container restart
policy, in a cluster with Container Insights. Every GetMetricData request the handler sends is counted at the
client (botocore's ``provide-client-params.cloudwatch.GetMetricData`` event, which both engines emit): the
metrics it asks for, split by namespace (the target groups' ALB metrics, Container Insights'
``RestartCount``). Every item it writes is sized as DynamoDB sizes items (attribute names + values; 1 write
request unit per started KB, once for the table and once for the timeline index that projects it), and every
EMF metric name and PutEvents entry it emits is counted too.

"Before" is the recipe the 30-minute blocks replaced (issue 23), on the same fleet: one GetMetricData metric
(HealthyHostCount) per target group per minute, and one item per target group per minute in the layout it
wrote; its restart reads are those of the handler before issue 33 (every service, every minute).

List prices (us-east-1, on-demand): GetMetricData $0.01 per 1,000 metrics requested (CloudWatch pricing: per
metric requested, with or without data); DynamoDB $0.625 per million write request units and $0.25 per
GB-month stored (items live HISTORY_TTL_DAYS, 90); CloudWatch custom metrics (EMF) $0.30 per metric a month;
EventBridge PutEvents $1.00 per million entries; Lambda $0.20 per million requests and $0.0000133334 per
GB-second (arm64, as the functions run). Not measurable here, so stated: the Lambda's duration (``LAMBDA_S``,
docs/deploy.md's figure, at the template's 256 MB) and its log bytes per invocation (``LOG_BYTES``, at $0.50 per
GB ingested). ECS and ELB reads are free.

Usage: ``python bench/sampler_cost.py [--target-groups 200] [--restart-policies 20] [--engine fast]
[--hours 24]``.

"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import warnings
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

GET_METRIC_DATA_PER_METRIC = 0.01 / 1000
WRU = 0.625 / 1_000_000
STORAGE_GB_MONTH = 0.25
CUSTOM_METRIC_MONTH = 0.30
PUT_EVENTS_PER_ENTRY = 1.00 / 1_000_000
LAMBDA_REQUEST = 0.20 / 1_000_000
LAMBDA_GB_S = 0.0000133334  # arm64, the architecture of template.yaml and terraform/main.tf
LAMBDA_GB = 0.25
#: stated, not measured: seconds per sampler invocation (docs/deploy.md) and log bytes per invocation
#: (START, END, REPORT and the one ``sampled`` line)
LAMBDA_S = 2.0
LOG_BYTES = 1200
LOGS_PER_GB = 0.50
TTL_DAYS = 90
DAY = 1440
MONTH_DAYS = 30
#: the issue's target for the whole sampler, 200 target groups (a fifth of the ~$105 before)
TARGET_DOLLARS = 21.0
ALB_NAMESPACE = "AWS/ApplicationELB"
RESTART_NAMESPACE = "ECS/ContainerInsights"


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
    """An item's size as DynamoDB counts it (attribute names + values)."""
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


class Requests:
    """GetMetricData requests as the client sends them: calls and metrics asked for, by namespace."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.metrics: Counter[str] = Counter()

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        spaces = Counter(q["MetricStat"]["Metric"]["Namespace"] if "MetricStat" in q else "expression"
                         for q in params.get("MetricDataQueries", []))
        for ns, n in spaces.items():
            self.metrics[ns] += n
        self.calls[next(iter(spaces), "none") if len(spaces) == 1 else "mixed"] += 1


def _fleet(folder: Path, target_groups: int, restart_policies: int) -> Path:
    policy = [{"name": "app", "essential": True,
               "restartPolicy": {"enabled": True, "ignoredExitCodes": [0], "restartAttemptPeriod": 60}}]
    services = [{"name": f"svc{i:03d}", "desiredCount": 2, "targetGroups": [f"tg{i:03d}"],
                 **({"containers": policy} if i < restart_policies else {})} for i in range(target_groups)]
    (folder / "fleet.json").write_text(json.dumps({"account": "111122223333", "region": "eu-west-1",
                                                   "clusters": [{"name": "prod", "services": services}]}))
    # a cluster with rows in container_restarts.csv has Container Insights (SCENARIOS.md)
    (folder / "container_restarts.csv").write_text("time,cluster,service,restart_count\n"
                                                   "2025-08-20T00:00:00Z,prod,svc000,0\n")
    (folder / "events.jsonl").write_text("")
    return folder


def measure(target_groups: int = 200, restart_policies: int = 20, engine: str = "fast",
            minutes: int = DAY) -> dict[str, Any]:
    """``minutes`` of the real handler's minute over ``engine`` for the fleet; what it sent and wrote."""
    from ecs_guardrail.adapters.cloudwatch import Series
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers import availability
    from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime, metrics
    from ecs_guardrail.replay.engine import make_aws
    from ecs_guardrail.replay.run import quiet_logs
    from ecs_guardrail.replay.scenario import TABLE, load_scenario

    t0 = datetime(2025, 8, 21, tzinfo=UTC)
    requests = Requests()
    emf: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(_fleet(Path(tmp), target_groups, restart_policies))
        with make_aws(engine, scenario) as aws, quiet_logs():
            cw = aws.client("cloudwatch")
            data: list[dict[str, Any]] = []
            for tg in aws.target_groups.values():
                dims = Series(tg["dimension"], tg["lb_dimension"]).dimensions()
                for m in range(minutes + 60):
                    t = t0 + timedelta(minutes=m - 30)
                    data.append({"MetricName": "HealthyHostCount", "Timestamp": t, "Value": 2.0, "Dimensions": dims})
                    data.append({"MetricName": "RequestCount", "Timestamp": t, "Value": 480.0, "Dimensions": dims})
                    data.append({"MetricName": "HTTPCode_Target_2XX_Count", "Timestamp": t, "Value": 479.0,
                                 "Dimensions": dims})
            for i in range(0, len(data), 1000):
                cw.put_metric_data(Namespace=ALB_NAMESPACE, MetricData=data[i:i + 1000])
            del data

            def client(service: str) -> Any:
                c = aws.client(service)
                if service == "cloudwatch":
                    c.meta.events.register("provide-client-params.cloudwatch.GetMetricData", requests)
                return c

            table = _Recording(MemoryTable(TABLE, scenario.region))
            settings = scenario.settings.with_values(HISTORY_TABLE=TABLE, SAMPLE_LOOKBACK_MINUTES=5)
            rt = build_runtime(settings, Clients(client), table=table, home=(scenario.account, scenario.region))
            rt.history = HistoryStore.on(table)
            sent = 0
            # the Lambda's entry point itself, Powertools' decorators included, on this runtime; the EMF
            # metric names it adds are counted (each name is one custom metric a month)
            metrics.add_metric = lambda **m: emf.update([m["name"]])
            own_runtime = availability.lambda_runtime
            availability.lambda_runtime = lambda kind, home=None: rt
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # Powertools: "No application metrics to publish"
                    for m in range(minutes):  # the schedule fires at M + 5 for every minute M of the day
                        t = t0 + timedelta(minutes=m + 5)
                        out = availability.handler({"time": t.strftime("%Y-%m-%dT%H:%M:%SZ")}, LambdaContextStub())
                        sent += out["restart_observations"]
            finally:
                availability.lambda_runtime = own_runtime
                del metrics.add_metric
            items = table.items
    sizes = [item_bytes(i) for i in items]
    scale = DAY / minutes
    return {"target_groups": target_groups, "restart_policies": restart_policies, "engine": engine,
            "minutes": minutes, "invocations": minutes * scale,
            "calls": {k: v * scale for k, v in requests.calls.items()},
            "metrics": {k: v * scale for k, v in requests.metrics.items()},
            "items": len(items) * scale, "bytes": sum(sizes) * scale,
            "wru": sum(2 * math.ceil(s / 1024) for s in sizes) * scale,  # the table and the timeline index
            "emf_metrics": sorted(emf), "put_events": sent * scale}


def before(target_groups: int, services: int, now: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The two recipes before, per day, for comparison: ``per-minute`` (before issue 23's blocks:
    HealthyHostCount per target group per minute, one item per target group per minute, no restart reader
    yet) and ``every service`` (release 4: ``now``'s blocks and items, and the restart counts of every
    service every minute, one call per 500)."""
    from ecs_guardrail.adapters.store import keys
    from ecs_guardrail.core.records import iso

    t = datetime(2025, 8, 21, 0, 17, tzinfo=UTC)
    dim = "targetgroup/tg000/0123456789abcdef"
    pk, sk = keys.sample("prod", "svc000", dim, t)
    item = {
        "pk": pk, "sk": sk, "gsi1pk": keys.timeline_partition("prod", t),
        "gsi1sk": keys.timeline_sort(t, "healthy_hosts", "svc000", "tg000"),
        "type": "healthy_hosts", "time": iso(t), "t": int(t.timestamp()), "cluster": "prod",
        "service": "svc000", "target_group": "tg000", "target_group_dimension": dim,
        "load_balancers": 1, "healthy_host_count": 2, "no_data": False, "desired_count": 2, "running_count": 2,
        "sampled_at": iso(t + timedelta(minutes=5)), "expires_at": int(t.timestamp()) + TTL_DAYS * 86400}
    size = item_bytes(item)
    per_minute = {"invocations": DAY, "calls": {ALB_NAMESPACE: DAY * math.ceil(target_groups / 500)},
                  "metrics": {ALB_NAMESPACE: DAY * target_groups}, "items": DAY * target_groups,
                  "bytes": DAY * target_groups * size, "wru": DAY * target_groups * 2 * math.ceil(size / 1024),
                  "emf_metrics": now["emf_metrics"], "put_events": 0}
    every = {**now, "calls": {**now["calls"], RESTART_NAMESPACE: DAY * math.ceil(services / 500)},
             "metrics": {**now["metrics"], RESTART_NAMESPACE: DAY * services}}
    return {"per-minute": per_minute, "every service": every}


def monthly(day: dict[str, Any]) -> dict[str, float]:
    """Dollars a month (30 days) per component of a measured (or modelled) day."""
    m = day["metrics"]
    out = {
        "GetMetricData, target groups (ALB)": m.get(ALB_NAMESPACE, 0) * GET_METRIC_DATA_PER_METRIC * MONTH_DAYS,
        "GetMetricData, restart counts": m.get(RESTART_NAMESPACE, 0) * GET_METRIC_DATA_PER_METRIC * MONTH_DAYS,
        "DynamoDB writes": day["wru"] * WRU * MONTH_DAYS,
        "DynamoDB storage (90 days, table + index)": day["bytes"] * 2 * TTL_DAYS / 1e9 * STORAGE_GB_MONTH,
        "Lambda (requests + 256 MB x 2 s, stated)": day["invocations"] * MONTH_DAYS
        * (LAMBDA_REQUEST + LAMBDA_GB * LAMBDA_S * LAMBDA_GB_S),
        "CloudWatch Logs (1.2 KB an invocation, stated)": day["invocations"] * MONTH_DAYS * LOG_BYTES / 1e9
        * LOGS_PER_GB,
        "EMF custom metrics": len(day["emf_metrics"]) * CUSTOM_METRIC_MONTH,
        "PutEvents (restart observations)": day["put_events"] * MONTH_DAYS * PUT_EVENTS_PER_ENTRY,
    }
    out["total"] = sum(out.values())
    return out


def report(target_groups: int = 200, restart_policies: int = 20, engine: str = "fast", minutes: int = DAY) -> str:
    """The cost table (markdown), measured by :func:`measure`, against the issue's target."""
    after = measure(target_groups, restart_policies, engine, minutes)
    was = before(target_groups, target_groups, after)
    money_after = monthly(after)
    money_before = {k: monthly(v) for k, v in was.items()}
    span = f"{minutes // 60} h scaled to a day" if minutes != DAY else "a day"
    lines = [f"## Availability sampler, monthly cost ({target_groups} ALB target groups, {restart_policies} "
             "services with a restart policy)", "",
             f"The Lambda's entry point (`handlers.availability.handler`) run for every minute of {span} on the "
             f"{engine} engine; every GetMetricData request it sent counted at the client "
             "(`bench/sampler_cost.py`). List prices, 30 days. Before: one HealthyHostCount metric and one item "
             "per target group per minute (before issue 23's blocks); release 4: the blocks, and every "
             "service's restart count every minute (before issue 33).", "",
             "| component | before blocks | release 4 | measured now | what the handler sent |",
             "| --- | --- | --- | --- | --- |"]
    what = {
        "GetMetricData, target groups (ALB)": f"{after['calls'].get(ALB_NAMESPACE, 0):.0f} calls, "
                                              f"{after['metrics'].get(ALB_NAMESPACE, 0):,.0f} metrics a day",
        "GetMetricData, restart counts": f"{after['calls'].get(RESTART_NAMESPACE, 0):.0f} calls, "
                                         f"{after['metrics'].get(RESTART_NAMESPACE, 0):,.0f} metrics a day",
        "DynamoDB writes": f"{after['items']:,.0f} items, {after['wru']:,.0f} WRU a day",
        "DynamoDB storage (90 days, table + index)": f"{after['bytes'] / 1e6:.1f} MB a day",
        "Lambda (requests + 256 MB x 2 s, stated)": f"{after['invocations']:,.0f} invocations a day",
        "CloudWatch Logs (1.2 KB an invocation, stated)": "",
        "EMF custom metrics": ", ".join(after["emf_metrics"]),
        "PutEvents (restart observations)": f"{after['put_events']:.0f} a day",
    }
    for k in money_after:
        if k == "total":
            continue
        lines.append(f"| {k} | ${money_before['per-minute'][k]:.2f} | ${money_before['every service'][k]:.2f} | "
                     f"${money_after[k]:.2f} | {what[k]} |")
    total = money_after["total"]
    lines.append(f"| **whole sampler** | **${money_before['per-minute']['total']:.2f}** | "
                 f"**${money_before['every service']['total']:.2f}** | **${total:.2f}** | target <= "
                 f"${TARGET_DOLLARS:.0f}: {'met' if total <= TARGET_DOLLARS else 'MISSED'} |")
    lines += ["", f"Now / before blocks: {total / money_before['per-minute']['total']:.1%}; now / release 4: "
              f"{total / money_before['every service']['total']:.1%}. Restart counts are read only for the "
              f"{restart_policies} services whose task definition enables a restart policy, in clusters with "
              "Container Insights, every 5 minutes for the 5 minutes just settled; the target groups' five "
              "metrics once per 30-minute block.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--target-groups", type=int, default=200)
    p.add_argument("--restart-policies", type=int, default=20)
    p.add_argument("--engine", choices=("fast", "moto"), default="fast")
    p.add_argument("--hours", type=int, default=24, help="hours simulated (a whole number of 30-minute blocks "
                   "scales exactly to a day)")
    a = p.parse_args(argv)
    if not 0 <= a.restart_policies <= a.target_groups or not 1 <= a.hours <= 24:
        p.error("--restart-policies is 0 to --target-groups; --hours is 1 to 24")
    print(report(a.target_groups, a.restart_policies, a.engine, a.hours * 60))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
