"""The member stacks' heartbeats as the central account counts them (CloudWatch), and the accounts a
StackSet deploys to (CloudFormation): the inputs of :func:`ecs_guardrail.core.silence.silent_accounts`.

Run in the central account with its credentials, read only: ``cloudwatch:GetMetricData`` and, with a
StackSet, ``cloudformation:ListStackInstances``. No Lambda function makes these calls.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ecs_guardrail.core.permissions import permissions

__all__ = ["NAMESPACE", "METRIC", "last_heartbeats", "stack_set_accounts"]

NAMESPACE = "EcsGuardrail/Org"
METRIC = "Heartbeats"
_MAX_QUERIES = 500  # GetMetricData: at most 500 MetricDataQuery structures per request (API reference)


@permissions(any=["cloudwatch:GetMetricData"])
def last_heartbeats(cloudwatch: Any, accounts: list[str], now: datetime,
                    lookback_minutes: int = 180) -> dict[str, datetime | None]:
    """Each account's newest minute with a heartbeat (``Heartbeats`` Sum >= 1, 1-minute period) within
    ``lookback_minutes`` before ``now``; ``None`` for an account with none. One GetMetricData request per
    500 accounts (its limit), paged by ``NextToken``."""
    out: dict[str, datetime | None] = {a: None for a in accounts}
    for start in range(0, len(accounts), _MAX_QUERIES):
        chunk = accounts[start:start + _MAX_QUERIES]
        queries = [{"Id": f"a{i}", "Label": account, "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": NAMESPACE, "MetricName": METRIC,
                       "Dimensions": [{"Name": "Account", "Value": account}]},
            "Period": 60, "Stat": "Sum", "Unit": "Count"}} for i, account in enumerate(chunk)]
        kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": now - timedelta(minutes=lookback_minutes),
                                  "EndTime": now, "ScanBy": "TimestampDescending"}
        while True:
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page.get("MetricDataResults", []):
                account = chunk[int(result["Id"][1:])]
                beats = [t for t, v in zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                         if v >= 1]
                if beats:
                    newest, before = max(beats), out[account]
                    if before is None or newest > before:
                        out[account] = newest
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    return out


@permissions(any=["cloudformation:ListStackInstances"])
def stack_set_accounts(cloudformation: Any, stack_set: str, call_as: str = "SELF") -> list[str]:
    """The accounts the StackSet ``stack_set`` has a stack instance in (every region), sorted; ``call_as``
    ``SELF`` (the management account) or ``DELEGATED_ADMIN``."""
    accounts: set[str] = set()
    for page in cloudformation.get_paginator("list_stack_instances").paginate(StackSetName=stack_set,
                                                                             CallAs=call_as):
        accounts |= {s["Account"] for s in page.get("Summaries", [])}
    return sorted(accounts)
