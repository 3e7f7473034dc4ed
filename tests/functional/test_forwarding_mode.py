"""Issue 32 item 4: the forwarding mode (member accounts forward their ECS events to one central stack)
stays for small organisations, and docs/deploy.md, "What a member cluster loses when forwarding", says
exactly what its member clusters lose against a home cluster. These tests pin that list:

1. no action: a member cluster's crash loop is ``alert_only`` (reason ``alert_only_cluster``), its alert
   naming the member's account and region, whatever ``ALERT_ONLY_CLUSTERS`` says;
2. no service facts: the watchdog reads nothing of the member's service (no DescribeServices, no
   ListServices: its role reaches the central account only), so the alert has no desired count, target
   groups or still-serving check, and the blast-radius bound counts no services there;
3. no availability sampling and no restart-loop detection: the sampler reads its own account's clusters
   and metrics only, and a restart observation from another account is rejected
   (tests/functional/test_restart_observation_origin.py pins that part).
"""

from __future__ import annotations

from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.handlers import watchdog
from tests.functional.test_handlers import HOME_CTX, aws, crash, desired, foreign  # noqa: F401 - fixture


def test_a_member_clusters_loop_is_alert_only_and_reads_nothing_of_the_member(aws, monkeypatch):  # noqa: F811
    reads: list[tuple[str, str]] = []
    describe, count = EcsService.describe, EcsService.count_services

    def spy_describe(self, cluster, service, *a, **k):
        reads.append(("DescribeServices", cluster))
        return describe(self, cluster, service, *a, **k)

    def spy_count(self, cluster, *a, **k):
        reads.append(("ListServices", cluster))
        return count(self, cluster, *a, **k)

    monkeypatch.setattr(EcsService, "describe", spy_describe)
    monkeypatch.setattr(EcsService, "count_services", spy_count)
    monkeypatch.setenv("ALERT_ONLY_CLUSTERS", "none")  # even where no cluster is alert-only at home
    outs = [watchdog.handler(foreign(crash(40 + i, i)), HOME_CTX) for i in range(5)]
    [d] = outs[-1]["decisions"]
    assert (d["action"], d["reason"]) == ("alert_only", "alert_only_cluster")  # 1: never acted on
    assert "account 222233334444, region eu-west-1" in d["message"]
    assert reads == []  # 2: nothing of the member's service was read
    assert desired(aws) == 3  # the home cluster of the same name is untouched

    # the same loop at home reads its service and may act
    for i in range(5):
        watchdog.handler(crash(60 + i, 10 + i), HOME_CTX)
    assert ("DescribeServices", "dev") in reads
