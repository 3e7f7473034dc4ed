"""AWS calls per scaling decision (issue 33 item 6), counted on the real path.

One invocation of the watchdog's entry point (``handlers.watchdog.invoke``, as Lambda runs it) decides a
crash loop and scales the service to 0, on the fast engine (``replay/memory_aws.py`` for ECS, Application
Auto Scaling, ELBv2, CloudWatch and SNS; ``MemoryTable`` for the history table). Every call is counted where
it leaves the product: botocore's ``before-call`` event on each client (``CallCounter``), and the table port's
own count by DynamoDB operation name (``MemoryTable.calls``). The fleet: one cluster of 5 services behind no
load balancer, ``CRASH_THRESHOLD=3``; the first two crashes are filed before counting starts, the third
decides.

    python bench/decision_calls.py        # the calls by kind, and the figure against its target
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ecsgen  # noqa: E402

#: issue 33 item 6: at most 14 AWS calls per scaling decision (18 in release 6, 14 before it), counted as the
#: decision's own: every call of the deciding invocation except the crash's filing (made by every stop that
#: counts, decision or not) and the Queries whose number is fixed by the layout (8 fleet-minute shards, slots)
TARGET = 14
#: operations that change something (the rest read)
WRITES = {"PutItem", "UpdateItem", "TransactWriteItems", "DeleteItem", "BatchWriteItem", "UpdateService",
          "TagResource", "UntagResource", "Publish", "RegisterScalableTarget"}
#: why each kind of call is made (docs/benchmarks.md's table); the counts are measured
WHY = {
    "dynamodb.PutItem": "the crash filed in the service's summary; one write per episode step after the claim "
                        "(scaled; alerted, with the lease released in the same write); the sweep's index of open "
                        "work named once",
    "dynamodb.UpdateItem": "the crash counted in its fleet minute (its member, and its service's name when the first "
                           "of the minute); the scale-down marked in the fleet minutes (rule 3)",
    "dynamodb.Query": "rule 3: the 8 write shards of the cluster's fleet minutes (bounded whatever its size); "
                      "rule 5: the slots",
    "dynamodb.GetItem": "the index of open work, read before the scale-down and again before the alert "
                        "(the second finds the entry and writes nothing)",
    "dynamodb.TransactWriteItems": "the claim: the episode (with its facts recorded), the decision record and "
                                   "the held-at-zero slot (rule 5), all or none (`handlers/folds.py`)",
    "ecs.DescribeServices": "rule 4's facts, and the desired count `restore` puts back",
    "ecs.ListServices": "rule 5's bound: the services in the cluster",
    "application-autoscaling.DescribeScalableTargets": "rule 4, and the suspended state to put back",
    "ecs.UpdateService": "the action",
    "ecs.TagResource": "the previous desired count on the service, for `restore` without the table",
    "ecs.DescribeTaskDefinition": "the alert's log links and the crashing image (cached per revision)",
    "sns.Publish": "the alert",
}
#: calls every stopped task that counts makes, decision or not (the crash filed and counted): the summary's
#: PutItem, the member's UpdateItem and, for its service's first failure of the minute (each crash here is),
#: the UpdateItem of the minute's names (core/fleet_minutes.py: a decision reads who failed, not every member)
FILING = {"dynamodb.PutItem": 1, "dynamodb.UpdateItem": 2}
SERVICES = ("api", "cart", "mail", "auth", "jobs")
SETTINGS = {"CRASH_THRESHOLD": "3", "CRASH_WINDOW_MINUTES": "30", "MAX_ACTION_FRACTION": "0.2",
            "MIN_ACTIONS_ALLOWED": "1", "FLEET_SIGNAL_MIN_FAILURES": "2", "ALERT_ONLY_CLUSTERS": "none"}


def measure() -> dict[str, Any]:
    """The calls of the one invocation that decides and scales: ``calls`` (``Counter`` of
    ``"service.Operation"``), ``total``, ``writes``, and the invocation's ``decision`` (public JSON)."""
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.handlers import watchdog
    from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime
    from ecs_guardrail.replay.embedded import CallCounter, InMemoryAws
    from ecs_guardrail.replay.run import quiet_logs
    from ecs_guardrail.replay.scenario import TABLE, load_scenario
    from ecs_guardrail.settings import load_settings

    ctx = LambdaContextStub(invoked_function_arn=f"arn:aws:lambda:{ecsgen.REGION}:{ecsgen.ACCOUNT}:function:wd")
    crashes = [ecsgen.task_event("dev", "api", f"{i + 1:032x}", "crash_exit", ecsgen.T0 + timedelta(minutes=i))
               for i in range(3)]
    with tempfile.TemporaryDirectory() as tmp, quiet_logs():
        folder = ecsgen.write_scenario(Path(tmp) / "s", ecsgen.fleet({"dev": [(s, 2, {}) for s in SERVICES]}),
                                       [], SETTINGS)
        with InMemoryAws(load_scenario(folder)) as aws:
            counter = CallCounter()
            settings = load_settings({**SETTINGS, "HISTORY_TABLE": TABLE, "ALERT_TOPIC_ARN": aws.topic_arn})
            table = MemoryTable(TABLE, ecsgen.REGION)
            rt = build_runtime(settings, Clients(lambda s: counter.attach(aws.client(s))), watchdog=True,
                               table=table, home=(ecsgen.ACCOUNT, ecsgen.REGION))
            for raw in crashes[:-1]:
                assert watchdog.invoke(raw, rt, ctx, delivered_at=ecsgen.T0)["status"] == "counted"
            before_aws, before_table = Counter(counter.calls), Counter(table.calls)
            out = watchdog.invoke(crashes[-1], rt, ctx, delivered_at=ecsgen.T0)
            calls: Counter[str] = Counter()
            for (service, op), n in (Counter(counter.calls) - before_aws).items():
                calls[f"{service}.{op}"] += n
            for op, n in (Counter(table.calls) - before_table).items():
                calls[f"dynamodb.{op}"] += n
    total = sum(calls.values())
    writes = sum(n for k, n in calls.items() if k.split(".", 1)[1] in WRITES)
    own = calls - Counter(FILING) - Counter({"dynamodb.Query": calls["dynamodb.Query"]})
    return {"calls": calls, "total": total, "writes": writes, "decision": (out.get("decisions") or [None])[0],
            "own": sum(own.values()), "own_writes": sum(n for k, n in own.items() if k.split(".", 1)[1] in WRITES)}


def report(r: dict[str, Any] | None = None) -> str:
    """The figure against its target, and the calls by kind (markdown)."""
    r = r or measure()
    status = "met" if r["own"] <= TARGET else "MISSED"
    lines = ["## AWS calls per scaling decision (issue 33 item 6)", "",
             "One watchdog invocation that decides a crash loop and scales the service to 0, through the real "
             "handler on the fast engine, every call counted at the client and table ports "
             "(`bench/decision_calls.py`).", "",
             "| figure | measured | target | status |", "| --- | --- | --- | --- |",
             f"| the decision's own calls (writes): all but the crash's filing and the bounded Queries | "
             f"{r['own']} ({r['own_writes']}) | <= {TARGET} | {status} |",
             f"| every call of the invocation (writes) | {r['total']} ({r['writes']}) | - | - |", "",
             "| call | count | why it is needed |", "| --- | --- | --- |",
             *[f"| {k} | {n} | {WHY.get(k, '(not listed: explain it here)')} |" for k, n in sorted(r["calls"].items())],
             ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
