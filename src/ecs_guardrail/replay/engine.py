"""Replay engines: what a replay runs the handlers over.

- ``fast`` (default): the history table is :class:`~ecs_guardrail.adapters.store.memory.MemoryTable`, the
  AWS is :class:`~ecs_guardrail.replay.memory_aws.MemoryAws` (ECS, ELBv2, CloudWatch, Application Auto
  Scaling, SNS in dicts; made by :func:`make_aws`), the sampler reads the CSV back
  from the in-memory CloudWatch through the real adapter, and it keeps
  the fleet's ECS answers until a handler makes an ECS or Application Auto Scaling call that is not a
  read (in a replay nothing else changes a service). moto is never imported;
- ``moto``: everything through moto, the CSV loaded into moto CloudWatch and read back by the real
  adapter with GetMetricData, the fleet described anew every minute. The reference the fast engine
  must match (tests/e2e/test_engines.py); ``tests/contract`` runs one suite against both
  implementations of each port (the table, and the AWS clients).

The history table of both engines is made by :func:`make_table` only; the same handlers and adapters
write through either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engines' modules are imported by the replay that makes one, not by ``import`` (the CLI's)
    from ecs_guardrail.adapters.ecs import EcsFleet, LoadBalancedService
    from ecs_guardrail.adapters.elb import TargetGroups
    from ecs_guardrail.replay.embedded import EmbeddedAws
    from ecs_guardrail.replay.scenario import Scenario

__all__ = ["ENGINES", "DEFAULT_ENGINE", "make_aws", "make_table", "make_metrics_source", "CachedFleet",
           "CachedTargetGroups"]

ENGINES = ("fast", "moto")
DEFAULT_ENGINE = "fast"


def make_aws(engine: str, scenario: Scenario) -> EmbeddedAws:
    """The embedded AWS of a replay: :class:`InMemoryAws` for ``fast``, :class:`EmbeddedAws` (moto) for
    ``moto``.

    Raises:
        ValueError: an unknown engine.
    """
    from ecs_guardrail.replay.embedded import EmbeddedAws, InMemoryAws

    if engine == "fast":
        return InMemoryAws(scenario)
    if engine == "moto":
        return EmbeddedAws(scenario)
    raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


def make_table(engine: str, clients: Any, region: str | None = None) -> Any:
    """The history table port of a replay: ``fast`` is :class:`~ecs_guardrail.adapters.store.memory.MemoryTable`
    (in process), ``moto`` is :class:`~ecs_guardrail.adapters.store.dynamodb.DynamoTable` on the embedded
    DynamoDB. Every handler and the sampler of the replay write through it; ``tests/contract`` runs one
    suite against both.

    Raises:
        ValueError: an unknown engine.
    """
    from ecs_guardrail.replay.scenario import TABLE

    if engine == "fast":
        from ecs_guardrail.adapters.store.memory import MemoryTable

        return MemoryTable(TABLE, region)
    if engine == "moto":
        from ecs_guardrail.adapters.store.dynamodb import DynamoTable

        return DynamoTable(clients("dynamodb"), TABLE)
    raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


def make_metrics_source(engine: str, aws: Any, rows: list[Any]) -> tuple[Any, list[str]]:
    """The sampler's metrics source and the CSV's target group names unknown to the fleet.

    The CSV goes into the engine's CloudWatch (in memory or moto) and both the sampler and the watchdog's
    decision-time reads get it back with GetMetricData through the real adapter: since the sampler reads
    blocks of minutes, that costs a replay a call per block, not per minute. ``engine`` is checked by
    :func:`make_table`.
    """
    from ecs_guardrail.adapters.cloudwatch import HealthyHostCount
    from ecs_guardrail.replay.healthy_hosts import load_into_cloudwatch

    unknown = load_into_cloudwatch(aws.client("cloudwatch"), aws.target_groups, rows)
    return HealthyHostCount(aws.client("cloudwatch")), unknown


class CachedFleet:
    """:class:`EcsFleet` answers kept until :meth:`invalidate` (the fast engine calls it once a handler
    made a call that may change a service: the watchdog is the only writer of ECS in a replay)."""

    def __init__(self, fleet: EcsFleet) -> None:
        self._fleet = fleet
        self._clusters: list[str] | None = None
        self._services: dict[str, list[LoadBalancedService]] = {}

    def invalidate(self) -> None:
        self._clusters = None
        self._services.clear()

    def clusters(self) -> list[str]:
        if self._clusters is None:
            self._clusters = self._fleet.clusters()
        return self._clusters

    def load_balanced_services(self, cluster: str) -> list[LoadBalancedService]:
        if cluster not in self._services:
            self._services[cluster] = self._fleet.load_balanced_services(cluster)
        return self._services[cluster]


class CachedTargetGroups:
    """:class:`TargetGroups` answers kept for the whole replay (the fleet's load balancers never change)."""

    def __init__(self, target_groups: TargetGroups) -> None:
        self._tg = target_groups
        self._known: dict[str, tuple[str, ...]] = {}

    def load_balancers(self, target_group_arns: Any) -> dict[str, tuple[str, ...]]:
        wanted = set(target_group_arns)
        missing = wanted - set(self._known)
        if missing:
            self._known.update(self._tg.load_balancers(missing))
        return {arn: self._known[arn] for arn in wanted}
