"""The crash-loop decision policy (ARCHITECTURE.md, "Decision policy"), as pure functions.

The same inputs give the same decision in Lambda and in ``replay``; time is the events' own time.

1. :func:`detect`: ``crash_threshold`` genuine crashes with event time in ``[T - window, T]`` (both
   ends included, ``T`` the newest failure known for the service), or ECS's own
   ``SERVICE_TASK_START_IMPAIRED`` (``T`` its own time); health-check kills reaching the threshold
   are a separate, alert-only trigger.
2. episodes (:mod:`ecs_guardrail.core.summary`): one decision per episode; one escalation of an
   episode whose trigger was health-check kills; a hold is provisional (evaluated again each time
   the crashes since its last evaluation reach the threshold; the same outcome is silent).
3. :func:`fleet_view`: the deciding service, every other service with ``fleet_signal_min_failures``
   failures in the window (whatever happened to it since), and every service the watchdog scaled
   within the window are *failing*; more than one failing and more than the bound: hold everything.
4. entitlement (:mod:`ecs_guardrail.core.entitlement`): the first rule that applies makes the
   decision alert-only, with its reason and evidence.
5. the cap on services *held at zero* (scaled and not restored), not on scale-downs per window.
6. act.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta

from msgspec import Struct, field

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.clusters import AlertOnlyClusters, parse_alert_only_clusters
from ecs_guardrail.core.records import Action, Decision, Failure, Reason, TriggerKind
from ecs_guardrail.core.restarts import is_restart
from ecs_guardrail.core.summary import ServiceSummary, episode_is_open, failures_between, scale_down_times

__all__ = [
    "Action",
    "Reason",
    "PolicyConfig",
    "Failure",
    "Trigger",
    "FleetView",
    "Entitlement",
    "Decision",
    "detect",
    "blast_radius_bound",
    "fleet_view",
    "fleet_view_of",
    "decide",
    "is_alert_only_cluster",
    "OPT_OUT_TAG",
    "OPT_OUT_VALUE",
    "OPT_OUT_PREFIX",
    "WATCHDOG_TAG_KEYS",
    "OptOut",
    "read_opt_out",
]

OPT_OUT_TAG = "ecs-guardrail:mode"
OPT_OUT_VALUE = "alert-only"
#: any tag key that begins so (case-insensitive) and is not the watchdog's own is an opt-out (fail safe)
OPT_OUT_PREFIX = "ecs-guardrail:"
#: tag keys the watchdog itself writes on a service (``adapters.ecs.PREVIOUS_COUNT_TAG``): never an opt-out
WATCHDOG_TAG_KEYS = frozenset({"ecs-guardrail:previous-desired-count"})


class OptOut(Struct, frozen=True):
    """How a service's tags read for rule 4's ``opted_out`` (ARCHITECTURE.md, "Decision policy").

    ``opted_out``: the watchdog only alerts for the service; ``mistyped``: the tags that made it so
    without being exactly ``ecs-guardrail:mode`` = ``alert-only`` (``KEY=VALUE`` each, sorted): a typo
    such as ``alert_only`` or ``ecs-guardrail:mdoe``, read as opted out (fail safe), warned by
    ``replay`` and reported by ``audit``."""

    opted_out: bool = False
    mistyped: tuple[str, ...] = ()


def read_opt_out(tags: dict[str, str] | None) -> OptOut:
    """Read the opt-out from a service's tags (DescribeServices ``tags[]`` with ``include=["TAGS"]``,
    as ``{key: value}``; ECS tag keys and values are case-sensitive, this reading is not).

    ``ecs-guardrail:mode`` = ``alert-only`` (spaces around it and letter case ignored) opts out; any other
    value of that key, and any other key that begins ``ecs-guardrail:`` (the watchdog's own
    :data:`WATCHDOG_TAG_KEYS` excepted), opts out too and is named in :attr:`OptOut.mistyped`."""
    opted, mistyped = False, []
    for key, value in (tags or {}).items():
        k = str(key)
        if not k.strip().lower().startswith(OPT_OUT_PREFIX) or k.strip().lower() in WATCHDOG_TAG_KEYS:
            continue
        opted = True
        if not (k == OPT_OUT_TAG and str(value).strip().lower() == OPT_OUT_VALUE):
            mistyped.append(f"{k}={value}")
    return OptOut(opted, tuple(sorted(mistyped)))


#: window minutes -> :attr:`PolicyConfig.window`, and -> its :attr:`~PolicyConfig.horizon` (made once each)
_SPANS: dict[int, timedelta] = {}
_HORIZONS: dict[int, timedelta] = {}


class PolicyConfig(Struct, frozen=True):
    """The policy's settings (units in the names). Built from :class:`ecs_guardrail.settings.Settings`."""

    alert_only_clusters: tuple[str, ...] = ()
    crash_threshold: int = 5
    window_minutes: int = 30
    max_action_fraction: float = 0.2
    min_actions_allowed: int = 1
    fleet_signal_min_failures: int = 2
    dry_run: bool = False

    @property
    def alert_only(self) -> AlertOnlyClusters:
        """``alert_only_clusters`` parsed (:func:`~ecs_guardrail.core.clusters.parse_alert_only_clusters`).

        Raises:
            ValueError: an invalid entry (the settings reject it at start first).
        """
        return parse_alert_only_clusters(self.alert_only_clusters)

    @property
    def window(self) -> timedelta:
        """``window_minutes`` as a span (one object per number of minutes: read at every failure filed)."""
        span = _SPANS.get(self.window_minutes)
        if span is None:
            if len(_SPANS) >= 64:
                _SPANS.clear()
            span = _SPANS[self.window_minutes] = timedelta(minutes=self.window_minutes)
        return span

    @property
    def horizon(self) -> timedelta:
        """How many minutes with failures a service's per-minute failure counts keep: this span / 1 min
        + 1 (two windows: 61 minutes by default), the newest ones, however old they are
        (:func:`~ecs_guardrail.core.summary.add_failure`). A failure delivered late finds every other
        service's failures of the window it opens unless that service has failed in more distinct
        minutes than that since (the fleet test may then miss its oldest ones)."""
        span = _HORIZONS.get(self.window_minutes)
        if span is None:
            if len(_HORIZONS) >= 64:
                _HORIZONS.clear()
            span = _HORIZONS[self.window_minutes] = 2 * self.window
        return span

    @property
    def keep(self) -> int:
        """Failures of each kind a service summary keeps: enough for the threshold and the fleet test
        (and the five last stops an alert shows)."""
        return max(self.crash_threshold, self.fleet_signal_min_failures, 5)


class Trigger(Struct, frozen=True):
    """Why a service needs a decision, at event time ``time``.

    ``kind``: a :class:`~ecs_guardrail.core.records.TriggerKind`.
    ``crashes`` / ``health_check_kills``: counts in the window ending at ``time`` (``crashes`` includes
    container restarts; ``restarts`` counts those alone).
    ``escalation``: the trigger escalates an open episode whose trigger was health-check kills (rule 2).
    ``reevaluation``: the trigger re-evaluates an open provisional hold (rule 2); ``previous_reason``
    is the open episode's current reason for both (``None`` for a new episode).
    """

    service: str
    time: datetime
    kind: TriggerKind
    crashes: int
    health_check_kills: int
    last_failures: tuple[Failure, ...] = ()
    escalation: bool = False
    restarts: int = 0
    reevaluation: bool = False
    previous_reason: Reason | None = None


class FleetView(Struct, frozen=True):
    """The cluster at the trigger's time (rule 3's evidence).

    ``failing``: the deciding service and every service with at least ``fleet_signal_min_failures``
    failures in the window; ``scaled_down``: services the watchdog scaled to zero within the window;
    ``services_in_cluster``: ListServices count; ``bound``: the blast-radius bound for that size.
    """

    failing: frozenset[str]
    scaled_down: frozenset[str]
    services_in_cluster: int
    bound: int

    @property
    def affected(self) -> frozenset[str]:
        return self.failing | self.scaled_down

    @property
    def correlated(self) -> bool:
        return len(self.affected) > 1 and len(self.affected) > self.bound


class Entitlement(Struct, frozen=True):
    """Rule 4's answer: ``reason`` ``None`` means entitled to act; otherwise the first rule that
    applies, its one-line ``message`` and ``evidence`` (JSON-safe)."""

    reason: Reason | None = None
    message: str = ""
    evidence: dict[str, object] = field(default_factory=dict)


def blast_radius_bound(config: PolicyConfig, services_in_cluster: int) -> int:
    """``max(MIN_ACTIONS_ALLOWED, floor(MAX_ACTION_FRACTION * services_in_cluster))`` (a count).

    The floor is explicit on purpose: 0.2 of 12 services is 2, never 3.
    """
    return max(config.min_actions_allowed, math.floor(config.max_action_fraction * services_in_cluster + 1e-9))


def is_alert_only_cluster(config: PolicyConfig, cluster: str, cluster_arn: str = "") -> bool:
    """True when the cluster matches ``ALERT_ONLY_CLUSTERS`` (names, ARNs or globs, compared without case;
    :mod:`ecs_guardrail.core.clusters`).

    Unset or empty means every cluster is alert-only: acting has to be asked for; ``none`` means none is.

    Raises:
        ValueError: an entry that is not a name, glob or ARN (the settings reject it at start first).
    """
    return config.alert_only.matches(cluster, cluster_arn)


def detect(config: PolicyConfig, summary: ServiceSummary, at: datetime, *, impaired: bool = False) -> Trigger | None:
    """Rules 1 and 2: does the service need a decision after the failure (or signal) at event time ``at``?

    ``T`` is the newest failure known for the service, or, for an ``impaired`` signal
    (``SERVICE_TASK_START_IMPAIRED``), the signal's own time ``at`` (an IMPAIRED stamped at or before
    the end of an ended episode belongs to that episode: ``None``). Inside an open episode only two
    things trigger: the one escalation of an episode whose trigger was health-check kills (genuine
    crashes since its decision reaching the threshold, or ``impaired``), and the re-evaluation of a
    provisional hold (genuine crashes since its last evaluation reaching the threshold).

    Returns:
        the :class:`Trigger` (crashes win over health-check kills), or ``None``.
    """
    threshold = config.crash_threshold
    if not impaired and len(summary.crashes) < threshold and len(summary.kills) < threshold:
        # fewer failures of each kind kept than the threshold: no count below can reach it (each counts a
        # subset of its ring), so no loop, escalation or re-evaluation; and a failure is not ``impaired``
        return None
    window = config.window
    if impaired:
        if summary.counted_after is not None and at <= summary.counted_after:
            return None
        t: datetime | None = at
    else:
        t = summary.newest_failure
    if t is None:
        return None
    crashes = summary.counted(StopKind.CRASH, t, window)
    kills = summary.counted(StopKind.HEALTH_CHECK_KILL, t, window)
    ep = summary.episode
    escalation = reevaluation = False
    loop = len(crashes) >= threshold
    if episode_is_open(summary, t, window):
        assert ep is not None
        since_decision = sum(1 for f in crashes if f.time > ep.decision_time)
        since_evaluation = sum(1 for f in crashes if f.time > ep.last_evaluation)
        hc_kills = ep.trigger == TriggerKind.HEALTH_CHECK_KILLS
        if hc_kills and not ep.escalated and (since_decision >= threshold or impaired):
            escalation, loop = True, since_decision >= threshold
        elif ep.action is Action.HOLD and since_evaluation >= threshold:
            reevaluation = True
        else:
            return None
        kills = ()  # inside an episode only crashes (or ECS's signal) decide again

    restarts = tuple(f for f in crashes if is_restart(f))

    def make(kind: TriggerKind) -> Trigger:
        recent = sorted(crashes + kills, key=lambda f: (f.time, f.task_arn))
        return Trigger(service=summary.service, time=t, kind=kind, crashes=len(crashes),
                       health_check_kills=len(summary.counted(StopKind.HEALTH_CHECK_KILL, t, window)),
                       last_failures=tuple(recent[-5:]), escalation=escalation, reevaluation=reevaluation,
                       previous_reason=ep.reason if (escalation or reevaluation) and ep is not None else None,
                       restarts=len(restarts))

    # genuine stops alone reach the threshold: a crash loop (restarts only make up a restart loop)
    if loop and (len(crashes) - len(restarts) >= threshold or escalation or reevaluation):
        return make(TriggerKind.CRASH_LOOP)
    if impaired:
        return make(TriggerKind.IMPAIRED)
    if len(kills) >= threshold:
        return make(TriggerKind.HEALTH_CHECK_KILLS)
    if restarts and loop:  # restarts make up the threshold
        return make(TriggerKind.RESTART_LOOP)
    return None


def fleet_view(config: PolicyConfig, service: str, summaries: Iterable[ServiceSummary], at: datetime,
               services_in_cluster: int) -> FleetView:
    """Rule 3's count at event time ``at`` over every service summary of the cluster.

    The deciding ``service`` always counts; another service counts with ``fleet_signal_min_failures``
    failures (crashes or health-check kills) in ``[at - window, at]`` whatever happened to it since
    (a ``SERVICE_STEADY_STATE``, an episode that ended, a later decision: the per-minute counts of
    :class:`~ecs_guardrail.core.summary.MinuteCount` ignore episodes), or when the watchdog scaled it
    to zero within that window (its failures stopped because it was stopped; a later decision of
    that service does not erase the scale-down). Standalone jobs are never in ``summaries`` (they
    have their own records).
    """
    window = config.window
    need = config.fleet_signal_min_failures
    failing = {service}
    down = set()
    for s in summaries:
        if s.service == service:
            continue
        if failures_between(s.minutes, at - window, at, need) >= need:
            failing.add(s.service)
        if any(at - window <= t <= at for t in scale_down_times(s)):
            down.add(s.service)
    return FleetView(frozenset(failing), frozenset(down), services_in_cluster,
                     blast_radius_bound(config, services_in_cluster))


def _restart_what(trigger: Trigger, window_minutes: int) -> str:
    """A ``restart_loop`` trigger in words: the container restarts, and the stopped tasks' crashes and
    health-check kills only when there were any (a restart stops no task: "5 crashes" beside it misled)."""
    restarts = _plural(trigger.restarts, "container restart", "container restarts")
    stopped = trigger.crashes - trigger.restarts
    also = (f"; also {_plural(stopped, 'task crash', 'task crashes')} and "
            f"{_plural(trigger.health_check_kills, 'health-check kill', 'health-check kills')}"
            if stopped > 0 or trigger.health_check_kills else "; no task stopped")
    return (f"restart-policy loop: {restarts} inside running tasks in {window_minutes} min (Container Insights "
            f"RestartCount){also}")


def fleet_view_of(config: PolicyConfig, service: str, failing: Iterable[str], scaled_down: Iterable[str],
                  services_in_cluster: int) -> FleetView:
    """Rule 3's count from evidence read per cluster and minute (:mod:`ecs_guardrail.core.fleet_minutes`)
    rather than from every summary: ``failing``, the other services with ``fleet_signal_min_failures``
    failures in the window; ``scaled_down``, the services the watchdog scaled to zero in it. The
    deciding ``service`` always counts. Gives the :class:`FleetView` that :func:`fleet_view` gives over
    the same failures."""
    return FleetView(frozenset(failing) | {service}, frozenset(scaled_down) - {service}, services_in_cluster,
                     blast_radius_bound(config, services_in_cluster))


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _fmt_causes(trigger: Trigger) -> str:
    causes = sorted({f.cause for f in trigger.last_failures if f.cause})
    return f" ({', '.join(causes)})" if causes else ""


def decide(config: PolicyConfig, cluster: str, trigger: Trigger, fleet: FleetView, entitlement: Entitlement,
           held: Iterable[str] = ()) -> Decision:
    """Rules 3 to 6 for one trigger (rule 1 is :func:`detect`, rule 2 the caller's episode).

    ``entitlement`` is rule 4's answer (the :func:`ecs_guardrail.core.entitlement.entitlement` verdict the
    caller carries as an :class:`Entitlement`); ``held``
    the *other* services of the cluster held at zero now (scaled by the watchdog, not restored,
    re-read from ECS by the caller).

    Returns:
        a :class:`Decision`: ``hold`` (fleet test or cap), ``alert_only`` (rule 4) or ``scale_to_zero``.
    """
    held = tuple(sorted(set(held) - {trigger.service}))
    counts = (
        f"{_plural(trigger.crashes, 'crash', 'crashes')} and "
        f"{_plural(trigger.health_check_kills, 'health-check kill', 'health-check kills')} "
        f"in {config.window_minutes} min{_fmt_causes(trigger)}"
    )
    what = {
        TriggerKind.CRASH_LOOP: f"crash loop: {counts}",
        TriggerKind.IMPAIRED: f"ECS reports SERVICE_TASK_START_IMPAIRED; {counts}",
        TriggerKind.HEALTH_CHECK_KILLS: f"tasks killed by health checks: {counts}",
        TriggerKind.RESTART_LOOP: _restart_what(trigger, config.window_minutes),
    }[trigger.kind]

    def make(action: Action, reason: Reason, why: str, evidence: dict[str, object] | None = None,
             failing: tuple[str, ...] = ()) -> Decision:
        return Decision(
            cluster=cluster, service=trigger.service, time=trigger.time, action=action, reason=reason,
            crashes_in_window=trigger.crashes, health_check_kills_in_window=trigger.health_check_kills,
            message=f"{why}. {what}.", trigger=trigger.kind, failing_services=len(fleet.affected),
            services_in_cluster=fleet.services_in_cluster, bound=fleet.bound, last_failures=trigger.last_failures,
            evidence=dict(evidence or {}), failing=failing)

    if fleet.correlated:
        names = tuple(sorted(fleet.affected))
        return make(Action.HOLD, Reason.MASS_UNHEALTHY,
                    f"held: {len(fleet.affected)} of {fleet.services_in_cluster} services failing at once "
                    f"(bound {fleet.bound}), a shared dependency or the health check is the likely cause",
                    {"failing": list(names)}, names)
    if trigger.reevaluation and trigger.previous_reason is Reason.MASS_UNHEALTHY:
        # the storm that held this service is over and it alone still loops: say so in its next decision
        what = f"the rest of the cluster recovered; {trigger.service} still crash-loops: {what}"
    if entitlement.reason is not None:
        return make(Action.ALERT_ONLY, entitlement.reason, entitlement.message, entitlement.evidence)
    if len(held) + 1 > fleet.bound:
        return make(Action.HOLD, Reason.BLAST_RADIUS_CAP,
                    f"held: {_plural(len(held), 'service', 'services')} of {cluster} already held at zero by the "
                    f"watchdog ({', '.join(held)}; bound {fleet.bound}); restore one with `ecs-guardrail restore "
                    f"--cluster {cluster} --service NAME --table TABLE --region REGION` to free its slot",
                    {"held_at_zero": list(held)})
    return make(Action.SCALE_TO_ZERO, Reason.CRASH_LOOP, "scaled to 0 to stop the crash loop")
