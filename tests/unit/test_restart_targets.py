"""Which services the sampler's restart-count reader asks Container Insights about (issue 33): a read is
billed whether or not it finds a datapoint, so only services whose task definition enables a restart
policy, in clusters with Container Insights; where ECS will not say, the service is kept (a loop not read
is a loop not seen)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.ecs import RESTART_POLICY_CACHE_MAX, EcsFleet, restart_policy_enabled

ARN = "arn:aws:ecs:eu-west-1:111122223333"


def _denied(op: str) -> ClientError:
    return ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, op)


class _Ecs:
    """Just the reads EcsFleet makes, answering as ECS does; ``deny``: operations that raise AccessDenied."""

    def __init__(self, deny: frozenset[str] = frozenset()) -> None:
        self.deny = deny
        self.calls: list[str] = []
        self.clusters = {"lit": "enabled", "enh": "enhanced", "dark": "disabled"}
        self.policies = {"td/loop:1": True, "td/plain:1": False}

    def get_paginator(self, name: str) -> Any:
        outer = self

        class _P:
            def paginate(self, **kw: Any) -> list[dict[str, Any]]:
                outer.calls.append(name)
                if name == "list_clusters":
                    return [{"clusterArns": [f"{ARN}:cluster/{c}" for c in outer.clusters]}]
                return [{"serviceArns": [f"{ARN}:service/{kw['cluster']}/{s}" for s in ("loop", "plain", "gone")]}]
        return _P()

    def describe_clusters(self, clusters: list[str], include: list[str]) -> dict[str, Any]:
        self.calls.append("describe_clusters")
        if "describe_clusters" in self.deny:
            raise _denied("DescribeClusters")
        assert include == ["SETTINGS"]
        return {"clusters": [{"clusterArn": a, "settings": [{"name": "containerInsights",
                                                             "value": self.clusters[a.rsplit("/", 1)[-1]]}]}
                             for a in clusters]}

    def describe_services(self, cluster: str, services: list[str]) -> dict[str, Any]:
        self.calls.append("describe_services")
        return {"services": [{"serviceName": a.rsplit("/", 1)[-1], "status": "INACTIVE" if a.endswith("gone")
                              else "ACTIVE", "taskDefinition": f"td/{a.rsplit('/', 1)[-1]}:1"} for a in services]}

    def describe_task_definition(self, taskDefinition: str) -> dict[str, Any]:
        self.calls.append("describe_task_definition")
        if "describe_task_definition" in self.deny:
            raise _denied("DescribeTaskDefinition")
        return {"taskDefinition": {"containerDefinitions": [
            {"name": "sidecar"}, {"name": "app", "restartPolicy": {"enabled": self.policies[taskDefinition]}}]}}


def _names(wanted: dict[str, list[str]]) -> dict[str, list[str]]:
    return {arn.rsplit("/", 1)[-1]: names for arn, names in wanted.items()}


def test_only_restart_policies_in_clusters_with_container_insights() -> None:
    ecs = _Ecs()
    cache: dict[str, bool] = {}
    assert _names(EcsFleet(ecs, cache).restart_policy_services()) == {"lit": ["loop"], "enh": ["loop"]}
    assert cache == {"td/loop:1": True, "td/plain:1": False}
    ecs.calls.clear()
    EcsFleet(ecs, cache).restart_policy_services()  # the next run: task definitions from the cache
    assert "describe_task_definition" not in ecs.calls and ecs.calls.count("describe_clusters") == 1


def test_clusters_ecs_will_not_describe_are_read_anyway() -> None:
    ecs = _Ecs(deny=frozenset({"describe_clusters"}))
    assert EcsFleet(ecs).container_insights() == dict.fromkeys(f"{ARN}:cluster/{c}" for c in ("lit", "enh", "dark"))
    assert _names(EcsFleet(ecs).restart_policy_services()) == {c: ["loop"] for c in ("lit", "enh", "dark")}


def test_a_task_definition_ecs_will_not_describe_is_read_and_asked_again() -> None:
    ecs = _Ecs(deny=frozenset({"describe_task_definition"}))
    cache: dict[str, bool] = {}
    assert _names(EcsFleet(ecs, cache).restart_policy_services()) == {"lit": ["loop", "plain"],
                                                                      "enh": ["loop", "plain"]}
    assert cache == {}  # not remembered: the next run asks again
    assert restart_policy_enabled(ecs, None, cache) is None


def test_the_cache_is_bounded() -> None:
    ecs = _Ecs()
    cache = {f"td/other:{i}": False for i in range(RESTART_POLICY_CACHE_MAX)}
    assert restart_policy_enabled(ecs, "td/loop:1", cache) is True
    assert cache == {"td/loop:1": True}
