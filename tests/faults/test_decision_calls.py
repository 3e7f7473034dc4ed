"""Issue 33 item 6: the AWS calls of one scaling decision, counted at the client and table ports on the real
handler (``bench/decision_calls.py``; ``make bench`` prints the figure against its target).

Each call is listed with why it is needed (docs/benchmarks.md, "AWS calls per scaling decision"): a change
of the count is a deliberate change of this table, never a drift.
"""

from __future__ import annotations

import decision_calls as bench

#: the deciding invocation's calls by kind (reads, then writes)
NEEDED = {
    # the crash itself: filed in the service's summary, counted in its fleet minute (every crash does both)
    "dynamodb.PutItem": 4,  # summary filed; 2 episode steps (scaled; alerted with the lease released in the
                            # same write); the sweep's index of open work named once
    "dynamodb.UpdateItem": 3,  # the crash's member in its fleet minute and, its service's first failure of the
                               # minute, the service's name there; the scale-down marked in the fleet minutes
    "dynamodb.Query": 9,  # rule 3: the 8 shards of the cluster's fleet minutes; rule 5: the slots
    "dynamodb.GetItem": 2,  # the index of open work, read before the scale-down and before the alert
    "dynamodb.TransactWriteItems": 1,  # the claim: episode (facts recorded), decision record and the slot
                                       # (rule 5), all or none (handlers/folds.py)
    "ecs.DescribeServices": 1,  # rule 4's facts (and the desired count to restore)
    "ecs.ListServices": 1,  # rule 5's bound: the services in the cluster
    "application-autoscaling.DescribeScalableTargets": 1,  # rule 4, and the suspended state to put back
    "ecs.UpdateService": 1,  # the action
    "ecs.TagResource": 1,  # the previous desired count on the service, for `restore`
    "ecs.DescribeTaskDefinition": 1,  # the alert's log links and the crashing image (cached per revision)
    "sns.Publish": 1,  # the alert
}


def test_one_scaling_decision_makes_the_listed_calls() -> None:
    r = bench.measure()
    assert r["decision"] is not None and r["decision"]["action"] == "scale_to_zero"
    assert dict(r["calls"]) == NEEDED
    assert r["total"] == sum(NEEDED.values()) and r["writes"] == 11 and r["own"] <= bench.TARGET
