"""Issue 32 item 1: a decision reads a bounded number of history items whatever the cluster's size.

The storm of ``bench/storm.py`` (every service of one cluster crash-loops at once; one decision per
service, all holds) replayed on the fast engine at two sizes: the items each decision's invocation
reads (GetItem and Query results) are the same at 20 and at 150 services, and far fewer than the
cluster's services (before, a decision read every service's summary: N + 2 items)."""

from __future__ import annotations

import storm

from ecs_guardrail.core.alert import MASS_LINES
from ecs_guardrail.core.fleet_minutes import SHARDS


def test_items_read_per_decision_do_not_grow_with_the_cluster():
    small, large = storm.items_per_decision(20), storm.items_per_decision(150)
    for r in (small, large):
        assert r["decisions"] == r["services"] and r["actions"] == {"hold": r["services"]}
    assert small["items_per_decision"] == large["items_per_decision"], (small, large)
    low, median, high = large["items_per_decision"]
    # the fleet minutes of the window (SHARDS Queries), the mass event, and once per storm the rows of
    # the one cluster alert (the MASS_LINES services it shows): never the cluster's 150 summaries
    assert high <= SHARDS * 6 + MASS_LINES and median < 150 / 3


def test_a_storm_spreads_its_fleet_minute_writes_over_the_shards():
    r = storm.items_per_decision(150)
    fleet = {k: n for k, n in r["writes_by_key"] if k.startswith("FM#")}
    # no shard takes a quarter of the failures' writes (a failure writes its member and, when it is its
    # service's first of the minute, the service's name: two writes)
    assert fleet and max(fleet.values()) < 2 * r["events"] / 4
