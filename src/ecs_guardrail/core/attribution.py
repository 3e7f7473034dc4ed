"""Attribution (ARCHITECTURE.md, "Attribution"): who is failing tells what is broken.

Two axes: how many services fail, and what share of each one's tasks; plus how many availability
zones the failures span. One task of one service is an instance fault; most tasks of one service is
that service's fault; many services in one zone is a zone fault; many services across zones is a
shared dependency or the health checker itself. "Many" is the watchdog's own blast-radius bound, so
the verdict and the fleet test (hold) never disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Any

from msgspec import Struct

from ecs_guardrail.core.classify import COUNTS_AS_FAILURE, StopKind
from ecs_guardrail.core.policy import Failure, PolicyConfig, blast_radius_bound

__all__ = ["Verdict", "ServiceFailures", "Attribution", "attribute", "SERVICE_SHARE", "Home", "home_of",
           "group_by_home", "is_clean_job_exit"]

#: a service whose failed tasks are more than this share of the tasks seen is failing as a whole
SERVICE_SHARE = 0.5


#: where a cluster lives: (account, region, cluster name). Two accounts (or regions) may hold clusters of
#: the same name; their evidence never mixes in an attribution or a timeline.
Home = tuple[str | None, str | None, str]


def home_of(item: dict[str, Any], account: str | None = None, region: str | None = None) -> Home:
    """The (account, region, cluster) of a recorded item; a missing account or region is the reader's own
    (``account``/``region``: the fleet's, or None when unknown)."""
    return (item.get("account") or account, item.get("region") or region, str(item.get("cluster") or ""))


def group_by_home(items: Iterable[dict[str, Any]], account: str | None = None, region: str | None = None
                  ) -> dict[Home, list[dict[str, Any]]]:
    """Items grouped by :func:`home_of`, each group in the order given."""
    out: dict[Home, list[dict[str, Any]]] = defaultdict(list)
    for i in items:
        out[home_of(i, account, region)].append(i)
    return dict(out)


def is_clean_job_exit(group: Any, exit_codes: Any) -> bool:
    """A standalone task (``group`` ``family:...``) whose every container exited 0: a job that finished,
    never a crash (``exit_codes``: ``[{"name", "code"}]`` as recorded, or ``(name, code)`` pairs). Unknown
    codes (``None``) are not 0."""
    if not isinstance(group, str) or not group.startswith("family:") or not exit_codes:
        return False
    codes = [c.get("code") if isinstance(c, dict) else c[1] for c in exit_codes]
    return all(c is not None and str(c) == "0" for c in codes)


class Verdict(StrEnum):
    NONE = "none"
    INSTANCE = "instance"
    SERVICE = "service"
    ZONE = "zone"
    SHARED = "shared dependency or checker"


class ServiceFailures(Struct, frozen=True):
    """One service in the window: distinct failed tasks (crashes + health-check kills) of the tasks seen."""

    service: str
    failed_tasks: int
    tasks_seen: int
    crashes: int
    health_check_kills: int
    zones: tuple[str, ...]

    @property
    def share(self) -> float:
        return min(1.0, self.failed_tasks / self.tasks_seen) if self.tasks_seen else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"service": self.service, "failed_tasks": self.failed_tasks, "tasks_seen": self.tasks_seen,
                "share": round(self.share, 3), "crashes": self.crashes,
                "health_check_kills": self.health_check_kills, "zones": list(self.zones)}


class Attribution(Struct, frozen=True):
    """The evidence for a window and the verdict it supports.

    ``failing``: services with at least ``fleet_signal_min_failures`` failures; ``zones``: zones of
    their failures; ``fleet_zones``: zones any task of the cluster was seen in.
    """

    start: datetime
    end: datetime
    rows: tuple[ServiceFailures, ...]
    failing: tuple[str, ...]
    services_in_cluster: int
    bound: int
    zones: tuple[str, ...]
    fleet_zones: tuple[str, ...]
    verdict: Verdict
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "end": self.end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "verdict": self.verdict.value,
            "why": self.why,
            "failing_services": len(self.failing),
            "services_in_cluster": self.services_in_cluster,
            "bound": self.bound,
            "zones": list(self.zones),
            "fleet_zones": list(self.fleet_zones),
            "services": [r.to_dict() for r in self.rows],
        }


def attribute(
    config: PolicyConfig,
    failures: Iterable[Failure],
    tasks_seen: dict[str, set[str]],
    fleet_zones: Iterable[str],
    services_in_cluster: int,
    start: datetime,
    end: datetime,
) -> Attribution:
    """Weigh the failures of ``[start, end]`` (one per task ARN) against the tasks seen per service.

    ``tasks_seen``: service -> task ARNs recorded in the window (the share's denominator; the failed
    tasks are added to it). Returns the :class:`Attribution`; its ``why`` is one sentence.
    """
    per: dict[str, list[Failure]] = defaultdict(list)
    for f in failures:
        if f.kind in COUNTS_AS_FAILURE and start <= f.time <= end:
            per[f.service].append(f)
    rows = []
    for service, fs in sorted(per.items()):
        failed = {f.task_arn for f in fs}
        seen = set(tasks_seen.get(service, set())) | failed
        rows.append(ServiceFailures(
            service=service,
            failed_tasks=len(failed),
            tasks_seen=len(seen),
            crashes=sum(1 for f in fs if f.kind is StopKind.CRASH),
            health_check_kills=sum(1 for f in fs if f.kind is StopKind.HEALTH_CHECK_KILL),
            zones=tuple(sorted({f.availability_zone for f in fs if f.availability_zone})),
        ))
    rows.sort(key=lambda r: (-r.failed_tasks, r.service))
    failing = tuple(r.service for r in rows
                    if r.crashes + r.health_check_kills >= config.fleet_signal_min_failures)
    services_in_cluster = max(services_in_cluster, len(rows))
    bound = blast_radius_bound(config, services_in_cluster)
    zones = tuple(sorted({z for r in rows if r.service in failing for z in r.zones}))
    fleet = tuple(sorted(set(fleet_zones) | set(zones)))
    n = len(failing)
    if not rows:
        verdict, why = Verdict.NONE, "no task failed in the window"
    elif n > bound:
        if len(zones) == 1 and len(fleet) > 1:
            verdict = Verdict.ZONE
            why = (f"{n} of {services_in_cluster} services failing (bound {bound}), all in {zones[0]} "
                   f"while the fleet runs in {len(fleet)} zones")
        else:
            verdict = Verdict.SHARED
            why = (f"{n} of {services_in_cluster} services failing at once (bound {bound}) across "
                   f"{len(zones)} zone(s): a shared dependency or the health check itself")
    else:
        worst = max(rows, key=lambda r: (r.share, r.failed_tasks))
        if n and worst.share > SERVICE_SHARE:
            verdict = Verdict.SERVICE
            # two services failing read as "SERVICE - api ... 2 service(s) failing": which is the other?
            names = f" ({', '.join(failing[:5])}{f' and {n - 5} more' if n > 5 else ''})" if n > 1 else ""
            why = (f"{worst.service}: {worst.failed_tasks} of {worst.tasks_seen} tasks failed "
                   f"({worst.share:.0%}); {n} service(s) failing{names}, within the bound {bound}")
        else:
            verdict = Verdict.INSTANCE
            why = (f"{worst.service}: {worst.failed_tasks} of {worst.tasks_seen} tasks failed "
                   f"({worst.share:.0%}): a single task or host, not the service")
    return Attribution(start, end, tuple(rows), failing, services_in_cluster, bound, zones, fleet, verdict, why)
