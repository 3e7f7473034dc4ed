"""The crash-loop decision policy (ARCHITECTURE.md, "Decision policy").

Pure functions over event time: the same inputs give the same decision in Lambda and in ``replay``.

1. detect: ``crash_threshold`` genuine crashes within ``window_minutes``, or ECS's own
   ``SERVICE_TASK_START_IMPAIRED``; health-check kills reaching the same threshold are a separate,
   alert-only trigger.
2. one decision per episode (the caller holds the episode record; see :func:`episode_is_open`).
3. fleet test first: more failing services in the cluster than the bound -> hold everything.
4. scope: alert-only clusters, the opt-out tag, dry run.
5. act, within the blast-radius cap.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from ecs_guardrail.core.classify import StopKind

__all__ = [
    "Action",
    "Reason",
    "PolicyConfig",
    "Failure",
    "Trigger",
    "FleetView",
    "Scope",
    "Decision",
    "detect",
    "blast_radius_bound",
    "fleet_view",
    "decide",
    "is_alert_only_cluster",
    "episode_is_open",
    "OPT_OUT_TAG",
    "OPT_OUT_VALUE",
]

OPT_OUT_TAG = "ecs-guardrail:mode"
OPT_OUT_VALUE = "alert-only"


class Action(StrEnum):
    SCALE_TO_ZERO = "scale_to_zero"
    ALERT_ONLY = "alert_only"
    HOLD = "hold"


class Reason(StrEnum):
    CRASH_LOOP = "crash_loop"
    ALERT_ONLY_CLUSTER = "alert_only_cluster"
    OPTED_OUT = "opted_out"
    DRY_RUN = "dry_run"
    HEALTH_CHECK_KILLS = "health_check_kills"
    MASS_UNHEALTHY = "mass_unhealthy"
    BLAST_RADIUS_CAP = "blast_radius_cap"
    JOB_FAILED = "job_failed"


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """The policy's settings (units in the names). Built from :class:`ecs_guardrail.settings.Settings`."""

    alert_only_clusters: tuple[str, ...] = ()
    crash_threshold: int = 5
    window_minutes: int = 30
    max_action_fraction: float = 0.2
    min_actions_allowed: int = 1
    fleet_signal_min_failures: int = 2
    dry_run: bool = False

    @property
    def window(self) -> timedelta:
        return timedelta(minutes=self.window_minutes)


@dataclass(frozen=True, slots=True)
class Failure:
    """One classified failure of one task (counted once per task ARN).

    ``time`` is the event time of the stop; ``kind`` is CRASH or HEALTH_CHECK_KILL.
    """

    service: str
    time: datetime
    kind: StopKind
    task_arn: str = ""
    availability_zone: str | None = None
    stop_code: str | None = None
    reason: str | None = None
    cause: str | None = None
    exit_codes: tuple[tuple[str, int | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Trigger:
    """Why a service needs a decision, at event time ``time``.

    ``kind``: ``"crash_loop"``, ``"impaired"`` (SERVICE_TASK_START_IMPAIRED) or ``"health_check_kills"``.
    ``crashes`` / ``health_check_kills``: counts in the window ending at ``time``.
    """

    service: str
    time: datetime
    kind: str
    crashes: int
    health_check_kills: int
    last_failures: tuple[Failure, ...] = ()


@dataclass(frozen=True, slots=True)
class FleetView:
    """The cluster at the trigger's time: who else is failing (blast-radius evidence).

    ``failing``: services with at least ``fleet_signal_min_failures`` failures in the window;
    ``scaled_down``: services the watchdog scaled to zero in the window; ``services_in_cluster``:
    ListServices count (ACTIVE services); ``bound``: the blast-radius bound for that size.
    """

    failing: frozenset[str]
    scaled_down: frozenset[str]
    services_in_cluster: int
    bound: int

    @property
    def affected(self) -> int:
        return len(self.failing | self.scaled_down)

    @property
    def correlated(self) -> bool:
        return self.affected > self.bound


@dataclass(frozen=True, slots=True)
class Scope:
    """What is known of the service's place: its cluster (name and ARN), the opt-out tag, and whether
    ECS could describe it at all (``readable`` False: unknown service, or another account's)."""

    cluster: str
    cluster_arn: str = ""
    opted_out: bool = False
    readable: bool = True
    elsewhere: str | None = None  # "account A, region R" when the cluster is not the watchdog's own


@dataclass(frozen=True, slots=True)
class Decision:
    """What the watchdog decided for one service, and why, in words an on-call engineer can use."""

    cluster: str
    service: str
    time: datetime
    action: Action
    reason: Reason
    crashes_in_window: int
    health_check_kills_in_window: int
    message: str
    trigger: str = "crash_loop"
    failing_services: int = 0
    services_in_cluster: int = 0
    bound: int = 0
    last_failures: tuple[Failure, ...] = field(default=())

    @property
    def acts(self) -> bool:
        return self.action is Action.SCALE_TO_ZERO


def blast_radius_bound(config: PolicyConfig, services_in_cluster: int) -> int:
    """``max(MIN_ACTIONS_ALLOWED, floor(MAX_ACTION_FRACTION * services_in_cluster))`` (a count).

    The floor is explicit on purpose: 0.2 of 12 services is 2, never 3.
    """
    return max(config.min_actions_allowed, math.floor(config.max_action_fraction * services_in_cluster + 1e-9))


def is_alert_only_cluster(config: PolicyConfig, cluster: str, cluster_arn: str = "") -> bool:
    """True when the cluster matches ``ALERT_ONLY_CLUSTERS`` (names, ARNs or globs).

    An empty list means every cluster is alert-only: acting has to be asked for.
    """
    patterns = config.alert_only_clusters
    if not patterns:
        return True
    candidates = [c for c in (cluster, cluster_arn) if c]
    return any(fnmatch.fnmatchcase(c, p) for p in patterns for c in candidates)


def _in_window(failures: Iterable[Failure], end: datetime, window: timedelta) -> list[Failure]:
    start = end - window
    return [f for f in failures if start <= f.time <= end]


def detect(
    config: PolicyConfig,
    failures: Sequence[Failure],
    service: str,
    at: datetime,
    impaired: bool = False,
) -> Trigger | None:
    """Does ``service`` cross a threshold with the failure (or signal) at event time ``at``?

    ``failures`` is what is known of the cluster around ``at`` (at least ``at - window`` to
    ``at + window``). A threshold is crossed when some span of ``window_minutes`` holds
    ``crash_threshold`` crashes (or health-check kills) and includes ``at``; the trigger's time is the
    moment the threshold was crossed in event time, so reordered delivery decides at the same time.
    Crashes win over health-check kills; ``impaired`` (SERVICE_TASK_START_IMPAIRED) triggers at ``at``.

    Returns:
        the :class:`Trigger`, or ``None``.
    """
    window = config.window
    mine = sorted((f for f in failures if f.service == service), key=lambda f: f.time)

    def crossing(kind: StopKind) -> datetime | None:
        times = [f.time for f in mine if f.kind is kind]
        k = config.crash_threshold
        best: datetime | None = None
        for i in range(len(times) - k + 1):
            first, last = times[i], times[i + k - 1]
            if last - first <= window and first <= at <= last and (best is None or last < best):
                best = last
        return best

    def make(kind: str, when: datetime) -> Trigger:
        recent = _in_window(mine, when, window)
        return Trigger(
            service=service,
            time=when,
            kind=kind,
            crashes=sum(1 for f in recent if f.kind is StopKind.CRASH),
            health_check_kills=sum(1 for f in recent if f.kind is StopKind.HEALTH_CHECK_KILL),
            last_failures=tuple(recent[-5:]),
        )

    when = crossing(StopKind.CRASH)
    if when is not None:
        return make("crash_loop", when)
    if impaired:
        return make("impaired", at)
    when = crossing(StopKind.HEALTH_CHECK_KILL)
    if when is not None:
        return make("health_check_kills", when)
    return None


def fleet_view(
    config: PolicyConfig,
    failures: Iterable[Failure],
    scaled_down: Iterable[tuple[str, datetime]],
    at: datetime,
    services_in_cluster: int,
) -> FleetView:
    """Count the cluster's failing services in the window ending at ``at`` (the fleet test's input).

    ``scaled_down``: ``(service, time)`` of the watchdog's own scale-downs.
    """
    counts: dict[str, int] = {}
    for f in _in_window(failures, at, config.window):
        counts[f.service] = counts.get(f.service, 0) + 1
    failing = frozenset(s for s, n in counts.items() if n >= config.fleet_signal_min_failures)
    start = at - config.window
    down = frozenset(s for s, t in scaled_down if start <= t <= at)
    return FleetView(failing, down, services_in_cluster, blast_radius_bound(config, services_in_cluster))


def episode_is_open(last_failure: datetime | None, closed: bool, at: datetime, config: PolicyConfig) -> bool:
    """A service's episode stays open while failures keep coming less than a window apart.

    ``last_failure`` is the newest failure time recorded against the episode (``None``: no episode);
    ``closed`` is set by ``restore``. A new decision is due only when the episode is not open.
    """
    if last_failure is None or closed:
        return False
    return at <= last_failure + config.window


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _fmt_causes(trigger: Trigger) -> str:
    causes = sorted({f.cause for f in trigger.last_failures if f.cause})
    return f" ({', '.join(causes)})" if causes else ""


def decide(
    config: PolicyConfig,
    trigger: Trigger,
    fleet: FleetView,
    scope: Scope,
    free_action_slots: int,
) -> Decision:
    """Apply rules 3 to 5 to a trigger (rule 1 is :func:`detect`, rule 2 the caller's episode lock).

    ``free_action_slots``: how many more services the watchdog may scale down in this cluster's
    current window (bound minus scale-downs already in the window).

    Returns:
        a :class:`Decision`; ``action`` is ``hold`` (fleet test or cap), ``alert_only`` (scope,
        dry run, health-check kills) or ``scale_to_zero``.
    """
    counts = (
        f"{_plural(trigger.crashes, 'crash', 'crashes')} and "
        f"{_plural(trigger.health_check_kills, 'health-check kill', 'health-check kills')} "
        f"in {config.window_minutes} min{_fmt_causes(trigger)}"
    )
    what = {
        "crash_loop": f"crash loop: {counts}",
        "impaired": f"ECS reports SERVICE_TASK_START_IMPAIRED; {counts}",
        "health_check_kills": f"tasks killed by health checks: {counts}",
    }[trigger.kind]

    def make(action: Action, reason: Reason, why: str) -> Decision:
        return Decision(
            cluster=scope.cluster,
            service=trigger.service,
            time=trigger.time,
            action=action,
            reason=reason,
            crashes_in_window=trigger.crashes,
            health_check_kills_in_window=trigger.health_check_kills,
            message=f"{why}. {what}.",
            trigger=trigger.kind,
            failing_services=fleet.affected,
            services_in_cluster=fleet.services_in_cluster,
            bound=fleet.bound,
            last_failures=trigger.last_failures,
        )

    if fleet.correlated:
        return make(
            Action.HOLD,
            Reason.MASS_UNHEALTHY,
            f"held: {fleet.affected} of {fleet.services_in_cluster} services failing at once "
            f"(bound {fleet.bound}), a shared dependency or the health check is the likely cause",
        )
    if trigger.kind == "health_check_kills":
        return make(
            Action.ALERT_ONLY,
            Reason.HEALTH_CHECK_KILLS,
            "alert-only: health-check kills are never scaled down (a restart cannot fix a dependency)",
        )
    if scope.elsewhere:
        return make(Action.ALERT_ONLY, Reason.ALERT_ONLY_CLUSTER,
                    f"alert-only: {scope.cluster} is in {scope.elsewhere}; this watchdog acts only in its own "
                    f"account and region")
    if is_alert_only_cluster(config, scope.cluster, scope.cluster_arn):
        which = ", ".join(config.alert_only_clusters) or "unset: every cluster"
        return make(
            Action.ALERT_ONLY,
            Reason.ALERT_ONLY_CLUSTER,
            f"alert-only: {scope.cluster} is in ALERT_ONLY_CLUSTERS ({which})",
        )
    if scope.opted_out:
        return make(Action.ALERT_ONLY, Reason.OPTED_OUT,
                    f"alert-only: service tagged {OPT_OUT_TAG}={OPT_OUT_VALUE}")
    if not scope.readable:
        return make(Action.ALERT_ONLY, Reason.CRASH_LOOP,
                    "alert-only: ECS could not describe the service (unknown, or another account's), "
                    "so nothing was changed")
    if config.dry_run:
        return make(Action.ALERT_ONLY, Reason.DRY_RUN, "dry run: would scale to 0, changed nothing")
    if free_action_slots <= 0:
        return make(
            Action.HOLD,
            Reason.BLAST_RADIUS_CAP,
            f"held: the watchdog already scaled {fleet.bound} service(s) of this cluster down in the "
            f"last {config.window_minutes} min (blast-radius cap {fleet.bound})",
        )
    return make(Action.SCALE_TO_ZERO, Reason.CRASH_LOOP, "scaled to 0 to stop the crash loop")
